//! OpenAI-style error responses: `{"error": {"message", "type", "param", "code"}}` with the
//! HTTP status the contract gives each kind (docs/serve.md, "Errors").

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use std::time::Duration;

/// An error answered to the client, in OpenAI's shape.
#[derive(Debug, Clone)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// OpenAI's `type`: `invalid_request_error`, `rate_limit_error`, `upstream_error`, ...
    pub kind: String,
    /// Human-readable message.
    pub message: String,
    /// The request field at fault, if any.
    pub param: Option<String>,
    /// A short machine-readable code, if any.
    pub code: Option<String>,
}

impl ApiError {
    /// 400 `invalid_request_error` about `param` (None when the body as a whole is at fault).
    pub fn invalid(message: impl Into<String>, param: Option<&str>) -> Self {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            kind: "invalid_request_error".into(),
            message: message.into(),
            param: param.map(str::to_string),
            code: None,
        }
    }

    /// 429 `rate_limit_error`: the in-flight bound is reached.
    pub(crate) fn too_many(limit: usize) -> Self {
        ApiError {
            status: StatusCode::TOO_MANY_REQUESTS,
            kind: "rate_limit_error".into(),
            message: format!("too many requests in flight (limit {limit})"),
            param: None,
            code: Some("too_many_requests".into()),
        }
    }

    /// 502 `upstream_error`: an upstream refused, closed, answered garbage or too little.
    pub(crate) fn upstream(message: impl Into<String>) -> Self {
        ApiError {
            status: StatusCode::BAD_GATEWAY,
            kind: "upstream_error".into(),
            message: message.into(),
            param: None,
            code: None,
        }
    }

    /// 504 `timeout_error` naming the stage and its timeout.
    pub(crate) fn timeout(stage: &str, limit: Duration, url: &str) -> Self {
        ApiError {
            status: StatusCode::GATEWAY_TIMEOUT,
            kind: "timeout_error".into(),
            message: format!(
                "{stage} stage timed out after {} s (upstream {url})",
                limit.as_secs_f64()
            ),
            param: None,
            code: Some(format!("{stage}_timeout")),
        }
    }

    /// 500 `server_error` (an internal failure, e.g. the reward model refused the features).
    pub(crate) fn internal(message: impl Into<String>) -> Self {
        ApiError {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            kind: "server_error".into(),
            message: message.into(),
            param: None,
            code: None,
        }
    }

    /// The JSON body.
    pub fn body(&self) -> Value {
        json!({"error": {
            "message": self.message,
            "type": self.kind,
            "param": self.param,
            "code": self.code,
        }})
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, axum::Json(self.body())).into_response()
    }
}

/// The message, type, param and code of an upstream's error body, whatever its dialect:
/// OpenAI / llama-server `{"error": {...}}`, vLLM's `ErrorResponse` (`{"object": "error",
/// "message", "type", "param", "code"}`, or nested under `error` in newer releases), FastAPI's
/// `{"detail": ...}` (SGLang), or plain text.
pub(crate) fn upstream_error_fields(body: &str) -> (String, Option<String>, Option<String>) {
    let text = |v: &Value| match v {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    };
    if let Ok(v) = serde_json::from_str::<Value>(body) {
        let obj = match v.get("error") {
            Some(e @ Value::Object(_)) => e.clone(),
            Some(Value::String(s)) => json!({"message": s}),
            _ => v.clone(),
        };
        let message = obj
            .get("message")
            .or_else(|| obj.get("detail"))
            .and_then(text)
            .unwrap_or_else(|| v.to_string());
        let kind = obj.get("type").and_then(text);
        let param = obj.get("param").and_then(text);
        return (message, kind, param);
    }
    let trimmed: String = body.trim().chars().take(500).collect();
    (trimmed, None, None)
}
