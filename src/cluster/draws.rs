//! The two cluster jackknives' draws (see the module docs of [`crate::cluster`]).

use super::clusters::Clusters;
use super::identified::Obstacle;
use crate::data::Dataset;
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
/// `Ok(Err(obstacle))` when the Hessian without some cluster is not positive definite: the
/// first such cluster (in id order, whatever the thread count) and the coefficient at its
/// failing pivot (`Obstacle::Pivot`).
pub fn one_step_deltas(
    data: &Dataset,
    params: &Params,
    clusters: &Clusters,
) -> Result<std::result::Result<Vec<DVector<f64>>, Obstacle>> {
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
/// Errors: [`crate::Error::Cancelled`].
pub fn jackknife(
    data: &Dataset,
    params: &Params,
    clusters: &Clusters,
    estimator: &FitOptions,
    cancel: Option<&AtomicBool>,
) -> Result<Draws> {
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
    Ok(Draws::collect(
        runs?,
        params.theta.len(),
        params.gamma.len(),
    ))
}
