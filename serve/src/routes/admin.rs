//! `GET /health`, `GET /v1/models` (the upstream's, passed through), `GET /metrics`,
//! `POST /admin/reload`.

use crate::error::ApiError;
use crate::state::AppState;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use std::sync::Arc;

/// Ready when the model is loaded and both upstreams answer a probe within the probe timeout.
pub(crate) async fn health(State(st): State<Arc<AppState>>) -> Response {
    let t = st.config.probe_timeout;
    let (g, e) = tokio::join!(st.generation.probe(t), st.embeddings.probe(t));
    let loaded = st.loaded.load();
    let model = loaded.model_path.display().to_string();
    let describe = |r: &Result<(), crate::upstream::UpstreamError>| match r {
        Ok(()) => "ok".to_string(),
        Err(e) => e.describe(),
    };
    let upstreams = json!({
        "generation": {"url": st.generation.base(), "status": describe(&g)},
        "embeddings": {"url": st.embeddings.base(), "status": describe(&e)},
    });
    match (&g, &e) {
        (Ok(()), Ok(())) => (
            StatusCode::OK,
            axum::Json(json!({"status": "ok", "model": model, "upstreams": upstreams})),
        )
            .into_response(),
        _ => {
            let reason = [g.err(), e.err()]
                .into_iter()
                .flatten()
                .map(|e| e.describe())
                .collect::<Vec<_>>()
                .join("; ");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                axum::Json(
                    json!({"status": "unavailable", "reason": reason, "model": model,
                                  "upstreams": upstreams}),
                ),
            )
                .into_response()
        }
    }
}

/// The generation upstream's `/v1/models`, status and body as they came.
pub(crate) async fn models(State(st): State<Arc<AppState>>) -> Response {
    let up = &st.generation;
    match up
        .get_raw(
            "/v1/models",
            st.config
                .probe_timeout
                .max(std::time::Duration::from_secs(10)),
        )
        .await
    {
        Ok((status, body)) => (
            StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY),
            [(header::CONTENT_TYPE, "application/json")],
            crate::utf8::repair(&body).into_owned(),
        )
            .into_response(),
        Err(e) => {
            up.count(&st.metrics, &e);
            ApiError::upstream(e.describe()).into_response()
        }
    }
}

/// The Prometheus text exposition.
pub(crate) async fn metrics(State(st): State<Arc<AppState>>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        st.metrics.encode(),
    )
        .into_response()
}

/// Reloads model + projection; 200 with the new figures, or 500 with the reason (old kept).
pub(crate) async fn reload(State(st): State<Arc<AppState>>) -> Response {
    match st.reload().await {
        Ok(figures) => (
            StatusCode::OK,
            axum::Json(json!({"status": "reloaded", "loaded": figures})),
        )
            .into_response(),
        Err(reason) => {
            ApiError::internal(format!("reload failed, the old model is kept: {reason}"))
                .into_response()
        }
    }
}
