//! `POST /v1/rerank`, `/rerank` (Jina / Cohere v1 shape) and `/v2/rerank` (Cohere v2): every
//! document scored by the reward model as the answer to the query, ordered by the lower bound
//! (or the reward), with `relevance_score` = the ordering key.

use crate::error::ApiError;
use crate::routes::completions::upstream_failure;
use crate::routes::request::{json_object, opt_alpha, opt_int};
use crate::state::AppState;
use axum::body::Bytes;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Map, Value};
use std::sync::Arc;
use std::time::Instant;

/// What a rerank is ordered by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrderBy {
    /// The lower confidence bound (default).
    Lower,
    /// The point reward.
    Reward,
}

/// A checked rerank request.
#[derive(Debug, Clone, PartialEq)]
pub struct RerankRequest {
    /// The `model` field, echoed.
    pub model: Option<Value>,
    /// The query (the template's `{question}`).
    pub query: String,
    /// The documents' texts (each the template's `{answer}`).
    pub documents: Vec<String>,
    /// How many results to return (all when `None`).
    pub top_n: Option<usize>,
    /// Whether each result carries its document (default true).
    pub return_documents: bool,
    /// The ordering key.
    pub order_by: OrderBy,
    /// The intervals' alpha.
    pub alpha: f64,
}

/// Parses a rerank body (already a JSON object): Jina's and Cohere's v1 and v2 shapes, which
/// share `query`, `documents` (strings, or objects with `text`), `top_n`, `return_documents`.
pub fn parse_rerank(
    body: &Map<String, Value>,
    default_alpha: f64,
) -> Result<RerankRequest, ApiError> {
    let query = match body.get("query") {
        Some(Value::String(q)) => q.clone(),
        Some(v) => {
            return Err(ApiError::invalid(
                format!("`query` must be a string, got {v}"),
                Some("query"),
            ))
        }
        None => return Err(ApiError::invalid("`query` is required", Some("query"))),
    };
    let docs = match body.get("documents") {
        Some(Value::Array(d)) => d,
        Some(_) => {
            return Err(ApiError::invalid(
                "`documents` must be a list",
                Some("documents"),
            ))
        }
        None => {
            return Err(ApiError::invalid(
                "`documents` is required",
                Some("documents"),
            ))
        }
    };
    if docs.is_empty() {
        return Err(ApiError::invalid("`documents` is empty", Some("documents")));
    }
    let mut documents = Vec::with_capacity(docs.len());
    for (i, d) in docs.iter().enumerate() {
        let text = match d {
            Value::String(s) => Some(s.clone()),
            Value::Object(m) => m.get("text").and_then(Value::as_str).map(str::to_string),
            _ => None,
        };
        let field = format!("documents[{i}]");
        documents.push(text.ok_or_else(|| {
            ApiError::invalid(
                format!("`{field}` must be a string or an object with a string `text`"),
                Some(&field),
            )
        })?);
    }
    let top_n = match body.get("top_n") {
        None | Some(Value::Null) => None,
        Some(_) => opt_int(body, "top_n", 1, u64::MAX)?,
    };
    let return_documents = match body.get("return_documents") {
        None | Some(Value::Null) => true,
        Some(Value::Bool(b)) => *b,
        Some(v) => {
            return Err(ApiError::invalid(
                format!("`return_documents` must be a boolean, got {v}"),
                Some("return_documents"),
            ))
        }
    };
    let order_by = match body.get("order_by") {
        None | Some(Value::Null) => OrderBy::Lower,
        Some(Value::String(s)) if s == "lower" => OrderBy::Lower,
        Some(Value::String(s)) if s == "reward" => OrderBy::Reward,
        Some(v) => {
            return Err(ApiError::invalid(
                format!("`order_by` must be \"lower\" or \"reward\", got {v}"),
                Some("order_by"),
            ))
        }
    };
    let alpha = opt_alpha(body, default_alpha)?;
    Ok(RerankRequest {
        model: body.get("model").cloned(),
        query,
        documents,
        top_n,
        return_documents,
        order_by,
        alpha,
    })
}

/// `POST /v1/rerank`, `/rerank`, `/v2/rerank`.
pub(crate) async fn rerank(State(st): State<Arc<AppState>>, body: Bytes) -> Response {
    match run(&st, &body).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

async fn run(st: &Arc<AppState>, body: &[u8]) -> Result<Response, ApiError> {
    let t0 = Instant::now();
    let loaded = st.loaded.load_full();
    let req = parse_rerank(&json_object(body)?, st.config.alpha)?;
    let texts: Vec<String> = req
        .documents
        .iter()
        .map(|d| loaded.projection.render(&req.query, d))
        .collect();
    let limit = st.config.embedding_timeout;
    let eu = &st.embeddings;
    let t_emb = Instant::now();
    let (embedded, usage) =
        match tokio::time::timeout(limit, eu.embed(&st.config.embeddings_model, &texts)).await {
            Err(_) => {
                st.metrics.upstream_error(eu.role.label(), "timeout");
                return Err(ApiError::timeout("embedding", limit, eu.base()));
            }
            Ok(Err(e)) => return Err(upstream_failure(st, eu, e, "embedding", limit)),
            Ok(Ok(r)) => r,
        };
    let embedding_s = t_emb.elapsed().as_secs_f64();
    st.metrics.stage("embedding", embedding_s);
    let alpha = req.alpha;
    let l2 = Arc::clone(&loaded);
    let scored = tokio::task::spawn_blocking(move || {
        let t = Instant::now();
        let mut phis = Vec::new();
        for e in &embedded {
            l2.projection
                .apply_into(e, &mut phis)
                .map_err(|m| ApiError::upstream(format!("embeddings upstream: {m}")))?;
        }
        let intervals = l2
            .model
            .score_batch(&phis, alpha)
            .map_err(|e| ApiError::internal(format!("scoring failed: {e}")))?;
        Ok::<_, ApiError>((intervals, t.elapsed().as_secs_f64() * 1e6))
    })
    .await
    .map_err(|e| ApiError::internal(format!("scoring task failed: {e}")))??;
    let (intervals, scoring_us) = scored;
    st.metrics.stage("selection", scoring_us / 1e6);
    let key = |i: usize| match req.order_by {
        OrderBy::Lower => intervals[i].lower,
        OrderBy::Reward => intervals[i].reward,
    };
    let mut order: Vec<usize> = (0..intervals.len()).collect();
    order.sort_by(|&a, &b| key(b).total_cmp(&key(a)).then(a.cmp(&b)));
    order.truncate(req.top_n.unwrap_or(order.len()));
    let results: Vec<Value> = order
        .iter()
        .map(|&i| {
            let r = &intervals[i];
            let mut m = json!({
                "index": i, "relevance_score": key(i),
                "reward": r.reward, "se": r.se, "lower": r.lower, "upper": r.upper,
            });
            if req.return_documents {
                m["document"] = json!({"text": req.documents[i]});
            }
            m
        })
        .collect();
    let total_tokens = usage
        .as_ref()
        .and_then(|u| u.get("total_tokens").or_else(|| u.get("prompt_tokens")))
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let order_name = match req.order_by {
        OrderBy::Lower => "lower",
        OrderBy::Reward => "reward",
    };
    Ok(axum::Json(json!({
        "id": format!("rerank-{}", st.next_id()),
        "model": req.model.unwrap_or(Value::Null),
        "object": "list",
        "results": results,
        "usage": {"total_tokens": total_tokens},
        "hetreward": {
            "alpha": alpha,
            "order_by": order_name,
            "interval_method": loaded.interval_method,
            "timings": {
                "embedding_ms": embedding_s * 1e3,
                "selection_us": scoring_us,
                "total_ms": t0.elapsed().as_secs_f64() * 1e3,
            },
        },
    }))
    .into_response())
}
