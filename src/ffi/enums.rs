//! The C side of the option enums (issue 12): each `hetreward_*` enum type and its
//! `HETREWARD_*` constants, tied to the library's one definition (the `coded_enum!` sets of
//! [`crate::codes`]).
//!
//! The constants are written as literals because cbindgen reads them from the source (it does
//! not expand macros); `c_codes!` checks at compile time that every variant of the library
//! enum has its constant and that the two codes agree, so a renumbering or a new variant
//! without its constant does not build. Values are ABI: never change one.

use crate::calibrate::IntervalMethod;
use crate::codes::Coded;
use crate::error::{Error, Result};
use crate::fit::{InitKind, SolverKind, Termination};
use crate::inference::CovarianceKind;
use crate::select::{DiffMethod, Policy, Verdict};

/// Which algorithm fits the model: one of the HETREWARD_SOLVER_* values.
#[allow(non_camel_case_types)]
pub type hetreward_solver = u32;
/// Damped Newton / Fisher scoring with line search and multi-start (the default; fast).
pub const HETREWARD_SOLVER_NEWTON: hetreward_solver = 0;
/// The paper's Algorithm 1: alternating gradient descent with step sizes eta1, eta2.
pub const HETREWARD_SOLVER_AGD: hetreward_solver = 1;

/// Where the solver starts: one of the HETREWARD_INIT_* values.
#[allow(non_camel_case_types)]
pub type hetreward_init = u32;
/// theta from the homogeneous fit (gamma held at 0, a convex problem), gamma = 0 (the default).
pub const HETREWARD_INIT_DEFAULT: hetreward_init = 0;
/// The paper's start: every coefficient drawn from U(-1, 1) with the params' seed.
pub const HETREWARD_INIT_RANDOM: hetreward_init = 1;
/// Explicit starting values from the params' theta0 / gamma0 arrays.
pub const HETREWARD_INIT_EXPLICIT: hetreward_init = 2;

/// Which covariance the standard errors come from: one of the HETREWARD_COVARIANCE_* values.
#[allow(non_camel_case_types)]
pub type hetreward_covariance = u32;
/// Inverse expected (Fisher) information: the paper's S_theta^2, S_gamma^2 (the default).
pub const HETREWARD_COVARIANCE_EXPECTED: hetreward_covariance = 0;
/// Inverse observed Hessian of the mean negative log-likelihood.
pub const HETREWARD_COVARIANCE_OBSERVED: hetreward_covariance = 1;
/// Sandwich H^-1 B H^-1 with per-sample scores (robust to misspecification).
pub const HETREWARD_COVARIANCE_ROBUST: hetreward_covariance = 2;
/// Sandwich with scores summed per cluster (annotator); the dataset needs cluster ids.
pub const HETREWARD_COVARIANCE_CLUSTER: hetreward_covariance = 3;

/// How a model's confidence intervals are computed: one of the HETREWARD_INTERVALS_* values.
#[allow(non_camel_case_types)]
pub type hetreward_intervals = u32;
/// The paper's Wald intervals from the information matrix (the default).
pub const HETREWARD_INTERVALS_WALD: hetreward_intervals = 0;
/// Parametric bootstrap, percentile intervals (small samples; B default 400).
pub const HETREWARD_INTERVALS_BOOTSTRAP: hetreward_intervals = 1;
/// Adaptively resized parametric bootstrap (high dimension, d1/n of a few percent; B default
/// 100).
pub const HETREWARD_INTERVALS_RESIZED: hetreward_intervals = 2;
/// Picked at fit time: with cluster (annotator) ids in the dataset the one-step cluster
/// jackknife, else Wald, bootstrap or resized from d1/n and n per parameter; the model says
/// which (hetreward_model_intervals()).
pub const HETREWARD_INTERVALS_AUTO: hetreward_intervals = 3;
/// Cluster jackknife (CV3): refits leaving out each cluster (annotator), t(G-1) quantiles; the
/// dataset needs cluster ids.
pub const HETREWARD_INTERVALS_CLUSTER_JACKKNIFE: hetreward_intervals = 4;
/// One-step cluster jackknife: CV3 with each refit replaced by one Newton step (no refits),
/// t(G-1) quantiles; the dataset needs cluster ids.
pub const HETREWARD_INTERVALS_CLUSTER_ONESTEP: hetreward_intervals = 5;

/// Why the solver stopped: one of the HETREWARD_TERMINATION_* values.
#[allow(non_camel_case_types)]
pub type hetreward_termination = u32;
/// The gradient norm met the tolerance.
pub const HETREWARD_TERMINATION_CONVERGED: hetreward_termination = 0;
/// The iteration cap was reached first.
pub const HETREWARD_TERMINATION_MAX_ITERATIONS: hetreward_termination = 1;
/// The line search could not decrease the objective (numerical floor, or separable data).
pub const HETREWARD_TERMINATION_STALLED: hetreward_termination = 2;
/// The estimate runs off to infinity: parameters or objective became non-finite, or the data
/// are completely separated (mean NLL below 1e-6 at a vanishing gradient: the MLE is at
/// infinity, the SEs are meaningless).
pub const HETREWARD_TERMINATION_DIVERGED: hetreward_termination = 3;

/// How the variance of a reward difference is computed: one of HETREWARD_DIFF_*.
#[allow(non_camel_case_types)]
pub type hetreward_diff_method = u32;
/// (phi0 - phi1)^T S (phi0 - phi1) / n: both rewards share theta_hat (the default, exact).
pub const HETREWARD_DIFF_EXACT: hetreward_diff_method = 0;
/// (phi0^T S phi0 + phi1^T S phi1) / n: the paper's formula (as if independent).
pub const HETREWARD_DIFF_INDEPENDENT: hetreward_diff_method = 1;
/// (sqrt(phi0^T S phi0) + sqrt(phi1^T S phi1))^2 / n: the paper's upper bound.
pub const HETREWARD_DIFF_BOUND: hetreward_diff_method = 2;

/// Verdict of a comparison of a0 with a1 at level alpha: one of HETREWARD_VERDICT_*.
#[allow(non_camel_case_types)]
pub type hetreward_verdict = u32;
/// The CI contains 0: no significant difference.
pub const HETREWARD_VERDICT_TIE: hetreward_verdict = 0;
/// The CI of r(a0) - r(a1) lies above 0: a0 is significantly better.
pub const HETREWARD_VERDICT_WIN: hetreward_verdict = 1;
/// The CI lies below 0: a1 is significantly better.
pub const HETREWARD_VERDICT_LOSS: hetreward_verdict = 2;

/// The selection rule of hetreward_model_select(): one of HETREWARD_POLICY_*.
#[allow(non_camel_case_types)]
pub type hetreward_policy = u32;
/// Best-of-N: maximise reward - penalty.
pub const HETREWARD_POLICY_BON: hetreward_policy = 0;
/// Pessimistic Best-of-N: maximise lower - penalty (lower = reward - q_{1-alpha/2} se).
pub const HETREWARD_POLICY_PBON: hetreward_policy = 1;

/// Checks at compile time that the C constants of a library enum are complete (the match is
/// exhaustive) and carry the library's codes.
macro_rules! c_codes {
    ($enum:ident { $($variant:ident = $c:ident),+ $(,)? }) => {
        const _: () = {
            const fn c_code(v: $enum) -> u32 {
                match v {
                    $( $enum::$variant => $c, )+
                }
            }
            $( assert!(c_code($enum::$variant) == $enum::$variant.code()); )+
        };
    };
}

c_codes!(SolverKind {
    Newton = HETREWARD_SOLVER_NEWTON,
    Agd = HETREWARD_SOLVER_AGD,
});
c_codes!(InitKind {
    Default = HETREWARD_INIT_DEFAULT,
    Random = HETREWARD_INIT_RANDOM,
    Explicit = HETREWARD_INIT_EXPLICIT,
});
c_codes!(CovarianceKind {
    Expected = HETREWARD_COVARIANCE_EXPECTED,
    Observed = HETREWARD_COVARIANCE_OBSERVED,
    Robust = HETREWARD_COVARIANCE_ROBUST,
    Cluster = HETREWARD_COVARIANCE_CLUSTER,
});
c_codes!(IntervalMethod {
    Wald = HETREWARD_INTERVALS_WALD,
    Bootstrap = HETREWARD_INTERVALS_BOOTSTRAP,
    Resized = HETREWARD_INTERVALS_RESIZED,
    Auto = HETREWARD_INTERVALS_AUTO,
    ClusterJackknife = HETREWARD_INTERVALS_CLUSTER_JACKKNIFE,
    ClusterOneStep = HETREWARD_INTERVALS_CLUSTER_ONESTEP,
});
c_codes!(Termination {
    Converged = HETREWARD_TERMINATION_CONVERGED,
    MaxIterations = HETREWARD_TERMINATION_MAX_ITERATIONS,
    Stalled = HETREWARD_TERMINATION_STALLED,
    Diverged = HETREWARD_TERMINATION_DIVERGED,
});
c_codes!(DiffMethod {
    Exact = HETREWARD_DIFF_EXACT,
    Independent = HETREWARD_DIFF_INDEPENDENT,
    Bound = HETREWARD_DIFF_BOUND,
});
c_codes!(Verdict {
    Win = HETREWARD_VERDICT_WIN,
    Loss = HETREWARD_VERDICT_LOSS,
    Tie = HETREWARD_VERDICT_TIE,
});
c_codes!(Policy {
    Bon = HETREWARD_POLICY_BON,
    Pbon = HETREWARD_POLICY_PBON,
});

/// The library value of a C code, or `invalid `<arg>`: unknown value 7 (expected one of
/// HETREWARD_SOLVER_*)` naming the argument and the constants' family.
pub(crate) fn from_c<T: Coded>(arg: &str, code: u32, family: &str) -> Result<T> {
    T::from_code(code).ok_or_else(|| {
        Error::invalid(
            arg,
            format!("unknown value {code} (expected one of {family})"),
        )
    })
}
