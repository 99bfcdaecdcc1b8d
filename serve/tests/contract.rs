//! Contract tests: the real gateway in front of in-process servers that answer exactly vLLM's
//! and SGLang's documented shapes (`n` choices on /v1/completions and /v1/chat/completions,
//! OpenAI /v1/embeddings, vLLM's ErrorResponse on a 4xx), and the fault rules: 429, 502
//! (refused, garbage, fewer candidates), 504 (a stage past its timeout), 4xx passed on,
//! client disconnects counted as cancelled, reload.

mod common;

use common::*;
use hetreward::select::{select, Policy};
use hetreward_serve::internals::Projection;
use hetreward_serve::{start, Config, Gateway};
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

async fn gateway(model: &Path, gen: &Mock, emb: &Mock, tweak: impl FnOnce(&mut Config)) -> Gateway {
    let mut c = Config::new(model, gen.url());
    c.embeddings = Some(emb.url());
    c.listen = "127.0.0.1:0".parse().unwrap();
    tweak(&mut c);
    start(c).await.expect("gateway starts")
}

async fn post(gw: &Gateway, path: &str, body: Value) -> (u16, Value) {
    let r = reqwest::Client::new()
        .post(format!("{}{path}", gw.url()))
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let v = r.json::<Value>().await.unwrap_or(Value::Null);
    (status, v)
}

/// The gateway's choice and figures equal `select` on the same features.
fn check_selection(model_path: &Path, question: &str, answer: &Value, n: usize, policy: Policy) {
    let model = hetreward::io::model_file::load(model_path).unwrap();
    let proj = Projection::load(&hetreward_serve::default_projection(model_path)).unwrap();
    let h = &answer["hetreward"];
    let cands = h["candidates"].as_array().unwrap();
    let mut phis = Vec::new();
    for c in cands {
        phis.extend(features(
            &proj,
            &proj.render(question, c["text"].as_str().unwrap()),
        ));
    }
    let alpha = h["alpha"].as_f64().unwrap();
    let sel = select(&model, &phis, None, alpha, policy).unwrap();
    let chosen: Vec<usize> = h["chosen"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as usize)
        .collect();
    assert_eq!(chosen.len(), n);
    assert_eq!(chosen[0], sel.index, "chosen = select's index");
    // Argmax of the lower bound (pBoN) over the listed candidates.
    let key = if policy == Policy::Pbon {
        "lower"
    } else {
        "reward"
    };
    let best = cands
        .iter()
        .map(|c| c[key].as_f64().unwrap())
        .fold(f64::NEG_INFINITY, f64::max);
    assert_eq!(cands[chosen[0]][key].as_f64().unwrap(), best);
    for (k, c) in cands.iter().enumerate() {
        let f = &sel.candidates[k];
        assert_eq!(c["index"].as_u64().unwrap() as usize, k);
        assert_eq!(c["reward"].as_f64().unwrap(), f.interval.reward);
        assert_eq!(c["se"].as_f64().unwrap(), f.interval.se);
        assert_eq!(c["lower"].as_f64().unwrap(), f.interval.lower);
        assert_eq!(c["upper"].as_f64().unwrap(), f.interval.upper);
        assert_eq!(c["score"].as_f64().unwrap(), f.score);
    }
    // Choices: the chosen candidates, best first, with their figures and index 0..n-1.
    let choices = answer["choices"].as_array().unwrap();
    assert_eq!(choices.len(), n);
    for (rank, c) in choices.iter().enumerate() {
        assert_eq!(c["index"].as_u64().unwrap() as usize, rank);
        let k = chosen[rank];
        assert_eq!(
            c["lower"].as_f64().unwrap(),
            sel.candidates[k].interval.lower
        );
        if rank > 0 {
            assert!(sel.candidates[chosen[rank - 1]].score >= sel.candidates[k].score);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vllm_completions_with_n_and_best_of() {
    let dir = tempfile::tempdir().unwrap();
    let model = write_fixture(dir.path(), 1);
    let up = Mock::start(MockOpts::default());
    let gw = gateway(&model, &up, &up, |_| {}).await;
    let (s, a) = post(
        &gw,
        "/v1/completions",
        json!({"model": "mock-model", "prompt": "What is 2+2?", "best_of": 6, "n": 2,
               "max_tokens": 8, "temperature": 0}),
    )
    .await;
    assert_eq!(s, 200, "{a}");
    check_selection(&model, "What is 2+2?", &a, 2, Policy::Pbon);
    assert_eq!(a["hetreward"]["policy"], "pbon");
    assert_eq!(a["hetreward"]["interval_method"], "wald");
    assert_eq!(a["hetreward"]["candidates"].as_array().unwrap().len(), 6);
    assert_eq!(a["usage"]["completion_tokens"], 18);
    assert_eq!(a["model"], "mock-model");
    for k in ["generation_ms", "embedding_ms", "selection_us", "total_ms"] {
        assert!(a["hetreward"]["timings"][k].as_f64().unwrap() >= 0.0);
    }
    // One upstream request with n = best_of, extension fields removed, temperature 0 kept,
    // no seed added.
    let sent = up.requests("/v1/completions");
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["n"], 6);
    assert_eq!(sent[0]["temperature"], 0);
    for k in ["best_of", "alpha", "policy", "seed"] {
        assert!(sent[0].get(k).is_none(), "{k} forwarded");
    }
    // One embeddings call with every candidate, rendered by the template.
    let emb = up.requests("/v1/embeddings");
    let last = emb.last().unwrap();
    assert_eq!(last["model"], "embedding");
    let inputs = last["input"].as_array().unwrap();
    assert_eq!(inputs.len(), 6);
    assert!(inputs[0]
        .as_str()
        .unwrap()
        .starts_with("What is 2+2?\n\ncandidate answer"));

    // BoN and a custom alpha.
    let (s, a) = post(
        &gw,
        "/v1/completions",
        json!({"prompt": ["Q?"], "best_of": 5, "policy": "bon", "alpha": 0.2}),
    )
    .await;
    assert_eq!(s, 200, "{a}");
    assert_eq!(a["hetreward"]["alpha"], 0.2);
    check_selection(&model, "Q?", &a, 1, Policy::Bon);

    // stream without best_of: proxied unchanged and unscored.
    let (s, a) = post(
        &gw,
        "/v1/completions",
        json!({"prompt": "s", "stream": true, "max_tokens": 2}),
    )
    .await;
    assert_eq!(s, 200, "{a}");
    assert!(
        a.get("hetreward").is_none() && a["choices"][0]["text"].is_string(),
        "{a}"
    );
    let sent = up.requests("/v1/completions");
    assert_eq!(
        sent.last().unwrap(),
        &json!({"prompt": "s", "stream": true, "max_tokens": 2})
    );

    // /v1/models passed through; /health ok; metrics named.
    let m: Value = reqwest::get(format!("{}/v1/models", gw.url()))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(m["data"][0]["id"], "mock-model");
    let h = reqwest::get(format!("{}/health", gw.url())).await.unwrap();
    assert_eq!(h.status().as_u16(), 200);
    let h: Value = h.json().await.unwrap();
    assert_eq!(h["status"], "ok");
    let text = reqwest::get(format!("{}/metrics", gw.url()))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for name in [
        "hetreward_requests_total{",
        "hetreward_request_duration_seconds_bucket{",
        "hetreward_stage_duration_seconds_count{stage=\"selection\"} 2",
        "hetreward_stage_duration_seconds_count{stage=\"generation\"} 2",
        "hetreward_requests_in_flight",
        "hetreward_requests_cancelled_total",
    ] {
        assert!(text.contains(name), "{name} missing from\n{text}");
    }
    assert!(
        text.contains("route=\"/v1/completions\",status=\"200\"} 3"),
        "{text}"
    );
    gw.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sglang_chat_completions_with_separate_embedder() {
    let dir = tempfile::tempdir().unwrap();
    let model = write_fixture(dir.path(), 2);
    let gen = Mock::start(MockOpts::default());
    let emb = Mock::start(MockOpts::default());
    let gw = gateway(&model, &gen, &emb, |c| c.embeddings_model = "e5".into()).await;
    let (s, a) = post(
        &gw,
        "/v1/chat/completions",
        json!({"model": "m", "best_of": 4, "n": 3, "seed": 9,
               "messages": [{"role": "system", "content": "be brief"},
                            {"role": "user", "content": "first"},
                            {"role": "assistant", "content": "ok"},
                            {"role": "user", "content": [{"type": "text", "text": "Hello "},
                                                          {"type": "text", "text": "there"}]}]}),
    )
    .await;
    assert_eq!(s, 200, "{a}");
    check_selection(&model, "Hello there", &a, 3, Policy::Pbon);
    assert_eq!(a["object"], "chat.completion");
    assert!(a["choices"][0]["message"]["content"]
        .as_str()
        .unwrap()
        .starts_with("candidate"));
    assert_eq!(gen.requests("/v1/chat/completions")[0]["seed"], 9);
    assert!(
        gen.requests("/v1/embeddings").is_empty(),
        "embeddings went to the embedder"
    );
    assert_eq!(
        emb.requests("/v1/embeddings").last().unwrap()["model"],
        "e5"
    );
    gw.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_ignoring_n_is_topped_up_in_parallel() {
    let dir = tempfile::tempdir().unwrap();
    let model = write_fixture(dir.path(), 3);
    let up = Mock::start(MockOpts {
        honor_n: false,
        ..MockOpts::default()
    });
    let gw = gateway(&model, &up, &up, |_| {}).await;
    let (s, a) = post(
        &gw,
        "/v1/completions",
        json!({"prompt": "p", "best_of": 4, "seed": 100}),
    )
    .await;
    assert_eq!(s, 200, "{a}");
    check_selection(&model, "p", &a, 1, Policy::Pbon);
    let sent = up.requests("/v1/completions");
    assert_eq!(sent.len(), 4, "one request with n, then three without");
    assert_eq!(sent[0]["n"], 4);
    assert_eq!(sent[0]["seed"], 100);
    let mut seeds: Vec<i64> = sent[1..]
        .iter()
        .map(|r| {
            assert!(r.get("n").is_none());
            r["seed"].as_i64().unwrap()
        })
        .collect();
    seeds.sort();
    assert_eq!(seeds, [101, 102, 103]);
    // Remembered: the next request goes straight to best_of requests without n (no seed).
    let (s, a) = post(&gw, "/v1/completions", json!({"prompt": "p", "best_of": 3})).await;
    assert_eq!(s, 200, "{a}");
    let sent = up.requests("/v1/completions");
    assert_eq!(sent.len(), 7);
    for r in &sent[4..] {
        assert!(r.get("n").is_none() && r.get("seed").is_none(), "{r}");
    }
    gw.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fewer_candidates_is_a_502() {
    let dir = tempfile::tempdir().unwrap();
    let model = write_fixture(dir.path(), 4);
    let up = Mock::start(MockOpts {
        honor_n: false,
        empty_without_n: true,
        ..MockOpts::default()
    });
    let gw = gateway(&model, &up, &up, |_| {}).await;
    let (s, a) = post(&gw, "/v1/completions", json!({"prompt": "p", "best_of": 3})).await;
    assert_eq!(s, 502, "{a}");
    let msg = a["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("returned 1 of 3 candidates") && msg.contains(&up.url()),
        "{msg}"
    );
    assert_eq!(a["error"]["type"], "upstream_error");
    gw.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rerank_through_the_gateway() {
    let dir = tempfile::tempdir().unwrap();
    let model = write_fixture(dir.path(), 5);
    let up = Mock::start(MockOpts::default());
    let gw = gateway(&model, &up, &up, |_| {}).await;
    let docs = ["alpha doc", "beta doc", "gamma doc", "delta doc"];
    for path in ["/v1/rerank", "/rerank", "/v2/rerank"] {
        let (s, a) = post(
            &gw,
            path,
            json!({"model": "r", "query": "which?", "documents": docs,
                                             "top_n": 3}),
        )
        .await;
        assert_eq!(s, 200, "{a}");
        let res = a["results"].as_array().unwrap();
        assert_eq!(res.len(), 3);
        let lowers: Vec<f64> = res.iter().map(|r| r["lower"].as_f64().unwrap()).collect();
        assert!(lowers.windows(2).all(|w| w[0] >= w[1]), "{lowers:?}");
        for r in res {
            assert_eq!(r["relevance_score"], r["lower"]);
            let i = r["index"].as_u64().unwrap() as usize;
            assert_eq!(r["document"]["text"], docs[i]);
        }
        assert_eq!(a["object"], "list");
        assert_eq!(a["usage"]["total_tokens"], 28);
        assert_eq!(a["hetreward"]["order_by"], "lower");
    }
    // Figures equal score_batch on the same features.
    let m = hetreward::io::model_file::load(&model).unwrap();
    let proj = Projection::load(&hetreward_serve::default_projection(&model)).unwrap();
    let (s, a) = post(
        &gw,
        "/v1/rerank",
        json!({"query": "q", "documents": [{"text": "x"}, "y"],
                                                "return_documents": false, "order_by": "reward"}),
    )
    .await;
    assert_eq!(s, 200, "{a}");
    for r in a["results"].as_array().unwrap() {
        assert!(r.get("document").is_none());
        let i = r["index"].as_u64().unwrap() as usize;
        let phi = features(&proj, &proj.render("q", ["x", "y"][i]));
        let want = m.score_batch(&phi, 0.05).unwrap()[0];
        assert_eq!(r["reward"].as_f64().unwrap(), want.reward);
        assert_eq!(r["relevance_score"].as_f64().unwrap(), want.reward);
        assert_eq!(r["upper"].as_f64().unwrap(), want.upper);
    }
    let (s, a) = post(&gw, "/v1/rerank", json!({"query": "q", "documents": []})).await;
    assert_eq!((s, a["error"]["param"].as_str()), (400, Some("documents")));
    let (s, _) = post(
        &gw,
        "/v1/rerank",
        json!({"query": "q", "documents": ["a"], "top_n": 0}),
    )
    .await;
    assert_eq!(s, 400);
    gw.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_429_502_504_and_4xx() {
    let dir = tempfile::tempdir().unwrap();
    let model = write_fixture(dir.path(), 6);
    let emb = Mock::start(MockOpts::default());

    // 504: generation sleeps past a 1 s timeout; 429 beyond one request in flight.
    let slow = Mock::start(MockOpts {
        sleep: Duration::from_millis(1500),
        ..MockOpts::default()
    });
    let gw = gateway(&model, &slow, &emb, |c| {
        c.generation_timeout = Duration::from_secs(1);
        c.max_in_flight = 1;
    })
    .await;
    let url = gw.url();
    let first = tokio::spawn(async move {
        reqwest::Client::new()
            .post(format!("{url}/v1/completions"))
            .json(&json!({"prompt": "p", "best_of": 2}))
            .send()
            .await
            .unwrap()
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (s, a) = post(&gw, "/v1/completions", json!({"prompt": "p"})).await;
    assert_eq!(s, 429, "{a}");
    assert_eq!(a["error"]["type"], "rate_limit_error");
    assert!(a["error"]["message"].as_str().unwrap().contains("limit 1"));
    let t = std::time::Instant::now();
    let r = first.await.unwrap();
    assert_eq!(r.status().as_u16(), 504);
    let a: Value = r.json().await.unwrap();
    assert_eq!(a["error"]["type"], "timeout_error");
    let msg = a["error"]["message"].as_str().unwrap();
    assert!(msg.contains("generation") && msg.contains("1 s"), "{msg}");
    assert!(t.elapsed() < Duration::from_secs(2));
    gw.shutdown().await.unwrap();

    // 504 on the embedding stage.
    let fast = Mock::start(MockOpts::default());
    let slow_emb = Mock::start(MockOpts {
        embed_sleep: Duration::from_millis(1500),
        ..MockOpts::default()
    });
    let gw = gateway(&model, &fast, &slow_emb, |c| {
        c.embedding_timeout = Duration::from_secs(1)
    })
    .await;
    let (s, a) = post(&gw, "/v1/completions", json!({"prompt": "p", "best_of": 2})).await;
    assert_eq!(s, 504, "{a}");
    assert!(a["error"]["message"]
        .as_str()
        .unwrap()
        .contains("embedding stage"));
    gw.shutdown().await.unwrap();

    // 502: garbage.
    let bad = Mock::start(MockOpts {
        garbage: true,
        ..MockOpts::default()
    });
    let gw = gateway(&model, &bad, &emb, |_| {}).await;
    let (s, a) = post(&gw, "/v1/completions", json!({"prompt": "p", "best_of": 2})).await;
    assert_eq!(s, 502, "{a}");
    let msg = a["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains(&bad.url()) && msg.contains("not JSON"),
        "{msg}"
    );
    gw.shutdown().await.unwrap();

    // 4xx passed on with vLLM's message.
    let rej = Mock::start(MockOpts {
        reject: true,
        ..MockOpts::default()
    });
    let gw = gateway(&model, &rej, &emb, |_| {}).await;
    let (s, a) = post(
        &gw,
        "/v1/completions",
        json!({"prompt": "p", "best_of": 2, "max_tokens": -5}),
    )
    .await;
    assert_eq!(s, 400, "{a}");
    assert_eq!(
        a["error"]["message"],
        "max_tokens must be at least 1, got -5."
    );
    assert_eq!(a["error"]["type"], "BadRequestError");
    gw.shutdown().await.unwrap();

    // 502: refused (the upstream stopped after the gateway started); the gateway keeps serving.
    let mut gone = Mock::start(MockOpts::default());
    let gw = gateway(&model, &gone, &emb, |_| {}).await;
    let gone_url = gone.url();
    gone.stop();
    let (s, a) = post(&gw, "/v1/completions", json!({"prompt": "p", "best_of": 2})).await;
    assert_eq!(s, 502, "{a}");
    let msg = a["error"]["message"].as_str().unwrap();
    assert!(msg.contains(&gone_url) && msg.contains("refused"), "{msg}");
    let h = reqwest::get(format!("{}/health", gw.url())).await.unwrap();
    assert_eq!(h.status().as_u16(), 503);
    let (s, _) = post(&gw, "/v1/rerank", json!({"query": "q", "documents": ["a"]})).await;
    assert_eq!(s, 200, "rerank needs only the embedder");
    let text = reqwest::get(format!("{}/metrics", gw.url()))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        text.contains(
            "hetreward_upstream_errors_total{upstream=\"generation\",kind=\"refused\"} 1"
        ),
        "{text}"
    );
    gw.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_utf8_and_stream() {
    let dir = tempfile::tempdir().unwrap();
    let model = write_fixture(dir.path(), 7);
    let up = Mock::start(MockOpts {
        broken_utf8: true,
        ..MockOpts::default()
    });
    let gw = gateway(&model, &up, &up, |c| c.max_best_of = 8).await;
    let client = reqwest::Client::new();
    let raw = |body: Vec<u8>| {
        client
            .post(format!("{}/v1/chat/completions", gw.url()))
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    let mut body = br#"{"messages":[{"role":"user","content":"caf"#.to_vec();
    body.extend([0xE9, b'"', b'}', b']', b'}']);
    let r = raw(body).await.unwrap();
    assert_eq!(r.status().as_u16(), 400);
    let a: Value = r.json().await.unwrap();
    assert_eq!(a["error"]["param"], "messages[0].content", "{a}");
    let r = raw(b"{not json".to_vec()).await.unwrap();
    assert_eq!(r.status().as_u16(), 400);
    for (body, param) in [
        (json!({"prompt": "p", "best_of": 9}), "best_of"),
        (json!({"prompt": "p", "best_of": 0}), "best_of"),
        (json!({"prompt": "p", "best_of": 2, "n": 3}), "n"),
        (json!({"prompt": "p", "alpha": 1.5}), "alpha"),
        (json!({"prompt": "p", "policy": "best"}), "policy"),
        (
            json!({"prompt": "p", "best_of": 2, "stream": true}),
            "stream",
        ),
    ] {
        let (s, a) = post(&gw, "/v1/completions", body.clone()).await;
        assert_eq!(
            (s, a["error"]["param"].as_str()),
            (400, Some(param)),
            "{body} -> {a}"
        );
        assert_eq!(a["error"]["type"], "invalid_request_error");
    }
    // Answers with a raw invalid byte and a lone surrogate: repaired, scored, never an error.
    let (s, a) = post(&gw, "/v1/completions", json!({"prompt": "p", "best_of": 2})).await;
    assert_eq!(s, 200, "{a}");
    let texts: Vec<&str> = a["hetreward"]["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["text"].as_str().unwrap())
        .collect();
    assert!(texts.iter().any(|t| t.contains('\u{FFFD}')), "{texts:?}");
    // The server still serves.
    let h = reqwest::get(format!("{}/health", gw.url())).await.unwrap();
    assert_eq!(h.status().as_u16(), 200);
    gw.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disconnect_cancels_and_reload_swaps() {
    let dir = tempfile::tempdir().unwrap();
    let model = write_fixture(dir.path(), 8);
    let slow = Mock::start(MockOpts {
        sleep: Duration::from_millis(800),
        ..MockOpts::default()
    });
    let gw = gateway(&model, &slow, &slow, |_| {}).await;
    // A client that gives up after 200 ms: its request is dropped and counted as cancelled.
    let r = reqwest::Client::builder()
        .timeout(Duration::from_millis(200))
        .build()
        .unwrap()
        .post(format!("{}/v1/completions", gw.url()))
        .json(&json!({"prompt": "p", "best_of": 2}))
        .send()
        .await;
    assert!(r.is_err());
    let mut cancelled = false;
    for _ in 0..20 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let text = reqwest::get(format!("{}/metrics", gw.url()))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        if text.contains("hetreward_requests_cancelled_total 1") {
            cancelled = true;
            break;
        }
    }
    assert!(cancelled, "the disconnect was not counted");

    // Reload: a request in flight finishes; a new model is swapped in; a broken one refused.
    let url = gw.url();
    let inflight = tokio::spawn(async move {
        reqwest::Client::new()
            .post(format!("{url}/v1/completions"))
            .json(&json!({"prompt": "p", "best_of": 3}))
            .send()
            .await
            .unwrap()
            .status()
            .as_u16()
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let other = tempfile::tempdir().unwrap();
    let m2 = write_fixture(other.path(), 9);
    std::fs::copy(&m2, &model).unwrap();
    let (s, a) = post(&gw, "/admin/reload", json!({})).await;
    assert_eq!(s, 200, "{a}");
    assert_eq!(a["loaded"]["d1"], D1);
    assert_eq!(inflight.await.unwrap(), 200);
    std::fs::write(hetreward_serve::default_projection(&model), b"garbage").unwrap();
    let (s, a) = post(&gw, "/admin/reload", json!({})).await;
    assert_eq!(s, 500, "{a}");
    assert!(a["error"]["message"]
        .as_str()
        .unwrap()
        .contains("old model is kept"));
    let (s, _) = post(&gw, "/v1/completions", json!({"prompt": "p", "best_of": 2})).await;
    assert_eq!(s, 200);
    let text = reqwest::get(format!("{}/metrics", gw.url()))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        text.contains("hetreward_model_reloads_total{result=\"ok\"} 1"),
        "{text}"
    );
    assert!(
        text.contains("hetreward_model_reloads_total{result=\"error\"} 1"),
        "{text}"
    );
    gw.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_up_refusals() {
    let dir = tempfile::tempdir().unwrap();
    let model = write_fixture(dir.path(), 10);
    let wide = Mock::start(MockOpts {
        dim: 8,
        ..MockOpts::default()
    });
    let mut c = Config::new(&model, wide.url());
    c.listen = "127.0.0.1:0".parse().unwrap();
    let e = start(c.clone())
        .await
        .err()
        .expect("width mismatch refused");
    assert_eq!(e.code, 1);
    assert!(
        e.message.contains("width 8") && e.message.contains("dim_in = 6"),
        "{}",
        e.message
    );

    let mut gone = Mock::start(MockOpts::default());
    let url = gone.url();
    gone.stop();
    let mut c2 = c.clone();
    c2.upstream = url.clone();
    let e = start(c2).await.err().expect("refused upstream");
    assert_eq!(e.code, 1);
    assert!(e.message.contains(&url), "{}", e.message);

    let mut c3 = c.clone();
    c3.model = dir.path().join("missing.hrm");
    let e = start(c3).await.err().expect("missing model");
    assert_eq!(e.code, 2);
    let mut c4 = c;
    c4.alpha = 2.0;
    assert_eq!(start(c4).await.err().unwrap().code, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_drains_requests_in_flight() {
    let dir = tempfile::tempdir().unwrap();
    let model = write_fixture(dir.path(), 11);
    let slow = Mock::start(MockOpts {
        sleep: Duration::from_millis(600),
        ..MockOpts::default()
    });
    let gw = gateway(&model, &slow, &slow, |_| {}).await;
    let url = gw.url();
    let u2 = url.clone();
    let inflight = tokio::spawn(async move {
        reqwest::Client::new()
            .post(format!("{u2}/v1/completions"))
            .json(&json!({"prompt": "p", "best_of": 2}))
            .send()
            .await
            .unwrap()
            .status()
            .as_u16()
    });
    tokio::time::sleep(Duration::from_millis(150)).await;
    let t = std::time::Instant::now();
    gw.shutdown().await.unwrap();
    assert!(
        t.elapsed() >= Duration::from_millis(300),
        "shutdown did not wait for the request"
    );
    assert_eq!(
        inflight.await.unwrap(),
        200,
        "the request in flight was answered"
    );
    assert!(
        reqwest::get(format!("{url}/health")).await.is_err(),
        "still accepting"
    );
}
