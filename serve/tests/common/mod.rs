//! Shared fixtures of the gateway's tests: a small reward model fitted on simulated data with
//! its projection file, and an in-process mock of an OpenAI-compatible server (vLLM's and
//! SGLang's documented response shapes), each mock on its own thread and runtime so that
//! stopping it closes every connection (a refused port afterwards).
#![allow(dead_code)]

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use hetreward::estimator::EstimatorOptions;
use hetreward::fit::FitControl;
use hetreward_serve::internals::Projection;
use safetensors::tensor::{Dtype, TensorView};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Embedding width of the mock embedder and the projection's dim_in.
pub const DIM_IN: usize = 6;
/// The model's d1 (the projection's dim_out).
pub const D1: usize = 4;
/// The projection's template.
pub const TEMPLATE: &str = "{question}\n\n{answer}";

/// Fits a small Wald model (d1 = 4, homogeneous) on simulated data and writes it with
/// `model_file::save` as `dir/model.hrm`, beside `dir/model.projection.safetensors`.
pub fn write_fixture(dir: &Path, seed: u64) -> PathBuf {
    let theta = [1.0, -0.6, 0.4, 0.8];
    let data = hetreward::sim::homogeneous(1500, &theta, seed);
    let est = EstimatorOptions::default()
        .check()
        .expect("default options");
    let model = est
        .estimate(&data, &FitControl::default())
        .expect("fit on simulated data");
    let model_path = dir.join("model.hrm");
    hetreward::io::model_file::save(&model, &model_path).expect("save the model");
    write_projection(
        &hetreward_serve::default_projection(&model_path),
        DIM_IN,
        D1,
        TEMPLATE,
    );
    model_path
}

/// Writes a projection file with `mean[j] = 0.01 j` and `components[k][j] = sin(1 + k + 0.7 j)`.
pub fn write_projection(path: &Path, dim_in: usize, dim_out: usize, text: &str) {
    let mean: Vec<f64> = (0..dim_in).map(|j| 0.01 * j as f64).collect();
    let comps: Vec<f64> = (0..dim_out * dim_in)
        .map(|i| (1.0 + (i / dim_in) as f64 + 0.7 * (i % dim_in) as f64).sin())
        .collect();
    let bytes = |v: &[f64]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let (mb, cb) = (bytes(&mean), bytes(&comps));
    let tensors = vec![
        (
            "mean",
            TensorView::new(Dtype::F64, vec![dim_in], &mb).unwrap(),
        ),
        (
            "components",
            TensorView::new(Dtype::F64, vec![dim_out, dim_in], &cb).unwrap(),
        ),
    ];
    let meta: HashMap<String, String> = [
        ("format", "hetreward-projection-1".to_string()),
        ("dim_in", dim_in.to_string()),
        ("dim_out", dim_out.to_string()),
        ("embedding_model", "mock-embedder".to_string()),
        ("text", text.to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let out = safetensors::tensor::serialize(tensors, &Some(meta)).unwrap();
    std::fs::write(path, out).unwrap();
}

/// The mock embedder: a deterministic vector of width `dim` per text (FNV hashes).
pub fn embed_text(text: &str, dim: usize) -> Vec<f32> {
    (0..dim)
        .map(|j| {
            let mut h: u64 = 0xcbf29ce484222325 ^ (j as u64).wrapping_mul(0x9E3779B97F4A7C15);
            for b in text.bytes() {
                h ^= u64::from(b);
                h = h.wrapping_mul(0x100000001b3);
            }
            ((h >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0) as f32
        })
        .collect()
}

/// How the mock behaves.
#[derive(Clone, Debug)]
pub struct MockOpts {
    /// Answer `n` choices (vLLM, SGLang); false: one choice whatever `n` (top-up needed).
    pub honor_n: bool,
    /// Requests without `n` get an empty `choices` list (so the top-up falls short).
    pub empty_without_n: bool,
    /// Sleep before answering completions.
    pub sleep: Duration,
    /// Sleep before answering embeddings (not the start-up probe's first call).
    pub embed_sleep: Duration,
    /// Completions answer 200 with a body that is not JSON.
    pub garbage: bool,
    /// Completions answer 400 with vLLM's ErrorResponse.
    pub reject: bool,
    /// Embedding width.
    pub dim: usize,
    /// Completions text returned with a raw invalid byte and a lone surrogate escape.
    pub broken_utf8: bool,
}

impl Default for MockOpts {
    fn default() -> Self {
        MockOpts {
            honor_n: true,
            empty_without_n: false,
            sleep: Duration::ZERO,
            embed_sleep: Duration::ZERO,
            garbage: false,
            reject: false,
            dim: DIM_IN,
            broken_utf8: false,
        }
    }
}

struct MockState {
    opts: MockOpts,
    counter: AtomicUsize,
    embed_calls: AtomicUsize,
    requests: Mutex<Vec<(String, Value)>>,
}

/// A running mock server.
pub struct Mock {
    pub addr: SocketAddr,
    state: Arc<MockState>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Mock {
    pub fn start(opts: MockOpts) -> Mock {
        let state = Arc::new(MockState {
            opts,
            counter: AtomicUsize::new(0),
            embed_calls: AtomicUsize::new(0),
            requests: Mutex::new(Vec::new()),
        });
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let st = Arc::clone(&state);
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                addr_tx.send(listener.local_addr().unwrap()).unwrap();
                let app = Router::new()
                    .route("/v1/completions", post(completions))
                    .route("/v1/chat/completions", post(chat))
                    .route("/v1/embeddings", post(embeddings))
                    .route("/v1/models", get(models))
                    .with_state(st);
                let server = axum::serve(listener, app);
                tokio::select! {
                    _ = server => {}
                    _ = stopped => {}
                }
            });
            // Dropping the runtime here closes every connection of the mock.
            rt.shutdown_background();
        });
        let addr = addr_rx.recv().unwrap();
        Mock {
            addr,
            state,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Bodies received on a path.
    pub fn requests(&self, path: &str) -> Vec<Value> {
        self.state
            .requests
            .lock()
            .unwrap()
            .iter()
            .filter(|(p, _)| p == path)
            .map(|(_, v)| v.clone())
            .collect()
    }

    /// Stops the server and closes its connections: its port refuses from then on.
    pub fn stop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Mock {
    fn drop(&mut self) {
        self.stop();
    }
}

fn record(st: &MockState, path: &str, body: &Value) {
    st.requests
        .lock()
        .unwrap()
        .push((path.to_string(), body.clone()));
}

/// vLLM's ErrorResponse (`{"object": "error", "message", "type", "param", "code"}`).
fn vllm_error(message: &str) -> Response {
    (
        StatusCode::BAD_REQUEST,
        axum::Json(
            json!({"object": "error", "message": message, "type": "BadRequestError",
                          "param": "max_tokens", "code": 400}),
        ),
    )
        .into_response()
}

async fn generate(st: &MockState, path: &str, body: &[u8], chat: bool) -> Response {
    let req: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => return vllm_error(&format!("bad json: {e}")),
    };
    record(st, path, &req);
    if !st.opts.sleep.is_zero() {
        tokio::time::sleep(st.opts.sleep).await;
    }
    if st.opts.reject {
        return vllm_error("max_tokens must be at least 1, got -5.");
    }
    if st.opts.garbage {
        return (StatusCode::OK, "<html>this is not json").into_response();
    }
    let n_given = req.get("n").and_then(Value::as_u64);
    let n = if st.opts.honor_n {
        n_given.unwrap_or(1)
    } else {
        1
    } as usize;
    let n = if st.opts.empty_without_n && n_given.is_none() {
        0
    } else {
        n
    };
    let choices: Vec<Value> = (0..n)
        .map(|i| {
            let k = st.counter.fetch_add(1, Ordering::Relaxed);
            let text = format!("candidate answer number {k}");
            if chat {
                json!({"index": i, "message": {"role": "assistant", "content": text},
                       "logprobs": null, "finish_reason": "stop", "stop_reason": null})
            } else {
                json!({"index": i, "text": text, "logprobs": null, "finish_reason": "length",
                       "stop_reason": null, "prompt_logprobs": null})
            }
        })
        .collect();
    let answer = json!({
        "id": "cmpl-mock", "object": if chat { "chat.completion" } else { "text_completion" },
        "created": 1_700_000_000, "model": "mock-model", "choices": choices,
        "usage": {"prompt_tokens": 5, "total_tokens": 5 + 3 * n, "completion_tokens": 3 * n},
    });
    if st.opts.broken_utf8 && !chat {
        // An answer cut inside a character: a raw invalid byte and a lone surrogate escape.
        let mut text = serde_json::to_string(&answer).unwrap();
        text = text.replacen("candidate answer", "cut \\ud83d here", 1);
        let mut bytes = text.into_bytes();
        let at = bytes
            .windows(9)
            .position(|w| w == b"candidate")
            .unwrap_or(0);
        bytes.splice(at..at, [0xF0u8, 0x9F]);
        return (
            StatusCode::OK,
            [("content-type", "application/json")],
            bytes,
        )
            .into_response();
    }
    axum::Json(answer).into_response()
}

async fn completions(State(st): State<Arc<MockState>>, body: Bytes) -> Response {
    generate(&st, "/v1/completions", &body, false).await
}

async fn chat(State(st): State<Arc<MockState>>, body: Bytes) -> Response {
    generate(&st, "/v1/chat/completions", &body, true).await
}

async fn embeddings(State(st): State<Arc<MockState>>, body: Bytes) -> Response {
    let req: Value = serde_json::from_slice(&body).unwrap();
    record(&st, "/v1/embeddings", &req);
    let calls = st.embed_calls.fetch_add(1, Ordering::Relaxed);
    if calls > 0 && !st.opts.embed_sleep.is_zero() {
        tokio::time::sleep(st.opts.embed_sleep).await;
    }
    let inputs: Vec<String> = match &req["input"] {
        Value::String(s) => vec![s.clone()],
        Value::Array(a) => a.iter().map(|v| v.as_str().unwrap().to_string()).collect(),
        _ => return vllm_error("input"),
    };
    // Answered in reverse order with explicit indices: the gateway must sort by `index`.
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .rev()
        .map(|(i, t)| json!({"object": "embedding", "index": i, "embedding": embed_text(t, st.opts.dim)}))
        .collect();
    axum::Json(json!({"object": "list", "data": data, "model": req["model"],
                      "usage": {"prompt_tokens": 7 * inputs.len(), "total_tokens": 7 * inputs.len()}}))
    .into_response()
}

async fn models() -> Response {
    axum::Json(
        json!({"object": "list", "data": [{"id": "mock-model", "object": "model",
                      "created": 1_700_000_000, "owned_by": "vllm", "max_model_len": 2048}]}),
    )
    .into_response()
}

/// The features of a text under the fixture's projection, as the gateway computes them.
pub fn features(projection: &Projection, text: &str) -> Vec<f32> {
    let mut out = Vec::new();
    projection
        .apply_into(&embed_text(text, DIM_IN), &mut out)
        .unwrap();
    out
}
