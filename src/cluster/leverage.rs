//! Leverage diagnostics of the annotators (clusters): how much of the information about each
//! coefficient each annotator carries, after `summclust` (MacKinnon, Nielsen & Webb 2023,
//! "Leverage, influence, and the jackknife in clustered regression models").
//!
//! With `I = sum_i w_i g_i g_i^T` the expected (Fisher) information summed over the rows
//! (`g_i` the derivative of the utility, `w_i = mu (1 - mu)`, `src/likelihood.rs`) and
//! `I_g` the same sum over the rows of annotator `g`:
//!
//! * **leverage** `L_g = tr(I_g I^-1)`: in a linear model (`w_i = 1`, `g_i = x_i`) this is
//!   `tr(H_gg)`, the trace of the cluster's diagonal block of the hat matrix, `summclust`'s
//!   leverage; in a GLM it is the trace of the block of the weighted hat matrix
//!   `W^1/2 X (X^T W X)^-1 X^T W^1/2`. The leverages sum to `p = d1 + d2`; balanced annotators
//!   each have `p / G`.
//! * **partial leverage** of annotator `g` for coefficient `j`:
//!   `P_gj = (I^-1 I_g I^-1)_jj / (I^-1)_jj`. In the linear model it is `summclust`'s
//!   `x~_jg^T x~_jg / x~_j^T x~_j` (`x~_j` the column of coefficient `j` with the other
//!   columns partialled out: row `j` of `(X^T X)^-1 X^T` is `x~_j^T / x~_j^T x~_j`), here
//!   with the information's weights. It is annotator `g`'s share of coefficient `j`'s
//!   variance under the working model: the estimate's linearisation is
//!   `b - beta = I^-1 sum_g s_g` with independent cluster scores of variance `I_g`, so
//!   `Var(b_j) = sum_g (I^-1 I_g I^-1)_jj = (I^-1)_jj` and the `P_gj` of a coefficient are
//!   non-negative and sum to 1. An annotator alone in a covariate (the one expert) carries
//!   its gamma: `P_gj` near 1.
//! * **effective number of annotators** of coefficient `j`: `G*_j = 1 / sum_g P_gj^2`, the
//!   `G*(0)` of Carter, Schnepel & Steigerwald (2017, "Asymptotic behavior of a t-test robust
//!   to cluster heterogeneity", REStat 99(4)) that MacKinnon, Nielsen & Webb report beside the
//!   leverages: with `gamma_g = (I^-1 I_g I^-1)_jj`, `G* = G / (1 + CV^2(gamma))`, and since
//!   `gamma_g / mean(gamma) = G P_gj`, `1 + CV^2 = G sum_g P_gj^2`. It is `G` for balanced
//!   annotators and near 1 when one carries the coefficient; cluster-robust inference on a
//!   coefficient behaves like inference from about `G*` clusters.
//!
//! The diagnostic uses the design (the information) only, not the residuals: it says which
//! coefficients a cluster-robust interval can estimate well before any interval is computed,
//! where the heterogeneity diagnostic's effective count (`crate::interval::effective_df` of
//! the sandwich draws) measures the realised spread of the scores.

use super::clusters::Clusters;
use super::heterogeneity::coefficient_name;
use super::GammaBlocks;
use crate::covariance::information_inverse_from_blocks;
use crate::data::Dataset;
use crate::error::Result;
use crate::fitted::RewardModel;
use crate::likelihood::{expected_information, information_rows};
use crate::linalg::{gemm_row_block, lower_outer, spd_inverse, Scalar};
use crate::model::Params;
use nalgebra::DMatrix;
use rayon::prelude::*;

/// A coefficient whose effective number of annotators is below this is named in the
/// warning: with fewer than about 10 effective clusters cluster-robust variances are noisy
/// and t quantiles with `G - 1` degrees of freedom over-state the evidence (MacKinnon,
/// Nielsen & Webb 2023; Carter, Schnepel & Steigerwald 2017).
pub const EFFECTIVE_ANNOTATORS_WARNING: f64 = 10.0;
/// An annotator whose partial leverage for a coefficient is above this carries most of that
/// coefficient's information: the coefficient is named in the warning with the annotator.
pub const PARTIAL_LEVERAGE_WARNING: f64 = 0.5;

/// What [`leverage`] reports.
#[derive(Debug, Clone, PartialEq)]
pub struct Leverage {
    /// The annotators' (clusters') ids, increasing: the order of every per-annotator value.
    pub ids: Vec<i64>,
    /// Per annotator: its leverage `L_g = tr(I_g I^-1)` (the leverages sum to `p`).
    pub leverage: Vec<f64>,
    /// `G x p`, row-major (one row per annotator, coefficients theta first, then gamma): the
    /// partial leverage `P_gj`, annotator `g`'s share of coefficient `j`'s information (each
    /// coefficient's column sums to 1).
    pub partial: Vec<f64>,
    /// Per coefficient: its effective number of annotators `G*_j = 1 / sum_g P_gj^2`.
    pub effective: Vec<f64>,
    /// Per coefficient: the rank (index into `ids`) of the annotator with the largest partial
    /// leverage.
    pub top: Vec<usize>,
    /// Plain words when a coefficient rests on few annotators: its effective number is below
    /// [`EFFECTIVE_ANNOTATORS_WARNING`] or one annotator's partial leverage is above
    /// [`PARTIAL_LEVERAGE_WARNING`]; names every such coefficient and its top annotator.
    pub warning: Option<String>,
}

impl Leverage {
    /// Number of annotators `G`.
    pub fn clusters(&self) -> usize {
        self.ids.len()
    }

    /// Number of coefficients `p = d1 + d2`.
    pub fn coefficients(&self) -> usize {
        self.effective.len()
    }

    /// The partial leverage of the annotator of rank `g` for coefficient `j`.
    pub fn partial_of(&self, g: usize, j: usize) -> f64 {
        self.partial[g * self.coefficients() + j]
    }

    /// The coefficients the warning names: those with an effective number of annotators below
    /// [`EFFECTIVE_ANNOTATORS_WARNING`] or a top partial leverage above
    /// [`PARTIAL_LEVERAGE_WARNING`], in coefficient order.
    pub fn flagged(&self) -> Vec<usize> {
        (0..self.coefficients())
            .filter(|&j| {
                self.effective[j] < EFFECTIVE_ANNOTATORS_WARNING
                    || self.partial_of(self.top[j], j) > PARTIAL_LEVERAGE_WARNING
            })
            .collect()
    }
}

/// Rows multiplied by the inverse information at a time (the annotators' rows one after
/// another, a block spanning several small annotators): memory
/// `O(p^2 + BLOCKS_IN_FLIGHT ROW_BLOCK p)` whatever the annotators' number and sizes, and the
/// inverse is streamed once per block, not once per annotator.
const ROW_BLOCK: usize = 1024;
/// The precision of the rows' products with the inverse information (`n p^2` multiply-adds,
/// the diagnostic's cost): single, at about twice double's speed, with every sum over rows in
/// double. On the paper-scale files (p = 2086, n = 33,845, columns scaled over four orders of
/// magnitude in one) the leverages moved by 2e-7 relative and the partial leverages by 2e-8
/// absolute against double products (BENCHMARKS.md); the tests hold both precisions to each other.
type Product = f32;
/// Row blocks multiplied at a time, in parallel (a fixed number: the sums' order, and so the
/// results, do not depend on the thread count).
const BLOCKS_IN_FLIGHT: usize = 4;

/// The [`Leverage`] diagnostics of the fit `params` of `data` (which must have cluster ids).
/// One information matrix `I` (one Gram product, `n p^2 / 2` multiply-adds) and its inverse
/// (`p^3`), then every row's `r_i = sqrt(w_i) I^-1 g_i` (`n p^2` multiply-adds in single
/// precision with sums in double, to about 1e-7 relative; blocks of 1,024 rows taken
/// annotator by annotator): `L_g = sum_{i in g} sqrt(w_i) g_i . r_i` and
/// `(I^-1 I_g I^-1)_jj = sum_{i in g} r_ij^2`. No `p x p` matrix per annotator is formed
/// (with a thousand annotators and `p` in the thousands those would not fit in memory). The
/// sums run in a fixed order: results do not depend on the thread count.
///
/// Errors: [`crate::Error::InvalidArgument`] (`cluster`) without cluster ids or with fewer
/// than [`super::MIN_CLUSTERS`]; [`crate::Error::SingularInformation`] when the information
/// is not positive definite.
pub fn leverage(data: &Dataset, params: &Params) -> Result<Leverage> {
    let clusters = Clusters::of(data)?;
    let total = expected_information(data, params) * data.n() as f64;
    let inv = spd_inverse(&total, "the expected information")?;
    from_inverse::<Product>(data, params, &clusters, &inv)
}

/// [`leverage`] of a fitted model on its training data, from the model's own covariance when
/// it is the inverse expected information of `data` (the `expected` kind,
/// `RewardModel::is_expected_fit_of`): `I^-1` is assembled from the covariance blocks
/// (`inverse_from_model`) instead of a second Gram product and a `p x p` inverse, which
/// leaves the rows' products (`n p^2`) as the diagnostic's whole cost. Any other model takes
/// [`leverage`] at its estimate. The same values to rounding (the tests: 1e-6, the
/// products' single precision).
///
/// Errors: as [`leverage`].
pub fn leverage_of_fit(data: &Dataset, model: &RewardModel) -> Result<Leverage> {
    if !model.is_expected_fit_of(data) {
        return leverage(data, model.params());
    }
    let clusters = Clusters::of(data)?;
    let blocks = super::gamma_blocks_of(data, model.params());
    of_expected_fit(data, model, &clusters, &blocks)
}

/// [`leverage_of_fit`] of a model that is the `expected` fit of `data`
/// (`RewardModel::is_expected_fit_of`), given the information's gamma blocks at its
/// estimate (`super::gamma_blocks_of`, shared with the heterogeneity diagnostic).
pub(super) fn of_expected_fit(
    data: &Dataset,
    model: &RewardModel,
    clusters: &Clusters,
    blocks: &GammaBlocks,
) -> Result<Leverage> {
    let inv = inverse_from_model(model, blocks)?;
    from_inverse::<Product>(data, model.params(), clusters, &inv)
}

/// The inverse of the summed expected information `(n I)^-1` from a model whose covariance is
/// that inverse: `V = L L^T = Cov(theta_hat)` from the model's factor by a triangular product
/// (`d1^3 / 3` multiply-adds, exactly symmetric) and, with covariates, the blocks that
/// involve gamma from `Cov(gamma_hat)` and the information's gamma blocks `B`, `D` at the
/// estimate ([`information_inverse_from_blocks`]).
fn inverse_from_model(model: &RewardModel, blocks: &GammaBlocks) -> Result<DMatrix<f64>> {
    let v = lower_outer(model.theta_cov_factor());
    match blocks {
        Some((b, _, d)) => information_inverse_from_blocks(v, model.gamma_cov(), 1.0, b, d),
        None => Ok(v),
    }
}

/// The sums over one block of rows of their annotators (ranks `first..first + len`):
/// `sqrt(w_i) g_i . r_i` per annotator and `r_ij^2` per annotator and coefficient.
struct BlockSums {
    first: usize,
    leverage: Vec<f64>,
    variance: Vec<f64>,
}

/// [`BlockSums`] of the rows `rows` (whose annotators' ranks are `owners`, increasing), with
/// `r_i = I^-1 sqrt(w_i) g_i` from one sequential GEMM in precision `T` against `inv_t` (the
/// inverse information, `p x p`) and the sums in double.
fn block_sums<T: Scalar>(
    data: &Dataset,
    params: &Params,
    rows: &[usize],
    owners: &[usize],
    inv_t: &[T],
) -> BlockSums {
    let (k, p) = (rows.len(), data.n_params());
    let mut x = vec![T::default(); k * p];
    information_rows(data, params, rows, &mut x);
    let mut r = vec![T::default(); k * p];
    gemm_row_block(&mut r, &x, k, inv_t, p);
    let first = owners[0];
    let count = owners[k - 1] - first + 1;
    let mut leverage = vec![0.0; count];
    let mut variance = vec![0.0; count * p];
    for ((&g, xk), rk) in owners.iter().zip(x.chunks(p)).zip(r.chunks(p)) {
        let g = g - first;
        let var = &mut variance[g * p..(g + 1) * p];
        let mut lev = 0.0;
        for ((v, &xkj), &rkj) in var.iter_mut().zip(xk).zip(rk) {
            let (xkj, rkj) = (xkj.to_f64(), rkj.to_f64());
            lev += rkj * xkj;
            *v += rkj * rkj;
        }
        leverage[g] += lev;
    }
    BlockSums {
        first,
        leverage,
        variance,
    }
}

/// The diagnostics given `inv`, the inverse of the summed expected information at `params`.
fn from_inverse<T: Scalar>(
    data: &Dataset,
    params: &Params,
    clusters: &Clusters,
    inv: &DMatrix<f64>,
) -> Result<Leverage> {
    let p = data.n_params();
    // The rows annotator by annotator, with the rank of each row's annotator.
    let (order, owner): (Vec<usize>, Vec<usize>) = (0..clusters.len())
        .flat_map(|g| clusters.rows(g).iter().map(move |&i| (i, g)))
        .unzip();
    let mut lev_of = vec![0.0; clusters.len()];
    let mut variance = vec![0.0; clusters.len() * p];
    let inv_t: Vec<T> = inv.iter().map(|&v| T::from_f64(v)).collect();
    let blocks: Vec<(&[usize], &[usize])> = order
        .chunks(ROW_BLOCK)
        .zip(owner.chunks(ROW_BLOCK))
        .collect();
    for batch in blocks.chunks(BLOCKS_IN_FLIGHT) {
        // The blocks of a batch in parallel, each summed over its own annotators' rows; the
        // blocks' sums then added in order: results do not depend on the thread count.
        let sums: Vec<BlockSums> = batch
            .par_iter()
            .map(|&(rows, owners)| block_sums(data, params, rows, owners, &inv_t))
            .collect();
        for s in sums {
            let count = s.leverage.len();
            for (l, v) in lev_of[s.first..s.first + count].iter_mut().zip(&s.leverage) {
                *l += v;
            }
            let var = &mut variance[s.first * p..(s.first + count) * p];
            for (v, x) in var.iter_mut().zip(&s.variance) {
                *v += x;
            }
        }
    }
    let per_cluster: Vec<(f64, Vec<f64>)> = lev_of
        .into_iter()
        .zip(variance.chunks(p.max(1)))
        .map(|(lev, v)| {
            let share = (0..p).map(|j| (v[j] / inv[(j, j)]).max(0.0)).collect();
            (lev, share)
        })
        .collect();
    let (leverage, rows): (Vec<f64>, Vec<Vec<f64>>) = per_cluster.into_iter().unzip();
    let partial: Vec<f64> = rows.into_iter().flatten().collect();
    let ids: Vec<i64> = (0..clusters.len()).map(|g| clusters.id(g)).collect();
    let g_count = ids.len();
    let partial_ref = &partial;
    let column = |j: usize| (0..g_count).map(move |g| partial_ref[g * p + j]);
    let effective = (0..p)
        .map(|j| {
            let s2: f64 = column(j).map(|x| x * x).sum();
            if s2 > 0.0 {
                1.0 / s2
            } else {
                g_count as f64
            }
        })
        .collect();
    let top = (0..p)
        .map(|j| {
            (0..g_count)
                .max_by(|&a, &b| partial[a * p + j].total_cmp(&partial[b * p + j]))
                .unwrap_or(0)
        })
        .collect();
    let mut out = Leverage {
        ids,
        leverage,
        partial,
        effective,
        top,
        warning: None,
    };
    out.warning = warning(&out, data.d1());
    Ok(out)
}

/// The plain-words warning of `lev` (`d1` names the coefficients), `None` when no coefficient
/// is flagged ([`Leverage::flagged`]).
fn warning(lev: &Leverage, d1: usize) -> Option<String> {
    let flagged = lev.flagged();
    if flagged.is_empty() {
        return None;
    }
    let parts: Vec<String> = flagged
        .iter()
        .map(|&j| {
            let g = lev.top[j];
            format!(
                "{} (effective number {:.1}; annotator {} carries {:.0}% of its information)",
                coefficient_name(d1, j),
                lev.effective[j],
                lev.ids[g],
                100.0 * lev.partial_of(g, j)
            )
        })
        .collect();
    let carried = flagged
        .iter()
        .any(|&j| lev.partial_of(lev.top[j], j) > PARTIAL_LEVERAGE_WARNING);
    Some(format!(
        "{} on few of the {} annotators: {}; a cluster-robust interval for such a coefficient \
         is estimated from about as many annotators as its effective number{}: read it as \
         rough, and add annotators who vary in its covariate",
        if flagged.len() == 1 {
            "a coefficient rests".to_string()
        } else {
            format!("{} coefficients rest", flagged.len())
        },
        lev.clusters(),
        parts.join("; "),
        if carried {
            ", and one that an annotator carries over half of may not be identified without \
             that annotator"
        } else {
            ""
        }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fit::{fit, FitControl, FitOptions};
    use nalgebra::DMatrix;

    fn fitted(data: &Dataset) -> Params {
        fit(data, &FitOptions::default(), &FitControl::default())
            .unwrap()
            .params
    }

    /// A logistic design without gamma: `g` annotators of `m` rows each, z ~ N(0, I_d1) from
    /// a fixed stream (psi0 = 1, the homogeneous model), optionally a last feature non-zero in
    /// annotator 0's rows only.
    fn design(g: usize, m: usize, d1: usize, lonely: bool, seed: u64) -> Dataset {
        use rand::{Rng, SeedableRng};
        use rand_distr::StandardNormal;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let n = g * m;
        let mut z = Vec::with_capacity(n * d1);
        let mut y = Vec::with_capacity(n);
        let mut cluster = Vec::with_capacity(n);
        for c in 0..g {
            for _ in 0..m {
                let mut row: Vec<f64> = (0..d1).map(|_| rng.sample(StandardNormal)).collect();
                if lonely && c != 0 {
                    row[d1 - 1] = 0.0;
                }
                let u: f64 = 0.7 * row[0] - 0.4 * row[1];
                let prob = 1.0 / (1.0 + (-u).exp());
                y.push(if rng.random::<f64>() < prob { 1.0 } else { 0.0 });
                z.extend(row);
                cluster.push(10 * c as i64 + 3);
            }
        }
        Dataset::new(d1, 0, z, vec![1.0; n], vec![], y, Some(cluster)).unwrap()
    }

    /// [`leverage`] with its products in precision `T`.
    fn leverage_in<T: Scalar>(data: &Dataset, params: &Params) -> Leverage {
        let total = expected_information(data, params) * data.n() as f64;
        let inv = spd_inverse(&total, "test").unwrap();
        from_inverse::<T>(data, params, &Clusters::of(data).unwrap(), &inv).unwrap()
    }

    /// Within `tol`, relative to the larger of `|y|` and 1.
    fn close(a: &[f64], b: &[f64], tol: f64) -> bool {
        a.len() == b.len()
            && a.iter()
                .zip(b)
                .all(|(x, y)| (x - y).abs() <= tol * y.abs().max(1.0))
    }

    /// The products in single precision (what [`leverage`] runs) against double on a wide
    /// design with one-hot covariates: within 1e-6, the same top annotators and warning.
    #[test]
    fn single_precision_products_agree_with_double() {
        use crate::sim::one_hot_groups;
        use crate::testing::with_clusters;
        let data = one_hot_groups(3000, &[0.7, -0.4, 0.3, 0.5], &[0.4, -0.3, 0.2], 4);
        let data = with_clusters(&data, |i| ((i * 7) % 37) as i64);
        let params = fitted(&data);
        let (single, double) = (
            leverage_in::<f32>(&data, &params),
            leverage_in::<f64>(&data, &params),
        );
        assert_eq!(single, leverage(&data, &params).unwrap());
        assert!(close(&single.leverage, &double.leverage, 1e-6));
        assert!(close(&single.partial, &double.partial, 1e-6));
        assert!(close(&single.effective, &double.effective, 1e-6));
        assert_eq!((single.top, single.warning), (double.top, double.warning));
        assert!(
            single.leverage != double.leverage,
            "the two precisions are the same path"
        );
    }

    /// Both precisions against the definition: double to 1e-10, single (what [`leverage`]
    /// runs) to 1e-6.
    #[test]
    fn leverages_equal_a_brute_force_computation_from_the_definition() {
        let data = design(9, 30, 3, false, 4);
        let params = fitted(&data);
        let single = leverage(&data, &params).unwrap();
        for (lev, tol) in [(leverage_in::<f64>(&data, &params), 1e-10), (single, 1e-6)] {
            check_against_the_definition(&data, &params, &lev, tol);
        }
    }

    /// Brute force from the definition: `I_g` row by row (`w_i g_i g_i^T` with `g_i` from
    /// finite-free formulas of the homogeneous model `u = theta . z`), `I^-1`, traces and
    /// the diagonal of `I^-1 I_g I^-1`; and `G*` as Carter et al.'s `G / (1 + CV^2)`; all
    /// within `tol`.
    fn check_against_the_definition(data: &Dataset, params: &Params, lev: &Leverage, tol: f64) {
        let (p, n) = (3, data.n());
        let clusters = Clusters::of(data).unwrap();
        let mut blocks = vec![DMatrix::<f64>::zeros(p, p); clusters.len()];
        for (g, block) in blocks.iter_mut().enumerate() {
            for &i in clusters.rows(g) {
                let z = DMatrix::from_row_slice(p, 1, data.z_row(i));
                let u: f64 = (0..p).map(|k| params.theta[k] * z[k]).sum();
                let mu = 1.0 / (1.0 + (-u).exp());
                *block += &z * z.transpose() * (mu * (1.0 - mu));
            }
        }
        let total = blocks.iter().fold(DMatrix::zeros(p, p), |a, b| a + b);
        assert_eq!(n, 270);
        let inv = spd_inverse(&total, "test").unwrap();
        for (g, ig) in blocks.iter().enumerate() {
            let want = (ig * &inv).trace();
            assert!((lev.leverage[g] - want).abs() < tol, "{g}");
            let v = &inv * ig * &inv;
            for j in 0..p {
                let want = v[(j, j)] / inv[(j, j)];
                assert!((lev.partial_of(g, j) - want).abs() < tol, "{g} {j}");
            }
        }
        let gf = clusters.len() as f64;
        for j in 0..p {
            let gam: Vec<f64> = (0..clusters.len())
                .map(|g| (&inv * &blocks[g] * &inv)[(j, j)])
                .collect();
            let mean = gam.iter().sum::<f64>() / gf;
            let cv2 = gam.iter().map(|x| (x / mean - 1.0).powi(2)).sum::<f64>() / gf;
            assert!((lev.effective[j] - gf / (1.0 + cv2)).abs() < 10.0 * tol * gf);
        }
        assert_eq!(lev.ids[0], 3);
        assert_eq!(lev.ids[8], 83);
    }

    /// The leverages sum to p and each coefficient's partial leverages to 1; annotators with
    /// the same design (the same rows, shuffled among annotators) have the same leverage p/G;
    /// a balanced design of many rows per annotator has G* near G and no warning.
    #[test]
    fn balanced_annotators_share_the_leverage_equally() {
        // Every annotator judges the same 40 rows: identical information blocks.
        let base = design(1, 40, 3, false, 9);
        let g = 12;
        let mut z = Vec::new();
        let mut y = Vec::new();
        let mut cluster = Vec::new();
        for c in 0..g {
            z.extend_from_slice(base.z());
            // The labels differ by annotator (they do not enter the information).
            y.extend(
                base.y()
                    .iter()
                    .map(|&v| if c % 2 == 0 { v } else { 1.0 - v }),
            );
            cluster.extend(std::iter::repeat_n(c as i64, 40));
        }
        let data = Dataset::new(3, 0, z, vec![1.0; 40 * g], vec![], y, Some(cluster)).unwrap();
        let params = Params {
            theta: vec![0.3, -0.2, 0.1],
            gamma: vec![],
        };
        let lev = leverage(&data, &params).unwrap();
        for &l in &lev.leverage {
            assert!((l - 3.0 / g as f64).abs() < 1e-7, "{l}");
        }
        for j in 0..3 {
            assert!((lev.effective[j] - g as f64).abs() < 1e-5);
        }
        assert!(lev.warning.is_none());

        let data = design(30, 50, 4, false, 2);
        let lev = leverage(&data, &fitted(&data)).unwrap();
        assert!((lev.leverage.iter().sum::<f64>() - 4.0).abs() < 1e-6);
        for j in 0..4 {
            let s: f64 = (0..30).map(|g| lev.partial_of(g, j)).sum();
            assert!((s - 1.0).abs() < 1e-6);
            assert!(lev.effective[j] > 22.0, "{}", lev.effective[j]);
        }
        assert!(lev.warning.is_none(), "{:?}", lev.warning);
    }

    /// A feature non-zero in one annotator's rows only: that annotator's partial leverage for
    /// it is 1 but for the partialling-out of the other features (the residualised column is
    /// small, not zero, elsewhere), its effective number 1, and the warning names the
    /// coefficient and the annotator; the other coefficients stay unflagged.
    #[test]
    fn one_annotator_alone_in_a_feature_carries_it_and_is_named() {
        let data = design(15, 40, 3, true, 5);
        let lev = leverage(&data, &fitted(&data)).unwrap();
        assert_eq!(lev.top[2], 0);
        assert!(lev.partial_of(0, 2) > 0.995, "{}", lev.partial_of(0, 2));
        assert!(
            (lev.effective[2] - 1.0).abs() < 0.01,
            "{}",
            lev.effective[2]
        );
        assert_eq!(lev.flagged(), vec![2]);
        let w = lev.warning.expect("a lonely feature warns");
        assert!(
            w.contains("theta_2") && w.contains("annotator 3 carries 100%"),
            "{w}"
        );
        assert!(!w.contains("theta_0") && !w.contains("theta_1"), "{w}");
    }

    /// The annotator design's expert flag held by one annotator of 12 (issue 31's case): that
    /// annotator dominates gamma_0's information and the warning says so; a dominant annotator
    /// (half the rows) has leverage well above p / G.
    #[test]
    fn a_lone_expert_and_a_dominant_annotator_are_flagged() {
        let data = crate::sim::annotator_effects(12, 60, 0.0, 7);
        let experts: Vec<i64> = {
            let ids = data.cluster().unwrap();
            let mut e: Vec<i64> = (0..data.n())
                .filter(|&i| data.psi_row(i)[0] == 1.0)
                .map(|i| ids[i])
                .collect();
            e.dedup();
            e
        };
        // Keep one expert: every other expert's flag is cleared.
        let keep = experts[0];
        let ids = data.cluster().unwrap().to_vec();
        let mut psi = data.psi().to_vec();
        for i in 0..data.n() {
            if ids[i] != keep {
                psi[2 * i] = 0.0;
            }
        }
        let data = Dataset::new(
            6,
            2,
            data.z().to_vec(),
            vec![1.0; data.n()],
            psi,
            data.y().to_vec(),
            Some(ids),
        )
        .unwrap();
        let lev = leverage(&data, &fitted(&data)).unwrap();
        let j = 6; // gamma_0
        assert_eq!(lev.ids[lev.top[j]], keep);
        assert!(
            lev.partial_of(lev.top[j], j) > 0.5,
            "{}",
            lev.partial_of(lev.top[j], j)
        );
        assert!(lev.flagged().contains(&j));
        assert!(lev.warning.unwrap().contains("gamma_0"));

        // One annotator with 600 rows among 11 with 20.
        let big = design(1, 600, 3, false, 11);
        let small = design(11, 20, 3, false, 12);
        let mut z = big.z().to_vec();
        z.extend_from_slice(small.z());
        let mut y = big.y().to_vec();
        y.extend_from_slice(small.y());
        let mut cluster = vec![0i64; 600];
        cluster.extend(small.cluster().unwrap().iter().map(|c| c + 1));
        let n = y.len();
        let data = Dataset::new(3, 0, z, vec![1.0; n], vec![], y, Some(cluster)).unwrap();
        let lev = leverage(&data, &fitted(&data)).unwrap();
        assert!(lev.leverage[0] > 2.0, "{}", lev.leverage[0]); // p / G = 0.25
        for j in 0..3 {
            assert_eq!(lev.top[j], 0);
            assert!(lev.partial_of(0, j) > 0.5);
            assert!(lev.effective[j] < 4.0);
        }
        assert_eq!(lev.flagged(), vec![0, 1, 2]);
    }

    /// `leverage_of_fit` from the model's covariance blocks equals `leverage` from a fresh
    /// information and inverse (to 1e-6: both products single) on a wide design with dense covariates, one-hot
    /// covariates and none; a model of another covariance kind takes `leverage` itself.
    #[test]
    fn leverage_from_the_models_covariance_equals_the_direct_computation() {
        use crate::covariance::CovarianceKind;
        use crate::sim::{high_dimensional, homogeneous, one_hot_groups};
        use crate::testing::with_clusters;
        let wide = high_dimensional(2400, 40, 5, 3).0;
        let one_hot = one_hot_groups(3000, &[0.7, -0.4, 0.3, 0.5], &[0.4, -0.3, 0.2], 4);
        let plain = homogeneous(1500, &[0.6, -0.5, 0.4], 5);
        let estimate = |data: &Dataset, kind| {
            RewardModel::estimate(data, &FitOptions::default(), kind, &FitControl::default())
                .unwrap()
        };
        for (data, g) in [(wide, 61), (one_hot, 37), (plain, 23)] {
            let data = with_clusters(&data, |i| ((i * 7) % g) as i64);
            let model = estimate(&data, CovarianceKind::Expected);
            let want = leverage(&data, model.params()).unwrap();
            let got = leverage_of_fit(&data, &model).unwrap();
            assert!(
                close(&got.leverage, &want.leverage, 1e-6),
                "d2 {}",
                data.d2()
            );
            assert!(close(&got.partial, &want.partial, 1e-6), "d2 {}", data.d2());
            assert!(
                close(&got.effective, &want.effective, 1e-6),
                "d2 {}",
                data.d2()
            );
            assert_eq!((got.ids, got.top), (want.ids, want.top));
            assert_eq!(got.warning.is_some(), want.warning.is_some());
        }
        let data = with_clusters(&homogeneous(800, &[0.6, -0.5], 6), |i| (i % 9) as i64);
        let observed = estimate(&data, CovarianceKind::Observed);
        assert_eq!(
            leverage_of_fit(&data, &observed).unwrap(),
            leverage(&data, observed.params()).unwrap()
        );
    }

    /// The inverse rebuilt from a model's covariance (the triangular `L L^T` and the gamma
    /// blocks) is the inverse of the summed information computed afresh, to 1e-10, exactly
    /// symmetric, with dense and one-hot covariates and none.
    #[test]
    fn inverse_from_the_model_is_the_summed_informations_inverse() {
        use crate::covariance::CovarianceKind;
        use crate::sim::{high_dimensional, homogeneous, one_hot_groups};
        let cases = [
            high_dimensional(1500, 60, 5, 3).0,
            one_hot_groups(2000, &[0.7, -0.4, 0.3, 0.5], &[0.4, -0.3, 0.2], 4),
            homogeneous(1000, &[0.6, -0.5, 0.4], 5),
        ];
        for data in cases {
            let model = RewardModel::estimate(
                &data,
                &FitOptions::default(),
                CovarianceKind::Expected,
                &FitControl::default(),
            )
            .unwrap();
            let got = inverse_from_model(
                &model,
                &super::super::gamma_blocks_of(&data, model.params()),
            )
            .unwrap();
            let total = expected_information(&data, model.params()) * data.n() as f64;
            let want = spd_inverse(&total, "test").unwrap();
            let err = (&got - &want).abs().max();
            assert!(err <= 1e-10 * want.abs().max(), "d2 {}: {err:e}", data.d2());
            assert_eq!(got, got.transpose());
        }
    }

    #[test]
    fn refuses_data_without_enough_clusters() {
        let data = crate::testing::without_clusters(&design(5, 20, 2, false, 1));
        let params = Params {
            theta: vec![0.0, 0.0],
            gamma: vec![],
        };
        assert!(leverage(&data, &params).is_err());
    }
}
