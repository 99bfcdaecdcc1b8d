//! A diagnostic of annotator heterogeneity beyond the covariates: how much larger the
//! cluster-robust variance of each coefficient is than the model-based one.
//!
//! Under the working model (comparisons independent given the covariates) the CR1
//! cluster-robust variance and the inverse expected information estimate the same variance,
//! so their ratio (the design effect) is near 1, within its noise of about `sqrt(2 / k)` with
//! `k` the coefficient's effective number of clusters ([`crate::interval::effective_df`], Kish's count:
//! a gamma of an annotator covariate held by few annotators has few).
//! An annotator effect the covariates miss makes one annotator's comparisons dependent and
//! the ratio grows with the comparisons per annotator; an interval that assumes independence
//! then covers about `2 Phi(1.96 / sqrt(ratio)) - 1` instead of 0.95.

use super::clusters::Clusters;
use super::GammaBlocks;
use crate::covariance::{factors_from_matrices, CovarianceKind};
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::fitted::RewardModel;
use crate::interval::effective_df;
#[cfg(doc)]
use crate::likelihood::gamma_blocks;
use crate::likelihood::{cluster_score_sums, expected_information};
use crate::linalg::{
    cholesky, lower_inverse_in_place, lower_matmul, lower_matmul_tn, matmul, matmul_tn,
};
use crate::model::Params;
use nalgebra::DMatrix;
use statrs::distribution::{ContinuousCDF, Normal};

/// The design effect above which a fit warns (if it is also [`EXCESS_Z_WARNING`] noise SDs
/// above 1, see [`Heterogeneity::warning`]): at 1.17 an interval that assumes independence
/// covers 0.93.
pub const DESIGN_EFFECT_WARNING: f64 = 1.17;
/// The standardised excess `(design effect - 1) / sqrt(2 / k)` above which a fit warns.
/// Measured on issue 20's annotator design (200 datasets per cell, `sim::annotator_effects`):
/// its largest value over the 8 coefficients has 95% quantile 1.73 (G = 40 x 40) and 1.46
/// (G = 300 x 10) without annotator effects (tau = 0), 5% quantile 2.34 and 1.93 with
/// tau = 0.6, median 1.65 and 1.22 with tau = 0.3.
pub const EXCESS_Z_WARNING: f64 = 2.0;

/// What [`heterogeneity`] reports.
#[derive(Debug, Clone, PartialEq)]
pub struct Heterogeneity {
    /// Number of clusters `G`.
    pub clusters: usize,
    /// Per coefficient (theta first, then gamma): the CR1 cluster-robust variance over the
    /// inverse expected information's (the paper's) variance.
    pub design_effects: Vec<f64>,
    /// Per coefficient: its effective number of clusters `k` (Kish's count of the clusters'
    /// contributions, at most `G - 1`): the design effect's noise SD is about `sqrt(2 / k)`.
    pub effective_clusters: Vec<f64>,
    /// Per coefficient: the standardised excess `(design effect - 1) / sqrt(2 / k)`, `k` its
    /// effective number of clusters.
    pub excess_z: Vec<f64>,
    /// The coefficient with the largest standardised excess (index into `(theta, gamma)`).
    pub worst: usize,
    /// Approximate coverage of a 95% interval that assumes independent comparisons for that
    /// coefficient: `2 Phi(1.96 / sqrt(design effect)) - 1`.
    pub independent_coverage: f64,
    /// Plain words when intervals that assume independence would under-cover: the worst
    /// coefficient's design effect is above [`DESIGN_EFFECT_WARNING`] and its standardised
    /// excess above [`EXCESS_Z_WARNING`].
    pub warning: Option<String>,
}

/// The [`Heterogeneity`] of the fit `params` of `data` (which must have cluster ids).
///
/// Errors: [`crate::Error::InvalidArgument`] (`cluster`) without cluster ids or with fewer than
/// [`super::clusters::MIN_CLUSTERS`]; [`crate::Error::SingularInformation`] as the covariance.
pub fn heterogeneity(data: &Dataset, params: &Params) -> Result<Heterogeneity> {
    let clusters = Clusters::of(data)?;
    let info = expected_information(data, params);
    let model = factors_from_matrices(CovarianceKind::Expected, info, None, data.n(), data.d1())?;
    diagnose(
        data,
        params,
        &clusters,
        &model.theta_factor,
        &model.gamma_cov,
        &super::gamma_blocks_of(data, params),
    )
}

/// [`heterogeneity`] of `model`, the fit of `data` (the model [`crate::estimator::Estimator::estimate`]
/// built from these data, as the command-line program's `fit`): when its covariance is the
/// `expected` kind it is the inverse information the diagnostic needs, so the diagnostic
/// costs two passes over the data and two triangular `d1 x d1` by `d1 x G` products instead of
/// a second Gram product of `n (d1 + d2)^2` flops (the same design effects to rounding).
/// [`super::diagnostics_of_fit`] computes it beside the leverage with one pass fewer. Any other model
/// (another covariance kind, another sample size or shape) takes [`heterogeneity`] at its
/// estimate.
///
/// Errors: as [`heterogeneity`].
pub fn heterogeneity_of_fit(data: &Dataset, model: &RewardModel) -> Result<Heterogeneity> {
    if !model.is_expected_fit_of(data) {
        return heterogeneity(data, model.params());
    }
    let clusters = Clusters::of(data)?;
    let blocks = super::gamma_blocks_of(data, model.params());
    of_expected_fit(data, model, &clusters, &blocks)
}

/// [`heterogeneity_of_fit`] of a model that is the `expected` fit of `data`
/// (`RewardModel::is_expected_fit_of`), given the information's gamma blocks at its
/// estimate (`super::gamma_blocks_of`, shared with the leverage diagnostic).
pub(super) fn of_expected_fit(
    data: &Dataset,
    model: &RewardModel,
    clusters: &Clusters,
    blocks: &GammaBlocks,
) -> Result<Heterogeneity> {
    diagnose(
        data,
        model.params(),
        clusters,
        model.theta_cov_factor(),
        model.gamma_cov(),
        blocks,
    )
}

/// The diagnostic given the expected information's covariance at `params`: `theta_factor`
/// the lower Cholesky factor of `Cov(theta_hat)` and `gamma_cov` `Cov(gamma_hat)` (both the
/// inverse information's blocks over `n`, [`factors_from_matrices`]), and `blocks` the
/// gamma blocks at `params` (`super::gamma_blocks_of`).
fn diagnose(
    data: &Dataset,
    params: &Params,
    clusters: &Clusters,
    theta_factor: &DMatrix<f64>,
    gamma_cov: &DMatrix<f64>,
    blocks: &GammaBlocks,
) -> Result<Heterogeneity> {
    let g = clusters.len() as f64;
    let (n, p) = (data.n() as f64, data.n_params() as f64);
    let cr1 = g / (g - 1.0) * (n - 1.0) / (n - p).max(1.0);
    let d1 = data.d1();
    // One column per coefficient (contiguous), clusters down the rows.
    let by_coefficient = sandwich_draws(data, params, clusters, theta_factor, blocks)?.transpose();
    // Var(theta_hat_j) = |row j of L|^2, summed column by column (L is column-major).
    let mut theta_var = vec![0.0; d1];
    for column in theta_factor.column_iter() {
        for (v, x) in theta_var.iter_mut().zip(column.iter()) {
            *v += x * x;
        }
    }
    let model_var = |c: usize| {
        if c < d1 {
            theta_var[c]
        } else {
            gamma_cov[(c - d1, c - d1)]
        }
    };
    let per_coefficient: Vec<(f64, f64)> = (0..data.n_params())
        .map(|c| {
            let v = &by_coefficient.as_slice()[c * clusters.len()..(c + 1) * clusters.len()];
            let mean = v.iter().sum::<f64>() / g;
            let robust = cr1 * v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>();
            (robust / model_var(c), effective_df(v, 1.0))
        })
        .collect();
    let (design_effects, effective_clusters): (Vec<f64>, Vec<f64>) =
        per_coefficient.into_iter().unzip();
    let excess_z: Vec<f64> = design_effects
        .iter()
        .zip(&effective_clusters)
        .map(|(de, k)| (de - 1.0) / (2.0 / k).sqrt())
        .collect();
    let worst = (0..excess_z.len())
        .max_by(|&a, &b| excess_z[a].total_cmp(&excess_z[b]))
        .unwrap_or(0);
    let de = design_effects[worst];
    let independent_coverage =
        2.0 * Normal::standard().cdf(1.959963984540054 / de.max(1e-12).sqrt()) - 1.0;
    let name = coefficient_name(d1, worst);
    let warning = (de > DESIGN_EFFECT_WARNING && excess_z[worst] > EXCESS_Z_WARNING).then(|| {
        format!(
            "annotators differ beyond their covariates: the cluster-robust variance of {name} is \
             {de:.2}x the model's ({} clusters); intervals that assume independent comparisons \
             (wald, bootstrap, resized) cover it about {:.0}% of the time instead of 95%; use \
             --intervals cluster-onestep or cluster-jackknife (auto does)",
            clusters.len(),
            100.0 * independent_coverage
        )
    });
    Ok(Heterogeneity {
        clusters: clusters.len(),
        design_effects,
        effective_clusters,
        excess_z,
        worst,
        independent_coverage,
        warning,
    })
}

/// The name of coefficient `c` of `(theta, gamma)` (`d1` thetas): `theta_c` or
/// `gamma_{c - d1}`, 0-based, as the diagnostics' warnings name them.
pub(super) fn coefficient_name(d1: usize, c: usize) -> String {
    if c < d1 {
        format!("theta_{c}")
    } else {
        format!("gamma_{}", c - d1)
    }
}

/// `H^-1 s_g` for every cluster `g` (columns, clusters in increasing id order; `H` the
/// observed Hessian summed over all rows, `s_g` cluster `g`'s summed NLL gradient), the
/// deviations of the sandwich draws `b + H^-1 s_g` from the estimate, given
/// `theta_factor`, the lower Cholesky factor `L` of `Cov(theta_hat)` from the expected
/// information `I` at `params` (`L L^T = S_I^-1 / n`, `S_I = A - B D^-1 B^T` the Schur
/// complement of `I = [[A, B], [B^T, D]]`), without `A`.
///
/// The observed Hessian (means) is `[[A, B'], [B'^T, D]]` with `B' = B + R` (the residual
/// cross term), so its Schur complement is `S_H = A - B' D^-1 B'^T = S_I + W W^T - W' W'^T`
/// with `W = B L_D^-T`, `W' = B' L_D^-T` (`D = L_D L_D^T`): a rank-`2 d2` update of `S_I`,
/// solved by the Woodbury identity `S_H^-1 = P - P U K^-1 U^T P` (`P = S_I^-1 = n L L^T`,
/// `U = [W, W']`, `K = diag(I, -I) + U^T P U`). Then `x_t = S_H^-1 (s_t - B' D^-1 s_g) / n`
/// and `x_g = D^-1 (s_g / n - B'^T x_t)`. Costs the pass of [`cluster_score_sums`] (with
/// `blocks`, [`gamma_blocks`]' `(I_tg, H_tg, D)`, already computed) and two triangular
/// `d1 x d1` by `d1 x G` products (`L^T R`, then `L` times the result: `d1^2 G` multiply-adds
/// in all).
///
/// Errors: [`Error::SingularInformation`] when `D` or `S_H` is not positive definite (`H` is
/// not: the sandwich needs its inverse).
fn sandwich_draws(
    data: &Dataset,
    params: &Params,
    clusters: &Clusters,
    theta_factor: &DMatrix<f64>,
    blocks: &GammaBlocks,
) -> Result<DMatrix<f64>> {
    let (n, d1, d2) = (data.n() as f64, data.d1(), data.d2());
    let (ids, sums) = cluster_score_sums(data, params);
    debug_assert_eq!(ids.len(), clusters.len(), "both in increasing id order");
    let scores = DMatrix::from_vec(d1 + d2, ids.len(), sums);
    let l = theta_factor;
    let s_t = scores.rows(0, d1).into_owned();
    let Some((i_tg, h_tg, d)) = blocks else {
        // d2 = 0: H = A = S_I, H_sum^-1 = L L^T.
        return Ok(lower_matmul(l, &lower_matmul_tn(l, &s_t)));
    };
    let s_g = scores.rows(d1, d2).into_owned();
    let what = "the observed Hessian";
    let mut ld_inv = cholesky(d, &format!("{what} (its gamma block)"))?;
    lower_inverse_in_place(&mut ld_inv);
    let w = i_tg * ld_inv.transpose();
    let wh = h_tg * ld_inv.transpose();
    let mut u = DMatrix::zeros(d1, 2 * d2);
    u.columns_mut(0, d2).copy_from(&w);
    u.columns_mut(d2, d2).copy_from(&wh);
    let q = lower_matmul_tn(l, &u);
    let mut k = matmul_tn(&q, &q) * n;
    // S_H is positive definite iff E = I - W'^T A^-1 W' is (A = S_I + W W^T is):
    // E = I - n Q'^T Q' + n^2 Q'^T Q1 (I + n Q1^T Q1)^-1 Q1^T Q'.
    let k11 = k.view((0, 0), (d2, d2)) + DMatrix::<f64>::identity(d2, d2);
    let k12 = k.view((0, d2), (d2, d2)).into_owned();
    let c11 = cholesky(&k11, what)?;
    let y = c11
        .solve_lower_triangular(&k12)
        .ok_or_else(|| singular(what))?;
    let e = DMatrix::<f64>::identity(d2, d2) - k.view((d2, d2), (d2, d2)) + y.tr_mul(&y);
    cholesky(&e, what)?;
    for j in 0..2 * d2 {
        k[(j, j)] += if j < d2 { 1.0 } else { -1.0 };
    }
    // R = s_t - B' D^-1 s_g; x_t = L (T - n Q K^-1 Q^T T) with T = L^T R.
    let r = s_t - matmul(&wh, &(&ld_inv * &s_g));
    let t = lower_matmul_tn(l, &r);
    let sol = k
        .lu()
        .solve(&matmul_tn(&q, &t))
        .ok_or_else(|| singular(what))?;
    let x_t = lower_matmul(l, &(t - matmul(&q, &sol) * n));
    let x_g = ld_inv.tr_mul(&ld_inv) * (s_g / n - matmul_tn(h_tg, &x_t));
    let mut x = DMatrix::zeros(d1 + d2, ids.len());
    x.rows_mut(0, d1).copy_from(&x_t);
    x.rows_mut(d1, d2).copy_from(&x_g);
    Ok(x)
}

fn singular(what: &str) -> Error {
    Error::SingularInformation {
        detail: format!("{what} is not positive definite"),
    }
}
