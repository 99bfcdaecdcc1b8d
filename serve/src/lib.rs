//! `hetreward serve`: an OpenAI-compatible gateway that answers `best_of` by
//! pessimistic Best-of-N in front of any OpenAI-compatible generation server (llama-server,
//! vLLM, SGLang, a hosted API) and any `/v1/embeddings` server.
//!
//! For each request it asks the generation upstream for `best_of` candidates (one request
//! with `n`; parallel requests when the upstream ignores `n`), embeds them all in one batch
//! as the model's projection template names, maps the embeddings to features with the
//! projection (`MODEL.projection.safetensors`), and ranks the candidates with
//! [`hetreward::select::select`] by the lower confidence bound of their reward. It also
//! serves reranking (`/v1/rerank`), `/health`, `/metrics` and `/admin/reload`. The routes,
//! fields and rules are in docs/serve.md.
//!
//! The public API: [`Config`], [`run`] (what the CLI calls), [`start`] and [`Gateway`] (an
//! in-process gateway, for tests and embedding), and [`internals`] (the request parsers,
//! exposed for the tests only).
#![warn(missing_docs)]

mod config;
mod error;
mod metrics;
mod projection;
mod routes;
mod server;
mod state;
mod upstream;
mod utf8;

pub use config::{default_projection, Config, EMBEDDINGS_KEY_ENV, UPSTREAM_KEY_ENV};
pub use server::{run, start, Gateway, StartError};

/// Pieces exposed for the crate's integration tests; not a stable API.
#[doc(hidden)]
pub mod internals {
    pub use crate::error::ApiError;
    pub use crate::projection::{Projection, FORMAT};
    pub use crate::routes::completions::{parse_params, question, Kind, Params};
    pub use crate::routes::request::json_object;
    pub use crate::routes::rerank::{parse_rerank, OrderBy, RerankRequest};
    pub use crate::upstream::parse_embeddings;
    pub use crate::utf8::{invalid_field, repair};
}
