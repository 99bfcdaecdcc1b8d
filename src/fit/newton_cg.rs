//! Newton's method for large problems: inexact (truncated) Newton with preconditioned
//! conjugate gradients (Newton-CG).
//!
//! The dense `Newton` forms the full `(d1+d2)^2` Hessian every iteration — a
//! weighted Gram product of `n (d1+d2)^2` flops (1.5e11 at the paper's scale). This solver
//! never forms it. Each iteration:
//!
//! 1. solves `H d = -g` approximately by CG, using only Hessian-vector products
//!    (`hessian_vector`: one pass over the data each, from the per-sample terms kept from
//!    the last evaluation), to a relative residual `eta_k = min(0.5, sqrt(|g|))`
//!    (Eisenstat–Walker forcing: superlinear convergence, cheap early steps), or until the
//!    step would land within [`LANDING`] of the run's tolerance, if that comes first. Where the
//!    observed Hessian shows non-positive curvature on the first CG direction (away from a
//!    minimum: `L_n` is biconvex, not jointly convex) the system is solved with the expected
//!    information instead (Fisher scoring), as the dense solver does;
//! 2. preconditions CG with `[[alpha P, I_tg], [I_gt, I_gg]]`: `P` is the theta block of the
//!    information at `theta = 0`, a property of the data alone, computed once per fit in
//!    single precision and inverted once ([`DataPreconditioner`]); `alpha` matches its trace
//!    to the current theta block; the cross and gamma blocks are exact at the current point
//!    (one `n d1 d2` GEMM and a pass over psi), applied through their `d2 x d2` Schur
//!    complement. The theta block changes along the path only through the per-sample weights
//!    `w_i sigma_i^2`, which `P` averages well: CG takes a handful of iterations per step at
//!    the paper's scale (more with few samples per parameter, where the weights spread:
//!    ~28 per step at n / (d1 + d2) = 4). Rebuilding `P` from the current weights when CG
//!    slows down was tried and rejected: near-zero weights make it ill-conditioned and the
//!    steps worse;
//! 3. takes an Armijo step along `d` (the same line search as the dense solver); every trial
//!    point is evaluated in one pass that also records the per-sample terms the next
//!    iteration's products need.
//!
//! Everything is a fixed-chunk reduction or a fixed-tile GEMM (see [`crate::parallel`],
//! [`crate::linalg`]): the iterates do not depend on the thread count.

use super::iteration::{Solver, Step};
use super::line_search::backtrack;
use super::objective::{Free, Objective};
use super::state::State;
use crate::data::{Dataset, FeatureMatrix};
use crate::error::Result;
use crate::likelihood::{data_information_f32, row_squared_norms, Curvature};
use crate::linalg::{dot, ridged_inverse_factor};
use nalgebra::DMatrix;
use std::sync::Arc;
use std::time::Instant;

/// CG iterations per Newton step at most (every Newton-CG iteration: in memory, distributed
/// and the batched bootstrap refits).
pub(crate) const MAX_CG_ITERATIONS: usize = 250;

/// Eisenstat–Walker forcing: CG stops at relative residual `min(0.5, sqrt(|g|))` for a
/// gradient of norm `grad_norm` (superlinear convergence, cheap early steps).
pub(crate) fn forcing(grad_norm: f64) -> f64 {
    grad_norm.sqrt().min(0.5)
}

/// CG also stops once its residual — the linear model's gradient after the step — is this
/// fraction of the stop tolerance (measured as the stop rule measures the gradient): the
/// step then lands where the run stops, and solving further only sharpens a step the stop
/// rule cannot tell apart. Eisenstat–Walker alone asks the last step for a relative residual
/// of `sqrt(|g|)`, far below that. Half, not all of it: the model's second-order error and
/// the single-precision products must not push the gradient back above the tolerance.
pub(crate) const LANDING: f64 = 0.5;

/// The Euclidean residual at which Newton-CG's CG stops for a gradient of norm `grad_norm`
/// and a run stopping at gradient norm `tol`: Eisenstat–Walker's [`forcing`], or the
/// [`LANDING`] fraction of `tol` when that is larger.
pub(crate) fn residual_target(grad_norm: f64, tol: f64) -> f64 {
    (forcing(grad_norm) * grad_norm).max(LANDING * tol)
}

/// Work counters of a Newton-CG run, with the wall-clock seconds of each kind of work (for
/// benchmarks and profiles).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CgStats {
    /// Newton iterations.
    pub newton_steps: usize,
    /// CG iterations (= Hessian-vector products) over all steps.
    pub cg_iterations: usize,
    /// Passes over the data (evaluations, Hessian-vector products, cross blocks).
    pub passes: usize,
    /// Steps that fell back to Fisher scoring (negative observed curvature).
    pub fisher_steps: usize,
    /// Preconditioner builds (one per fit: the data preconditioner is shared by all runs).
    pub preconditioner_builds: usize,
    /// Seconds building the data preconditioner (Gram product, factorisation, inverse).
    pub preconditioner_seconds: f64,
    /// Seconds in Hessian-vector products.
    pub product_seconds: f64,
    /// Seconds in evaluations (objective, gradient, per-sample terms; line search included).
    pub evaluation_seconds: f64,
    /// Seconds forming each step's cross and gamma blocks and their Schur complement.
    pub block_seconds: f64,
    /// Seconds applying the preconditioner inside CG.
    pub apply_seconds: f64,
}

/// The parameter-free part of the preconditioner, built once per fit and shared by the
/// homogeneous start and the joint runs: `X = L^-1` for `L L^T = P`, `P` the theta block of
/// the expected information at `theta = 0, gamma = 0` (`(1/n) sum psi0_i^2 z_i z_i^T / 4`, a
/// single-precision Gram product of the data), and the squared row norms of z.
#[derive(Debug, Clone)]
pub struct DataPreconditioner {
    /// `X = L^-1`.
    pub(crate) inverse_factor: DMatrix<f64>,
    /// `tr P`, to match `alpha P` to the current information's trace.
    pub(crate) trace: f64,
    /// `||z_i||^2` per sample.
    pub(crate) row_norms: Vec<f64>,
    /// A single-precision copy of an `f64` z (`None` when z is stored in `f32`): what the
    /// Hessian-vector products and the step blocks read (see [`DataPreconditioner::features`]).
    z32: Option<Vec<f32>>,
}

impl DataPreconditioner {
    /// Builds it: one single-precision Gram product (`n d1^2` flops), a Cholesky
    /// factorisation and a triangular inverse (`2 d1^3 / 3`), one pass for the row norms.
    /// A small ridge is added (and grown) until `P` factorises.
    ///
    /// For `f64` z it also keeps a single-precision copy of z (half the size of z): the
    /// memory-bound Hessian-vector products and the step blocks read it, at half the memory
    /// traffic. They only choose the search direction (CG stops at a relative residual of
    /// at least 1e-4, the products' rounding is ~1e-7 relative); the objective, the
    /// gradient and the convergence test stay in double precision on z itself, so the
    /// optimum is the same to the solver's tolerance.
    pub fn new(data: &Dataset) -> Self {
        let mut built = Self::build(row_squared_norms(data), &|| data_information_f32(data));
        if let FeatureMatrix::F64(z) = data.features() {
            built.z32 = Some(single_precision(z));
        }
        built
    }

    /// The z that Newton-CG's products read for `data`, the dataset this preconditioner was
    /// built from: the single-precision copy, or `data`'s own z when it is stored in `f32`
    /// (or, defensively, when the copy does not have `data`'s shape).
    pub(crate) fn features<'a>(&'a self, data: &'a Dataset) -> FeatureMatrix<'a> {
        match &self.z32 {
            Some(z) if z.len() == data.n() * data.d1() => FeatureMatrix::F32(z),
            _ => data.features(),
        }
    }

    /// [`DataPreconditioner::new`], shared, with the work counters of the build (one build,
    /// one pass, its seconds) for the fit's diagnostics.
    pub(crate) fn shared(data: &Dataset) -> (Arc<Self>, CgStats) {
        let clock = Instant::now();
        let built = Arc::new(Self::new(data));
        let stats = CgStats {
            preconditioner_builds: 1,
            preconditioner_seconds: clock.elapsed().as_secs_f64(),
            passes: 1,
            ..CgStats::default()
        };
        (built, stats)
    }

    fn build(row_norms: Vec<f64>, gram: &dyn Fn() -> DMatrix<f64>) -> Self {
        let (inverse_factor, trace) = ridged_inverse_factor(gram);
        DataPreconditioner {
            inverse_factor,
            trace,
            row_norms,
            z32: None,
        }
    }
}

/// `z` rounded to single precision (in parallel, fixed chunks: the same bits whatever the
/// thread count).
pub(crate) fn single_precision(z: &[f64]) -> Vec<f32> {
    use rayon::prelude::*;
    const CHUNK: usize = 1 << 16;
    let mut out = vec![0.0f32; z.len()];
    out.par_chunks_mut(CHUNK)
        .zip(z.par_chunks(CHUNK))
        .for_each(|(o, z)| {
            for (o, v) in o.iter_mut().zip(z) {
                *o = *v as f32;
            }
        });
    out
}

/// Newton-CG over the free coordinates of any [`Objective`] (see the module docs): the data in
/// memory, or the shards of a distributed fit (one round per product).
#[derive(Debug, Clone)]
pub(crate) struct NewtonCg {
    free: Free,
    /// Newton steps, CG iterations and Fisher steps so far (the objective counts passes).
    pub(crate) stats: CgStats,
}

/// How the CG loop ended.
enum CgOutcome {
    /// An approximate solution and the iterations used.
    Solved(Vec<f64>, usize),
    /// The very first direction had non-positive curvature: this matrix is no use here.
    NegativeCurvature,
}

impl NewtonCg {
    /// Newton-CG over the `free` coordinates (`Free::All` or `Free::Theta`).
    pub(crate) fn new(free: Free) -> Self {
        NewtonCg {
            free,
            stats: CgStats::default(),
        }
    }
}

/// Preconditioned CG on `M d = -g` to residual norm `target`, `M` the `curvature` at `at`.
fn cg<O: Objective + ?Sized>(
    objective: &mut O,
    at: &State,
    pre: &O::Preconditioner,
    g: &[f64],
    target: f64,
    curvature: Curvature,
    free: Free,
) -> Result<CgOutcome> {
    let m = g.len();
    let mut x = vec![0.0; m];
    let mut r: Vec<f64> = g.iter().map(|v| -v).collect();
    let mut z = objective.precondition(pre, &r);
    let mut p = z.clone();
    let mut rz = dot(&r, &z);
    let mut iterations = 0;
    while iterations < MAX_CG_ITERATIONS {
        let hp = objective.hessian_vector(at, &p, curvature, free)?;
        iterations += 1;
        let php = dot(&p, &hp);
        if php.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) || !php.is_finite() {
            if iterations == 1 {
                return Ok(CgOutcome::NegativeCurvature);
            }
            break; // keep the solution so far (truncated Newton)
        }
        let alpha = rz / php;
        for j in 0..m {
            x[j] += alpha * p[j];
            r[j] -= alpha * hp[j];
        }
        if dot(&r, &r).sqrt() <= target {
            break;
        }
        z = objective.precondition(pre, &r);
        let rz_new = dot(&r, &z);
        let beta = rz_new / rz;
        rz = rz_new;
        for j in 0..m {
            p[j] = z[j] + beta * p[j];
        }
    }
    Ok(CgOutcome::Solved(x, iterations))
}

impl<O: Objective + ?Sized> Solver<O> for NewtonCg {
    fn step(&mut self, objective: &mut O, state: &State, tol: f64) -> Result<Step> {
        let pre = objective.preconditioner(state, self.free)?;
        self.stats.newton_steps += 1;
        let g = self.free.gather(&state.grad, state.params.theta.len());
        let target = residual_target(dot(&g, &g).sqrt(), tol);
        // The observed Hessian, or the expected information where it shows non-positive
        // curvature on the first CG direction (Fisher scoring). On theta alone they are the
        // same matrix.
        let curvatures: &[Curvature] = match self.free {
            Free::Theta => &[Curvature::Expected],
            _ => &[Curvature::Observed, Curvature::Expected],
        };
        let mut direction = None;
        for (k, &curvature) in curvatures.iter().enumerate() {
            if k > 0 {
                self.stats.fisher_steps += 1;
            }
            if let CgOutcome::Solved(d, iterations) =
                cg(objective, state, &pre, &g, target, curvature, self.free)?
            {
                self.stats.cg_iterations += iterations;
                direction = Some(d);
                break;
            }
        }
        // Even the Fisher direction is degenerate: precondition the gradient.
        let direction = match direction {
            Some(d) => d,
            None => {
                let neg: Vec<f64> = g.iter().map(|v| -v).collect();
                objective.precondition(&pre, &neg)
            }
        };
        let slope = dot(&direction, &g);
        if slope.is_nan() || slope >= 0.0 {
            return Ok(Step::Stalled);
        }
        let free = self.free;
        let accepted = backtrack(state.nll, slope, |t| {
            objective.trial(free.along(&state.params, &direction, t))
        })?;
        Ok(match accepted {
            Some(trial) => Step::Moved(objective.accept(trial)?),
            None => Step::Stalled,
        })
    }

    fn free(&self) -> Free {
        self.free
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Early steps solve to Eisenstat–Walker's relative residual; the last ones only until the
    /// step lands within `LANDING tol`, never tighter.
    #[test]
    fn cg_stops_at_the_looser_of_forcing_and_landing() {
        // |g| = 1: forcing 0.5, far above the landing target.
        assert_eq!(residual_target(1.0, 1e-8), 0.5);
        // |g| = 1e-4: forcing sqrt(1e-4) = 1e-2, residual 1e-6 > 0.5e-8.
        assert!((residual_target(1e-4, 1e-8) - 1e-6).abs() < 1e-18);
        // |g| = 1e-7: forcing would ask 1e-7 * 3.2e-4 = 3.2e-11; landing allows 0.5e-8.
        assert_eq!(residual_target(1e-7, 1e-8), LANDING * 1e-8);
        // A zero tolerance is Eisenstat–Walker alone.
        assert_eq!(residual_target(1e-7, 0.0), forcing(1e-7) * 1e-7);
    }
}
