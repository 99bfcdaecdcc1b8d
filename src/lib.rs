//! # hetreward
//!
//! Reward learning from heterogeneous human preference data, with uncertainty quantification
//! (the method of "Uncertainty Quantification for Large Language Model Reward Learning under
//! Heterogeneous Human Feedback"; the contract is `SPEC.md`).
//!
//! An annotator with profile `x` compares two answers whose feature difference is `z`; their
//! rationality `sigma(x) = psi0(x) + gamma . psi(x)` scales the reward difference `theta . z`
//! in a logistic model. The crate fits `(theta, gamma)` by maximum likelihood, derives standard
//! errors from the information matrix, and turns them into reward confidence intervals,
//! reward-difference tests and (pessimistic) Best-of-N selection.
//!
//! ## The public Rust API
//!
//! The crate is first a C-ABI library (`include/hetreward.h`, [`ffi`]); the same operations
//! are a Rust API, used by the `hetreward` program (the `cli/` workspace member) exactly as
//! any dependant would use it:
//!
//! | module | what a user takes from it |
//! |---|---|
//! | [`data`] | [`Dataset`]: the validated training set (`Dataset::new`, or read with [`io::training`]) |
//! | [`fit`] | [`fit::FitOptions`] (documented defaults), [`fit::FitControl`] (progress, cancel), [`fit::FitReport`], [`fit::SolverKind`], [`fit::Init`], [`fit::Termination`] |
//! | [`inference`] | [`inference::CovarianceKind`]: expected, observed, robust, cluster |
//! | [`calibrate`] | [`calibrate::IntervalOptions`], [`calibrate::IntervalMethod`]: Wald, parametric bootstrap, resized bootstrap, auto |
//! | [`estimator`] | [`estimator::estimate`]: the pipeline fit -> covariance -> calibrate -> model (also `RewardModel::estimate`, `estimate_with`) |
//! | [`fitted`] | [`RewardModel`]: estimates, SEs, reward CIs, rationality; [`RewardInterval`] |
//! | [`coefficients`] | [`coefficients::CoefficientTable`]: estimate, SE, z, p and CI per coefficient under the model's interval method |
//! | [`select`] | reward differences with verdicts, win rates, BoN / pBoN ([`select::compare`], [`select::select`], [`select::select_best`]) |
//! | [`shard`] | per-shard sums (mergeable, serialisable) and the driver-side fit over them |
//! | [`io`] | training and scoring files (CSV, safetensors), the model file ([`io::model_file`]), atomic outputs ([`io::atomic`]) |
//! | [`codes`] | the stable codes and names of every option enum ([`codes::Coded`]): C constants, model-file bytes, command-line names |
//! | [`error`] | [`Error`] (one variant per C status) and [`Result`] |
//! | [`model`] | [`Params`] `(theta, gamma)` and the per-sample math: sigma, stable loss, residual, weight |
//! | [`sim`] | seeded generators (the paper's §6.1 simulation, homogeneous and high-dimensional designs) |
//! | [`stats`], [`parallel`] | normal quantiles and p-values; deterministic parallelism on a caller-sized pool |
//! | [`ffi`] | the C ABI: handles, status codes, panic boundary (called from C, not from Rust) |
//!
//! Internal, not part of the API (public only so that the benchmarks in `benches/` and the
//! integration tests can reach the kernels they measure; hidden from the documentation):
//! `likelihood` (NLL, gradient, information, Hessian, scores) and `linalg` (Gram products,
//! Cholesky).
//!
//! ```
//! use hetreward::{fit::FitOptions, fit::FitControl, inference::CovarianceKind, RewardModel};
//! use hetreward::sim::{paper_simulation, ActionDesign};
//!
//! let data = paper_simulation(400, ActionDesign::Uniform, 1);
//! let model = RewardModel::estimate(&data, &FitOptions::default(), CovarianceKind::Expected,
//!                                   &FitControl::default()).unwrap();
//! assert!(model.report().converged);
//! let ci = model.score(&[0.0625, 0.125, 0.125], 0.05).unwrap(); // phi(1/2, 1/4)
//! assert!(ci.lower < ci.reward && ci.reward < ci.upper);
//! ```

#![warn(missing_docs)]

pub mod calibrate;
pub mod cluster;
pub mod codes;
pub mod coefficients;
pub mod data;
pub mod error;
pub mod estimator;
pub mod ffi;
pub mod fit;
pub mod fitted;
pub mod inference;
mod interval;
pub mod io;
#[doc(hidden)]
pub mod likelihood;
#[doc(hidden)]
pub mod linalg;
pub mod model;
pub mod parallel;
pub mod profile;
pub mod select;
pub mod shard;
pub mod sim;
pub mod stats;
#[cfg(test)]
mod testing;

pub use data::Dataset;
pub use error::{Error, Result};
pub use fitted::{RewardInterval, RewardModel};
pub use model::Params;

/// The library version, `MAJOR.MINOR.PATCH` (from Cargo.toml).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
