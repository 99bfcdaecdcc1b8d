//! Cluster-aware uncertainty: annotators judge many pairs and differ beyond their
//! covariates, so one annotator's judgments are dependent and intervals that assume
//! independent comparisons (Wald, the parametric bootstraps of [`crate::calibrate`])
//! under-cover.
//!
//! Both cluster jackknives produce one set of draws ([`crate::resample::Draws`]): estimates
//! `b_(g)` of `(theta, gamma)` without cluster `g`, one per cluster, from which any linear
//! functional `a . b` (a coefficient, a reward, a difference of rewards, a rationality) gets
//! its interval by the jackknife rule (`interval::Rule::Jackknife`):
//!
//! * [`one_step_jackknife`]: `b_(g) = b + (H - H_g)^-1 s_g`, one Newton step of the fit without
//!   cluster `g` from the full estimate (the leverage-corrected sandwich, CR3 of Bell &
//!   McCaffrey 2002 / MacKinnon, Nielsen & Webb 2023 in the linear model). `O(n p^2 + G p^3)`,
//!   no refits.
//! * [`jackknife`]: the exact leave-one-cluster-out refits (CV3), warm-started at the full
//!   estimate through the refit of the resampling layer (`crate::resample::warm_refit`: the
//!   same solver and fallback to the estimator's own starts as the parametric bootstrap).
//!
//! `identified` names the coefficients that rest on one annotator ([`Carried`]: the detector
//! every cluster method runs first; their intervals are unbounded and the jackknives take the
//! carrier's leave-one-out estimate with them held) and why the one-step jackknife may be
//! impossible (the reason `auto` falls back to the exact jackknife).
//!
//! [`heterogeneity`] is the diagnostic every fit with cluster ids reports: the design effect
//! (cluster-robust over model-based variance) of each coefficient, with a plain-words warning
//! when intervals that assume independent comparisons would under-cover;
//! `RewardModel::heterogeneity_on` computes it from a fitted model's inverse
//! information (no second Gram product), and `RewardModel::cluster_diagnostics_on` it
//! and the annotators' [`leverage`] together, as the command-line program does.
//!
//! The jackknife variance is `(G-1)/G sum_g (v_g - v_bar)^2`; quantiles are Student's t with
//! `G - 1` degrees of freedom.

mod clusters;
pub(crate) mod draws;
mod heterogeneity;
pub(crate) mod identified;
pub mod leverage;

pub use clusters::{Clusters, MAX_CLUSTERS, MIN_CLUSTERS};
pub use draws::one_step_obstacle;
pub(crate) use draws::{jackknife, one_step_jackknife};
pub use heterogeneity::{heterogeneity, Heterogeneity, DESIGN_EFFECT_WARNING, EXCESS_Z_WARNING};
pub use identified::Carried;

use crate::data::Dataset;
use crate::error::Result;
use crate::model::Params;
use leverage::Leverage;
use nalgebra::DMatrix;

/// The gamma blocks `(I_tg, H_tg, I_gg)` of the expected information and the observed Hessian
/// at an estimate (`crate::likelihood::gamma_blocks`, one pass over the data), `None` without
/// covariates (`d2 = 0`): what both diagnostics of a fit read besides the model's covariance.
type GammaBlocks = Option<(DMatrix<f64>, DMatrix<f64>, DMatrix<f64>)>;

/// The [`GammaBlocks`] of `data` at `params`.
fn gamma_blocks_of(data: &Dataset, params: &Params) -> GammaBlocks {
    (data.d2() > 0).then(|| crate::likelihood::gamma_blocks(data, params))
}

/// What the diagnostics read of a fit whose covariance is the inverse expected information
/// of its data at its estimate (`RewardModel::heterogeneity_on` and its siblings: a
/// model fitted with the `expected` kind, on its training data): the estimate, the lower
/// Cholesky factor `L` of `Cov(theta_hat)` and `Cov(gamma_hat)`, the inverse information's
/// blocks over `n` (`crate::covariance::factors_from_matrices`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ExpectedFit<'a> {
    /// The estimate.
    pub(crate) params: &'a Params,
    /// `L`, `d1 x d1` lower triangular.
    pub(crate) theta_factor: &'a DMatrix<f64>,
    /// `Cov(gamma_hat)`, `d2 x d2`.
    pub(crate) gamma_cov: &'a DMatrix<f64>,
}

/// A diagnostic of an [`ExpectedFit`] given the clusters and the gamma blocks it reads.
type DiagnosticOfExpectedFit<T> = fn(&Dataset, &ExpectedFit, &Clusters, &GammaBlocks) -> Result<T>;

/// `diagnostic` of `fit`, a fit of `data`, with the clusters and gamma blocks it reads.
fn of_expected_fit<T>(
    data: &Dataset,
    fit: &ExpectedFit,
    diagnostic: DiagnosticOfExpectedFit<T>,
) -> Result<T> {
    let clusters = Clusters::of(data)?;
    let blocks = gamma_blocks_of(data, fit.params);
    diagnostic(data, fit, &clusters, &blocks)
}

/// [`heterogeneity`] of `fit`, a fit of `data`, from its covariance (no second Gram product).
pub(crate) fn heterogeneity_of_expected_fit(
    data: &Dataset,
    fit: &ExpectedFit,
) -> Result<Heterogeneity> {
    of_expected_fit(data, fit, heterogeneity::of_expected_fit)
}

/// [`leverage::leverage`] of `fit`, a fit of `data`, from its covariance (no second Gram
/// product, no `p x p` inverse).
pub(crate) fn leverage_of_expected_fit(data: &Dataset, fit: &ExpectedFit) -> Result<Leverage> {
    of_expected_fit(data, fit, leverage::of_expected_fit)
}

/// [`heterogeneity_of_expected_fit`] and [`leverage_of_expected_fit`]: the same results, with
/// the pass over the data that both read (the information's gamma blocks at the estimate)
/// made once.
pub(crate) fn diagnostics_of_expected_fit(
    data: &Dataset,
    fit: &ExpectedFit,
) -> (Result<Heterogeneity>, Result<Leverage>) {
    let Ok(clusters) = Clusters::of(data) else {
        return (
            heterogeneity_of_expected_fit(data, fit),
            leverage_of_expected_fit(data, fit),
        );
    };
    let blocks = gamma_blocks_of(data, fit.params);
    (
        heterogeneity::of_expected_fit(data, fit, &clusters, &blocks),
        leverage::of_expected_fit(data, fit, &clusters, &blocks),
    )
}

#[cfg(test)]
mod tests;
