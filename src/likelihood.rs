//! Passes over the data: the mean negative log-likelihood `L_n`, its gradient, and the
//! second-order matrices (expected information, observed Hessian, score outer products).
//!
//! With `g_i = (sigma_i z_i, t_i psi_i)` the derivative of `u_i` with respect to the stacked
//! parameters `(theta, gamma)`, `r_i = mu(u_i) - y_i` and `w_i = mu(u_i)(1 - mu(u_i))`:
//!
//! ```text
//! grad L_n = (1/n) sum r_i g_i
//! I        = (1/n) sum w_i g_i g_i^T                       (expected information, docs/contract.md §3)
//! H        = I + (1/n) sum r_i [[0, z_i psi_i^T], [psi_i z_i^T, 0]]   (observed Hessian)
//! B        = (1/n) sum r_i^2 g_i g_i^T                     (outer product of scores)
//! ```
//!
//! All passes are chunked (see [`crate::parallel`]) so results do not depend on thread count.
//! They run on the current rayon pool.

use crate::data::{Dataset, FeatureMatrix};
use crate::linalg::{axpy, gemm_tn_rows, gram, gram_f32, Element, Scalar};
use crate::model::{rationality, sample_terms, sample_terms_without_loss, Params, SampleTerms};
use crate::parallel::{chunked_sum, chunked_sum_with_rows};
use nalgebra::DMatrix;

/// Runs `$body` with `$z` bound to the feature matrix as `&[f64]` or `&[f32]` (the body is
/// compiled for both storage precisions).
macro_rules! with_features {
    ($data:expr, |$z:ident| $body:expr) => {
        with_features!(@ $data.features(), |$z| $body)
    };
    (@ $features:expr, |$z:ident| $body:expr) => {
        match $features {
            FeatureMatrix::F64($z) => $body,
            FeatureMatrix::F32($z) => $body,
        }
    };
}

/// Row `i` of a row-major feature matrix with `d1` columns.
#[inline(always)]
fn row<T>(z: &[T], d1: usize, i: usize) -> &[T] {
    &z[i * d1..(i + 1) * d1]
}

/// The per-sample terms of row `zi` (row `i` of the data) at `params`.
#[inline(always)]
fn row_terms<T: Element>(data: &Dataset, zi: &[T], params: &Params, i: usize) -> SampleTerms {
    let t = T::dot_row(&params.theta, zi);
    let sigma = rationality(data.psi0()[i], data.psi_row(i), &params.gamma);
    sample_terms(t, sigma, data.y()[i])
}

/// [`row_terms`] without the loss ([`sample_terms_without_loss`]): for the passes that need only
/// the residual and the weight.
#[inline(always)]
fn row_terms_without_loss<T: Element>(
    data: &Dataset,
    zi: &[T],
    params: &Params,
    i: usize,
) -> SampleTerms {
    let t = T::dot_row(&params.theta, zi);
    let sigma = rationality(data.psi0()[i], data.psi_row(i), &params.gamma);
    sample_terms_without_loss(t, sigma, data.y()[i])
}

/// The per-sample terms of row `i` at `params`.
pub fn terms(data: &Dataset, params: &Params, i: usize) -> SampleTerms {
    let d1 = data.d1();
    with_features!(data, |z| row_terms(data, row(z, d1, i), params, i))
}

/// Writes `scale * g_i` into `out` (length d1 + d2), `zi` being row `i` of z.
#[inline(always)]
fn fill_g<T: Element>(
    data: &Dataset,
    zi: &[T],
    i: usize,
    st: &SampleTerms,
    scale: f64,
    out: &mut [f64],
) {
    let (th, ga) = out.split_at_mut(data.d1());
    let a = scale * st.sigma;
    for (o, z) in th.iter_mut().zip(zi) {
        *o = a * z.widen();
    }
    let b = scale * st.t;
    for (o, p) in ga.iter_mut().zip(data.psi_row(i)) {
        *o = b * p;
    }
}

/// Mean negative log-likelihood `L_n(theta, gamma)`.
pub(crate) fn mean_nll(data: &Dataset, params: &Params) -> f64 {
    let d1 = data.d1();
    let total = with_features!(data, |z| chunked_sum(data.n(), 1, |rows, acc| {
        for i in rows {
            acc[0] += row_terms(data, row(z, d1, i), params, i).loss;
        }
    }));
    total[0] / data.n() as f64
}

/// Adds row `i`'s gradient contribution `resid * g_i` to `acc` (theta part, gamma part).
#[inline(always)]
fn add_gradient_row<T: Element>(
    data: &Dataset,
    zi: &[T],
    i: usize,
    st: &SampleTerms,
    acc: &mut [f64],
) {
    let d1 = data.d1();
    T::axpy_row(st.resid * st.sigma, zi, &mut acc[..d1]);
    let b = st.resid * st.t;
    for (g, s) in acc[d1..d1 + data.d2()].iter_mut().zip(data.psi_row(i)) {
        *g += b * s;
    }
}

/// Adds the gamma part of row `i`'s gradient contribution `resid * t * psi_i` to `acc_g`.
#[inline(always)]
fn add_gamma_gradient_row(data: &Dataset, i: usize, st: &SampleTerms, acc_g: &mut [f64]) {
    let b = st.resid * st.t;
    for (g, s) in acc_g.iter_mut().zip(data.psi_row(i)) {
        *g += b * s;
    }
}

/// The loss and gradient of rows `rows` added to `acc` (theta part, gamma part, loss last),
/// rows taken two at a time (one read of theta and of the accumulator per pair; every row's
/// arithmetic, and the order of the additions into `acc`, exactly as one at a time). Calls
/// `keep(i, terms)` for every row.
#[inline(always)]
fn gradient_rows<T: Element>(
    data: &Dataset,
    z: &[T],
    params: &Params,
    rows: std::ops::Range<usize>,
    acc: &mut [f64],
    mut keep: impl FnMut(usize, SampleTerms),
) {
    let (d1, p) = (data.d1(), data.n_params());
    let mut i = rows.start;
    while i < rows.end {
        if i + 1 < rows.end {
            let (z0, z1) = (row(z, d1, i), row(z, d1, i + 1));
            let (t0, t1) = T::dot_row2(&params.theta, z0, z1);
            let term = |i: usize, t: f64| {
                let sigma = rationality(data.psi0()[i], data.psi_row(i), &params.gamma);
                sample_terms(t, sigma, data.y()[i])
            };
            let (s0, s1) = (term(i, t0), term(i + 1, t1));
            acc[p] += s0.loss;
            acc[p] += s1.loss;
            T::axpy_row2(
                s0.resid * s0.sigma,
                z0,
                s1.resid * s1.sigma,
                z1,
                &mut acc[..d1],
            );
            add_gamma_gradient_row(data, i, &s0, &mut acc[d1..p]);
            add_gamma_gradient_row(data, i + 1, &s1, &mut acc[d1..p]);
            keep(i, s0);
            keep(i + 1, s1);
            i += 2;
        } else {
            let zi = row(z, d1, i);
            let st = row_terms(data, zi, params, i);
            acc[p] += st.loss;
            add_gradient_row(data, zi, i, &st, acc);
            keep(i, st);
            i += 1;
        }
    }
}

/// Mean negative log-likelihood and its gradient (stacked, theta first), in one pass.
pub fn nll_and_gradient(data: &Dataset, params: &Params) -> (f64, Vec<f64>) {
    let p = data.n_params();
    let total = with_features!(data, |z| chunked_sum(data.n(), p + 1, |rows, acc| {
        gradient_rows(data, z, params, rows, acc, |_, _| {});
    }));
    let n = data.n() as f64;
    let nll = total[p] / n;
    let grad = total[..p].iter().map(|g| g / n).collect();
    (nll, grad)
}

/// The gamma part of the gradient at `params` and every row's `t_i = theta . z_i`, in one
/// pass (a dot product per row, no update over z): the middle half-step of the paper's
/// Algorithm 1. Bit-identical to the gamma part of [`nll_and_gradient`].
pub(crate) fn gamma_gradient_and_t(data: &Dataset, params: &Params) -> (Vec<f64>, Vec<f64>) {
    let (d1, d2) = (data.d1(), data.d2());
    let mut t = vec![0.0; data.n()];
    let total = with_features!(data, |z| chunked_sum_with_rows(
        data.n(),
        d2,
        &mut t,
        |rows, acc, out| {
            for (i, ti) in rows.zip(out.iter_mut()) {
                let st = row_terms(data, row(z, d1, i), params, i);
                *ti = st.t;
                let b = st.resid * st.t;
                for (g, s) in acc.iter_mut().zip(data.psi_row(i)) {
                    *g += b * s;
                }
            }
        }
    ));
    let n = data.n() as f64;
    (total.into_iter().map(|g| g / n).collect(), t)
}

/// [`nll_and_gradient`] at `params` given every row's `t_i = theta . z_i` (as returned by
/// [`gamma_gradient_and_t`] for the same theta): one pass with an update over z per row and
/// no dot product. Bit-identical to [`nll_and_gradient`].
pub(crate) fn nll_and_gradient_given_t(
    data: &Dataset,
    params: &Params,
    t: &[f64],
) -> (f64, Vec<f64>) {
    let (p, d1) = (data.n_params(), data.d1());
    let total = with_features!(data, |z| chunked_sum(data.n(), p + 1, |rows, acc| {
        for i in rows {
            let sigma = rationality(data.psi0()[i], data.psi_row(i), &params.gamma);
            let st = sample_terms(t[i], sigma, data.y()[i]);
            acc[p] += st.loss;
            add_gradient_row(data, row(z, d1, i), i, &st, acc);
        }
    }));
    let n = data.n() as f64;
    (total[p] / n, total[..p].iter().map(|g| g / n).collect())
}

/// The objective, its gradient and every sample's terms at one point: what a second-order
/// solver keeps to form Hessian-vector products without re-reading the data twice.
#[derive(Debug, Clone)]
pub struct Evaluation {
    /// Mean NLL.
    pub nll: f64,
    /// Gradient of the mean NLL (stacked, theta first).
    pub grad: Vec<f64>,
    /// Per-sample `t`, `sigma`, loss, residual and weight, in row order.
    pub terms: Vec<SampleTerms>,
}

/// [`nll_and_gradient`] plus the per-sample terms, in one pass over the data.
pub fn evaluate(data: &Dataset, params: &Params) -> Evaluation {
    let p = data.n_params();
    let mut per_row = vec![SampleTerms::default(); data.n()];
    let total = with_features!(data, |z| chunked_sum_with_rows(
        data.n(),
        p + 1,
        &mut per_row,
        |rows, acc, out| {
            let start = rows.start;
            gradient_rows(data, z, params, rows, acc, |i, st| out[i - start] = st);
        }
    ));
    let n = data.n() as f64;
    Evaluation {
        nll: total[p] / n,
        grad: total[..p].iter().map(|g| g / n).collect(),
        terms: per_row,
    }
}

/// Which second-order matrix a Hessian-vector product uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Curvature {
    /// The observed Hessian `H` of `L_n` (may be indefinite away from a minimum).
    Observed,
    /// The expected information `I` (Fisher; positive semi-definite).
    Expected,
}

/// `M v` for `M` the observed Hessian or the expected information at the point whose
/// per-sample `terms` are given (from [`evaluate`]), in one pass over the data.
///
/// With `theta_only`, `v` has length d1 and the product is with the theta block `M_tt` only
/// (gamma held fixed); otherwise `v` is stacked `(v_theta, v_gamma)` of length d1 + d2.
pub fn hessian_vector(
    data: &Dataset,
    terms: &[SampleTerms],
    v: &[f64],
    curvature: Curvature,
    theta_only: bool,
) -> Vec<f64> {
    hessian_vector_over(data, data.features(), terms, v, curvature, theta_only)
}

/// [`hessian_vector`] reading z from `features` (`data`'s z, or a copy of it in another
/// precision: Newton-CG's products read a single-precision copy of an `f64` z, see
/// [`crate::fit::newton_cg::DataPreconditioner`]); everything else is read from `data`.
pub(crate) fn hessian_vector_over(
    data: &Dataset,
    features: FeatureMatrix<'_>,
    terms: &[SampleTerms],
    v: &[f64],
    curvature: Curvature,
    theta_only: bool,
) -> Vec<f64> {
    let (d1, d2) = (data.d1(), data.d2());
    let m = if theta_only { d1 } else { d1 + d2 };
    assert_eq!(v.len(), m, "hessian_vector: v has the wrong length");
    let stored = with_features!(@ features, |z| z.len());
    assert_eq!(
        stored,
        data.n() * d1,
        "hessian_vector: z has the wrong shape"
    );
    let (vt, vg) = v.split_at(d1);
    let observed = curvature == Curvature::Observed && !theta_only;
    // Row i's coefficients on z_i and psi_i, given a = v_theta . z_i.
    let coefficients = |i: usize, a: f64| {
        let st = &terms[i];
        let b = if theta_only {
            0.0
        } else {
            crate::linalg::dot(data.psi_row(i), vg)
        };
        let s = st.weight * (st.sigma * a + st.t * b);
        if observed {
            (s * st.sigma + st.resid * b, s * st.t + st.resid * a)
        } else {
            (s * st.sigma, s * st.t)
        }
    };
    let add_gamma = |acc: &mut [f64], i: usize, cg: f64| {
        if !theta_only {
            for (o, p) in acc[d1..].iter_mut().zip(data.psi_row(i)) {
                *o += cg * p;
            }
        }
    };
    let total = with_features!(@ features, |z| chunked_sum(data.n(), m, |rows, acc| {
        // Two rows at a time (v and the accumulator read once per pair); every row's
        // arithmetic and the order of the additions exactly as one at a time.
        let mut i = rows.start;
        while i < rows.end {
            if i + 1 < rows.end {
                let (z0, z1) = (row(z, d1, i), row(z, d1, i + 1));
                let (a0, a1) = Element::dot_row2(vt, z0, z1);
                let ((ct0, cg0), (ct1, cg1)) = (coefficients(i, a0), coefficients(i + 1, a1));
                Element::axpy_row2(ct0, z0, ct1, z1, &mut acc[..d1]);
                add_gamma(acc, i, cg0);
                add_gamma(acc, i + 1, cg1);
                i += 2;
            } else {
                let zi = row(z, d1, i);
                let (ct, cg) = coefficients(i, Element::dot_row(vt, zi));
                Element::axpy_row(ct, zi, &mut acc[..d1]);
                add_gamma(acc, i, cg);
                i += 1;
            }
        }
    }));
    let n = data.n() as f64;
    total.into_iter().map(|x| x / n).collect()
}

/// The expected (Fisher) information `I = (1/n) sum w_i g_i g_i^T`, `(d1+d2) x (d1+d2)`,
/// blocks `I_tt`, `I_tg`, `I_gt`, `I_gg` of docs/contract.md §3. One double-precision Gram product
/// (`n (d1+d2)^2` flops, see [`gram`]).
pub fn expected_information(data: &Dataset, params: &Params) -> DMatrix<f64> {
    let d1 = data.d1();
    with_features!(data, |z| gram(
        data.n(),
        data.n_params(),
        data.n() as f64,
        |i, out| {
            let zi = row(z, d1, i);
            let st = row_terms_without_loss(data, zi, params, i);
            fill_g(data, zi, i, &st, st.weight.sqrt(), out);
        }
    ))
}

/// The rows `sqrt(w_i) g_i` of the expected information for the rows `rows` of `data`,
/// written row-major into `out` (`rows.len() x (d1+d2)`) in precision `T` (rounded from
/// double): [`expected_information`] is `(1/n)` times the sum of their outer products over
/// every row. For products of a few rows with a `p x p` matrix (the annotators' leverage)
/// without forming a matrix per annotator.
pub(crate) fn information_rows<T: Scalar>(
    data: &Dataset,
    params: &Params,
    rows: &[usize],
    out: &mut [T],
) {
    let (d1, p) = (data.d1(), data.n_params());
    assert_eq!(
        out.len(),
        rows.len() * p,
        "information_rows: out is not rows x p"
    );
    let mut g = vec![0.0; p];
    with_features!(data, |z| {
        for (&i, out_row) in rows.iter().zip(out.chunks_mut(p.max(1))) {
            let zi = row(z, d1, i);
            let st = row_terms_without_loss(data, zi, params, i);
            fill_g(data, zi, i, &st, st.weight.sqrt(), &mut g);
            for (o, &v) in out_row.iter_mut().zip(&g) {
                *o = T::from_f64(v);
            }
        }
    });
}

/// The theta block of the expected information at `theta = 0, gamma = 0`,
/// `(1/n) sum (psi0_i^2 / 4) z_i z_i^T` — a property of the data alone — computed in single
/// precision (~1e-5 relative accuracy) reading z from `features` (as [`hessian_vector_over`]).
pub(crate) fn data_information_f32(data: &Dataset, features: FeatureMatrix<'_>) -> DMatrix<f64> {
    weighted_gram_f32(data, features, |i| 0.25 * data.psi0()[i] * data.psi0()[i])
}

/// `(1/n) sum c_i z_i z_i^T` (`d1 x d1`) for per-row weights `c_i >= 0`, in single precision,
/// reading z from `features` (as [`hessian_vector_over`]): the theta block of the expected
/// information when `c_i = w_i sigma_i^2`.
pub(crate) fn weighted_gram_f32(
    data: &Dataset,
    features: FeatureMatrix<'_>,
    c: impl Fn(usize) -> f64 + Sync,
) -> DMatrix<f64> {
    let d1 = data.d1();
    with_features!(@ features, |z| gram_f32(
        data.n(),
        d1,
        data.n() as f64,
        |i, out: &mut [f32]| {
            let a = c(i).max(0.0).sqrt();
            for (o, v) in out.iter_mut().zip(row(z, d1, i)) {
                *o = (a * v.widen()) as f32;
            }
        }
    ))
}

/// `|z_i|^2` for every row, in one pass.
pub(crate) fn row_squared_norms(data: &Dataset) -> Vec<f64> {
    let d1 = data.d1();
    let mut out = vec![0.0; data.n()];
    with_features!(data, |z| chunked_sum_with_rows(
        data.n(),
        0,
        &mut out,
        |rows, _, out| {
            for (i, o) in rows.zip(out.iter_mut()) {
                let zi = row(z, d1, i);
                // Eight partial sums (vectorisable), combined in a fixed order.
                let mut acc = [0.0f64; 8];
                let chunks = zi.chunks_exact(8);
                let tail = chunks.remainder();
                for c in chunks {
                    for (a, v) in acc.iter_mut().zip(c) {
                        let w = v.widen();
                        *a += w * w;
                    }
                }
                let mut ss = ((acc[0] + acc[4]) + (acc[1] + acc[5]))
                    + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
                for v in tail {
                    let w = v.widen();
                    ss += w * w;
                }
                *o = ss;
            }
        }
    ));
    out
}

/// Whether the covariates are mostly zero (one-hot psi: at most half of psi non-zero), where
/// the cross blocks `sum_i c_i z_i psi_i^T` are cheapest row by row ([`z_psi_sum`], an axpy
/// per non-zero) rather than by a GEMM.
fn psi_is_sparse(data: &Dataset) -> bool {
    let nonzeros = data.psi().iter().filter(|&&p| p != 0.0).count();
    2 * nonzeros <= data.n() * data.d2()
}

/// `Z^T M_k / n` (`d1 x d2` each, column-major) for `K` matrices `M_k`, row-major `n x d2` with
/// row `i` equal to `c(i)[k] psi_i`. With sparse covariates ([`psi_is_sparse`]) each is
/// [`z_psi_sum`], `n d1 nnz(psi)` flops accumulated in `f64`; otherwise one GEMM of z by all
/// `K d2` columns at once, in the storage precision of z. Both are thread-count independent.
fn z_transpose_times<T: Scalar + Element, const K: usize>(
    data: &Dataset,
    z: &[T],
    c: impl Fn(usize) -> [f64; K] + Sync,
) -> [DMatrix<f64>; K] {
    let (n, d1, d2) = (data.n(), data.d1(), data.d2());
    if psi_is_sparse(data) {
        return std::array::from_fn(|k| z_psi_sum(data, z, |i, _| c(i)[k]));
    }
    let width = K * d2;
    let mut m = vec![T::default(); n * width];
    for (i, mrow) in m.chunks_exact_mut(width).enumerate() {
        let ci = c(i);
        for (block, ck) in mrow.chunks_exact_mut(d2).zip(ci) {
            for (o, p) in block.iter_mut().zip(data.psi_row(i)) {
                *o = T::from_f64(ck * p);
            }
        }
    }
    let out = gemm_tn_rows(z, &m, n, d1, width);
    std::array::from_fn(|k| {
        let block = &out[k * d1 * d2..(k + 1) * d1 * d2];
        DMatrix::from_iterator(d1, d2, block.iter().map(|v| v.to_f64() / n as f64))
    })
}

/// `(1/n) sum_i c_i z_i psi_i^T` (`d1 x d2`) for the per-row coefficient `c(i, z_i)`, row by
/// row: one `f64` axpy of `z_i` per non-zero `psi_ik` (zero covariates, e.g. one-hot, cost
/// nothing), in fixed chunks (thread-count independent).
fn z_psi_sum<T: Element>(
    data: &Dataset,
    z: &[T],
    c: impl Fn(usize, &[T]) -> f64 + Sync,
) -> DMatrix<f64> {
    let (d1, d2) = (data.d1(), data.d2());
    let acc = chunked_sum(data.n(), d1 * d2, |rows, acc| {
        for i in rows {
            let zi = row(z, d1, i);
            add_z_psi_row(data, i, c(i, zi), zi, acc);
        }
    });
    DMatrix::from_vec(d1, d2, acc) / data.n() as f64
}

/// `acc += c z_i psi_i^T` for row `i` (`zi` its z), `acc` a column-major `d1 x d2` buffer
/// (column `k` is `acc[k * d1..(k + 1) * d1]`): one axpy of `z_i` per non-zero `psi_ik`.
#[inline(always)]
fn add_z_psi_row<T: Element>(data: &Dataset, i: usize, c: f64, zi: &[T], acc: &mut [f64]) {
    let d1 = zi.len();
    for (k, &ps) in data.psi_row(i).iter().enumerate() {
        if ps != 0.0 {
            Element::axpy_row(c * ps, zi, &mut acc[k * d1..(k + 1) * d1]);
        }
    }
}

/// The cross block of the expected information `I_tg = (1/n) sum w_i sigma_i t_i z_i psi_i^T`
/// (`d1 x d2`) from per-sample `terms`: one GEMM `Z^T M` over the data, in the storage
/// precision of z (for `f32` storage ~1e-6 relative: used by the preconditioner only).
/// The fit reads it through [`cross_information_over`]; the tests check the two spellings agree.
#[cfg(test)]
pub(crate) fn cross_information(data: &Dataset, terms: &[SampleTerms]) -> DMatrix<f64> {
    cross_information_over(data, data.features(), terms)
}

/// The cross block of the expected information (`cross_information` in the tests) reading z from `features` (as [`hessian_vector_over`]), in its
/// precision.
pub(crate) fn cross_information_over(
    data: &Dataset,
    features: FeatureMatrix<'_>,
    terms: &[SampleTerms],
) -> DMatrix<f64> {
    if data.d2() == 0 {
        return DMatrix::zeros(data.d1(), 0);
    }
    let c = |i: usize| [terms[i].weight * terms[i].sigma * terms[i].t];
    let [block] = with_features!(@ features, |z| z_transpose_times(data, z, c));
    block
}

/// The gamma block of the expected information `I_gg = (1/n) sum w_i t_i^2 psi_i psi_i^T`
/// (`d2 x d2`) from per-sample `terms` (reads psi only, not z).
pub(crate) fn gamma_information(data: &Dataset, terms: &[SampleTerms]) -> DMatrix<f64> {
    let d2 = data.d2();
    let acc = chunked_sum(data.n(), d2 * d2, |rows, acc| {
        for i in rows {
            let st = &terms[i];
            let c = st.weight * st.t * st.t;
            let psi = data.psi_row(i);
            for (k, &pk) in psi.iter().enumerate() {
                if pk != 0.0 {
                    axpy(c * pk, psi, &mut acc[k * d2..(k + 1) * d2]);
                }
            }
        }
    });
    DMatrix::from_column_slice(d2, d2, &acc) / data.n() as f64
}

/// The blocks of the second-order matrices at `params` that involve gamma, in double
/// precision, without the `d1 x d1` block: `(I_tg, H_tg, I_gg)`, the expected information's
/// cross block, the observed Hessian's (`I_tg` plus [`residual_cross_term`]) and the gamma
/// block (the same in both). One pass over the data for the terms, which also sums both cross
/// blocks for sparse covariates (`n d1 nnz(psi)` flops twice); for dense covariates one GEMM
/// of z by `2 d2` columns forms them ([`z_transpose_times`]). With the inverse of the
/// expected information's Schur complement (a model's covariance factor) they solve with the
/// observed Hessian without its Gram product (`crate::cluster`'s diagnostic).
pub(crate) fn gamma_blocks(
    data: &Dataset,
    params: &Params,
) -> (DMatrix<f64>, DMatrix<f64>, DMatrix<f64>) {
    let (n, d1, d2) = (data.n(), data.d1(), data.d2());
    let mut terms = vec![SampleTerms::default(); n];
    let fused = psi_is_sparse(data);
    // Sparse covariates: both cross blocks side by side (I_tg, then the residual term), summed
    // in the pass that computes the terms.
    let acc = with_features!(data, |z| chunked_sum_with_rows(
        n,
        if fused { 2 * d1 * d2 } else { 0 },
        &mut terms,
        |rows, acc, out| {
            let start = rows.start;
            for i in rows {
                let zi = row(z, d1, i);
                let st = row_terms_without_loss(data, zi, params, i);
                if fused {
                    let (info, resid) = acc.split_at_mut(d1 * d2);
                    add_z_psi_row(data, i, st.weight * st.sigma * st.t, zi, info);
                    add_z_psi_row(data, i, st.resid, zi, resid);
                }
                out[i - start] = st;
            }
        }
    ));
    let [i_tg, resid] = if fused {
        let (info, resid) = acc.split_at(d1 * d2);
        [info, resid].map(|block| DMatrix::from_column_slice(d1, d2, block) / n as f64)
    } else {
        let c = |i: usize| {
            let st = &terms[i];
            [st.weight * st.sigma * st.t, st.resid]
        };
        with_features!(data, |z| z_transpose_times(data, z, c))
    };
    let h_tg = &i_tg + resid;
    (i_tg, h_tg, gamma_information(data, &terms))
}

/// The residual term of the observed Hessian's cross block,
/// `(1/n) sum (mu_i - y_i) z_i psi_i^T` (`d1 x d2`); zero in expectation at the truth.
pub(crate) fn residual_cross_term(data: &Dataset, params: &Params) -> DMatrix<f64> {
    with_features!(data, |z| z_psi_sum(data, z, |i, zi| {
        row_terms_without_loss(data, zi, params, i).resid
    }))
}

/// Adds the residual cross term (see [`residual_cross_term`]) to the expected information,
/// giving the observed Hessian.
pub(crate) fn add_residual_cross_term(info: &mut DMatrix<f64>, cross: &DMatrix<f64>) {
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
pub(crate) fn observed_hessian(data: &Dataset, params: &Params) -> DMatrix<f64> {
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
pub(crate) fn score_outer_product(
    data: &Dataset,
    params: &Params,
    clustered: bool,
) -> DMatrix<f64> {
    let (p, n, d1) = (data.n_params(), data.n(), data.d1());
    match (clustered, data.cluster()) {
        (true, Some(_)) => {
            let (ids, sums) = cluster_score_sums(data, params);
            gram(ids.len(), p, n as f64, |c, out| {
                out.copy_from_slice(&sums[c * p..(c + 1) * p])
            })
        }
        _ => with_features!(data, |z| gram(n, p, n as f64, |i, out| {
            let zi = row(z, d1, i);
            let st = row_terms_without_loss(data, zi, params, i);
            fill_g(data, zi, i, &st, st.resid, out);
        })),
    }
}

/// The scores summed within each cluster, `S_c = sum_{i in c} r_i g_i`: the distinct cluster
/// ids in increasing order and, row-major (one row of `d1 + d2` per id, in that order), their
/// summed scores; rows of a cluster are added in row order. Empty when the dataset has no
/// cluster ids. The clustered meat of [`score_outer_product`] is `(1/n) sum_c S_c S_c^T`.
pub(crate) fn cluster_score_sums(data: &Dataset, params: &Params) -> (Vec<i64>, Vec<f64>) {
    use rayon::prelude::*;
    let (p, d1) = (data.n_params(), data.d1());
    let Some((ids, rows)) = data.cluster_rows() else {
        return (Vec::new(), Vec::new());
    };
    // One task per cluster, its rows in increasing order: the same sums, bit for bit, as one
    // pass in row order, whatever the thread count.
    let mut sums = vec![0.0; ids.len() * p];
    with_features!(data, |z| {
        sums.par_chunks_mut(p).zip(&rows).for_each_init(
            || vec![0.0; p],
            |buf, (sum, rows)| {
                for &i in rows {
                    let zi = row(z, d1, i);
                    let st = row_terms_without_loss(data, zi, params, i);
                    fill_g(data, zi, i, &st, st.resid, buf);
                    for (s, b) in sum.iter_mut().zip(buf.iter()) {
                        *s += b;
                    }
                }
            },
        );
    });
    (ids, sums)
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
    fn fused_agd_passes_equal_the_full_pass_bit_for_bit() {
        let (data, params) = fixture();
        let (nll, grad) = nll_and_gradient(&data, &params);
        let (gg, t) = gamma_gradient_and_t(&data, &params);
        assert_eq!(&grad[3..], &gg[..]);
        assert_eq!(
            nll_and_gradient_given_t(&data, &params, &t),
            (nll, grad.clone())
        );
        let ev = evaluate(&data, &params);
        assert_eq!((ev.nll, ev.grad), (nll, grad));
    }

    #[test]
    fn hessian_vector_products_match_the_matrices() {
        let (data, params) = fixture();
        let ev = evaluate(&data, &params);
        let v = vec![0.3, -1.2, 0.7, 2.0, -0.4];
        let dv = nalgebra::DVector::from_column_slice(&v);
        for (curvature, m) in [
            (Curvature::Observed, observed_hessian(&data, &params)),
            (Curvature::Expected, expected_information(&data, &params)),
        ] {
            let want = &m * &dv;
            let got = hessian_vector(&data, &ev.terms, &v, curvature, false);
            for (a, b) in got.iter().zip(want.iter()) {
                assert!((a - b).abs() < 1e-12 * (1.0 + b.abs()), "{curvature:?}");
            }
            let want_t = m.view((0, 0), (3, 3)) * dv.rows(0, 3);
            let got_t = hessian_vector(&data, &ev.terms, &v[..3], curvature, true);
            for (a, b) in got_t.iter().zip(want_t.iter()) {
                assert!((a - b).abs() < 1e-12 * (1.0 + b.abs()));
            }
        }
        // The blocks the Newton-CG preconditioner uses.
        let info = expected_information(&data, &params);
        let cross = cross_information(&data, &ev.terms);
        let gg = gamma_information(&data, &ev.terms);
        assert!((cross - info.view((0, 3), (3, 2))).abs().max() < 1e-12);
        assert!((gg - info.view((3, 3), (2, 2))).abs().max() < 1e-12);
    }

    /// One-hot psi takes the row-by-row path over its non-zeros, dense psi the GEMM: both
    /// are the information's cross block, and [`gamma_blocks`]'s three blocks (summed in its
    /// terms pass for one-hot psi, by one GEMM of `2 d2` columns for dense psi) are the
    /// expected information's and the observed Hessian's.
    #[test]
    fn cross_information_is_the_cross_block_for_sparse_and_dense_psi() {
        let params = Params {
            theta: vec![0.2, -0.1, 0.3, 0.05],
            gamma: vec![0.4, -0.3, 0.2],
        };
        let one_hot = crate::sim::one_hot_groups(400, &params.theta, &params.gamma, 5);
        let nonzeros = one_hot.psi().iter().filter(|&&p| p != 0.0).count();
        assert!(
            2 * nonzeros <= one_hot.n() * one_hot.d2(),
            "the sparse path"
        );
        let (dense, dense_params) = fixture();
        assert!(2 * dense.psi().iter().filter(|&&p| p != 0.0).count() > dense.psi().len());
        for (data, params) in [(&one_hot, &params), (&dense, &dense_params)] {
            let d1 = data.d1();
            let terms = evaluate(data, params).terms;
            let info = expected_information(data, params);
            let cross = cross_information(data, &terms);
            let block = info.view((0, d1), (d1, data.d2()));
            assert!((cross - block).abs().max() < 1e-12);
            let observed = observed_hessian(data, params);
            let (i_tg, h_tg, gg) = gamma_blocks(data, params);
            assert!((i_tg - block).abs().max() < 1e-12);
            let h_block = observed.view((0, d1), (d1, data.d2()));
            assert!((&h_tg - h_block).abs().max() < 1e-12);
            assert!(
                (h_tg - block).abs().max() > 1e-6,
                "the residual term is not zero here"
            );
            let g_block = info.view((d1, d1), (data.d2(), data.d2()));
            assert!((gg - g_block).abs().max() < 1e-12);
        }
    }

    #[test]
    fn single_precision_storage_gives_the_same_passes() {
        // z values exactly representable in f32: both storages must agree bit for bit.
        let (data, params) = fixture();
        let z32: Vec<f32> = data.z().iter().map(|&v| v as f32).collect();
        let z64: Vec<f64> = z32.iter().map(|&v| f64::from(v)).collect();
        let build64 = Dataset::new(
            3,
            2,
            z64,
            data.psi0().to_vec(),
            data.psi().to_vec(),
            data.y().to_vec(),
            None,
        )
        .unwrap();
        let build32 = Dataset::new_f32(
            3,
            2,
            z32,
            data.psi0().to_vec(),
            data.psi().to_vec(),
            data.y().to_vec(),
            None,
        )
        .unwrap();
        assert!(build32.is_f32() && !build64.is_f32());
        assert_eq!(build32.z(), build64.z());
        assert_eq!(
            nll_and_gradient(&build32, &params),
            nll_and_gradient(&build64, &params)
        );
        assert_eq!(
            expected_information(&build32, &params),
            expected_information(&build64, &params)
        );
        let ev = evaluate(&build64, &params);
        let v = [0.1, 0.2, -0.3, 0.4, 0.5];
        assert_eq!(
            hessian_vector(&build32, &ev.terms, &v, Curvature::Observed, false),
            hessian_vector(&build64, &ev.terms, &v, Curvature::Observed, false)
        );
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
