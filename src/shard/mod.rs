//! Shard statistics: every quantity the estimator needs is a sum over samples, so a dataset
//! split into shards (on one machine or across an engine's workers) can be fitted from
//! per-shard partial sums added up on a driver — the way Spark MLlib's logistic regression
//! aggregates a stateless per-partition loss and gradient.
//!
//! * [`ShardSummary`] — the first pass: counts, dimensions, whether cluster ids are present and
//!   a checksum of the schema, so mismatched shards fail before any fitting.
//! * [`Request`] — "give me these sums at these parameters".
//! * [`ShardStats`] — what one shard answers (NLL sum and count, gradient sum, Hessian-vector
//!   products, packed expected information / observed Hessian / score outer products, and
//!   per-cluster score sums keyed by cluster id); [`ShardStats::merge`] adds two answers
//!   (clusters by key), [`ShardStats::to_bytes`] / [`ShardStats::from_bytes`] move them
//!   between processes as versioned, checksummed little-endian bytes.
//! * [`driver`] — the driver-side fit over an [`driver::Oracle`].
//!
//! The per-sample math is [`crate::likelihood`]'s: a shard's sums are its means times its
//! row count. Merging in a fixed order (shard index) makes the result deterministic; a
//! different partitioning changes it only by rounding.

pub(crate) mod driver;
mod stats;
mod wire;

pub(crate) use stats::merge_summaries;
pub(crate) use stats::Section;
pub use stats::{Request, ShardStats, ShardSummary};

#[cfg(test)]
mod tests;
