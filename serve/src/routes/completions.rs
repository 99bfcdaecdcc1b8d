//! `POST /v1/completions` and `/v1/chat/completions`: `best_of` candidates from the generation
//! upstream (one request with `n`, topped up by parallel requests when the upstream ignores
//! `n`), embedded in one batch, scored and ranked by the policy; the `n` best returned.

use crate::error::ApiError;
use crate::routes::request::{json_object, opt_alpha, opt_int};
use crate::state::{AppState, Loaded};
use crate::upstream::{Failure, Upstream, UpstreamError};
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use hetreward::select::Policy;
use serde_json::{json, Map, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Which OpenAI route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `/v1/completions`: `prompt` in, `choices[].text` out.
    Completions,
    /// `/v1/chat/completions`: `messages` in, `choices[].message.content` out.
    Chat,
}

impl Kind {
    fn path(self) -> &'static str {
        match self {
            Kind::Completions => "/v1/completions",
            Kind::Chat => "/v1/chat/completions",
        }
    }
}

/// The gateway's own request fields, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// Candidates generated.
    pub best_of: usize,
    /// Choices returned (`<= best_of`).
    pub n: usize,
    /// The intervals' alpha.
    pub alpha: f64,
    /// The selection rule.
    pub policy: Policy,
    /// `stream: true` (only without best_of > 1): proxied unscored.
    pub stream: bool,
}

/// Checks `best_of`, `n`, `alpha`, `policy` and `stream` (the contract's rules; errors are
/// 400 naming the field).
pub fn parse_params(
    body: &Map<String, Value>,
    max_best_of: usize,
    default_alpha: f64,
) -> Result<Params, ApiError> {
    let max = max_best_of as u64;
    let best_of_given = opt_int(body, "best_of", 1, max)?;
    let n = opt_int(body, "n", 1, u64::MAX)?.unwrap_or(1);
    let stream = match body.get("stream") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(v) => {
            return Err(ApiError::invalid(
                format!("`stream` must be a boolean, got {v}"),
                Some("stream"),
            ))
        }
    };
    if stream && best_of_given.is_some_and(|b| b > 1) {
        return Err(ApiError::invalid(
            "`stream` is not supported with `best_of` > 1 (the answer is chosen after every \
             candidate is complete); drop `stream` or `best_of`",
            Some("stream"),
        ));
    }
    let best_of = best_of_given.unwrap_or(n);
    if !stream && best_of > max_best_of {
        return Err(ApiError::invalid(
            format!("`n` = {n} needs best_of = {n} candidates, above the limit {max_best_of}"),
            Some("n"),
        ));
    }
    if n > best_of {
        return Err(ApiError::invalid(
            format!("`n` ({n}) must be <= `best_of` ({best_of})"),
            Some("n"),
        ));
    }
    let alpha = opt_alpha(body, default_alpha)?;
    let policy = match body.get("policy") {
        None | Some(Value::Null) => Policy::Pbon,
        Some(Value::String(s)) if s.eq_ignore_ascii_case("pbon") => Policy::Pbon,
        Some(Value::String(s)) if s.eq_ignore_ascii_case("bon") => Policy::Bon,
        Some(v) => {
            return Err(ApiError::invalid(
                format!("`policy` must be \"pbon\" or \"bon\", got {v}"),
                Some("policy"),
            ))
        }
    };
    Ok(Params {
        best_of,
        n,
        alpha,
        policy,
        stream,
    })
}

/// The question the template gets: the prompt (a string, or a list of one string), or the
/// content of the last `user` message (a string or the concatenated text parts).
pub fn question(kind: Kind, body: &Map<String, Value>) -> Result<String, ApiError> {
    match kind {
        Kind::Completions => match body.get("prompt") {
            Some(Value::String(s)) => Ok(s.clone()),
            Some(Value::Array(items)) if items.len() == 1 && items[0].is_string() => {
                Ok(items[0].as_str().unwrap_or_default().to_string())
            }
            Some(Value::Array(items)) if items.iter().all(Value::is_string) => {
                Err(ApiError::invalid(
                    format!(
                        "`prompt` holds {} prompts; the gateway scores one prompt per request",
                        items.len()
                    ),
                    Some("prompt"),
                ))
            }
            None => Err(ApiError::invalid("`prompt` is required", Some("prompt"))),
            Some(_) => Err(ApiError::invalid(
                "`prompt` must be a string (token-id prompts cannot be embedded as text)",
                Some("prompt"),
            )),
        },
        Kind::Chat => {
            let messages = body
                .get("messages")
                .and_then(Value::as_array)
                .ok_or_else(|| ApiError::invalid("`messages` must be a list", Some("messages")))?;
            let last_user = messages
                .iter()
                .rev()
                .find(|m| m.get("role").and_then(Value::as_str) == Some("user"));
            Ok(last_user
                .map(|m| content_text(m.get("content")))
                .unwrap_or_default())
        }
    }
}

/// A message content as text: a string, or the `text` of its parts joined.
fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| match p {
                Value::String(s) => Some(s.as_str()),
                _ => p.get("text").and_then(Value::as_str),
            })
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// The text of one choice: `text` (completions) or `message.content` (chat; null = "").
fn choice_text(kind: Kind, choice: &Value) -> Option<String> {
    match kind {
        Kind::Completions => choice
            .get("text")
            .and_then(Value::as_str)
            .map(str::to_string),
        Kind::Chat => {
            let msg = choice.get("message")?;
            Some(content_text(msg.get("content")))
        }
    }
}

/// `POST /v1/completions`.
pub(crate) async fn completions(State(st): State<Arc<AppState>>, body: Bytes) -> Response {
    handle(st, body, Kind::Completions).await
}

/// `POST /v1/chat/completions`.
pub(crate) async fn chat(State(st): State<Arc<AppState>>, body: Bytes) -> Response {
    handle(st, body, Kind::Chat).await
}

async fn handle(st: Arc<AppState>, body: Bytes, kind: Kind) -> Response {
    match run(&st, &body, kind).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

/// Maps an upstream failure to the client's error (and counts it).
pub(crate) fn upstream_failure(
    st: &AppState,
    up: &Upstream,
    e: UpstreamError,
    stage: &str,
    limit: Duration,
) -> ApiError {
    up.count(&st.metrics, &e);
    match e.failure {
        Failure::Status {
            status,
            message,
            kind,
            param,
        } => ApiError {
            status: StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST),
            kind: kind.unwrap_or_else(|| "invalid_request_error".into()),
            message,
            param,
            code: None,
        },
        Failure::Timeout => ApiError::timeout(stage, limit, &e.url),
        _ => ApiError::upstream(e.describe()),
    }
}

fn stage_timeout(st: &AppState, up: &Upstream, stage: &str, limit: Duration) -> ApiError {
    st.metrics.upstream_error(up.role.label(), "timeout");
    ApiError::timeout(stage, limit, up.base())
}

struct Candidate {
    choice: Value,
    text: String,
}

async fn run(st: &Arc<AppState>, body: &[u8], kind: Kind) -> Result<Response, ApiError> {
    let t0 = Instant::now();
    let loaded = st.loaded.load_full();
    let mut req = json_object(body)?;
    let params = parse_params(&req, st.config.max_best_of, st.config.alpha)?;
    for key in ["best_of", "alpha", "policy"] {
        req.remove(key);
    }
    if params.stream {
        return proxy_stream(st, kind, req).await;
    }
    let question = question(kind, &req)?;

    // Generation.
    let gen_limit = st.config.generation_timeout;
    let up = &st.generation;
    let t_gen = Instant::now();
    let (responses, candidates) =
        match tokio::time::timeout(gen_limit, generate(up, kind, &req, params.best_of)).await {
            Err(_) => return Err(stage_timeout(st, up, "generation", gen_limit)),
            Ok(Err(e)) => return Err(upstream_failure(st, up, e, "generation", gen_limit)),
            Ok(Ok(r)) => r,
        };
    let generation_s = t_gen.elapsed().as_secs_f64();
    st.metrics.stage("generation", generation_s);
    if candidates.len() < params.best_of {
        st.metrics.upstream_error("generation", "fewer_candidates");
        return Err(ApiError::upstream(format!(
            "generation upstream {} returned {} of {} candidates",
            up.url(kind.path()),
            candidates.len(),
            params.best_of
        )));
    }

    // Embedding.
    let texts: Vec<String> = candidates
        .iter()
        .map(|c| loaded.projection.render(&question, &c.text))
        .collect();
    let emb_limit = st.config.embedding_timeout;
    let eu = &st.embeddings;
    let t_emb = Instant::now();
    let embedded = match tokio::time::timeout(
        emb_limit,
        eu.embed(&st.config.embeddings_model, &texts),
    )
    .await
    {
        Err(_) => return Err(stage_timeout(st, eu, "embedding", emb_limit)),
        Ok(Err(e)) => return Err(upstream_failure(st, eu, e, "embedding", emb_limit)),
        Ok(Ok((v, _usage))) => v,
    };
    let embedding_s = t_emb.elapsed().as_secs_f64();
    st.metrics.stage("embedding", embedding_s);

    // Selection, off the runtime's threads.
    let (alpha, policy) = (params.alpha, params.policy);
    let sel_loaded = Arc::clone(&loaded);
    let scored = tokio::task::spawn_blocking(move || score(&sel_loaded, &embedded, alpha, policy))
        .await
        .map_err(|e| ApiError::internal(format!("selection task failed: {e}")))?;
    let (selection, selection_us) = match scored {
        Ok(s) => s,
        Err(Scoring::Width(msg)) => {
            st.metrics.upstream_error("embeddings", "garbage");
            return Err(ApiError::upstream(format!(
                "embeddings upstream {}: {msg}",
                eu.url("/v1/embeddings")
            )));
        }
        Err(Scoring::Model(msg)) => return Err(ApiError::internal(msg)),
    };
    st.metrics.stage("selection", selection_us / 1e6);

    // The answer.
    let ranked = rank(&selection);
    let mut out = match responses.first() {
        Some(Value::Object(m)) => m.clone(),
        _ => Map::new(),
    };
    let figures = |k: usize| {
        let c = &selection.candidates[k];
        (
            c.interval.reward,
            c.interval.se,
            c.interval.lower,
            c.interval.upper,
            c.score,
        )
    };
    let choices: Vec<Value> = ranked
        .iter()
        .take(params.n)
        .enumerate()
        .map(|(rank, &k)| {
            let mut c = candidates[k].choice.clone();
            let (reward, se, lower, upper, _) = figures(k);
            if let Value::Object(m) = &mut c {
                m.insert("index".into(), json!(rank));
                m.insert("reward".into(), json!(reward));
                m.insert("se".into(), json!(se));
                m.insert("lower".into(), json!(lower));
                m.insert("upper".into(), json!(upper));
            }
            c
        })
        .collect();
    let audit: Vec<Value> = candidates
        .iter()
        .enumerate()
        .map(|(k, c)| {
            let (reward, se, lower, upper, score) = figures(k);
            json!({
                "index": k,
                "text": c.text,
                "finish_reason": c.choice.get("finish_reason").cloned().unwrap_or(Value::Null),
                "reward": reward, "se": se, "lower": lower, "upper": upper, "score": score,
            })
        })
        .collect();
    out.insert("choices".into(), Value::Array(choices));
    if let Some(usage) = sum_usage(&responses) {
        out.insert("usage".into(), usage);
    }
    out.insert(
        "hetreward".into(),
        json!({
            "policy": policy.name(),
            "alpha": alpha,
            "interval_method": loaded.interval_method,
            "chosen": ranked.iter().take(params.n).collect::<Vec<_>>(),
            "candidates": audit,
            "timings": {
                "generation_ms": generation_s * 1e3,
                "embedding_ms": embedding_s * 1e3,
                "selection_us": selection_us,
                "total_ms": t0.elapsed().as_secs_f64() * 1e3,
            },
        }),
    );
    Ok(axum::Json(Value::Object(out)).into_response())
}

/// Candidate indices best first: by score descending, ties to the lower index (so the first
/// is `select`'s choice).
fn rank(selection: &hetreward::select::Selection) -> Vec<usize> {
    let mut order: Vec<usize> = (0..selection.candidates.len()).collect();
    order.sort_by(|&a, &b| {
        let (sa, sb) = (selection.candidates[a].score, selection.candidates[b].score);
        sb.total_cmp(&sa).then(a.cmp(&b))
    });
    debug_assert_eq!(order.first(), Some(&selection.index));
    order
}

enum Scoring {
    /// The embeddings do not fit the projection (an upstream fault).
    Width(String),
    /// The model refused the features.
    Model(String),
}

/// Projects every embedding and runs `hetreward::select::select` on the f32 rows; returns the
/// selection and its time in microseconds (projection included).
fn score(
    loaded: &Loaded,
    embedded: &[Vec<f32>],
    alpha: f64,
    policy: Policy,
) -> Result<(hetreward::select::Selection, f64), Scoring> {
    let t = Instant::now();
    let mut phis = Vec::with_capacity(embedded.len() * loaded.projection.dim_out());
    for e in embedded {
        loaded
            .projection
            .apply_into(e, &mut phis)
            .map_err(Scoring::Width)?;
    }
    let selection = hetreward::select::select(&loaded.model, &phis, None, alpha, policy)
        .map_err(|e| Scoring::Model(format!("scoring failed: {e}")))?;
    Ok((selection, t.elapsed().as_secs_f64() * 1e6))
}

/// The usage of every upstream answer, summed field by field (one answer: as reported).
fn sum_usage(responses: &[Value]) -> Option<Value> {
    let mut usages = responses.iter().filter_map(|r| r.get("usage"));
    let first = usages.next()?.clone();
    let mut total = match first {
        Value::Object(m) => m,
        other => return Some(other),
    };
    for u in usages {
        if let Value::Object(m) = u {
            for (k, v) in m {
                if let (Some(a), Some(b)) = (total.get(k).and_then(Value::as_u64), v.as_u64()) {
                    total.insert(k.clone(), json!(a + b));
                }
            }
        }
    }
    Some(Value::Object(total))
}

/// The choices of one upstream answer, in their `index` order.
fn choices_of(kind: Kind, answer: &Value) -> Result<Vec<Candidate>, String> {
    let list = answer
        .get("choices")
        .and_then(Value::as_array)
        .ok_or("no `choices` list in the answer")?;
    let mut out = Vec::with_capacity(list.len());
    for (pos, c) in list.iter().enumerate() {
        let text = choice_text(kind, c).ok_or_else(|| match kind {
            Kind::Completions => format!("choices[{pos}] has no `text`"),
            Kind::Chat => format!("choices[{pos}] has no `message`"),
        })?;
        out.push((
            c.get("index").and_then(Value::as_u64).unwrap_or(pos as u64),
            Candidate {
                choice: c.clone(),
                text,
            },
        ));
    }
    out.sort_by_key(|(i, _)| *i);
    Ok(out.into_iter().map(|(_, c)| c).collect())
}

/// `best_of` candidates: one request with `n = best_of`; when the upstream answers fewer (or
/// is known to ignore `n`), the rest by parallel requests without `n` (the k-th extra with
/// `seed + k` when the client sent a seed). Returns every upstream answer and the candidates
/// in generation order.
async fn generate(
    up: &Upstream,
    kind: Kind,
    req: &Map<String, Value>,
    best_of: usize,
) -> Result<(Vec<Value>, Vec<Candidate>), UpstreamError> {
    let path = kind.path();
    let garbage = |d: String| UpstreamError {
        role: up.role,
        url: up.url(path),
        failure: Failure::Garbage(d),
    };
    let seed = req.get("seed").and_then(Value::as_i64);
    let single = |k: usize| {
        let mut b = req.clone();
        b.remove("n");
        if let (Some(s), true) = (seed, k > 0) {
            b.insert("seed".into(), json!(s.wrapping_add(k as i64)));
        }
        Value::Object(b)
    };
    let mut responses = Vec::new();
    let mut candidates = Vec::new();
    let have = if up.ignores_n() && best_of > 1 {
        0
    } else {
        let mut b = req.clone();
        b.insert("n".into(), json!(best_of));
        let answer = up.post_json(path, &Value::Object(b)).await?;
        let mut got = choices_of(kind, &answer).map_err(garbage)?;
        got.truncate(best_of);
        let have = got.len();
        candidates.extend(got);
        responses.push(answer);
        if have < best_of && have > 0 {
            up.set_ignores_n();
        }
        if have == 0 {
            return Ok((responses, candidates));
        }
        have
    };
    if have < best_of {
        let extra = (have..best_of).map(|k| {
            let body = single(k);
            async move { up.post_json(path, &body).await }
        });
        let answers = futures_util::future::try_join_all(extra).await?;
        for answer in answers {
            let mut got = choices_of(kind, &answer).map_err(garbage)?;
            got.truncate(1);
            candidates.extend(got);
            responses.push(answer);
        }
    }
    Ok((responses, candidates))
}

/// `stream: true` without best_of: the request passed to the upstream unchanged and its
/// answer streamed back as it comes (unscored).
async fn proxy_stream(
    st: &Arc<AppState>,
    kind: Kind,
    req: Map<String, Value>,
) -> Result<Response, ApiError> {
    let up = &st.generation;
    let limit = st.config.generation_timeout;
    let sent = tokio::time::timeout(limit, up.post_stream(kind.path(), &Value::Object(req))).await;
    let resp = match sent {
        Err(_) => return Err(stage_timeout(st, up, "generation", limit)),
        Ok(Err(e)) => return Err(upstream_failure(st, up, e, "generation", limit)),
        Ok(Ok(r)) => r,
    };
    let status = StatusCode::from_u16(resp.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
    let ctype = resp
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("text/event-stream")
        .to_string();
    Ok(Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, ctype)
        .body(Body::from_stream(resp.bytes_stream()))
        .unwrap_or_else(|_| StatusCode::BAD_GATEWAY.into_response()))
}
