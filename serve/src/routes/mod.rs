//! The HTTP routes, one module per family.

pub(crate) mod admin;
pub mod completions;
pub mod request;
pub mod rerank;
