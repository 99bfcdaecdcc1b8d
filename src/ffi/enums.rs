//! The C side of the option enums: each `hetreward_*` enum type and its
//! `HETREWARD_*` constants, tied to the library's one definition (the `coded_enum!` sets of
//! [`crate::codes`]), and hetreward_option_name() / hetreward_option_at(), which name any code
//! from that definition, so that the bindings build their name tables from the library.
//!
//! The constants are written as literals because cbindgen reads them from the source (it does
//! not expand macros); `c_codes!` (and `c_flags!` for the bit flags of the shard sections)
//! checks at compile time that every variant of the library enum has its constant and that the
//! two codes agree, so a renumbering or a new variant without its constant does not build.
//! Values are ABI: never change one.

use super::status::boundary_value;
use crate::calibrate::IntervalMethod;
use crate::codes::{coded_enum, Coded};
use crate::covariance::CovarianceKind;
use crate::error::{Error, Result};
use crate::fit::{InitKind, SolverKind, Termination};
use crate::select::{DiffMethod, Policy, Verdict};
use crate::shard::Section;
use std::ffi::{c_char, CStr};

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

/// Which rows hetreward_model_coefficients() returns: one of HETREWARD_COEFFICIENTS_*.
#[allow(non_camel_case_types)]
pub type hetreward_coefficients = u32;
/// The d1 reward coefficients theta_j, in order.
pub const HETREWARD_COEFFICIENTS_THETA: hetreward_coefficients = 0;
/// The d2 rationality coefficients gamma_k, in order.
pub const HETREWARD_COEFFICIENTS_GAMMA: hetreward_coefficients = 1;
/// All d1 + d2 rows: theta first, then gamma.
pub const HETREWARD_COEFFICIENTS_ALL: hetreward_coefficients = 2;

/// What hetreward_shard_stats_compute() computes: a bitwise OR of the HETREWARD_SHARD_* values.
#[allow(non_camel_case_types)]
pub type hetreward_shard_sections = u32;
/// The NLL sum and the gradient sum (length d1 + d2, theta first).
pub const HETREWARD_SHARD_VALUE: hetreward_shard_sections = 1;
/// Observed-Hessian-vector products, one per vector given.
pub const HETREWARD_SHARD_OBSERVED_PRODUCTS: hetreward_shard_sections = 2;
/// Expected-information-vector products, one per vector given.
pub const HETREWARD_SHARD_EXPECTED_PRODUCTS: hetreward_shard_sections = 4;
/// The expected (Fisher) information sum, packed lower triangle.
pub const HETREWARD_SHARD_EXPECTED: hetreward_shard_sections = 8;
/// The observed Hessian sum, packed lower triangle.
pub const HETREWARD_SHARD_OBSERVED: hetreward_shard_sections = 16;
/// The per-sample score outer-product sum (the robust covariance's meat), packed.
pub const HETREWARD_SHARD_MEAT: hetreward_shard_sections = 32;
/// The score sums per cluster id (the shard needs cluster ids).
pub const HETREWARD_SHARD_CLUSTERS: hetreward_shard_sections = 64;

/// A family of option codes, named by hetreward_option_name(): one of HETREWARD_OPTION_*.
#[allow(non_camel_case_types)]
pub type hetreward_option_family = u32;
/// The hetreward_solver values (HETREWARD_SOLVER_*).
pub const HETREWARD_OPTION_SOLVER: hetreward_option_family = 0;
/// The hetreward_init values (HETREWARD_INIT_*).
pub const HETREWARD_OPTION_INIT: hetreward_option_family = 1;
/// The hetreward_covariance values (HETREWARD_COVARIANCE_*).
pub const HETREWARD_OPTION_COVARIANCE: hetreward_option_family = 2;
/// The hetreward_intervals values (HETREWARD_INTERVALS_*).
pub const HETREWARD_OPTION_INTERVALS: hetreward_option_family = 3;
/// The hetreward_termination values (HETREWARD_TERMINATION_*).
pub const HETREWARD_OPTION_TERMINATION: hetreward_option_family = 4;
/// The hetreward_diff_method values (HETREWARD_DIFF_*).
pub const HETREWARD_OPTION_DIFF: hetreward_option_family = 5;
/// The hetreward_verdict values (HETREWARD_VERDICT_*).
pub const HETREWARD_OPTION_VERDICT: hetreward_option_family = 6;
/// The hetreward_policy values (HETREWARD_POLICY_*).
pub const HETREWARD_OPTION_POLICY: hetreward_option_family = 7;
/// The hetreward_coefficients values (HETREWARD_COEFFICIENTS_*).
pub const HETREWARD_OPTION_COEFFICIENTS: hetreward_option_family = 8;
/// The single flags of hetreward_shard_sections (HETREWARD_SHARD_*): codes 1, 2, 4, ...; an OR
/// of several flags has no name.
pub const HETREWARD_OPTION_SHARD: hetreward_option_family = 9;

coded_enum! {
    /// The rows of the coefficient table a caller asks for (the C API's only: the library
    /// works with [`crate::coefficients::Block`]).
    pub(crate) enum CoefficientRows: "which", "coefficient rows" {
        /// The theta rows.
        Theta = 0 => "theta",
        /// The gamma rows.
        Gamma = 1 => "gamma",
        /// Theta, then gamma.
        All = 2 => "all",
    }
}

coded_enum! {
    /// The families of hetreward_option_name(), named as their C enum types are.
    pub(crate) enum OptionFamily: "family", "option family" {
        /// [`SolverKind`].
        Solver = 0 => "solver",
        /// [`InitKind`].
        Init = 1 => "init",
        /// [`CovarianceKind`].
        Covariance = 2 => "covariance",
        /// [`IntervalMethod`].
        Intervals = 3 => "intervals",
        /// [`Termination`].
        Termination = 4 => "termination",
        /// [`DiffMethod`].
        Diff = 5 => "diff_method",
        /// [`Verdict`].
        Verdict = 6 => "verdict",
        /// [`Policy`].
        Policy = 7 => "policy",
        /// [`CoefficientRows`].
        Coefficients = 8 => "coefficients",
        /// [`Section`] (codes are its flags).
        Shard = 9 => "shard_sections",
    }
}

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
c_codes!(CoefficientRows {
    Theta = HETREWARD_COEFFICIENTS_THETA,
    Gamma = HETREWARD_COEFFICIENTS_GAMMA,
    All = HETREWARD_COEFFICIENTS_ALL,
});
c_codes!(OptionFamily {
    Solver = HETREWARD_OPTION_SOLVER,
    Init = HETREWARD_OPTION_INIT,
    Covariance = HETREWARD_OPTION_COVARIANCE,
    Intervals = HETREWARD_OPTION_INTERVALS,
    Termination = HETREWARD_OPTION_TERMINATION,
    Diff = HETREWARD_OPTION_DIFF,
    Verdict = HETREWARD_OPTION_VERDICT,
    Policy = HETREWARD_OPTION_POLICY,
    Coefficients = HETREWARD_OPTION_COEFFICIENTS,
    Shard = HETREWARD_OPTION_SHARD,
});

/// As `c_codes!`, for a set whose C constants are its flags ([`Section::flag`]).
macro_rules! c_flags {
    ($enum:ident { $($variant:ident = $c:ident),+ $(,)? }) => {
        const _: () = {
            const fn c_flag(v: $enum) -> u32 {
                match v {
                    $( $enum::$variant => $c, )+
                }
            }
            $( assert!(c_flag($enum::$variant) == $enum::$variant.flag()); )+
        };
    };
}

c_flags!(Section {
    Value = HETREWARD_SHARD_VALUE,
    ObservedProducts = HETREWARD_SHARD_OBSERVED_PRODUCTS,
    ExpectedProducts = HETREWARD_SHARD_EXPECTED_PRODUCTS,
    Expected = HETREWARD_SHARD_EXPECTED,
    Observed = HETREWARD_SHARD_OBSERVED,
    Meat = HETREWARD_SHARD_MEAT,
    Clusters = HETREWARD_SHARD_CLUSTERS,
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

/// The `index`-th option of a set, in code order: its name and its C code.
fn nth<T: Coded>(index: usize, c_code: fn(T) -> u32) -> Option<(&'static CStr, u32)> {
    let v = *T::ALL.get(index)?;
    Some((T::C_NAMES[index], c_code(v)))
}

/// The `index`-th option of a family: its name and its C code (`None` past the last one).
pub(crate) fn option_at(family: OptionFamily, index: usize) -> Option<(&'static CStr, u32)> {
    match family {
        OptionFamily::Solver => nth(index, SolverKind::code),
        OptionFamily::Init => nth(index, InitKind::code),
        OptionFamily::Covariance => nth(index, CovarianceKind::code),
        OptionFamily::Intervals => nth(index, IntervalMethod::code),
        OptionFamily::Termination => nth(index, Termination::code),
        OptionFamily::Diff => nth(index, DiffMethod::code),
        OptionFamily::Verdict => nth(index, Verdict::code),
        OptionFamily::Policy => nth(index, Policy::code),
        OptionFamily::Coefficients => nth(index, CoefficientRows::code),
        OptionFamily::Shard => nth(index, Section::flag),
    }
}

/// The name of option `code` of `family` (see HETREWARD_OPTION_*): the name the command line
/// and the reports use for it, e.g. "cluster-jackknife" for (HETREWARD_OPTION_INTERVALS,
/// HETREWARD_INTERVALS_CLUSTER_JACKKNIFE), "expected-products" for (HETREWARD_OPTION_SHARD,
/// HETREWARD_SHARD_EXPECTED_PRODUCTS).
///
/// Returns a static NUL-terminated string (never freed, valid for the life of the process), or
/// NULL for an unknown family or a code that is not one of the family's (for the shard
/// sections: anything but a single flag). Never fails otherwise; does not touch the last
/// error. Thread-safe.
#[no_mangle]
pub extern "C" fn hetreward_option_name(
    family: hetreward_option_family,
    code: u32,
) -> *const c_char {
    boundary_value(std::ptr::null(), || {
        let Some(family) = OptionFamily::from_code(family) else {
            return std::ptr::null();
        };
        (0..)
            .map_while(|i| option_at(family, i))
            .find(|&(_, c)| c == code)
            .map_or(std::ptr::null(), |(name, _)| name.as_ptr())
    })
}

/// Enumerates a family: the name of its `index`-th option (0-based, in code order) as
/// hetreward_option_name() gives it, with the option's code written to `*out_code` (optional:
/// may be NULL). Returns NULL, writing nothing, when `index` is past the family's last option,
/// `family` is unknown or `out_code` is misaligned.
///
/// A binding builds its whole name <-> code table of a family at load time by calling it with
/// index 0, 1, 2, ... until it returns NULL; every family has at least one option. Does not
/// touch the last error. Thread-safe.
#[no_mangle]
pub extern "C" fn hetreward_option_at(
    family: hetreward_option_family,
    index: usize,
    out_code: *mut u32,
) -> *const c_char {
    boundary_value(std::ptr::null(), || {
        let Some((name, code)) = OptionFamily::from_code(family).and_then(|f| option_at(f, index))
        else {
            return std::ptr::null();
        };
        if !out_code.is_aligned() {
            return std::ptr::null();
        }
        if !out_code.is_null() {
            // SAFETY: a writable, aligned uint32_t (header contract).
            unsafe { *out_code = code };
        }
        name.as_ptr()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A family's table as a binding builds it: (name, code) until NULL.
    fn table(family: u32) -> Vec<(String, u32)> {
        (0..)
            .map_while(|i| {
                let mut code = u32::MAX;
                let name = hetreward_option_at(family, i, &mut code);
                // SAFETY: NULL or a static NUL-terminated string.
                let name = unsafe { name.as_ref() }?;
                Some((
                    unsafe { CStr::from_ptr(name) }
                        .to_str()
                        .unwrap()
                        .to_string(),
                    code,
                ))
            })
            .collect()
    }

    fn names<T: Coded>() -> Vec<String> {
        T::NAMES.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn every_family_is_named_from_its_one_definition() {
        let codes = |t: &[(String, u32)]| t.iter().map(|(_, c)| *c).collect::<Vec<_>>();
        let names_of = |t: &[(String, u32)]| t.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
        let expect: [(u32, Vec<String>, Vec<u32>); 10] = [
            (HETREWARD_OPTION_SOLVER, names::<SolverKind>(), vec![0, 1]),
            (HETREWARD_OPTION_INIT, names::<InitKind>(), vec![0, 1, 2]),
            (
                HETREWARD_OPTION_COVARIANCE,
                names::<CovarianceKind>(),
                vec![0, 1, 2, 3],
            ),
            (
                HETREWARD_OPTION_INTERVALS,
                names::<IntervalMethod>(),
                (0..6).collect(),
            ),
            (
                HETREWARD_OPTION_TERMINATION,
                names::<Termination>(),
                vec![0, 1, 2, 3],
            ),
            (HETREWARD_OPTION_DIFF, names::<DiffMethod>(), vec![0, 1, 2]),
            (HETREWARD_OPTION_VERDICT, names::<Verdict>(), vec![0, 1, 2]),
            (HETREWARD_OPTION_POLICY, names::<Policy>(), vec![0, 1]),
            (
                HETREWARD_OPTION_COEFFICIENTS,
                names::<CoefficientRows>(),
                vec![0, 1, 2],
            ),
            (
                HETREWARD_OPTION_SHARD,
                names::<Section>(),
                vec![1, 2, 4, 8, 16, 32, 64],
            ),
        ];
        assert_eq!(expect.len(), OptionFamily::ALL.len());
        for (family, names, want_codes) in expect {
            let t = table(family);
            assert_eq!(names_of(&t), names, "family {family}");
            assert_eq!(codes(&t), want_codes, "family {family}");
            for (name, code) in &t {
                let p = hetreward_option_name(family, *code);
                // SAFETY: a static NUL-terminated string.
                assert_eq!(unsafe { CStr::from_ptr(p) }.to_str(), Ok(name.as_str()));
            }
            // Past the end and codes outside the family: NULL, nothing written.
            let mut code = 77;
            assert!(hetreward_option_at(family, t.len(), &mut code).is_null());
            assert_eq!(code, 77);
            assert!(hetreward_option_name(family, u32::MAX).is_null());
        }
        // Names the command line parses.
        let name = |f, c| {
            unsafe { CStr::from_ptr(hetreward_option_name(f, c)) }
                .to_str()
                .unwrap()
        };
        assert_eq!(
            name(
                HETREWARD_OPTION_INTERVALS,
                HETREWARD_INTERVALS_CLUSTER_JACKKNIFE
            ),
            "cluster-jackknife"
        );
        assert_eq!(
            name(
                HETREWARD_OPTION_TERMINATION,
                HETREWARD_TERMINATION_MAX_ITERATIONS
            ),
            "max_iterations"
        );
        assert_eq!(
            name(HETREWARD_OPTION_SHARD, HETREWARD_SHARD_EXPECTED_PRODUCTS),
            "expected-products"
        );
        assert_eq!(
            IntervalMethod::from_name(name(HETREWARD_OPTION_INTERVALS, 5)).unwrap(),
            IntervalMethod::ClusterOneStep
        );
    }

    #[test]
    fn unknown_families_codes_and_pointers_give_null() {
        let families = OptionFamily::ALL.len() as u32;
        for family in [families, families + 1, u32::MAX] {
            assert!(hetreward_option_name(family, 0).is_null());
            assert!(hetreward_option_at(family, 0, std::ptr::null_mut()).is_null());
        }
        // Not single flags, and 0.
        for code in [0, 3, 127, 128] {
            assert!(hetreward_option_name(HETREWARD_OPTION_SHARD, code).is_null());
        }
        assert!(hetreward_option_name(HETREWARD_OPTION_POLICY, 2).is_null());
        assert!(
            hetreward_option_at(HETREWARD_OPTION_POLICY, usize::MAX, std::ptr::null_mut())
                .is_null()
        );
        // out_code is optional; a misaligned one is refused, not written.
        assert!(!hetreward_option_at(HETREWARD_OPTION_SOLVER, 1, std::ptr::null_mut()).is_null());
        let mut words = [0u32; 2];
        let misaligned = unsafe { words.as_mut_ptr().cast::<u8>().add(1) }.cast::<u32>();
        assert!(hetreward_option_at(HETREWARD_OPTION_SOLVER, 1, misaligned).is_null());
        assert_eq!(words, [0, 0]);
    }

    #[test]
    fn the_shard_flags_are_the_wire_formats() {
        let all = Section::ALL.iter().fold(0, |a, s| a | s.flag());
        assert_eq!(all, 127);
        crate::codes::check::<Section>();
        crate::codes::check::<CoefficientRows>();
        crate::codes::check::<OptionFamily>();
    }
}
