//! # hetreward
//!
//! Reward learning from heterogeneous human preference data, with uncertainty quantification
//! (the method of "Uncertainty Quantification for Large Language Model Reward Learning under
//! Heterogeneous Human Feedback"; the contract is `docs/contract.md`).
//!
//! An annotator with profile `x` compares two answers whose feature difference is `z`; their
//! rationality `sigma(x) = psi0(x) + gamma . psi(x)` scales the reward difference `theta . z`
//! in a logistic model. The crate fits `(theta, gamma)` by maximum likelihood, derives standard
//! errors from the information matrix, and turns them into reward confidence intervals,
//! reward-difference tests and (pessimistic) Best-of-N selection.
//!
//! ## The public Rust API
//!
//! The crate is first a C-ABI library (`include/hetreward.h`, generated from the private
//! `ffi` module: the C ABI is not part of the Rust API); the same operations are a Rust API,
//! used by the `hetreward` program (the `cli/` workspace member) exactly as any dependant
//! would use it. Everything else is `pub(crate)`:
//!
//! | module | what a user takes from it |
//! |---|---|
//! | [`data`] | [`Dataset`]: the validated training set (`Dataset::new`, or read with [`io::training`]) |
//! | [`fit`] | [`fit::FitOptions`] (documented defaults), [`fit::FitControl`] (progress, cancel), [`fit::FitReport`], [`fit::SolverKind`], [`fit::Init`], [`fit::Termination`] |
//! | [`covariance`] | [`covariance::CovarianceKind`]: expected, observed, robust, cluster |
//! | [`calibrate`] | [`calibrate::IntervalOptions`], [`calibrate::IntervalMethod`]: Wald, parametric bootstrap, resized bootstrap, auto |
//! | [`estimator`] | [`estimator::EstimatorOptions`] (fit, covariance, intervals, require_converged) checked once into an [`estimator::Estimator`]: the pipeline fit -> covariance -> calibrate -> model (also `RewardModel::estimate`) |
//! | [`fitted`] | [`RewardModel`]: estimates, SEs, reward CIs, rationality; [`RewardInterval`] |
//! | [`coefficients`] | [`coefficients::CoefficientTable`]: estimate, SE, z, p and CI per coefficient under the model's interval method |
//! | [`select`] | reward differences with verdicts, win rates, BoN / pBoN ([`select::compare`], [`select::select`], [`select::select_best`]) |
//! | [`io`] | training and scoring files (CSV, safetensors), the model file ([`io::model_file`]), atomic outputs ([`io::atomic`]) |
//! | [`codes`] | the stable codes and names of every option enum ([`codes::Coded`]): C constants, model-file bytes, command-line names |
//! | [`error`] | [`Error`] (one variant per C status) and [`Result`] |
//! | [`model`] | [`Params`] `(theta, gamma)`; [`model::dot`], [`model::sigmoid`] |
//! | [`sim`] | seeded generators (the paper's §6.1 simulation, homogeneous and high-dimensional designs) |
//! | [`stats`], [`parallel`] | normal quantiles and p-values; deterministic parallelism on a caller-sized pool |
//! | [`cluster`] | cluster (annotator) ids and the heterogeneity diagnostic of a fit on them |
//! | [`profile`] | the profile-likelihood interval of one coefficient ([`profile::coefficient_interval`]) |
//!
//! The private modules: `likelihood` (passes over the data: NLL, gradient, information,
//! Hessian, scores), `linalg` (faer's kernels on zero-copy views, checked Cholesky, the packed
//! scoring kernel), `interval` (the one interval rule every consumer asks), `shard` (mergeable
//! per-shard sums, their wire format and the driver-side objective) and `ffi` (the C ABI:
//! argument checks, handles, status codes, the panic boundary). This table and these lines are
//! the one list of the library's modules (`docs/development.md` links here).
//!
//! Not part of the API: the benchmarks in `benches/`, the examples, the integration tests and
//! the fuzz targets reach the kernels and building blocks they measure or study (likelihood,
//! dense algebra, solver tuning, cluster draws, the distributed driver, the C functions the
//! pBoN benchmark calls in process) through one hidden module, `internals`, which lists each
//! item by name.
//!
//! ```
//! use hetreward::{fit::FitOptions, fit::FitControl, covariance::CovarianceKind, RewardModel};
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
// `pub` only where it is reachable: the public API is what the crate root exports (issue 19).
#![warn(unreachable_pub)]

pub mod calibrate;
pub mod cluster;
pub mod codes;
pub mod coefficients;
pub mod covariance;
pub mod data;
pub mod error;
pub mod estimator;
mod ffi;
pub mod fit;
pub mod fitted;
mod interval;
pub mod io;
mod likelihood;
mod linalg;
pub mod model;
pub mod parallel;
pub mod profile;
mod resample;
mod rng;
pub mod select;
mod shard;
pub mod sim;
pub mod stats;
#[cfg(test)]
mod testing;

/// What the benchmarks (`benches/`), examples, integration tests (`tests/`) and fuzz targets
/// (`fuzz/`) reach beyond the API: kernels they measure, solver settings they vary, building
/// blocks of the interval methods they study, and the C ABI the pBoN benchmark calls in process.
/// Not part of the API: hidden from the documentation, no stability promise. Every item is
/// listed by name, so a new need is a deliberate line here.
#[doc(hidden)]
pub mod internals {
    /// The likelihood kernels (NLL, gradient, information, Hessian-vector products).
    pub mod likelihood {
        pub use crate::likelihood::{
            evaluate, expected_information, hessian_vector, nll_and_gradient, terms, Curvature,
            Evaluation,
        };
        pub use crate::model::SampleTerms;
    }
    /// The dense kernels (faer behind them).
    pub mod linalg {
        pub use crate::linalg::{
            cholesky, gram, gram_f32, has_fma, lower_inverse_in_place, matmul, matmul_f32,
        };
    }
    /// Solver variants and settings, and Newton-CG's counters and preconditioner.
    pub mod fit {
        pub use crate::fit::newton_cg::{CgStats, DataPreconditioner};
        pub use crate::fit::{fit_with, Diagnostics, NewtonVariant, Tuning};
    }
    /// The covariance's factors.
    pub mod covariance {
        pub use crate::covariance::{covariance_factors, CovarianceFactors};
    }
    /// Reward differences without the argument checks.
    pub mod select {
        pub use crate::select::compare_unchecked;
    }
    /// The percentile rule of the bootstrap intervals.
    pub mod calibrate {
        pub use crate::interval::quantile_sorted;
    }
    /// The cluster jackknives' draws.
    pub mod cluster {
        pub use crate::cluster::draws::{jackknife, one_step_deltas, one_step_jackknife};
        pub use crate::cluster::Clusters;
        pub use crate::resample::Draws;
    }
    /// The bounded file readers under `io::training` and `io::scoring`, and the tables built on them.
    pub mod io {
        pub use crate::io::csv_table::CsvTable;
        pub use crate::io::safetensors_table::SafetensorsFile;
        /// The training set from a parsed table.
        pub mod training {
            pub use crate::io::training::{from_csv, from_safetensors};
        }
        /// The scoring inputs from a parsed table.
        pub mod scoring {
            pub use crate::io::scoring::{
                candidates_from_csv, candidates_from_safetensors, pairs_from_csv,
                pairs_from_safetensors, phi_from_csv, phi_from_safetensors,
            };
        }
    }
    /// The driver-side distributed fit and its in-process oracle.
    pub mod shard {
        pub use crate::shard::driver::{
            fit_distributed, DistributedFit, LocalOracle, Oracle, Rounds,
        };
        pub use crate::shard::{Request, ShardStats, ShardSummary};
    }
    /// The C ABI functions the pBoN benchmark calls in process.
    pub mod ffi {
        pub use crate::ffi::enums::HETREWARD_POLICY_PBON;
        pub use crate::ffi::model::{
            hetreward_candidate, hetreward_model, hetreward_model_free,
            hetreward_model_load_buffer, hetreward_model_select, hetreward_reward,
        };
        pub use crate::ffi::status::hetreward_status;
    }
}

pub use data::Dataset;
pub use error::{Error, Result};
pub use fitted::{RewardInterval, RewardModel};
pub use model::Params;

/// The library version, `MAJOR.MINOR.PATCH` (from Cargo.toml).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
