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
use super::draws::sandwich_with;
use crate::data::Dataset;
use crate::error::Result;
use crate::inference::{factors_from_matrices, CovarianceKind};
use crate::interval::effective_df;
use crate::likelihood::{add_residual_cross_term, expected_information, residual_cross_term};
use crate::model::Params;
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
    let g = clusters.len() as f64;
    let (n, p) = (data.n() as f64, data.n_params() as f64);
    let cr1 = g / (g - 1.0) * (n - 1.0) / (n - p).max(1.0);
    // One Gram product for both: the observed Hessian is the expected information plus the
    // residual cross term.
    let d1 = data.d1();
    let info = expected_information(data, params);
    let mut hessian = info.clone();
    if data.d2() > 0 {
        add_residual_cross_term(&mut hessian, &residual_cross_term(data, params));
    }
    let draws = sandwich_with(hessian, data, params, &clusters)?;
    let model = factors_from_matrices(CovarianceKind::Expected, info, None, data.n(), d1)?;
    let model_var = |c: usize| {
        if c < d1 {
            model.theta_factor.row(c).norm_squared()
        } else {
            model.gamma_cov[(c - d1, c - d1)]
        }
    };
    let per_coefficient: Vec<(f64, f64)> = (0..data.n_params())
        .map(|c| {
            let v: Vec<f64> = draws
                .values
                .iter()
                .skip(c)
                .step_by(draws.p)
                .copied()
                .collect();
            let mean = v.iter().sum::<f64>() / g;
            let robust = cr1 * v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>();
            (robust / model_var(c), effective_df(&v, 1.0))
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
    let name = if worst < d1 {
        format!("theta_{worst}")
    } else {
        format!("gamma_{}", worst - d1)
    };
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
