//! Covariance of the estimator (SPEC §3).
//!
//! All kinds produce `V`, the asymptotic covariance of `sqrt(n) (tau_hat - tau)` with
//! `tau = (theta, gamma)`, so that `Cov(tau_hat) = V / n`:
//!
//! * `expected` (default, the paper's): `V = I^-1`. Its theta block is exactly
//!   `S_theta^2 = [I_tt - I_tg I_gg^-1 I_gt]^-1` and its gamma block
//!   `S_gamma^2 = [I_gg - I_gt I_tt^-1 I_tg]^-1` (block inversion).
//! * `observed`: `V = H^-1` with `H` the observed Hessian of `L_n`.
//! * `robust`: the sandwich `V = H^-1 B H^-1`, `B` the mean outer product of per-sample scores.
//! * `cluster`: the sandwich with scores summed within each cluster (annotator) first (no
//!   small-sample correction: CR0).
//!
//! A singular or ill-conditioned matrix is an [`Error::SingularInformation`], never a NaN.

use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::likelihood::{expected_information, observed_hessian, score_outer_product};
use crate::linalg::{spd_inverse, symmetrize};
use crate::model::Params;
use nalgebra::DMatrix;

/// Which covariance estimate to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CovarianceKind {
    /// Inverse expected (Fisher) information — the paper's `S_theta^2`, `S_gamma^2`.
    Expected,
    /// Inverse observed Hessian.
    Observed,
    /// Sandwich `H^-1 B H^-1` with per-sample scores (heteroskedasticity/misspecification robust).
    Robust,
    /// Sandwich with scores summed per cluster (annotator); needs cluster ids.
    Cluster,
}

impl CovarianceKind {
    /// Every kind, in code order (the order of the C enum and the model file).
    pub const ALL: [CovarianceKind; 4] = [
        CovarianceKind::Expected,
        CovarianceKind::Observed,
        CovarianceKind::Robust,
        CovarianceKind::Cluster,
    ];

    /// Stable name ("expected", "observed", "robust", "cluster").
    pub fn name(self) -> &'static str {
        match self {
            CovarianceKind::Expected => "expected",
            CovarianceKind::Observed => "observed",
            CovarianceKind::Robust => "robust",
            CovarianceKind::Cluster => "cluster",
        }
    }

    /// Parses a name as produced by [`CovarianceKind::name`].
    pub fn from_name(name: &str) -> Result<Self> {
        Self::ALL
            .into_iter()
            .find(|k| k.name() == name)
            .ok_or_else(|| {
                Error::invalid(
                    "covariance",
                    format!("unknown covariance kind `{name}` (expected expected, observed, robust or cluster)"),
                )
            })
    }
}

/// The asymptotic covariance `V` of the estimator at `params` (see the module docs).
/// `V` is `(d1 + d2) x (d1 + d2)`, theta first.
///
/// Errors: [`Error::SingularInformation`] when the information/Hessian cannot be inverted
/// reliably; [`Error::InvalidArgument`] for `Cluster` on data without cluster ids.
pub fn asymptotic_covariance(
    data: &Dataset,
    params: &Params,
    kind: CovarianceKind,
) -> Result<DMatrix<f64>> {
    match kind {
        CovarianceKind::Expected => spd_inverse(
            &expected_information(data, params),
            "the expected information",
        ),
        CovarianceKind::Observed => {
            spd_inverse(&observed_hessian(data, params), "the observed Hessian")
        }
        CovarianceKind::Robust | CovarianceKind::Cluster => {
            let clustered = kind == CovarianceKind::Cluster;
            if clustered && data.cluster().is_none() {
                return Err(Error::invalid(
                    "covariance",
                    "`cluster` covariance needs cluster ids in the data",
                ));
            }
            let h_inv = spd_inverse(&observed_hessian(data, params), "the observed Hessian")?;
            let meat = score_outer_product(data, params, clustered);
            let mut v = &h_inv * meat * &h_inv;
            symmetrize(&mut v);
            Ok(v)
        }
    }
}
