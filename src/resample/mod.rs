//! The resampling layer under both interval families (the parametric bootstraps of
//! [`crate::calibrate`] and the cluster jackknives of [`crate::cluster`]): the refit of one
//! resample warm-started at the estimate, its limits, the seeded random streams of the draws,
//! and the estimates the refits collect.
//!
//! A warm-started refit that does not converge within [`REFIT_MAX_ITER`] iterations is solved
//! again by the estimator itself (`fit::refit_from_scratch`: the fit's own starts), and the
//! lower optimum is kept. The likelihood can have several branches: at small n a warm start on
//! the shoulder of the `|gamma| -> infinity` valley runs off along it while the estimator
//! finds a finite optimum, and a resample must replicate the estimator, not the shortcut
//! (measured on the paper's design at n = 200: 150 of 400 warm refits of a shoulder dataset
//! end above the estimator's optimum; rewards there covered 0.68 with warm refits only). A
//! refit that converges from neither start (the resample's MLE is at infinity, or it is
//! separated) is kept at its last finite iterate and counted in [`Draws::diverged`].
//!
//! Draw `b` of stream `k` has its own random stream seeded from `(seed, k, b)`
//! ([`draw_seed`]); the refits run in parallel and are collected in order: the draws are the
//! same for any thread count.

use crate::data::Dataset;
use crate::error::Result;
use crate::fit::{refit, refit_from_scratch, refit_uses_cg, FitOptions, Limits, Termination};
use crate::model::Params;
use std::sync::atomic::AtomicBool;

/// Iteration cap of one refit (warm starts converge in a handful; refits in the valley are
/// stopped here and counted as diverged).
pub(crate) const REFIT_MAX_ITER: usize = 50;
/// Refits are solved to this gradient norm (or the fit's tolerance, if looser): the draws are
/// stored in `f32`. The batched refits of large problems stop by [`REFIT_SE_TOL`] instead.
pub(crate) const REFIT_TOL: f64 = 1e-7;
/// The batched refits (`calibrate::batched`) stop when their gradient, measured in standard
/// errors (`sqrt(n g^T M^-1 g)`, `M` the expected information at the start), is at most this:
/// every linear functional of a draw (a reward, a coefficient, `alpha_hat`'s projection) is
/// then within 1% of its standard error of the refit's optimum, to first order. A draw's
/// functional has spread one standard error, so the bootstrap's spreads move by at most 1%
/// and a mean over `B` draws by at most `0.01 sqrt(B)` of its own Monte-Carlo error (0.1 at
/// `B = 100`); Newton converges quadratically there, so the refits stop one step (the step
/// with the most CG iterations) earlier than at [`REFIT_TOL`] (at the paper's shape, the
/// gradient in standard errors falls 24, 9, 1.8, 0.1, 0.002, 3e-6 over the Newton steps).
pub(crate) const REFIT_SE_TOL: f64 = 0.01;

/// Which family of draws (separate random streams, so that e.g. the resized bootstrap's shrink
/// search and its final draws are independent).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stream {
    /// The percentile bootstrap's draws.
    Bootstrap,
    /// The resized bootstrap's shrink search (common random numbers across shrinks).
    ShrinkSearch,
    /// The resized bootstrap's final draws.
    Resized,
}

/// The seed of draw `b` of `stream`: splitmix64 of the three, so neighbouring seeds give
/// unrelated streams.
pub(crate) fn draw_seed(seed: u64, stream: Stream, b: usize) -> u64 {
    let mut x = seed
        ^ (stream as u64 + 1).wrapping_mul(0xD1B5_4A32_D192_ED03)
        ^ (b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// What every refit shares: the tolerance, the estimator's options (the fallback of a refit
/// that does not converge), the cancellation flag, and whether the refits of these data are
/// solved by Newton-CG (large problems, which the bootstraps refit in batches).
pub(crate) struct Settings<'a> {
    tol: f64,
    estimator: FitOptions,
    cancel: Option<&'a AtomicBool>,
    batched: bool,
}

impl<'a> Settings<'a> {
    /// Settings for refits of `data` by the estimator of `options` (checked for `data`), at
    /// its tolerance raised to [`REFIT_TOL`] (the refits of small problems; batched refits stop
    /// by [`REFIT_SE_TOL`]).
    pub(crate) fn new(
        data: &Dataset,
        options: &FitOptions,
        cancel: Option<&'a AtomicBool>,
    ) -> Self {
        Settings {
            tol: options.tol.max(REFIT_TOL),
            // The estimator's starts at the refits' iteration cap: beyond it a Newton run is
            // going off to infinity, not converging.
            estimator: FitOptions {
                max_iter: Some(REFIT_MAX_ITER),
                ..options.clone()
            },
            cancel,
            batched: refit_uses_cg(data),
        }
    }

    /// Whether the refits of these data are solved by Newton-CG, which the parametric
    /// bootstraps run in batches.
    pub(crate) fn batched(&self) -> bool {
        self.batched
    }

    /// The cancellation flag.
    pub(crate) fn cancel(&self) -> Option<&'a AtomicBool> {
        self.cancel
    }
}

/// One refit of `sample` warm-started at `start` (dense Newton or Newton-CG with its own
/// preconditioner), solved again by the estimator itself when it does not converge
/// ([`lower_optimum`]): the refit of the parametric bootstrap and of the cluster methods.
/// Returns the estimate and whether it converged.
///
/// Errors: [`crate::Error::Cancelled`].
pub(crate) fn warm_refit(
    sample: &Dataset,
    start: &Params,
    settings: &Settings,
) -> Result<(Params, bool)> {
    let limits = Limits {
        tol: settings.tol,
        max_iter: REFIT_MAX_ITER,
    };
    let run = refit(sample, start.clone(), limits, None, settings.cancel)?;
    if run.termination == Termination::Converged {
        return Ok((run.state.params, true));
    }
    lower_optimum(sample, start, run.state.params, run.state.nll, settings)
}

/// A warm refit that did not converge (ending at `params` with mean NLL `nll`) against the
/// estimator's own solve of `sample`: the lower finite optimum, and whether it converged. A
/// refit finite from neither start is kept at `start` (never at infinity).
///
/// Errors: [`crate::Error::Cancelled`].
pub(crate) fn lower_optimum(
    sample: &Dataset,
    start: &Params,
    params: Params,
    nll: f64,
    settings: &Settings,
) -> Result<(Params, bool)> {
    let scratch = refit_from_scratch(sample, &settings.estimator, settings.cancel)?;
    let scratch_ok = scratch.state.params.is_finite() && scratch.state.nll.is_finite();
    if scratch_ok && (!params.is_finite() || !nll.is_finite() || scratch.state.nll < nll) {
        let converged = scratch.termination == Termination::Converged;
        return Ok((scratch.state.params, converged));
    }
    Ok((
        if params.is_finite() {
            params
        } else {
            start.clone()
        },
        false,
    ))
}

/// Estimates of `(theta, gamma)` at the resamples, in draw order, in `f32` (as a model
/// stores them): `B x d1` theta and `B x d2` gamma, row-major, and how many of the refits
/// behind them did not converge. Built by the refits ([`Draws::collect`], [`Draws::push`]) or
/// from stored values ([`Draws::new`], which checks their shape); what a calibration further
/// asks of them (their count, finite values, spread) its method's constructor checks.
#[derive(Debug, Clone, PartialEq)]
#[doc(hidden)] // reached through `crate::internals` only
pub struct Draws {
    count: usize,
    d1: usize,
    d2: usize,
    theta: Vec<f32>,
    gamma: Vec<f32>,
    diverged: usize,
}

impl Draws {
    /// No draws yet, room for `count` of `d1` theta and `d2` gamma values each.
    pub(crate) fn with_capacity(count: usize, d1: usize, d2: usize) -> Self {
        Draws {
            count: 0,
            d1,
            d2,
            theta: Vec::with_capacity(count * d1),
            gamma: Vec::with_capacity(count * d2),
            diverged: 0,
        }
    }

    /// Appends one draw (stored in `f32`), counted in [`Draws::diverged`] unless `converged`.
    pub(crate) fn push(&mut self, theta: &[f64], gamma: &[f64], converged: bool) {
        debug_assert_eq!((theta.len(), gamma.len()), (self.d1, self.d2));
        self.theta.extend(theta.iter().map(|&v| v as f32));
        self.gamma.extend(gamma.iter().map(|&v| v as f32));
        self.diverged += usize::from(!converged);
        self.count += 1;
    }

    /// The refits' estimates and whether each converged, in draw order.
    pub fn collect(runs: impl IntoIterator<Item = (Params, bool)>, d1: usize, d2: usize) -> Self {
        let runs = runs.into_iter();
        let mut out = Draws::with_capacity(runs.size_hint().0, d1, d2);
        for (p, converged) in runs {
            out.push(&p.theta, &p.gamma, converged);
        }
        out
    }

    /// `count` stored draws: `theta` of `count x d1` and `gamma` of `count x d2` values,
    /// `diverged` of them from refits that did not converge.
    ///
    /// Errors: the field and the rule ("`theta draws`: 5 values, not B x 3 = 2 x 3"), for a
    /// model file's interval section.
    pub(crate) fn new(
        (count, d1, d2): (usize, usize, usize),
        theta: Vec<f32>,
        gamma: Vec<f32>,
        diverged: usize,
    ) -> std::result::Result<Self, String> {
        if diverged > count {
            return Err(format!(
                "`diverged` = {diverged} counts more refits than B = {count}"
            ));
        }
        for (field, draws, width) in [("theta draws", &theta, d1), ("gamma draws", &gamma, d2)] {
            if count.checked_mul(width) != Some(draws.len()) {
                return Err(format!(
                    "`{field}`: {} values, not B x {width} = {count} x {width}",
                    draws.len()
                ));
            }
        }
        Ok(Draws {
            count,
            d1,
            d2,
            theta,
            gamma,
            diverged,
        })
    }

    /// Number of draws `B`.
    pub fn len(&self) -> usize {
        self.count
    }
    /// True when there are no draws.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
    /// `(d1, d2)`.
    pub(crate) fn dims(&self) -> (usize, usize) {
        (self.d1, self.d2)
    }
    /// The draws' theta, `B x d1` row-major.
    pub(crate) fn theta(&self) -> &[f32] {
        &self.theta
    }
    /// The draws' gamma, `B x d2` row-major.
    pub(crate) fn gamma(&self) -> &[f32] {
        &self.gamma
    }
    /// Refits that converged from neither the warm start nor the estimator's own starts.
    pub fn diverged(&self) -> usize {
        self.diverged
    }
    /// Draw `b`, theta then gamma, in `f64`.
    pub fn row(&self, b: usize) -> Vec<f64> {
        let theta = &self.theta[b * self.d1..(b + 1) * self.d1];
        let gamma = &self.gamma[b * self.d2..(b + 1) * self.d2];
        theta.iter().chain(gamma).map(|&v| f64::from(v)).collect()
    }
}
