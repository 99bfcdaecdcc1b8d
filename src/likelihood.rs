//! Passes over the data: the mean negative log-likelihood `L_n`, its gradient, and the
//! second-order matrices (expected information, observed Hessian, score outer products).
//!
//! With `g_i = (sigma_i z_i, t_i psi_i)` the derivative of `u_i` with respect to the stacked
//! parameters `(theta, gamma)`, `r_i = mu(u_i) - y_i` and `w_i = mu(u_i)(1 - mu(u_i))`:
//!
//! ```text
//! grad L_n = (1/n) sum r_i g_i
//! I        = (1/n) sum w_i g_i g_i^T                       (expected information, SPEC §3)
//! H        = I + (1/n) sum r_i [[0, z_i psi_i^T], [psi_i z_i^T, 0]]   (observed Hessian)
//! B        = (1/n) sum r_i^2 g_i g_i^T                     (outer product of scores)
//! ```
//!
//! All passes are chunked (see [`crate::parallel`]) so results do not depend on thread count.
//! They run on the current rayon pool.

use crate::data::Dataset;
use crate::linalg::gram;
use crate::model::{dot, rationality, sample_terms, Params, SampleTerms};
use crate::parallel::chunked_sum;
use nalgebra::DMatrix;
use std::collections::BTreeMap;

/// The per-sample terms of row `i` at `params`.
#[inline]
pub fn terms(data: &Dataset, params: &Params, i: usize) -> SampleTerms {
    let t = dot(&params.theta, data.z_row(i));
    let sigma = rationality(data.psi0()[i], data.psi_row(i), &params.gamma);
    sample_terms(t, sigma, data.y()[i])
}

/// Writes `scale * g_i` into `out` (length d1 + d2).
#[inline]
fn fill_g(data: &Dataset, i: usize, st: &SampleTerms, scale: f64, out: &mut [f64]) {
    let (th, ga) = out.split_at_mut(data.d1());
    let a = scale * st.sigma;
    for (o, z) in th.iter_mut().zip(data.z_row(i)) {
        *o = a * z;
    }
    let b = scale * st.t;
    for (o, p) in ga.iter_mut().zip(data.psi_row(i)) {
        *o = b * p;
    }
}

/// Mean negative log-likelihood `L_n(theta, gamma)`.
pub fn mean_nll(data: &Dataset, params: &Params) -> f64 {
    let total = chunked_sum(data.n(), 1, |rows, acc| {
        for i in rows {
            acc[0] += terms(data, params, i).loss;
        }
    });
    total[0] / data.n() as f64
}

/// Mean negative log-likelihood and its gradient (stacked, theta first), in one pass.
pub fn nll_and_gradient(data: &Dataset, params: &Params) -> (f64, Vec<f64>) {
    let d1 = data.d1();
    let p = data.n_params();
    let total = chunked_sum(data.n(), p + 1, |rows, acc| {
        for i in rows {
            let st = terms(data, params, i);
            acc[p] += st.loss;
            let a = st.resid * st.sigma;
            for (g, z) in acc[..d1].iter_mut().zip(data.z_row(i)) {
                *g += a * z;
            }
            let b = st.resid * st.t;
            for (g, s) in acc[d1..p].iter_mut().zip(data.psi_row(i)) {
                *g += b * s;
            }
        }
    });
    let n = data.n() as f64;
    let nll = total[p] / n;
    let grad = total[..p].iter().map(|g| g / n).collect();
    (nll, grad)
}

/// The expected (Fisher) information `I = (1/n) sum w_i g_i g_i^T`, `(d1+d2) x (d1+d2)`,
/// blocks `I_tt`, `I_tg`, `I_gt`, `I_gg` of SPEC §3.
pub fn expected_information(data: &Dataset, params: &Params) -> DMatrix<f64> {
    gram(data.n(), data.n_params(), data.n() as f64, |i, row| {
        let st = terms(data, params, i);
        fill_g(data, i, &st, st.weight.sqrt(), row);
    })
}

/// The residual term of the observed Hessian's cross block,
/// `(1/n) sum (mu_i - y_i) z_i psi_i^T` (`d1 x d2`); zero in expectation at the truth.
pub fn residual_cross_term(data: &Dataset, params: &Params) -> DMatrix<f64> {
    let (d1, d2) = (data.d1(), data.d2());
    let cross = chunked_sum(data.n(), d1 * d2, |rows, acc| {
        for i in rows {
            let st = terms(data, params, i);
            let z = data.z_row(i);
            for (k, &ps) in data.psi_row(i).iter().enumerate() {
                let a = st.resid * ps;
                for (j, zj) in z.iter().enumerate() {
                    acc[j * d2 + k] += a * zj;
                }
            }
        }
    });
    DMatrix::from_row_slice(d1, d2, &cross) / data.n() as f64
}

/// Adds the residual cross term (see [`residual_cross_term`]) to the expected information,
/// giving the observed Hessian.
pub fn add_residual_cross_term(info: &mut DMatrix<f64>, cross: &DMatrix<f64>) {
    let (d1, d2) = cross.shape();
    for j in 0..d1 {
        for k in 0..d2 {
            info[(j, d1 + k)] += cross[(j, k)];
            info[(d1 + k, j)] += cross[(j, k)];
        }
    }
}

/// The observed Hessian of `L_n` at `params`: the expected information plus the residual cross
/// term.
pub fn observed_hessian(data: &Dataset, params: &Params) -> DMatrix<f64> {
    let mut h = expected_information(data, params);
    if data.d2() > 0 {
        add_residual_cross_term(&mut h, &residual_cross_term(data, params));
    }
    h
}

/// The "meat" of a sandwich covariance: `B = (1/n) sum_i s_i s_i^T` with per-sample scores
/// `s_i = r_i g_i`, or with `clustered = true`, `(1/n) sum_c S_c S_c^T` with scores summed over
/// each cluster `S_c = sum_{i in c} s_i` (clusters in increasing id order).
///
/// `clustered = true` requires cluster ids in the dataset (the caller checks).
pub fn score_outer_product(data: &Dataset, params: &Params, clustered: bool) -> DMatrix<f64> {
    let p = data.n_params();
    let n = data.n();
    match (clustered, data.cluster()) {
        (true, Some(ids)) => {
            let mut index: BTreeMap<i64, usize> = BTreeMap::new();
            for &c in ids {
                let next = index.len();
                index.entry(c).or_insert(next);
            }
            // Clusters in increasing id order: a deterministic layout of the summed scores.
            let order: BTreeMap<usize, usize> = index
                .values()
                .enumerate()
                .map(|(rank, &slot)| (slot, rank))
                .collect();
            let g = index.len();
            let mut sums = vec![0.0; g * p];
            let mut buf = vec![0.0; p];
            for (i, &c) in ids.iter().enumerate() {
                let st = terms(data, params, i);
                fill_g(data, i, &st, st.resid, &mut buf);
                let row = order[&index[&c]];
                for (s, b) in sums[row * p..(row + 1) * p].iter_mut().zip(&buf) {
                    *s += b;
                }
            }
            gram(g, p, n as f64, |c, row| {
                row.copy_from_slice(&sums[c * p..(c + 1) * p])
            })
        }
        _ => gram(n, p, n as f64, |i, row| {
            let st = terms(data, params, i);
            fill_g(data, i, &st, st.resid, row);
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::{paper_simulation, ActionDesign};

    fn fixture() -> (Dataset, Params) {
        let data = paper_simulation(300, ActionDesign::Uniform, 7);
        let params = Params {
            theta: vec![0.3, 0.45, 0.2],
            gamma: vec![0.4, 0.25],
        };
        (data, params)
    }

    fn perturbed(params: &Params, j: usize, h: f64) -> Params {
        let mut v = params.stacked();
        v[j] += h;
        Params::from_stacked(&v, params.theta.len())
    }

    #[test]
    fn gradient_matches_central_differences() {
        let (data, params) = fixture();
        let (_, grad) = nll_and_gradient(&data, &params);
        let h = 1e-6;
        for (j, g) in grad.iter().enumerate() {
            let fd = (mean_nll(&data, &perturbed(&params, j, h))
                - mean_nll(&data, &perturbed(&params, j, -h)))
                / (2.0 * h);
            assert!(
                (fd - g).abs() < 1e-7 * (1.0 + g.abs()),
                "component {j}: fd {fd} vs {g}"
            );
        }
    }

    #[test]
    fn observed_hessian_matches_central_differences_of_gradient() {
        let (data, params) = fixture();
        let hess = observed_hessian(&data, &params);
        let p = data.n_params();
        let h = 1e-5;
        for j in 0..p {
            let (_, gp) = nll_and_gradient(&data, &perturbed(&params, j, h));
            let (_, gm) = nll_and_gradient(&data, &perturbed(&params, j, -h));
            for k in 0..p {
                let fd = (gp[k] - gm[k]) / (2.0 * h);
                assert!(
                    (fd - hess[(k, j)]).abs() < 1e-6 * (1.0 + fd.abs()),
                    "H[{k},{j}]: fd {fd} vs {}",
                    hess[(k, j)]
                );
            }
        }
        // The expected information differs from H exactly by the residual cross term, so it
        // must NOT match the finite differences in the cross block (a test that can fail).
        let info = expected_information(&data, &params);
        assert!((&info - &hess).abs().max() > 1e-4);
    }

    #[test]
    fn information_is_symmetric_positive_definite() {
        let (data, params) = fixture();
        let info = expected_information(&data, &params);
        assert_eq!(info.clone(), info.transpose());
        assert!(nalgebra::Cholesky::new(info).is_some());
    }

    #[test]
    fn swapping_answers_leaves_the_likelihood_unchanged() {
        // Swapping a0/a1 negates z and flips y: every sample's loss is unchanged.
        let (data, params) = fixture();
        let z: Vec<f64> = data.z().iter().map(|v| -v).collect();
        let y: Vec<f64> = data.y().iter().map(|v| 1.0 - v).collect();
        let swapped = Dataset::new(
            data.d1(),
            data.d2(),
            z,
            data.psi0().to_vec(),
            data.psi().to_vec(),
            y,
            None,
        )
        .unwrap();
        let (a, ga) = nll_and_gradient(&data, &params);
        let (b, gb) = nll_and_gradient(&swapped, &params);
        assert!((a - b).abs() < 1e-13);
        for (x, y) in ga.iter().zip(&gb) {
            assert!((x - y).abs() < 1e-13);
        }
    }

    #[test]
    fn passes_do_not_depend_on_thread_count() {
        let data = paper_simulation(5000, ActionDesign::Normal, 3);
        let params = Params {
            theta: vec![0.3, 0.45, 0.2],
            gamma: vec![0.4, 0.25],
        };
        let one = crate::parallel::thread_pool(1)
            .unwrap()
            .install(|| nll_and_gradient(&data, &params));
        let four = crate::parallel::thread_pool(4)
            .unwrap()
            .install(|| nll_and_gradient(&data, &params));
        assert_eq!(one, four);
    }
}
