//! The adaptively resized parametric bootstrap for high-dimensional GLMs (Zhao & Candès 2022,
//! arXiv 2208.08944), adapted to `(theta, gamma)`.
//!
//! In high dimension (`d1 / n` of a few percent) the MLE is inflated: `E theta_hat ~ alpha
//! theta` with `alpha > 1` (Sur & Candès 2019), and bootstrapping from `theta_hat` inflates
//! once more. So:
//!
//! 1. **Shrink search.** Find `s` such that data drawn from `(s theta_hat, gamma_hat)` give
//!    refits with `||theta*|| ~ ||theta_hat||`: a fixed-point iteration `s <- s ||theta_hat|| /
//!    mean ||theta*(s)||` on [`SEARCH_REPS`] draws with common random numbers, until the ratio
//!    is within [`SEARCH_RTOL`] of 1 (at most [`SEARCH_STEPS`] steps).
//! 2. **Draws.** `B` refits from `(s theta_hat, gamma_hat)`.
//! 3. **Inflation.** `alpha_hat = <mean theta*, s theta_hat> / ||s theta_hat||^2`; the bias of
//!    gamma `mean gamma* - gamma_hat`.
//!
//! Intervals (see `src/interval.rs`): `theta_hat . phi / alpha_hat +- q
//! SD*(phi) / alpha_hat`, `gamma_hat . psi - bias . psi +- q SD*(psi)`.

use super::draws::{column_means, parametric, Refits};
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::model::Params;
use crate::resample::{Draws, Stream};

/// Draws per step of the shrink search.
pub(crate) const SEARCH_REPS: usize = 4;
/// The search stops when `||theta_hat|| / mean ||theta*||` is within this of 1.
pub(crate) const SEARCH_RTOL: f64 = 0.005;
/// Most steps of the shrink search.
pub(crate) const SEARCH_STEPS: usize = 6;
/// The shrink is kept in `[MIN_SHRINK, MAX_SHRINK]`.
pub(crate) const MIN_SHRINK: f64 = 0.05;
/// The largest shrink the search reaches (a model file with another is damaged).
pub(crate) const MAX_SHRINK: f64 = 1.5;

/// What the resized bootstrap estimates.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Resized {
    /// The shrink `s`.
    pub shrink: f64,
    /// The inflation `alpha_hat`.
    pub alpha_hat: f64,
    /// `mean gamma* - gamma_hat`.
    pub gamma_bias: Vec<f64>,
    /// The `B` draws from `(s theta_hat, gamma_hat)`.
    pub draws: Draws,
}

fn norm(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}

fn shrunk(hat: &Params, s: f64) -> Params {
    Params {
        theta: hat.theta.iter().map(|v| s * v).collect(),
        gamma: hat.gamma.clone(),
    }
}

fn mean_norm(draws: &Draws, d1: usize) -> f64 {
    let rows = draws.theta().chunks_exact(d1);
    let k = rows.len().max(1) as f64;
    rows.map(|r| r.iter().map(|&v| f64::from(v).powi(2)).sum::<f64>().sqrt())
        .sum::<f64>()
        / k
}

/// Runs the resized bootstrap at the estimate `hat` with `reps` final draws.
///
/// Errors: [`Error::Cancelled`]; [`Error::NotConverged`] when the inflation estimate is not a
/// positive number (theta_hat = 0, or refits that lost all signal).
pub(crate) fn run(
    data: &Dataset,
    hat: &Params,
    reps: usize,
    seed: u64,
    refits: &Refits,
) -> Result<Resized> {
    let d1 = data.d1();
    let target = norm(&hat.theta);
    if target == 0.0 || !target.is_finite() {
        return Err(Error::NotConverged {
            detail: "resized bootstrap: theta_hat = 0 has no size to resize".into(),
        });
    }
    let mut s = 1.0;
    for _ in 0..SEARCH_STEPS {
        let truth = shrunk(hat, s);
        let d = parametric(
            data,
            &truth,
            &truth,
            SEARCH_REPS,
            seed,
            Stream::ShrinkSearch,
            refits,
        )?;
        let ratio = target / mean_norm(&d, d1);
        if !ratio.is_finite() {
            break;
        }
        s = (s * ratio).clamp(MIN_SHRINK, MAX_SHRINK);
        if (ratio - 1.0).abs() < SEARCH_RTOL {
            break;
        }
    }
    let truth = shrunk(hat, s);
    let draws = parametric(data, &truth, &truth, reps, seed, Stream::Resized, refits)?;
    let mean_theta = column_means(draws.theta(), d1);
    let alpha_hat = mean_theta
        .iter()
        .zip(&truth.theta)
        .map(|(m, t)| m * t)
        .sum::<f64>()
        / truth.theta.iter().map(|t| t * t).sum::<f64>();
    if !(alpha_hat.is_finite() && alpha_hat > 0.0) {
        return Err(Error::NotConverged {
            detail: format!("resized bootstrap: inflation estimate {alpha_hat} is not positive"),
        });
    }
    let gamma_bias = column_means(draws.gamma(), data.d2())
        .iter()
        .zip(&hat.gamma)
        .map(|(m, g)| m - g)
        .collect();
    Ok(Resized {
        shrink: s,
        alpha_hat,
        gamma_bias,
        draws,
    })
}
