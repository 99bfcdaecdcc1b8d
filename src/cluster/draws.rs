//! The two cluster jackknives' draws (see the module docs of [`crate::cluster`]).

use super::clusters::Clusters;
use super::identified::{carried_by_one, Carried, Obstacle};
use crate::data::{Dataset, FeatureMatrix, Rows};
use crate::error::Result;
use crate::fit::FitOptions;
use crate::likelihood::{nll_and_gradient, observed_hessian};
use crate::linalg::{first_bad_pivot, spd_inverse};
use crate::model::Params;
use crate::resample::{warm_refit, Draws, Settings};
use nalgebra::{DMatrix, DVector};
use rayon::prelude::*;
use std::sync::atomic::AtomicBool;

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

/// The draws `b + delta_g`, one per `delta_g`.
fn shifted(params: &Params, deltas: Vec<DVector<f64>>) -> Draws {
    let b = params.stacked();
    let d1 = params.theta.len();
    let mut out = Draws::with_capacity(deltas.len(), d1, params.gamma.len());
    for d in deltas {
        let v: Vec<f64> = b.iter().zip(d.iter()).map(|(x, y)| x + y).collect();
        out.push(&v[..d1], &v[d1..], true);
    }
    out
}

/// `delta_g = (H - H_g)^-1 s_g` for every cluster `g`, in `f64`: one Newton step of the fit
/// without cluster `g` from the full estimate `params` (whose gradient there is `-s_g`).
/// `sum_g delta_g delta_g^T` is the leverage-corrected sandwich (CR3) of a GLM;
/// `O(n p^2 + G p^3)`, no refits.
///
/// A cluster that carries coefficients alone ([`Carried`]) takes the step with them
/// held: the likelihood without it does not depend on them (their rows and columns of
/// `H - H_g` are zero), so the step solves `(H - H_g)_FF delta_F = (s_g)_F` on the other
/// coordinates `F` and `delta_C = 0` (the Newton step of the refit that drops their columns).
/// Data without such coefficients take the full solve, as always.
///
/// `Ok(Err(obstacle))` when the Hessian without some cluster is not positive definite (on the
/// coordinates it estimates): the first such cluster (in id order, whatever the thread count)
/// and the coefficient at its failing pivot (`Obstacle::Pivot`, stacked index).
pub fn one_step_deltas(
    data: &Dataset,
    params: &Params,
    clusters: &Clusters,
) -> Result<std::result::Result<Vec<DVector<f64>>, Obstacle>> {
    let carried = carried_by_one(data, clusters);
    if carried.len() == data.n_params() {
        // No coefficient has a leave-one-out estimate: every interval is unbounded, and the
        // draws (the estimate, unmoved) are never read.
        return Ok(Ok(vec![DVector::zeros(data.n_params()); clusters.len()]));
    }
    let h = observed_hessian(data, params) * data.n() as f64;
    let sums = cluster_sums(data, params, clusters);
    let deltas: Vec<std::result::Result<DVector<f64>, Obstacle>> = sums
        .into_par_iter()
        .enumerate()
        .map(|(g, (s, hg))| {
            let held = Carried::held_by(&carried, clusters.id(g));
            let without = &h - hg;
            let obstacle = |pivot: Option<usize>| Obstacle::Pivot {
                coefficient: pivot,
                cluster: clusters.id(g),
            };
            if held.is_empty() {
                return match spd_inverse(&without, "the observed Hessian without one cluster") {
                    Ok(inv) => Ok(inv * s),
                    Err(_) => Err(obstacle(first_bad_pivot(&without))),
                };
            }
            let free: Vec<usize> = (0..s.len()).filter(|j| !held.contains(j)).collect();
            if free.is_empty() {
                // Without `g` no coefficient has an estimate: every one is unbounded.
                return Ok(DVector::zeros(s.len()));
            }
            let restricted = without.select_rows(&free).select_columns(&free);
            match spd_inverse(&restricted, "the observed Hessian without one cluster") {
                Ok(inv) => {
                    let step = inv * s.select_rows(&free);
                    let mut delta = DVector::zeros(s.len());
                    for (&j, v) in free.iter().zip(step.iter()) {
                        delta[j] = *v;
                    }
                    Ok(delta)
                }
                Err(_) => Err(obstacle(first_bad_pivot(&restricted).map(|k| free[k]))),
            }
        })
        .collect();
    Ok(deltas.into_iter().collect())
}

/// The one-step jackknife's draws `b_(g) = b + delta_g` ([`one_step_deltas`]), stored as a
/// model stores draws (`f32`).
pub fn one_step_jackknife(
    data: &Dataset,
    params: &Params,
    clusters: &Clusters,
) -> Result<std::result::Result<Draws, Obstacle>> {
    Ok(one_step_deltas(data, params, clusters)?.map(|d| shifted(params, d)))
}

/// Why the one-step jackknife cannot run on the estimate `params` of `data` — the first
/// annotator whose leave-one-out observed Hessian is not positive definite and the
/// coefficient at its pivot, in plain words — or `None` when it can (or the data have no
/// cluster ids). What the command-line program prints beside `auto`'s fallback to the exact
/// jackknife (the model file records the fallback as `cluster-jackknife` with `requested =
/// auto`; this names the annotator). `O(n p^2 + G p^3)`.
pub fn one_step_obstacle(data: &Dataset, params: &crate::model::Params) -> Option<String> {
    let clusters = Clusters::of(data).ok()?;
    match one_step_jackknife(data, params, &clusters) {
        Ok(Err(obstacle)) => Some(obstacle.describe(data.d1())),
        _ => None,
    }
}

/// The exact leave-one-cluster-out estimates (CV3): each refit of the data without cluster
/// `g` warm-started at `params` (the full estimate), solved again by the estimator's own
/// starts (`estimator`) when it does not converge, as the parametric bootstrap's refits.
///
/// A cluster that carries coefficients alone ([`Carried`]) is refitted with them held
/// at the estimate: the data without it, with their columns of `z` and `psi` removed, refitted
/// warm from the estimate's other coordinates, the held ones put back
/// (`refit_without_held`).
///
/// Errors: [`crate::Error::Cancelled`].
pub fn jackknife(
    data: &Dataset,
    params: &Params,
    clusters: &Clusters,
    estimator: &FitOptions,
    cancel: Option<&AtomicBool>,
) -> Result<Draws> {
    let carried = carried_by_one(data, clusters);
    if carried.len() == data.n_params() {
        // As in `one_step_deltas`: every interval is unbounded, no refit is needed.
        let unmoved = (0..clusters.len()).map(|_| (params.clone(), true));
        return Ok(Draws::collect(
            unmoved,
            params.theta.len(),
            params.gamma.len(),
        ));
    }
    let settings = Settings::new(data, estimator, cancel);
    let runs: Result<Vec<(Params, bool)>> = (0..clusters.len())
        .into_par_iter()
        .map(|g| {
            let sample = data.select_rows(&clusters.rows_without(g));
            let held = Carried::held_by(&carried, clusters.id(g));
            if held.is_empty() {
                warm_refit(&sample, params, &settings)
            } else {
                refit_without_held(&sample, params, &held, estimator, cancel)
            }
        })
        .collect();
    Ok(Draws::collect(
        runs?,
        params.theta.len(),
        params.gamma.len(),
    ))
}

/// The refit of `sample` (data whose likelihood does not depend on the stacked coefficients
/// `held`) with `held` at their values in `params`: the columns of `z` and `psi` of the held
/// coefficients are removed, the rest refitted warm from `params`' other coordinates
/// ([`warm_refit`], with the estimator's options `estimator`, an explicit start reduced
/// alike), and the held values put back. When every theta is held the likelihood without the
/// carrier depends on nothing (every reward is 0): the estimate itself is the draw.
///
/// Errors: [`crate::Error::Cancelled`].
fn refit_without_held(
    sample: &Dataset,
    params: &Params,
    held: &[usize],
    estimator: &FitOptions,
    cancel: Option<&AtomicBool>,
) -> Result<(Params, bool)> {
    let (d1, d2) = (sample.d1(), sample.d2());
    let keep_theta: Vec<usize> = (0..d1).filter(|j| !held.contains(j)).collect();
    let keep_gamma: Vec<usize> = (0..d2).filter(|k| !held.contains(&(d1 + k))).collect();
    if keep_theta.is_empty() {
        return Ok((params.clone(), true));
    }
    let n = sample.n();
    let z: Vec<f64> = match sample.features() {
        FeatureMatrix::F64(v) => (0..n)
            .flat_map(|i| keep_theta.iter().map(move |&j| v[i * d1 + j]))
            .collect(),
        FeatureMatrix::F32(v) => (0..n)
            .flat_map(|i| keep_theta.iter().map(move |&j| f64::from(v[i * d1 + j])))
            .collect(),
    };
    let psi: Vec<f64> = (0..n)
        .flat_map(|i| keep_gamma.iter().map(move |&k| sample.psi_row(i)[k]))
        .collect();
    let reduced = Dataset::with_rows(
        Rows::Shard,
        keep_theta.len(),
        keep_gamma.len(),
        z,
        sample.psi0().to_vec(),
        psi,
        sample.y().to_vec(),
        sample.cluster().map(<[i64]>::to_vec),
    )?;
    let reduce = |p: &Params| Params {
        theta: keep_theta.iter().map(|&j| p.theta[j]).collect(),
        gamma: keep_gamma.iter().map(|&k| p.gamma[k]).collect(),
    };
    let options = FitOptions {
        init: match &estimator.init {
            crate::fit::Init::Explicit(p) => crate::fit::Init::Explicit(reduce(p)),
            other => other.clone(),
        },
        ..estimator.clone()
    };
    let settings = Settings::new(&reduced, &options, cancel);
    let (fit, converged) = warm_refit(&reduced, &reduce(params), &settings)?;
    let mut out = params.clone();
    for (&j, v) in keep_theta.iter().zip(&fit.theta) {
        out.theta[j] = *v;
    }
    for (&k, v) in keep_gamma.iter().zip(&fit.gamma) {
        out.gamma[k] = *v;
    }
    Ok((out, converged))
}
