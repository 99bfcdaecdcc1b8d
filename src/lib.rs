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
//! How it fits together, from the middle out:
//!
//! | module | job |
//! |---|---|
//! | [`data`] | the validated training set |
//! | [`model`] | per-sample math: sigma, stable loss, residual, weight |
//! | [`likelihood`] | passes over the data: NLL, gradient, information, Hessian, scores |
//! | [`fit`] | solvers (`newton` default, `agd` = the paper's Algorithm 1) and their driver |
//! | [`inference`] | covariance kinds: expected, observed, robust, cluster |
//! | [`calibrate`] | interval methods: Wald, parametric bootstrap, resized bootstrap, auto |
//! | [`fitted`] | the immutable [`RewardModel`]: reward SEs and CIs, rationality |
//! | [`select`] | reward differences, win rates, BoN / pBoN |
//! | [`shard`] | per-shard sums (mergeable, serialisable) and the driver-side fit over them |
//! | [`io`] | training/scoring files (CSV, safetensors) and the model file |
//! | [`ffi`] | the C ABI (`include/hetreward.h`): handles, status codes, panic boundary |
//! | [`sim`] | seeded generators (the paper's §6.1 simulation) |
//! | [`linalg`], [`parallel`], [`stats`] | Gram products and Cholesky, deterministic parallelism, normal quantiles |
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
pub mod codes;
pub mod data;
pub mod error;
pub mod ffi;
pub mod fit;
pub mod fitted;
pub mod inference;
pub mod io;
pub mod likelihood;
pub mod linalg;
pub mod model;
pub mod parallel;
pub mod select;
pub mod shard;
pub mod sim;
pub mod stats;

pub use data::Dataset;
pub use error::{Error, Result};
pub use fitted::{RewardInterval, RewardModel};
pub use model::Params;

/// The library version, `MAJOR.MINOR.PATCH` (from Cargo.toml).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
