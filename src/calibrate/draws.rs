//! Parametric bootstrap draws: labels redrawn from a model `(theta, gamma)` on the training
//! covariates, each sample refitted warm-started ([`crate::resample::warm_refit`], with its
//! fallback to the estimator's own starts).
//!
//! Problems that `fit::refit` solves by Newton-CG (more than
//! [`crate::fit::DENSE_NEWTON_MAX_PARAMS`] parameters) are refitted together instead
//! ([`super::batched`]: the Hessian products of all refits as GEMMs over z).
//!
//! Draw `b` of stream `k` uses its own ChaCha8 stream seeded from `(seed, k, b)`
//! ([`crate::resample::draw_seed`]), the draws run in parallel on the current rayon pool and
//! are collected in order: the result is the same for any thread count.

use super::batched::{self, Preconditioner};
use crate::data::{Dataset, FeatureMatrix};
use crate::error::Result;
use crate::fit::{Limits, Termination};
use crate::linalg::{dot, dot_f32};
use crate::model::{sigmoid, Params};
use crate::resample::{
    draw_seed, lower_optimum, warm_refit, Draws, Settings, Stream, REFIT_MAX_ITER, REFIT_SE_TOL,
};
use rand::Rng;
use rayon::prelude::*;
use std::sync::atomic::AtomicBool;
use std::sync::OnceLock;

/// The refit settings of a parametric bootstrap and the preconditioner of its batches.
pub(crate) struct Refits<'a> {
    /// What every refit shares.
    settings: Settings<'a>,
    /// The expected information at the first start refitted in batches under these settings,
    /// shared by every later batch: the resized bootstrap's shrink rounds and final draws
    /// start within a few percent of one another (`s theta_hat` for shrinks `s` near 1), and
    /// the preconditioner only sets CG's speed, never the answer. One Gram product per
    /// calibration instead of one per shrink round (each as costly as a dsyrk of z).
    preconditioner: OnceLock<Preconditioner>,
}

impl<'a> Refits<'a> {
    /// The bootstrap's refits under `settings`, the preconditioner computed at the first
    /// batch's start.
    pub(crate) fn new(settings: Settings<'a>) -> Self {
        Refits {
            settings,
            preconditioner: OnceLock::new(),
        }
    }

    /// Whether these refits run in batches (large problems), where the preconditioner is used.
    pub(crate) fn batched(&self) -> bool {
        self.settings.batched()
    }

    /// These refits with the batches' preconditioner given (for the first start refitted in
    /// batches, see the field's doc) instead of computed there.
    pub(crate) fn with_preconditioner(self, pre: Preconditioner) -> Self {
        let _ = self.preconditioner.set(pre);
        self
    }
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

/// Labels of draw `b`: `y_i = 1` with probability `sigmoid(u_i)`.
pub(crate) fn labels(u: &[f64], seed: u64, stream: Stream, b: usize) -> Vec<f64> {
    let mut rng = crate::rng::rng(draw_seed(seed, stream, b));
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
    refits: &Refits,
) -> Result<Draws> {
    let u = logits(data, truth);
    let settings = &refits.settings;
    let runs: Vec<Result<(Params, bool)>> = if settings.batched() {
        let limits = Limits {
            tol: REFIT_SE_TOL,
            max_iter: REFIT_MAX_ITER,
        };
        let draw = |b| labels(&u, seed, stream, b);
        let pre = refits
            .preconditioner
            .get_or_init(|| Preconditioner::at(data, start));
        let warm = batched_refits(data, pre, start, reps, draw, limits, settings.cancel())?;
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
    let runs: Result<Vec<(Params, bool)>> = runs.into_iter().collect();
    Ok(Draws::collect(runs?, data.d1(), data.d2()))
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
