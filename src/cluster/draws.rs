//! The four kinds of cluster draws (see the module docs of [`crate::cluster`]).

use super::clusters::Clusters;
use super::identified::Obstacle;
use crate::resample::{draw_seed, warm_refit, Settings, Stream};
use crate::data::Dataset;
use crate::error::Result;
use crate::fit::FitOptions;
use crate::likelihood::{cluster_score_sums, nll_and_gradient, observed_hessian};
use crate::linalg::{first_bad_pivot, matmul, spd_inverse};
use crate::model::Params;
use nalgebra::{DMatrix, DVector};
use rand::Rng;
use rayon::prelude::*;
use std::sync::atomic::AtomicBool;

/// Estimates of `(theta, gamma)` stacked (theta first), one row of `p = d1 + d2` per cluster or
/// resample, row-major; and how many of the refits behind them did not converge.
#[derive(Debug, Clone, PartialEq)]
#[doc(hidden)] // reached through `crate::internals` only
pub struct ClusterDraws {
    /// `k x p`, row-major.
    pub values: Vec<f64>,
    /// `p = d1 + d2`.
    pub p: usize,
    /// Refits that converged from neither the warm start nor the estimator's own starts (0 for
    /// the refit-free methods).
    pub diverged: usize,
}

impl ClusterDraws {
    /// Number of draws.
    pub(crate) fn len(&self) -> usize {
        self.values.len() / self.p.max(1)
    }

    /// The draws' theta (`k x d1`) and gamma (`k x (p - d1)`) blocks in `f32`, row-major (as
    /// a [`crate::calibrate::Calibration`] stores them).
    pub(crate) fn split_f32(&self, d1: usize) -> (Vec<f32>, Vec<f32>) {
        let mut theta = Vec::with_capacity(self.len() * d1);
        let mut gamma = Vec::with_capacity(self.len() * (self.p - d1));
        for row in self.values.chunks_exact(self.p) {
            theta.extend(row[..d1].iter().map(|&v| v as f32));
            gamma.extend(row[d1..].iter().map(|&v| v as f32));
        }
        (theta, gamma)
    }

    /// `a . b_g` for every draw `g` (`a` of length `p`).
    pub fn projections(&self, a: &[f64]) -> Vec<f64> {
        self.values
            .chunks_exact(self.p)
            .map(|row| crate::linalg::dot(a, row))
            .collect()
    }
}

/// Per cluster: the summed NLL gradient `s_g` and the summed observed Hessian `H_g` at
/// `params` (one pass over each cluster's rows).
fn cluster_sums(
    data: &Dataset,
    params: &Params,
    clusters: &Clusters,
) -> Vec<(DVector<f64>, DMatrix<f64>)> {
    (0..clusters.len())
        .into_par_iter()
        .map(|g| {
            let sub = data.select_rows(clusters.rows(g));
            let m = sub.n() as f64;
            let (_, grad) = nll_and_gradient(&sub, params);
            let s = DVector::from_vec(grad) * m;
            let h = observed_hessian(&sub, params) * m;
            (s, h)
        })
        .collect()
}

/// Stacks `b + delta_g` for every `delta_g`.
fn shifted(params: &Params, deltas: Vec<DVector<f64>>) -> ClusterDraws {
    let b = params.stacked();
    let p = b.len();
    let mut values = Vec::with_capacity(deltas.len() * p);
    for d in deltas {
        values.extend(b.iter().zip(d.iter()).map(|(x, y)| x + y));
    }
    ClusterDraws {
        values,
        p,
        diverged: 0,
    }
}

/// `b + H^-1 s_g` for every cluster `g` (`H` the observed Hessian summed over all rows, `s_g`
/// cluster `g`'s summed NLL gradient), at the estimate `params`: the spread of these draws is
/// the CR0 cluster-robust covariance `H^-1 (sum_g s_g s_g^T) H^-1` (the scores sum to 0 at
/// the estimate).
///
/// Errors: [`crate::Error::SingularInformation`] when `H` is not positive definite.
pub fn sandwich(data: &Dataset, params: &Params, clusters: &Clusters) -> Result<ClusterDraws> {
    sandwich_with(observed_hessian(data, params), data, params, clusters)
}

/// [`sandwich`] with the observed Hessian `hessian` (the mean over the samples, as
/// [`observed_hessian`] returns it) already computed: one pass for the clusters' summed
/// scores, one factorisation and inverse of `H`, and one GEMM `H^-1 [s_1 .. s_G]`.
pub(crate) fn sandwich_with(
    hessian: DMatrix<f64>,
    data: &Dataset,
    params: &Params,
    clusters: &Clusters,
) -> Result<ClusterDraws> {
    let h_inv = spd_inverse(&(hessian * data.n() as f64), "the observed Hessian")?;
    let (ids, sums) = cluster_score_sums(data, params);
    debug_assert_eq!(ids.len(), clusters.len(), "both in increasing id order");
    let scores = DMatrix::from_vec(data.n_params(), ids.len(), sums);
    let deltas = matmul(&h_inv, &scores);
    Ok(shifted(
        params,
        deltas.column_iter().map(|c| c.into_owned()).collect(),
    ))
}

/// `b_(g) = b + (H - H_g)^-1 s_g` for every cluster `g`: one Newton step of the fit without
/// cluster `g` from the full estimate `params` (whose gradient there is `-s_g`). The
/// leverage-corrected sandwich (CR3) of a GLM; `O(n p^2 + G p^3)`, no refits.
///
/// `Ok(Err(obstacle))` when the Hessian without some cluster is not positive definite: the
/// first such cluster (in id order, whatever the thread count) and the coefficient at its
/// failing pivot (`Obstacle::Pivot`).
pub fn one_step_jackknife(
    data: &Dataset,
    params: &Params,
    clusters: &Clusters,
) -> Result<std::result::Result<ClusterDraws, Obstacle>> {
    let h = observed_hessian(data, params) * data.n() as f64;
    let sums = cluster_sums(data, params, clusters);
    let deltas: Vec<std::result::Result<DVector<f64>, Obstacle>> = sums
        .into_par_iter()
        .enumerate()
        .map(|(g, (s, hg))| {
            let without = &h - hg;
            match spd_inverse(&without, "the observed Hessian without one cluster") {
                Ok(inv) => Ok(inv * s),
                Err(_) => Err(Obstacle::Pivot {
                    coefficient: first_bad_pivot(&without),
                    cluster: clusters.id(g),
                }),
            }
        })
        .collect();
    let deltas: std::result::Result<Vec<_>, Obstacle> = deltas.into_iter().collect();
    Ok(deltas.map(|d| shifted(params, d)))
}

/// The exact leave-one-cluster-out estimates (CV3): each refit of the data without cluster
/// `g` warm-started at `params` (the full estimate), solved again by the estimator's own
/// starts (`estimator`) when it does not converge, as the parametric bootstrap's refits.
///
/// Errors: [`crate::Error::Cancelled`].
pub fn jackknife(
    data: &Dataset,
    params: &Params,
    clusters: &Clusters,
    estimator: &FitOptions,
    cancel: Option<&AtomicBool>,
) -> Result<ClusterDraws> {
    let settings = Settings::new(data, estimator, cancel);
    let runs: Result<Vec<(Params, bool)>> = (0..clusters.len())
        .into_par_iter()
        .map(|g| {
            warm_refit(
                &data.select_rows(&clusters.rows_without(g)),
                params,
                &settings,
            )
        })
        .collect();
    Ok(collect(runs?, params.stacked().len()))
}

/// `reps` cluster (pairs) bootstrap estimates: `G` clusters drawn with replacement (resample
/// `b` from its own seeded stream), their rows refitted warm-started at `params` with the
/// estimator's fallback. Deterministic for a seed, whatever the thread count.
///
/// Errors: [`crate::Error::Cancelled`].
pub fn pairs_bootstrap(
    data: &Dataset,
    params: &Params,
    clusters: &Clusters,
    reps: usize,
    seed: u64,
    estimator: &FitOptions,
    cancel: Option<&AtomicBool>,
) -> Result<ClusterDraws> {
    let settings = Settings::new(data, estimator, cancel);
    let g = clusters.len();
    let runs: Result<Vec<(Params, bool)>> = (0..reps)
        .into_par_iter()
        .map(|b| {
            let mut rng = crate::rng::rng(draw_seed(seed, Stream::ClusterBootstrap, b));
            let rows: Vec<usize> = (0..g)
                .flat_map(|_| clusters.rows(rng.random_range(0..g)).iter().copied())
                .collect();
            warm_refit(&data.select_rows(&rows), params, &settings)
        })
        .collect();
    Ok(collect(runs?, params.stacked().len()))
}

fn collect(runs: Vec<(Params, bool)>, p: usize) -> ClusterDraws {
    let mut out = ClusterDraws {
        values: Vec::with_capacity(runs.len() * p),
        p,
        diverged: 0,
    };
    for (params, converged) in runs {
        out.values.extend(params.stacked());
        out.diverged += usize::from(!converged);
    }
    out
}
