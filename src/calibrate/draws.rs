//! Parametric bootstrap draws: labels redrawn from a model `(theta, gamma)` on the training
//! covariates, each sample refitted by warm-started Newton (`fit::refit`).
//!
//! Problems that `fit::refit` solves by Newton-CG (more than
//! [`crate::fit::DENSE_NEWTON_MAX_PARAMS`] parameters) are refitted together instead
//! ([`super::batched`]: the Hessian products of all refits as GEMMs over z).
//!
//! Draw `b` of stream `k` uses its own ChaCha8 stream seeded from `(seed, k, b)`, the draws run
//! in parallel on the current rayon pool and are collected in order: the result is the same
//! for any thread count.
//!
//! A warm-started refit that does not converge within [`REFIT_MAX_ITER`] iterations is solved
//! again by the estimator itself (`fit::refit_from_scratch`: the fit's own starts),
//! and the lower optimum is kept. The likelihood can have several branches: at small n a
//! warm start on the shoulder of the `|gamma| -> infinity` valley runs off along it while the
//! estimator finds a finite optimum, and a bootstrap must replicate the estimator, not the
//! shortcut (measured on the paper's design at n = 200: 150 of 400 warm refits of a shoulder
//! dataset end above the estimator's optimum; rewards there covered 0.68 with warm refits
//! only). A refit that converges from neither start (the resample's MLE is at infinity, or it
//! is separated) is kept at its last finite iterate and counted in [`Draws::diverged`].

use super::batched::{self, Preconditioner};
use crate::data::{Dataset, FeatureMatrix};
use crate::error::Result;
use crate::fit::{refit, refit_from_scratch, refit_uses_cg, FitOptions, Limits, Termination};
use crate::linalg::{dot, dot_f32};
use crate::model::{sigmoid, Params};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use std::sync::atomic::AtomicBool;
use std::sync::OnceLock;

/// Iteration cap of one refit (warm starts converge in a handful; refits in the valley are
/// stopped here and counted as diverged).
pub(crate) const REFIT_MAX_ITER: usize = 50;
/// Refits are solved to this gradient norm (or the fit's tolerance, if looser): the draws are
/// stored in `f32`. The batched refits of large problems stop by [`REFIT_SE_TOL`] instead.
pub(crate) const REFIT_TOL: f64 = 1e-7;
/// The batched refits ([`super::batched`]) stop when their gradient, measured in standard
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
    /// The cluster (pairs) bootstrap's resamples of clusters ([`crate::cluster`]).
    ClusterBootstrap,
}

/// What every refit shares: the tolerance, the estimator's options (the fallback of a refit
/// that does not converge), the cancellation flag, whether the refits are batched (large
/// problems) and the batches' preconditioner.
pub(crate) struct Settings<'a> {
    tol: f64,
    estimator: FitOptions,
    cancel: Option<&'a AtomicBool>,
    batched: bool,
    /// The expected information at the first start refitted in batches under these settings,
    /// shared by every later batch: the resized bootstrap's shrink rounds and final draws
    /// start within a few percent of one another (`s theta_hat` for shrinks `s` near 1), and
    /// the preconditioner only sets CG's speed, never the answer. One Gram product per
    /// calibration instead of one per shrink round (each as costly as a dsyrk of z).
    preconditioner: OnceLock<Preconditioner>,
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
            preconditioner: OnceLock::new(),
        }
    }

    /// Whether these settings refit in batches (large problems), where the batches'
    /// preconditioner is used.
    pub(crate) fn batched(&self) -> bool {
        self.batched
    }

    /// These settings with the batches' preconditioner given (for the first start refitted
    /// in batches, see the field's doc) instead of computed there.
    pub(crate) fn with_preconditioner(self, pre: Preconditioner) -> Self {
        let _ = self.preconditioner.set(pre);
        self
    }
}

/// `B` refits' estimates.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Draws {
    /// `B x d1` row-major.
    pub theta: Vec<f32>,
    /// `B x d2` row-major.
    pub gamma: Vec<f32>,
    /// Refits that did not converge.
    pub diverged: usize,
}

/// The logits `u_i = sigma_i theta . z_i` of `truth` on `data` (one pass).
pub(crate) fn logits(data: &Dataset, truth: &Params) -> Vec<f64> {
    let d1 = data.d1();
    (0..data.n())
        .into_par_iter()
        .with_min_len(512)
        .map(|i| {
            let sigma = data.psi0()[i] + dot(&truth.gamma, data.psi_row(i));
            let r = match data.features() {
                FeatureMatrix::F64(z) => dot(&truth.theta, &z[i * d1..(i + 1) * d1]),
                FeatureMatrix::F32(z) => dot_f32(&truth.theta, &z[i * d1..(i + 1) * d1]),
            };
            sigma * r
        })
        .collect()
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

/// Labels of draw `b`: `y_i = 1` with probability `sigmoid(u_i)`.
pub(crate) fn labels(u: &[f64], seed: u64, stream: Stream, b: usize) -> Vec<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(draw_seed(seed, stream, b));
    u.iter()
        .map(|&v| {
            if rng.random::<f64>() < sigmoid(v) {
                1.0
            } else {
                0.0
            }
        })
        .collect()
}

/// `reps` parametric draws from `truth`, each refitted from `start`, on the current pool.
///
/// Errors: [`crate::Error::Cancelled`].
pub(crate) fn parametric(
    data: &Dataset,
    truth: &Params,
    start: &Params,
    reps: usize,
    seed: u64,
    stream: Stream,
    settings: &Settings,
) -> Result<Draws> {
    let u = logits(data, truth);
    let runs: Vec<Result<(Params, bool)>> = if settings.batched {
        let limits = Limits {
            tol: REFIT_SE_TOL,
            max_iter: REFIT_MAX_ITER,
        };
        let draw = |b| labels(&u, seed, stream, b);
        let pre = settings
            .preconditioner
            .get_or_init(|| Preconditioner::at(data, start));
        let warm = batched_refits(data, pre, start, reps, draw, limits, settings.cancel)?;
        warm.into_par_iter()
            .enumerate()
            .map(|(b, (params, converged))| {
                if converged {
                    return Ok((params, true));
                }
                let sample = data.with_labels(labels(&u, seed, stream, b));
                let nll = crate::likelihood::nll_and_gradient(&sample, &params).0;
                lower_optimum(&sample, start, params, nll, settings)
            })
            .collect()
    } else {
        sequential(data, &u, start, reps, seed, stream, settings)
    };
    let (d1, d2) = (data.d1(), data.d2());
    let mut out = Draws {
        theta: Vec::with_capacity(reps * d1),
        gamma: Vec::with_capacity(reps * d2),
        diverged: 0,
    };
    for run in runs {
        let (p, converged) = run?;
        out.theta.extend(p.theta.iter().map(|&v| v as f32));
        out.gamma.extend(p.gamma.iter().map(|&v| v as f32));
        out.diverged += usize::from(!converged);
    }
    Ok(out)
}

/// `reps` warm refits from `start` to the labels `draw(b)`, `b = 0..reps`, solved together
/// ([`batched::batch`]: at most [`batched::BATCH`] at once, large problems) preconditioned by
/// `pre` (the information at `start` or near it, [`Preconditioner::at`]), to `limits` (the
/// tolerance in standard errors): each refit's estimate and whether it converged.
///
/// Errors: [`crate::Error::Cancelled`].
pub(crate) fn batched_refits(
    data: &Dataset,
    pre: &Preconditioner,
    start: &Params,
    reps: usize,
    draw: impl Fn(usize) -> Vec<f64> + Sync,
    limits: Limits,
    cancel: Option<&AtomicBool>,
) -> Result<Vec<(Params, bool)>> {
    Ok(batched::batch(
        data,
        pre,
        start,
        (reps, batched::BATCH),
        draw,
        limits,
        cancel,
    )?
    .into_iter()
    .map(|(p, term)| (p, term == Termination::Converged))
    .collect())
}

/// The refits one after another through the pool (small problems: dense Newton per refit).
fn sequential(
    data: &Dataset,
    u: &[f64],
    start: &Params,
    reps: usize,
    seed: u64,
    stream: Stream,
    settings: &Settings,
) -> Vec<Result<(Params, bool)>> {
    (0..reps)
        .into_par_iter()
        .map(|b| {
            warm_refit(
                &data.with_labels(labels(u, seed, stream, b)),
                start,
                settings,
            )
        })
        .collect()
}

/// One refit of `sample` warm-started at `start` (dense Newton or Newton-CG with its own
/// preconditioner), solved again by the estimator itself when it does not converge
/// ([`lower_optimum`]): the refit of the parametric bootstrap and of the cluster methods
/// ([`crate::cluster`]). Returns the estimate and whether it converged.
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
fn lower_optimum(
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

/// Mean of the `B x k` row-major draws, per column.
pub(crate) fn column_means(draws: &[f32], k: usize) -> Vec<f64> {
    let mut m = vec![0.0; k];
    if k == 0 {
        return m;
    }
    let b = draws.len() / k;
    for row in draws.chunks_exact(k) {
        for (acc, &v) in m.iter_mut().zip(row) {
            *acc += f64::from(v);
        }
    }
    m.iter_mut().for_each(|v| *v /= b.max(1) as f64);
    m
}
