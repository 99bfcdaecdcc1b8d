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
//! [`heterogeneity_of_fit`] computes it from a fitted model's inverse information (no second
//! Gram product), and [`diagnostics_of_fit`] it and the annotators' [`leverage`] together,
//! as the command-line program does.
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
pub use heterogeneity::{
    heterogeneity, heterogeneity_of_fit, Heterogeneity, DESIGN_EFFECT_WARNING, EXCESS_Z_WARNING,
};
pub use identified::Carried;

use crate::data::Dataset;
use crate::error::Result;
use crate::fitted::RewardModel;
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

/// [`heterogeneity_of_fit`] and [`leverage::leverage_of_fit`] of `model`, the fit of `data`
/// (what the command-line program's `fit` reports for data with cluster ids): the same
/// results, with the pass over the data that both read (the information's gamma blocks at
/// the estimate) made once.
pub fn diagnostics_of_fit(
    data: &Dataset,
    model: &RewardModel,
) -> (Result<Heterogeneity>, Result<Leverage>) {
    let clusters = match Clusters::of(data) {
        Ok(c) if model.is_expected_fit_of(data) => c,
        _ => {
            return (
                heterogeneity_of_fit(data, model),
                leverage::leverage_of_fit(data, model),
            )
        }
    };
    let blocks = gamma_blocks_of(data, model.params());
    (
        heterogeneity::of_expected_fit(data, model, &clusters, &blocks),
        leverage::of_expected_fit(data, model, &clusters, &blocks),
    )
}

#[cfg(test)]
mod tests;
