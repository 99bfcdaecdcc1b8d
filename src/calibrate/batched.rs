//! Batched Newton-CG refits: the `B` bootstrap refits of a large problem solved together.
//!
//! Every refit of a parametric bootstrap shares the covariates (a resample is a new label
//! vector) and starts from the same point. Solved one after another, each Hessian-vector
//! product of each refit is a matrix-vector pass over z (`n d1` values read for `2 n d1`
//! flops: memory-bound). Solved together, the products of all `k` running refits are two
//! GEMMs: `A = Z V` (`n x k`), then `Z^T C` with `C` the per-sample coefficients built from `A`
//! (`d1 x k`), compute-bound and several times faster per product. The line search costs no
//! pass at all: `z . (theta + tau d) = z . theta + tau z . d`, so one GEMM `Z D` serves every
//! trial step of every refit.
//!
//! This is the bulk case of the estimator's iteration (argmin's `bulk_*`): the batch keeps only
//! its kernels (the GEMMs over z, the per-sample terms, the line search along precomputed
//! per-sample changes) and its refill scheduler ([`batch`]); the rest is the one of every
//! Newton-CG run — the block CG of [`crate::fit::block_cg`] over the running refits' systems
//! (its CG cap, Eisenstat–Walker forcing, Fisher-scoring fallback and landing rule, the
//! landing measured in standard errors as the stop rule measures the gradient), the shared
//! Armijo line search (`crate::fit::line_search::backtrack`) and the shared stopping rule
//! (`crate::fit::stop_reason`, on the gradient measured in standard errors, see [`batch`]) —
//! preconditioned by the expected information at the common start, inverted once per
//! calibration (`Preconditioner`): it does not depend on the labels, and the refits start at
//! the truth they are drawn from and move about
//! one standard error, so it is close to every refit's Hessian (the preconditioner only sets
//! CG's speed, never the answer). Against the plain fit's preconditioner (theta block at
//! `theta = 0`, rescaled) it cuts CG iterations by ~35% at the paper's shape (BENCHMARKS.md).
//!
//! The Hessian products run in single precision over z (f32 GEMMs over z itself or, for z
//! stored in f64, over a single-precision copy made once per calibration; coefficients formed
//! in f64): they only steer CG, whose relative residual target `forcing(|g|)` stays far above
//! f32's error; the gradients and the line search's `Z D`, which define the optimum, stay in
//! f64. The per-sample terms of each refit (an exp and a log each) are computed once per
//! Newton step, not once per Hessian product.
//!
//! Deterministic whatever the thread count: the GEMMs split their output into fixed blocks
//! (each block one sequential faer GEMM on views of z), and all per-refit arithmetic is serial per
//! refit.

use crate::data::{Dataset, FeatureMatrix};
use crate::error::{Error, Result};
use crate::fit::block_cg::{self, stack, Landing, Metric, Operator, System};
use crate::fit::line_search::backtrack;
use crate::fit::newton_cg::single_precision;
use crate::fit::objective::Free;
use crate::fit::{finite_point, stop_reason, Limits, Termination};
use crate::likelihood::{expected_information, Curvature};
use crate::linalg::{
    dot, gemm_row_block, gemm_tn_block_add, lower_inverse_in_place, matmul, matmul_tn,
    ridged_cholesky, Scalar,
};
use crate::model::{sample_terms, Params, SampleTerms};
use nalgebra::DMatrix;
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};

/// Refits solved together at most (the batch's `n x k` work matrices: 27 MB each at the paper's
/// n = 33,845 and k = 100).
pub(crate) const BATCH: usize = 128;
/// Rows of z per block of the `Z V` product.
const ROW_BLOCK: usize = 512;
/// Columns of z (rows of the output) per block of the `Z^T C` product.
const COL_BLOCK: usize = 128;
/// Rows of z converted at a time (z stored in the other precision) in `Z^T C`.
const WIDEN_ROWS: usize = 1024;

/// The batch's preconditioner: the inverse of the expected information at the common start
/// (every block exact there; one Gram product of `n (d1 + d2)^2 / 2` flops and an inverse of
/// `(d1 + d2)^3` flops, built once per calibration and shared by all its batches). Held
/// explicitly so that each CG iteration's `M^-1 R` is one tiled GEMM (a column-by-column
/// triangular solve of `(d1 + d2) x k` ran at ~1 GFlop/s, a quarter of a d1 = 512 batch).
///
/// For z stored in `f64` it also holds a single-precision copy of z (half its size), as the
/// fit's `DataPreconditioner` does: what every batch's Hessian products read (see
/// `Precision`), without a conversion pass per product and at half the bytes of an `f64`
/// GEMM bound by reading z (a handful of running refits: the shrink search's 4, the last
/// refits of a batch).
pub(crate) struct Preconditioner {
    inverse: DMatrix<f64>,
    z32: Option<Vec<f32>>,
}

impl Preconditioner {
    /// At `start` on `data` (expected information: labels play no part). A small ridge is
    /// added and grown until it factorises.
    pub(crate) fn at(data: &Dataset, start: &Params) -> Self {
        let mut l = ridged_cholesky(expected_information(data, start));
        // M^-1 = L^-T L^-1.
        lower_inverse_in_place(&mut l);
        Self::from_inverse(data, matmul_tn(&l, &l))
    }

    /// From `inverse`, the inverse of the expected information at the common start, already
    /// at hand (the estimate's own, rebuilt from its `expected` covariance:
    /// `crate::covariance::expected_information_inverse`).
    pub(crate) fn from_inverse(data: &Dataset, inverse: DMatrix<f64>) -> Self {
        let z32 = match data.features() {
            FeatureMatrix::F64(z) => Some(single_precision(z)),
            FeatureMatrix::F32(_) => None,
        };
        Preconditioner { inverse, z32 }
    }

    /// The single-precision z of `data`, the dataset this was built for: the copy, or `data`'s
    /// own z when stored in `f32` (or, defensively, when the copy does not have `data`'s shape:
    /// the products then convert it block by block).
    fn features<'a>(&'a self, data: &'a Dataset) -> FeatureMatrix<'a> {
        match &self.z32 {
            Some(z) if z.len() == data.n() * data.d1() => FeatureMatrix::F32(z),
            _ => data.features(),
        }
    }

    /// `M^-1 R` for the stacked columns of `r` (`(d1 + d2) x k`).
    pub(crate) fn apply(&self, r: &DMatrix<f64>) -> DMatrix<f64> {
        matmul(&self.inverse, r)
    }
}

/// The precisions of the batch's GEMMs over z: `f64` for the gradients and the line search's
/// `Z D` (they define the optimum), `f32` for CG's Hessian products (they only steer CG,
/// whose residual target, `forcing(|g|) |g|` relative, stays far above single precision's
/// ~1e-6 relative error; twice the GEMM rate and half the bytes of z read).
trait Precision: Scalar {
    /// z itself, when stored in this precision (a zero-copy view).
    fn stored<'a>(z: &FeatureMatrix<'a>) -> Option<&'a [Self]>;
    /// Rows `r0..r0 + rows`, columns `c0..c0 + cols` of z (`d1` columns) converted into `out`
    /// (row-major).
    fn convert(
        z: FeatureMatrix,
        d1: usize,
        rows: (usize, usize),
        cols: (usize, usize),
        out: &mut Vec<Self>,
    );
}

/// Copies a block of z into `out`, converting each value by `f`.
fn block_into<S: Copy, T>(
    z: &[S],
    d1: usize,
    (r0, rows): (usize, usize),
    (c0, cols): (usize, usize),
    out: &mut Vec<T>,
    f: impl Fn(S) -> T,
) {
    out.clear();
    for i in r0..r0 + rows {
        out.extend(z[i * d1 + c0..i * d1 + c0 + cols].iter().map(|&v| f(v)));
    }
}

impl Precision for f64 {
    fn stored<'a>(z: &FeatureMatrix<'a>) -> Option<&'a [f64]> {
        match *z {
            FeatureMatrix::F64(z) => Some(z),
            FeatureMatrix::F32(_) => None,
        }
    }
    fn convert(
        z: FeatureMatrix,
        d1: usize,
        rows: (usize, usize),
        cols: (usize, usize),
        out: &mut Vec<f64>,
    ) {
        match z {
            FeatureMatrix::F64(z) => block_into(z, d1, rows, cols, out, |v| v),
            FeatureMatrix::F32(z) => block_into(z, d1, rows, cols, out, f64::from),
        }
    }
}

impl Precision for f32 {
    fn stored<'a>(z: &FeatureMatrix<'a>) -> Option<&'a [f32]> {
        match *z {
            FeatureMatrix::F32(z) => Some(z),
            FeatureMatrix::F64(_) => None,
        }
    }
    fn convert(
        z: FeatureMatrix,
        d1: usize,
        rows: (usize, usize),
        cols: (usize, usize),
        out: &mut Vec<f32>,
    ) {
        match z {
            FeatureMatrix::F64(z) => block_into(z, d1, rows, cols, out, |v| v as f32),
            FeatureMatrix::F32(z) => block_into(z, d1, rows, cols, out, |v| v),
        }
    }
}

/// `Z V` in precision `T` for `v` `d1 x k` (column-major), `z` the features of `data` (or a
/// copy of them): `n x k` row-major.
fn z_times<T: Precision>(data: &Dataset, z: FeatureMatrix, v: &[T], k: usize) -> Vec<T> {
    let (n, d1) = (data.n(), data.d1());
    let mut out = vec![T::default(); n * k];
    out.par_chunks_mut(ROW_BLOCK * k.max(1))
        .enumerate()
        .for_each(|(blk, c)| {
            let r0 = blk * ROW_BLOCK;
            let rows = c.len() / k.max(1);
            let mut buf = Vec::new();
            let a: &[T] = match T::stored(&z) {
                Some(z) => &z[r0 * d1..(r0 + rows) * d1],
                None => {
                    T::convert(z, d1, (r0, rows), (0, d1), &mut buf);
                    &buf
                }
            };
            gemm_row_block(c, a, rows, v, k);
        });
    out
}

/// `Z^T C` in precision `T` for `c` `n x k` row-major, `z` the features of `data` (or a copy of
/// them): `d1 x k` column-major, in `f64`.
fn z_t_times<T: Precision>(data: &Dataset, z: FeatureMatrix, c: &[T], k: usize) -> DMatrix<f64> {
    let (n, d1) = (data.n(), data.d1());
    let stored = T::stored(&z);
    let blocks: Vec<(usize, Vec<T>)> = (0..d1.div_ceil(COL_BLOCK))
        .into_par_iter()
        .map(|blk| {
            let c0 = blk * COL_BLOCK;
            let cols = COL_BLOCK.min(d1 - c0);
            let mut out = vec![T::default(); cols * k]; // cols x k row-major
            let mut buf = Vec::new();
            let mut r0 = 0;
            while r0 < n {
                // A view of z's columns c0..c0 + cols (all rows at once), or a converted copy
                // of a row block of them.
                let rows = if stored.is_some() {
                    n
                } else {
                    WIDEN_ROWS.min(n - r0)
                };
                let b = &c[r0 * k..(r0 + rows) * k];
                match stored {
                    Some(z) => gemm_tn_block_add(&mut out, z, d1, (r0, rows), (c0, cols), b, k),
                    None => {
                        T::convert(z, d1, (r0, rows), (c0, cols), &mut buf);
                        gemm_tn_block_add(&mut out, &buf, cols, (0, rows), (0, cols), b, k)
                    }
                }
                r0 += rows;
            }
            (c0, out)
        })
        .collect();
    let mut m = DMatrix::<f64>::zeros(d1, k);
    for (c0, out) in blocks {
        for (j, row) in out.chunks_exact(k.max(1)).enumerate() {
            for (b, &v) in row.iter().enumerate() {
                m[(c0 + j, b)] = v.to_f64();
            }
        }
    }
    m
}

/// One refit of the batch.
struct Refit {
    /// Its draw.
    index: usize,
    params: Params,
    /// `z_i . theta`.
    t: Vec<f64>,
    /// `sigma_i`.
    sigma: Vec<f64>,
    y: Vec<f64>,
    nll: f64,
    grad: Vec<f64>,
    /// `M^-1 grad` (the preconditioned gradient: CG's first direction, and the metric of the
    /// stopping rule).
    pre_grad: Vec<f64>,
    iterations: usize,
    done: Option<Termination>,
}

impl Refit {
    /// The gradient in standard errors, `sqrt(n grad^T M^-1 grad)`: to first order the
    /// refit's distance to its optimum `M^-1 grad` bounds every linear functional's error,
    /// `|phi . delta| <= sqrt(n grad^T M^-1 grad) SE(phi)` with `SE(phi)^2 = phi^T M^-1 phi / n`
    /// (Cauchy–Schwarz in the information metric).
    fn grad_in_standard_errors(&self) -> f64 {
        (self.t.len() as f64 * dot(&self.grad, &self.pre_grad))
            .max(0.0)
            .sqrt()
    }
    /// Mean NLL at `t + tau dt`, `sigma + tau ds`.
    fn nll_at(&self, tau: f64, dt: &[f64], ds: &[f64]) -> f64 {
        let mut s = 0.0;
        for i in 0..self.t.len() {
            s += sample_terms(
                self.t[i] + tau * dt[i],
                self.sigma[i] + tau * ds[i],
                self.y[i],
            )
            .loss;
        }
        s / self.t.len() as f64
    }
}

/// `Psi^T C` for `c` `n x k` row-major: `d2 x k` column-major (one sequential GEMM; d2 is small).
fn psi_t_times(data: &Dataset, c: &[f64], k: usize) -> DMatrix<f64> {
    let (n, d2) = (data.n(), data.d2());
    let mut out = vec![0.0; d2 * k]; // d2 x k row-major
    if d2 > 0 && k > 0 {
        gemm_tn_block_add(&mut out, data.psi(), d2, (0, n), (0, d2), c, k);
    }
    DMatrix::from_row_slice(d2, k, &out)
}

/// `Psi V` for `v` `d2 x k` column-major: `n x k` row-major (fixed row blocks).
fn psi_times(data: &Dataset, v: &[f64], k: usize) -> Vec<f64> {
    let (n, d2) = (data.n(), data.d2());
    let mut out = vec![0.0; n * k];
    if d2 > 0 && k > 0 {
        out.par_chunks_mut(ROW_BLOCK * k)
            .enumerate()
            .for_each(|(blk, c)| {
                let (r0, rows) = (blk * ROW_BLOCK, c.len() / k);
                gemm_row_block(c, &data.psi()[r0 * d2..(r0 + rows) * d2], rows, v, k);
            });
    }
    out
}

/// Refreshes `nll`, the gradient and the preconditioned gradient of every refit in `which`:
/// the per-sample terms once per sample and refit, then the gradient's theta block `Z^T C` and
/// gamma block `Psi^T C'` as GEMMs, and `M^-1 G` as one more.
fn evaluate(data: &Dataset, pre: &Preconditioner, refits: &mut [Refit], which: &[usize]) {
    let (n, d1) = (data.n(), data.d1());
    let k = which.len();
    if k == 0 {
        return;
    }
    let mut ct = vec![0.0; n * k];
    let mut cg = vec![0.0; n * k];
    let mut loss = vec![0.0; n * k];
    ct.par_chunks_mut(k)
        .zip(cg.par_chunks_mut(k))
        .zip(loss.par_chunks_mut(k))
        .enumerate()
        .for_each(|(i, ((rt, rg), rl))| {
            for (j, &b) in which.iter().enumerate() {
                let r = &refits[b];
                let st = sample_terms(r.t[i], r.sigma[i], r.y[i]);
                rt[j] = st.resid * st.sigma / n as f64;
                rg[j] = st.resid * st.t / n as f64;
                rl[j] = st.loss;
            }
        });
    let gt = z_t_times::<f64>(data, data.features(), &ct, k);
    let gg = psi_t_times(data, &cg, k);
    for (j, &b) in which.iter().enumerate() {
        let r = &mut refits[b];
        r.grad.clear();
        r.grad
            .extend(gt.column(j).iter().chain(gg.column(j).iter()));
        debug_assert_eq!(r.grad.len(), d1 + data.d2());
        r.nll = (0..n).map(|i| loss[i * k + j]).sum::<f64>() / n as f64;
    }
    let pg = pre.apply(&stack(which.iter().map(|&b| &refits[b].grad[..])));
    for (j, &b) in which.iter().enumerate() {
        refits[b].pre_grad = pg.column(j).iter().copied().collect();
    }
}

/// `H_b p_b` for the running refits, given their per-sample `terms` at the current point
/// (observed or expected Hessian per refit): two GEMMs over `z32`, the single-precision z of
/// the batch (`Preconditioner::features`: see `Precision`; the coefficients are formed in f64).
fn hessian_products(
    data: &Dataset,
    z32: FeatureMatrix,
    terms: &[&[SampleTerms]],
    curvatures: &[Curvature],
    p: &DMatrix<f64>,
) -> DMatrix<f64> {
    let (n, d1, d2) = (data.n(), data.d1(), data.d2());
    let k = terms.len();
    let pt: Vec<f32> = p.rows(0, d1).iter().map(|&v| v as f32).collect();
    let a = z_times::<f32>(data, z32, &pt, k);
    let pg: Vec<f64> = p.rows(d1, d2).iter().copied().collect();
    let b = psi_times(data, &pg, k);
    let mut ct = vec![0.0f32; n * k];
    let mut cg = vec![0.0; n * k];
    ct.par_chunks_mut(k)
        .zip(cg.par_chunks_mut(k))
        .enumerate()
        .for_each(|(i, (rt, rg))| {
            for (j, refit) in terms.iter().enumerate() {
                let st = &refit[i];
                let ai = f64::from(a[i * k + j]);
                let bi = b[i * k + j];
                let s = st.weight * (st.sigma * ai + st.t * bi);
                let (x, y) = if curvatures[j] == Curvature::Observed {
                    (s * st.sigma + st.resid * bi, s * st.t + st.resid * ai)
                } else {
                    (s * st.sigma, s * st.t)
                };
                rt[j] = (x / n as f64) as f32;
                rg[j] = y / n as f64;
            }
        });
    let ht = z_t_times::<f32>(data, z32, &ct, k);
    let mut out = DMatrix::<f64>::zeros(d1 + d2, k);
    out.rows_mut(0, d1).copy_from(&ht);
    if d2 > 0 {
        out.rows_mut(d1, d2).copy_from(&psi_t_times(data, &cg, k));
    }
    out
}

/// An accepted step of one refit: its length and the changes per unit length of `z . theta`
/// and `sigma`.
struct Step {
    tau: f64,
    dt: Vec<f64>,
    ds: Vec<f64>,
}

/// The batch's matrices for the block CG ([`crate::fit::block_cg`]): each running refit's
/// curvature at its current point (two GEMMs for all of them, [`hessian_products`]) and the
/// batch's preconditioner (one GEMM).
struct BatchOperator<'a> {
    data: &'a Dataset,
    pre: &'a Preconditioner,
    /// The per-sample terms at each refit's current point, once per Newton step (not per
    /// Hessian product: each costs an exp and a log per sample and refit).
    terms: Vec<Vec<SampleTerms>>,
}

impl Operator for BatchOperator<'_> {
    fn precondition(&mut self, r: &DMatrix<f64>) -> DMatrix<f64> {
        self.pre.apply(r)
    }

    fn products(
        &mut self,
        systems: &[usize],
        curvatures: &[Curvature],
        p: &DMatrix<f64>,
    ) -> Result<DMatrix<f64>> {
        let terms: Vec<&[SampleTerms]> = systems.iter().map(|&j| &self.terms[j][..]).collect();
        let z32 = self.pre.features(self.data);
        Ok(hessian_products(self.data, z32, &terms, curvatures, p))
    }
}

/// Newton directions of the refits `which`, by one block CG over their systems: the landing
/// measured in standard errors, as [`batch`]'s stopping rule measures the gradient.
fn directions(
    data: &Dataset,
    refits: &[Refit],
    which: &[usize],
    pre: &Preconditioner,
    tol: f64,
) -> Result<Vec<Vec<f64>>> {
    let terms = which
        .par_iter()
        .map(|&b| {
            let r = &refits[b];
            (0..r.t.len())
                .map(|i| sample_terms(r.t[i], r.sigma[i], r.y[i]))
                .collect()
        })
        .collect();
    // The first direction, from `x = 0`, is the refit's `-M^-1 g`, already at hand.
    let systems = which
        .iter()
        .map(|&b| System {
            grad: &refits[b].grad,
            first: refits[b].pre_grad.iter().map(|v| -v).collect(),
        })
        .collect();
    let landing = Landing {
        metric: Metric::StandardErrors { n: data.n() },
        tol,
    };
    let mut op = BatchOperator { data, pre, terms };
    let solutions = block_cg::solve(&mut op, systems, Free::All.curvatures(), landing)?;
    Ok(solutions.into_iter().map(|s| s.direction).collect())
}

/// Refits `start` to the labels `draw(b)` of each draw `b = 0..reps`, at most `width` at once,
/// to the `limits` (Newton
/// steps each, and the tolerance of the gradient measured **in standard errors**, `sqrt(n g^T
/// M^-1 g)` with `M` the preconditioner's information: a refit stops when no linear functional
/// of it is further than `limits.tol` of its standard errors from the refit's optimum, to
/// first order): the refits' estimates and terminations, in the order of `b`.
///
/// At most `width` refits run at once ([`BATCH`] in the bootstrap; tests use fewer to exercise
/// the refill), and a finished refit's place goes to the next draw
/// (its labels drawn then): the few slow refits of a batch (4-10 Newton steps against ~4.5 for
/// most, each step's GEMMs with a handful of columns and bound by reading z) share their steps
/// with the next draws instead of running alone, so a calibration has one such tail, not one
/// per batch of `width`. A refit's iterates depend on the others beside it only through the
/// GEMMs' rounding (their blocking follows the number of columns), far below the tolerance.
///
/// Errors: [`Error::Cancelled`].
pub(crate) fn batch(
    data: &Dataset,
    pre: &Preconditioner,
    start: &Params,
    (reps, width): (usize, usize),
    draw: impl Fn(usize) -> Vec<f64> + Sync,
    limits: Limits,
    cancel: Option<&AtomicBool>,
) -> Result<Vec<(Params, Termination)>> {
    let Limits { tol, max_iter } = limits;
    let (n, d1, d2) = (data.n(), data.d1(), data.d2());
    let t0 = z_times::<f64>(data, data.features(), &start.theta, 1);
    let sigma0: Vec<f64> = (0..n)
        .map(|i| data.psi0()[i] + dot(&start.gamma, data.psi_row(i)))
        .collect();
    let mut finished: Vec<(usize, Params, Termination)> = Vec::with_capacity(reps);
    let width = width.max(1);
    let mut refits: Vec<Refit> = Vec::with_capacity(width.min(reps));
    let mut next = 0;
    // Refits just moved, or just drawn: their gradients are due.
    let mut fresh: Vec<usize> = Vec::new();
    loop {
        // Fill the free places with the next draws.
        let room = width.saturating_sub(refits.len()).min(reps - next);
        let ys: Vec<Vec<f64>> = (next..next + room).into_par_iter().map(&draw).collect();
        for (b, y) in (next..).zip(ys) {
            fresh.push(refits.len());
            refits.push(Refit {
                index: b,
                params: start.clone(),
                t: t0.clone(),
                sigma: sigma0.clone(),
                y,
                nll: 0.0,
                grad: vec![0.0; d1 + d2],
                pre_grad: Vec::new(),
                iterations: 0,
                done: None,
            });
        }
        next += room;
        evaluate(data, pre, &mut refits, &fresh);
        for r in refits.iter_mut().filter(|r| r.done.is_none()) {
            let finite = finite_point(&r.params, r.nll, &r.grad);
            let measure = r.grad_in_standard_errors();
            r.done = stop_reason(finite, measure, r.nll, tol, r.iterations, max_iter);
        }
        for r in std::mem::take(&mut refits) {
            match r.done {
                Some(term) => finished.push((r.index, r.params, term)),
                None => refits.push(r),
            }
        }
        if refits.is_empty() && next == reps {
            break;
        }
        if cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
            return Err(Error::Cancelled);
        }
        let active: Vec<usize> = (0..refits.len()).collect();
        let dirs = directions(data, &refits, &active, pre, tol)?;
        // One GEMM for every trial point of every line search.
        let k = active.len();
        let dt = z_times::<f64>(
            data,
            data.features(),
            &dirs
                .iter()
                .flat_map(|d| d[..d1].iter().copied())
                .collect::<Vec<_>>(),
            k,
        );
        let steps: Vec<Option<Step>> = active
            .par_iter()
            .enumerate()
            .map(|(j, &b)| {
                let r = &refits[b];
                let d = &dirs[j];
                let slope = dot(d, &r.grad);
                let dtj: Vec<f64> = (0..n).map(|i| dt[i * k + j]).collect();
                let ds: Vec<f64> = (0..n).map(|i| dot(&d[d1..], data.psi_row(i))).collect();
                // No pass over the data per trial: z . theta and sigma move linearly.
                let accepted = backtrack(r.nll, slope, |tau| Ok((r.nll_at(tau, &dtj, &ds), tau)));
                let tau = accepted.ok().flatten()?;
                Some(Step { tau, dt: dtj, ds })
            })
            .collect();
        fresh.clear();
        for ((&b, step), d) in active.iter().zip(steps).zip(&dirs) {
            let r = &mut refits[b];
            let Some(Step { tau, dt: dtj, ds }) = step else {
                r.done = Some(Termination::Stalled);
                continue;
            };
            for (x, v) in r.params.theta.iter_mut().zip(&d[..d1]) {
                *x += tau * v;
            }
            for (x, v) in r.params.gamma.iter_mut().zip(&d[d1..]) {
                *x += tau * v;
            }
            for i in 0..n {
                r.t[i] += tau * dtj[i];
                r.sigma[i] += tau * ds[i];
            }
            r.iterations += 1;
            fresh.push(b);
        }
    }
    finished.sort_by_key(|f| f.0);
    Ok(finished.into_iter().map(|(_, p, t)| (p, t)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The batches' Hessian products read the single-precision copy of an `f64` z: bit for bit
    /// the products of z rounded block by block (the copy is z's rounding, in z's shape).
    #[test]
    fn hessian_products_read_the_single_precision_copy_of_z() {
        let (data, truth) = crate::sim::high_dimensional(600, 70, 3, 4);
        let pre = Preconditioner::at(&data, &truth);
        let copy = pre.features(&data);
        assert!(matches!(data.features(), FeatureMatrix::F64(_)));
        assert!(matches!(copy, FeatureMatrix::F32(_)));
        let (n, m) = (data.n(), data.d1() + data.d2());
        let t = z_times::<f64>(&data, data.features(), &truth.theta, 1);
        let terms: Vec<SampleTerms> = (0..n)
            .map(|i| {
                let sigma = data.psi0()[i] + dot(&truth.gamma, data.psi_row(i));
                sample_terms(t[i], sigma, data.y()[i])
            })
            .collect();
        let p = DMatrix::from_fn(m, 3, |r, c| ((r * 7 + c * 3) % 11) as f64 / 11.0 - 0.4);
        let run = |z| {
            hessian_products(
                &data,
                z,
                &[&terms[..]; 3],
                &[
                    Curvature::Observed,
                    Curvature::Expected,
                    Curvature::Observed,
                ],
                &p,
            )
        };
        let (from_copy, converted) = (run(copy), run(data.features()));
        assert_eq!(from_copy, converted);
        assert!(from_copy.amax() > 0.0);
    }
}
