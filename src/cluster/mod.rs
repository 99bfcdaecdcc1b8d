//! Cluster-aware uncertainty (issue 20): annotators judge many pairs and differ beyond their
//! covariates, so one annotator's judgments are dependent and intervals that assume
//! independent comparisons (Wald, the parametric bootstraps of [`crate::calibrate`])
//! under-cover.
//!
//! Every method here produces one set of *cluster draws* — estimates `b_g` of `(theta, gamma)`,
//! one per cluster or per resample — from which any linear functional `a . b` (a coefficient,
//! a reward, a difference of rewards, a rationality) gets its interval (`interval::interval`, beside the one interval rule):
//!
//! * [`sandwich`](draws::sandwich): `b + H^-1 s_g` with `s_g` the summed scores of cluster `g` and `H` the
//!   observed Hessian (sums over all rows). Their spread `sum_g (v_g - v_bar)^2` is the CR0
//!   cluster-robust variance; times `G/(G-1) (n-1)/(n-p)` it is CR1.
//! * [`one_step_jackknife`]: `b_(g) = b + (H - H_g)^-1 s_g`, one Newton step of the fit without
//!   cluster `g` from the full estimate (the leverage-corrected sandwich, CR3 of Bell &
//!   McCaffrey 2002 / MacKinnon, Nielsen & Webb 2023 in the linear model). `O(n p^2 + G p^3)`,
//!   no refits.
//! * [`jackknife`]: the exact leave-one-cluster-out refits (CV3), warm-started at the full
//!   estimate through the estimator's refit (`crate::calibrate::draws`: the same solver, its
//!   fallback to the estimator's own starts).
//! * [`pairs_bootstrap`](draws::pairs_bootstrap): clusters resampled with replacement, each resample refitted the
//!   same way.
//!
//! `identified` names the coefficients that rest on one annotator (the detector every
//! cluster method runs first, and the reason `auto` falls back to the exact jackknife).
//!
//! [`heterogeneity`] is the diagnostic every fit with cluster ids reports: the design effect
//! (cluster-robust over model-based variance) of each coefficient, with a plain-words warning
//! when intervals that assume independent comparisons would under-cover;
//! [`heterogeneity_of_fit`] computes it from a fitted model's inverse information (what the
//! command-line program does: no second Gram product).
//!
//! The jackknife variance is `(G-1)/G sum_g (v_g - v_bar)^2`; quantiles are Student's t with
//! `G - 1` degrees of freedom (`Df::Fixed`) or an effective number of clusters of the
//! functional (`Df::Effective`).

mod clusters;
pub(crate) mod draws;
mod heterogeneity;
pub(crate) mod identified;
pub mod leverage;

pub use clusters::{Clusters, MAX_CLUSTERS, MIN_CLUSTERS};
#[cfg(test)]
pub(crate) use draws::sandwich;
pub use draws::ClusterDraws;
pub(crate) use draws::{jackknife, one_step_jackknife};
pub use heterogeneity::{
    heterogeneity, heterogeneity_of_fit, Heterogeneity, DESIGN_EFFECT_WARNING, EXCESS_Z_WARNING,
};
pub use identified::one_step_obstacle;

#[cfg(test)]
mod tests;
