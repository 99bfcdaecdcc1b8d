//! Covariance of the estimator (docs/contract.md §3).
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

use crate::codes::coded_enum;
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::likelihood::{expected_information, observed_hessian, score_outer_product};
#[cfg(test)]
use crate::linalg::spd_inverse;
use crate::linalg::{
    cholesky, lower_inverse_in_place, lower_rank_update, matmul, matmul_tn, spd_inverse_factor,
    symmetrize,
};
use crate::model::Params;
use nalgebra::DMatrix;

coded_enum! {
    /// Which covariance estimate to use.
    #[derive(Default)]
    pub enum CovarianceKind: "covariance", "covariance kind" {
        /// Inverse expected (Fisher) information — the paper's `S_theta^2`, `S_gamma^2` (the
        /// default).
        #[default]
        Expected = 0 => "expected",
        /// Inverse observed Hessian.
        Observed = 1 => "observed",
        /// Sandwich `H^-1 B H^-1` with per-sample scores (heteroskedasticity/misspecification
        /// robust).
        Robust = 2 => "robust",
        /// Sandwich with scores summed per cluster (annotator); needs cluster ids.
        Cluster = 3 => "cluster",
    }
}

/// Checks that `data` can support the `cluster` covariance: cluster ids, and at least two
/// distinct ones — the meat sums the scores within each cluster, and one cluster's sum is the
/// total score, zero at the estimate, so a single cluster leaves no variance to estimate.
///
/// Errors: [`Error::InvalidArgument`] naming `covariance` without cluster ids, `cluster` (the
/// column) with a single id.
fn check_clusters(data: &Dataset) -> Result<()> {
    let Some(ids) = data.cluster() else {
        return Err(Error::invalid(
            "covariance",
            "`cluster` covariance needs cluster ids in the data",
        ));
    };
    if let Some(&first) = ids
        .first()
        .filter(|&&first| ids.iter().all(|&id| id == first))
    {
        return Err(Error::invalid(
            "cluster",
            format!(
                "every row has cluster id {first}: the `cluster` covariance needs at least 2 \
                 clusters (one cluster's summed scores are the total score, zero at the \
                 estimate)"
            ),
        ));
    }
    Ok(())
}

/// The asymptotic covariance `V` of the estimator at `params` (see the module docs).
/// `V` is `(d1 + d2) x (d1 + d2)`, theta first.
///
/// Errors: [`Error::SingularInformation`] when the information/Hessian cannot be inverted
/// reliably; [`Error::InvalidArgument`] for `Cluster` on data without cluster ids or with a
/// single cluster.
///
/// The library computes [`covariance_factors`] instead; this dense `V` is the tests' reference.
#[cfg(test)]
pub(crate) fn asymptotic_covariance(
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
            if clustered {
                check_clusters(data)?;
            }
            let h_inv = spd_inverse(&observed_hessian(data, params), "the observed Hessian")?;
            let meat = score_outer_product(data, params, clustered);
            let mut v = matmul(&matmul(&h_inv, &meat), &h_inv);
            symmetrize(&mut v);
            Ok(v)
        }
    }
}

/// What a fitted model keeps from a covariance: the lower Cholesky factor `L` of
/// `Cov(theta_hat) = V_tt / n` (`d1 x d1`) and `Cov(gamma_hat) = V_gg / n` (`d2 x d2`).
#[derive(Debug, Clone, PartialEq)]
#[doc(hidden)] // reached through `crate::internals` only
pub struct CovarianceFactors {
    /// Lower Cholesky factor of `Cov(theta_hat)`.
    pub theta_factor: DMatrix<f64>,
    /// `Cov(gamma_hat)`.
    pub gamma_cov: DMatrix<f64>,
}

/// The blocks of a symmetric `(d1 + d2)`-square matrix `[[A, B], [B^T, D]]`, with `A` taken
/// over in place (no copy of the large block).
struct Blocks {
    a: DMatrix<f64>,
    b: DMatrix<f64>,
    d: DMatrix<f64>,
}

fn split_blocks(m: DMatrix<f64>, d1: usize) -> Blocks {
    let p = m.nrows();
    let d2 = p - d1;
    let b = m.view((0, d1), (d1, d2)).into_owned();
    let d = m.view((d1, d1), (d2, d2)).into_owned();
    let mut v: Vec<f64> = m.data.into();
    // Compact the leading d1 x d1 block's columns (leading dimension p -> d1) in place.
    for j in 1..d1 {
        v.copy_within(j * p..j * p + d1, j * d1);
    }
    v.truncate(d1 * d1);
    Blocks {
        a: DMatrix::from_vec(d1, d1, v),
        b,
        d,
    }
}

/// The Schur-complement pieces of `M = [[A, B], [B^T, D]]` (symmetric positive definite):
/// `L_S` with `L_S L_S^T = S^-1 = (A - B D^-1 B^T)^-1` (the theta block of `M^-1`),
/// `Y = B D^-1` and `D^-1`.
struct Schur {
    l_s: DMatrix<f64>,
    y: DMatrix<f64>,
    d_inv: DMatrix<f64>,
}

fn schur(blocks: Blocks, what: &str) -> Result<Schur> {
    let Blocks { a, b, d } = blocks;
    let (d1, d2) = (b.nrows(), b.ncols());
    let mut s = a;
    let (y, d_inv) = if d2 == 0 {
        (DMatrix::zeros(d1, 0), DMatrix::zeros(0, 0))
    } else {
        // D = L_D L_D^T; W = B L_D^-T so that B D^-1 B^T = W W^T; Y = B D^-1 = W L_D^-1.
        let mut x = cholesky(&d, &format!("{what} (its gamma block)"))?;
        lower_inverse_in_place(&mut x);
        let w = matmul(&b, &x.transpose());
        // S = A - W W^T, in place, lower triangle only (all spd_inverse_factor reads).
        lower_rank_update(&mut s, -1.0, &w);
        (matmul(&w, &x), x.tr_mul(&x))
    };
    let l_s = spd_inverse_factor(s, what)?;
    Ok(Schur { l_s, y, d_inv })
}

/// The covariance a [`crate::RewardModel`] needs, computed without forming `V`: for the
/// `expected` and `observed` kinds one Gram product (the information), a rank-d2 Schur
/// update and one Cholesky factorisation plus triangular inverse of a `d1 x d1` matrix
/// (`S_theta^2 = S^-1` is factored directly, see [`spd_inverse_factor`]), in place — the
/// information matrix is the only large buffer. The sandwich kinds add the score Gram product
/// and three `d1^3` products. Equal (to rounding) to the blocks of
/// the dense `V` (`asymptotic_covariance`, the tests' reference) divided by `n`.
///
/// Errors: [`Error::SingularInformation`] when the information/Hessian cannot be inverted
/// reliably; [`Error::InvalidArgument`] for `Cluster` on data without cluster ids or with a
/// single cluster.
#[doc(hidden)] // reached through `crate::internals` only
pub fn covariance_factors(
    data: &Dataset,
    params: &Params,
    kind: CovarianceKind,
) -> Result<CovarianceFactors> {
    let (n, d1) = (data.n(), data.d1());
    match kind {
        CovarianceKind::Expected => {
            let info = expected_information(data, params);
            factors_from_matrices(kind, info, None, n, d1)
        }
        CovarianceKind::Observed => {
            factors_from_matrices(kind, observed_hessian(data, params), None, n, d1)
        }
        CovarianceKind::Robust | CovarianceKind::Cluster => {
            let clustered = kind == CovarianceKind::Cluster;
            if clustered {
                check_clusters(data)?;
            }
            let meat = score_outer_product(data, params, clustered);
            let hessian = observed_hessian(data, params);
            factors_from_matrices(kind, hessian, Some(meat), n, d1)
        }
    }
}

/// The inverse of the mean expected information `I = [[A, B], [B^T, D]]` at an estimate,
/// rebuilt from that estimate's `expected` covariance (`Cov(theta_hat) = L L^T` given by its
/// lower factor `theta_factor`, `Cov(gamma_hat) = gamma_cov`, both `I^-1 / n` blocks) and the
/// information's gamma blocks `b = B` (`d1 x d2`) and `d = D` (`d2 x d2`), without `A`:
/// [`information_inverse_from_blocks`] with `Cov(theta_hat)` from a square product of the
/// factor (as the bootstraps' preconditioner has always had it: their refits, and so their
/// intervals, stay the same to the bit), symmetrised. One `d1^3` product instead of the Gram
/// product of `n (d1 + d2)^2` flops and the factorisation that computing `I^-1` afresh costs.
///
/// Errors: [`Error::SingularInformation`] when `D` is not positive definite.
pub(crate) fn expected_information_inverse(
    theta_factor: &DMatrix<f64>,
    gamma_cov: &DMatrix<f64>,
    n: usize,
    b: &DMatrix<f64>,
    d: &DMatrix<f64>,
) -> Result<DMatrix<f64>> {
    let v_tt = matmul(theta_factor, &theta_factor.transpose());
    let mut inverse = information_inverse_from_blocks(v_tt, gamma_cov, n as f64, b, d)?;
    symmetrize(&mut inverse);
    Ok(inverse)
}

/// `scale` times the inverse of the summed expected information `n I` (`scale = n`: the
/// mean information's inverse; `1`: the summed one's) from an estimate's `expected` covariance
/// blocks `v_tt = Cov(theta_hat)` and `gamma_cov = Cov(gamma_hat)` and the mean information's
/// gamma blocks `b = B`, `d = D` (see [`expected_information_inverse`]): by block inversion,
/// `(n I)^-1 = [[V_tt, -V_tt Y], [-Y^T V_tt, V_gg]]` with `Y = B D^-1`. The cross blocks are
/// each other's exact transposes, so the result is exactly symmetric when `v_tt` and
/// `gamma_cov` are.
///
/// Errors: [`Error::SingularInformation`] when `D` is not positive definite.
pub(crate) fn information_inverse_from_blocks(
    v_tt: DMatrix<f64>,
    gamma_cov: &DMatrix<f64>,
    scale: f64,
    b: &DMatrix<f64>,
    d: &DMatrix<f64>,
) -> Result<DMatrix<f64>> {
    let (d1, d2) = (v_tt.nrows(), gamma_cov.nrows());
    let mut l_d = cholesky(d, "the expected information (its gamma block)")?;
    lower_inverse_in_place(&mut l_d);
    let y = matmul(b, &matmul_tn(&l_d, &l_d));
    let cross = matmul(&v_tt, &y) * -scale;
    let mut inverse = DMatrix::<f64>::zeros(d1 + d2, d1 + d2);
    inverse
        .view_mut((0, 0), (d1, d1))
        .copy_from(&(v_tt * scale));
    inverse.view_mut((0, d1), (d1, d2)).copy_from(&cross);
    inverse
        .view_mut((d1, 0), (d2, d1))
        .copy_from(&cross.transpose());
    inverse
        .view_mut((d1, d1), (d2, d2))
        .copy_from(&(gamma_cov * scale));
    Ok(inverse)
}

/// [`covariance_factors`] from the matrices themselves, as means over the `n` samples (what a
/// driver holds after adding up shard statistics, see [`crate::shard`]): `curvature` is the
/// expected information for the `expected` kind and the observed Hessian for the others,
/// `meat` the mean outer product of the scores (summed within clusters for `cluster`),
/// required by the two sandwich kinds and ignored otherwise. Theta is the leading `d1` rows.
///
/// Errors: [`Error::SingularInformation`] as [`covariance_factors`];
/// [`Error::InvalidArgument`] for a sandwich kind without a meat.
pub(crate) fn factors_from_matrices(
    kind: CovarianceKind,
    curvature: DMatrix<f64>,
    meat: Option<DMatrix<f64>>,
    n: usize,
    d1: usize,
) -> Result<CovarianceFactors> {
    let n = n as f64;
    let scale = 1.0 / n.sqrt();
    match kind {
        CovarianceKind::Expected | CovarianceKind::Observed => {
            let what = if kind == CovarianceKind::Expected {
                "the expected information"
            } else {
                "the observed Hessian"
            };
            let sc = schur(split_blocks(curvature, d1), what)?;
            // V_gg = D^-1 + Y^T S^-1 Y = D^-1 + T^T T with T = L_S^T Y.
            let t = matmul_tn(&sc.l_s, &sc.y);
            let mut gamma = (sc.d_inv + t.tr_mul(&t)) / n;
            symmetrize(&mut gamma);
            let mut theta_factor = sc.l_s;
            theta_factor *= scale;
            Ok(CovarianceFactors {
                theta_factor,
                gamma_cov: gamma,
            })
        }
        CovarianceKind::Robust | CovarianceKind::Cluster => {
            let meat = meat.ok_or_else(|| {
                Error::invalid(
                    "meat",
                    format!(
                        "the `{}` covariance needs the scores' outer product",
                        kind.name()
                    ),
                )
            })?;
            let sc = schur(split_blocks(curvature, d1), "the observed Hessian")?;
            let d2 = sc.y.ncols();
            // Theta rows of H^-1: S^-1 [I, -Y]; V_tt = S^-1 M' S^-1 with
            // M' = M_tt - Y M_gt - (M_tg - Y M_gg) Y^T.
            let m_tg = meat.view((0, d1), (d1, d2)).into_owned();
            let m_gg = meat.view((d1, d1), (d2, d2)).into_owned();
            let mut mp = meat.view((0, 0), (d1, d1)).into_owned();
            let z1 = &m_tg - &sc.y * &m_gg;
            mp -= matmul(&sc.y, &m_tg.transpose()) + matmul(&z1, &sc.y.transpose());
            symmetrize(&mut mp);
            // V_tt = L_S K L_S^T with K = L_S^T M' L_S = R R^T: L_V = L_S R is lower.
            let mut k = matmul(&matmul_tn(&sc.l_s, &mp), &sc.l_s);
            drop(mp);
            symmetrize(&mut k);
            let r = cholesky(&k, "the sandwich covariance of theta")?;
            drop(k);
            let mut theta_factor = matmul(&sc.l_s, &r);
            theta_factor *= scale;
            // Gamma rows of H^-1: G = [-(S^-1 Y)^T, D^-1 + Y^T S^-1 Y]; V_gg = G M G^T.
            let t = matmul_tn(&sc.l_s, &sc.y);
            let s_inv_y = matmul(&sc.l_s, &t);
            let mut g = DMatrix::<f64>::zeros(d2, d1 + d2);
            g.view_mut((0, 0), (d2, d1))
                .copy_from(&(-s_inv_y.transpose()));
            g.view_mut((0, d1), (d2, d2))
                .copy_from(&(&sc.d_inv + t.tr_mul(&t)));
            let mg = matmul(&meat, &g.transpose());
            let mut gamma = &g * mg / n;
            symmetrize(&mut gamma);
            Ok(CovarianceFactors {
                theta_factor,
                gamma_cov: gamma,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::{paper_simulation, ActionDesign};

    #[test]
    fn factors_equal_the_blocks_of_the_full_covariance() {
        let base = paper_simulation(500, ActionDesign::Uniform, 21);
        let ids: Vec<i64> = (0..500).map(|i| (i % 37) as i64).collect();
        let data = Dataset::new(
            3,
            2,
            base.z().to_vec(),
            base.psi0().to_vec(),
            base.psi().to_vec(),
            base.y().to_vec(),
            Some(ids),
        )
        .unwrap();
        let params = Params {
            theta: vec![0.27, 0.46, 0.31],
            gamma: vec![0.52, 0.3],
        };
        let n = 500.0;
        for kind in CovarianceKind::ALL {
            let v = asymptotic_covariance(&data, &params, kind).unwrap();
            let f = covariance_factors(&data, &params, kind).unwrap();
            let tt = &f.theta_factor * f.theta_factor.transpose();
            let want_tt = v.view((0, 0), (3, 3)) / n;
            let want_gg = v.view((3, 3), (2, 2)) / n;
            let close =
                |a: &DMatrix<f64>, b: &DMatrix<f64>| (a - b).abs().max() <= 1e-10 * b.abs().max();
            assert!(close(&tt, &want_tt), "{kind:?}: {tt} vs {want_tt}");
            assert!(close(&f.gamma_cov, &want_gg), "{kind:?}");
            for j in 1..3 {
                for i in 0..j {
                    assert_eq!(f.theta_factor[(i, j)], 0.0);
                }
            }
        }
    }

    #[test]
    fn information_inverse_from_the_expected_factors_is_the_inverse() {
        let data = paper_simulation(800, ActionDesign::Uniform, 5);
        let params = Params {
            theta: vec![0.4, -0.2, 0.35],
            gamma: vec![0.3, -0.45],
        };
        let info = expected_information(&data, &params);
        let f = covariance_factors(&data, &params, CovarianceKind::Expected).unwrap();
        let (b, _, d) = crate::likelihood::gamma_blocks(&data, &params);
        let inverse =
            expected_information_inverse(&f.theta_factor, &f.gamma_cov, data.n(), &b, &d).unwrap();
        let want = spd_inverse(&info, "test").unwrap();
        assert!((&inverse - &want).abs().max() <= 1e-10 * want.abs().max());
        assert_eq!(inverse, inverse.transpose());
        // It inverts the information (the cross blocks' sign and scale included).
        let identity = &info * &inverse;
        assert!((identity - DMatrix::<f64>::identity(5, 5)).abs().max() < 1e-9);
    }
}
