//! Newton's method for large problems: inexact (truncated) Newton with preconditioned
//! conjugate gradients (Newton-CG).
//!
//! The dense `Newton` forms the full `(d1+d2)^2` Hessian every iteration — a
//! weighted Gram product of `n (d1+d2)^2` flops (1.5e11 at the paper's scale). This solver
//! never forms it. Each iteration:
//!
//! 1. solves `H d = -g` approximately by CG ([`super::block_cg`], one right-hand side), using
//!    only Hessian-vector products (`hessian_vector`: one pass over the data each, from the
//!    per-sample terms kept from the last evaluation), to Eisenstat–Walker's relative residual
//!    `min(0.5, sqrt(|g|))` or until the step lands within half the run's tolerance
//!    (Euclidean, as `run_solver` measures the gradient), with Fisher scoring where the
//!    observed Hessian shows non-positive curvature on the first CG direction (away from a
//!    minimum: `L_n` is biconvex, not jointly convex), as the dense solver does;
//! 2. preconditions CG with `[[alpha P, I_tg], [I_gt, I_gg]]`: `P` is a theta block of the
//!    information computed in single precision and inverted ([`ThetaBlock`]); `alpha` matches
//!    its trace to the current theta block; the cross and gamma blocks are exact at the
//!    current point (one `n d1 d2` GEMM and a pass over psi), applied through their
//!    `d2 x d2` Schur complement. The theta block changes along the path only through the
//!    per-sample weights `w_i sigma_i^2`. Every run starts on the information at `theta = 0`,
//!    a property of the data alone, built once per fit ([`DataPreconditioner`]); where the
//!    weights at the estimate differ from its uniform ones by orders of magnitude (heavy-tailed
//!    rows, whose logits saturate), `alpha P` models the theta block poorly and CG slows down.
//!    So a run rebuilds `P` from the current weights, each floored at [`WEIGHT_FLOOR`] times
//!    their mean, before a step where both hold:
//!    * the run is in its local phase: the line search accepted the last step's unit step and
//!      that step cut the gradient norm to [`LOCAL_CONTRACTION`] of what it was (Newton's
//!      local convergence: the weights are near those at the optimum `P` is to model);
//!    * the rebuild pays: the CG products on the block in use (since it was built, or since
//!      the fit or a run took the data block), with those the step about to be solved will
//!      take at least (as many as the last one), cost as much as a build ([`rebuild_budget`]:
//!      the ski-rental rule; a fit whose CG products cost less than a build never pays for
//!      one).
//!
//!    Far from an optimum a block rebuilt at the current weights follows the iterate. With
//!    the budget alone (at small `d1` it is 1-2 products: a rebuild at almost every step),
//!    random starts that the data block takes to their optimum in about ten steps ran into
//!    the `theta -> 0, |gamma| -> infinity` valley (where the NLL tends to `log 2`) instead:
//!    forced Newton-CG fits from random starts at `d1` = 3 and 64 took about 4x the Newton
//!    steps;
//! 3. takes an Armijo step along `d` (the same line search as the dense solver); every trial
//!    point is evaluated in one pass that also records the per-sample terms the next
//!    iteration's products need.
//!
//! Everything is a fixed-chunk reduction or a fixed-tile GEMM (see [`crate::parallel`],
//! [`crate::linalg`]): the iterates do not depend on the thread count.

use super::block_cg::{self, Landing, Metric, Operator, System};
use super::iteration::{line_step, Solver, Step};
use super::objective::{Free, Objective};
use super::state::State;
use crate::data::{Dataset, FeatureMatrix};
use crate::error::Result;
use crate::likelihood::{data_information_f32, row_squared_norms, weighted_gram_f32, Curvature};
use crate::linalg::{dot, ridged_inverse_factor};
use crate::model::SampleTerms;
use nalgebra::DMatrix;
use std::sync::Arc;
use std::time::Instant;

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
    /// Theta-block builds: the data preconditioner's (one per fit, shared by all runs) and
    /// the rebuilds at the current weights.
    pub preconditioner_builds: usize,
    /// Seconds building theta blocks (Gram product, factorisation, inverse).
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
/// homogeneous start and the joint runs: the first theta block `P` (a `ThetaBlock`), the
/// expected information at `theta = 0, gamma = 0`, `(1/n) sum psi0_i^2 z_i z_i^T / 4` (a
/// single-precision Gram product of the data); the squared row norms of z; and a
/// single-precision copy of an `f64` z.
#[derive(Debug, Clone)]
pub struct DataPreconditioner {
    /// `P` at `theta = 0`.
    pub(crate) theta: Arc<ThetaBlock>,
    /// `||z_i||^2` per sample.
    pub(crate) row_norms: Vec<f64>,
    /// A single-precision copy of an `f64` z (`None` when z is stored in `f32`): what the
    /// Hessian-vector products, the step blocks and the Gram products read (see
    /// [`DataPreconditioner::features`]).
    z32: Option<Vec<f32>>,
}

/// The theta block `P` of Newton-CG's preconditioner, a weighted single-precision Gram
/// product of z, factored: `X = L^-1` for `L L^T = P` (ridged until it factorises), and
/// `tr P` (to match `alpha P` to the current information's trace).
#[derive(Debug, Clone)]
pub(crate) struct ThetaBlock {
    /// `X = L^-1`.
    pub(crate) inverse_factor: DMatrix<f64>,
    /// `tr P`.
    pub(crate) trace: f64,
}

/// The theta block is rebuilt with every row's weight at least this fraction of their mean.
/// Rows whose logits have saturated (`|u|` ~ 10 and more: weights below ~1e-4) add next to
/// nothing to the information at the current point, but along a step their weights move by
/// the factor `exp(|du|)`; and rows that span a direction alone would leave `P` singular there
/// (the f32 Gram then factors only after a ridge). The floor keeps `P`'s condition within a
/// factor 1/1e-3 of the unweighted Gram's. On the heavy-tailed paper-scale file, rebuilt
/// after 40 products, 1e-3 and no floor took about the same CG products (59 and 60), 1e-2
/// a few more (61), 1e-1 many more (83).
pub(crate) const WEIGHT_FLOOR: f64 = 1e-3;

/// Hessian-vector products whose cost matches one build of the theta block, for `d1`
/// features. A build is a compute-bound f32 Gram product (`n d1^2 / 2` multiply-adds) and a
/// factorisation and triangular inverse (`2 d1^3 / 3` in f64); a product is a memory-bound
/// pass over the f32 z (`n d1` elements): per element of z, a build does `d1 / 2`
/// multiply-adds where a product streams four bytes. Measured at the paper's scale
/// (n = 33,845, d1 = 2048; AVX-512, 2 cores), in the profiles of three paper-scale fits: a
/// build took the time of 71-86 products, so `d1 / 25` (81). At least one.
pub(crate) fn rebuild_budget(d1: usize) -> usize {
    (d1 / 25).max(1)
}

/// A run is in its local phase once the line search accepted its last step's unit step and
/// that step cut the gradient norm to at most this fraction. On the golden recording's
/// forced Newton-CG fits (d1 = 3, 64, 300; default, random and explicit starts), 0.1, 0.25 and
/// 0.35 each left every fit's Newton steps at or below the fixed block's, 0.5 did not (two
/// more steps on two fits at d1 = 64); the heavy-tailed paper-scale file rebuilds after a
/// step that cut it to 0.11.
pub(crate) const LOCAL_CONTRACTION: f64 = 0.25;

/// A run's last Newton step, as the rebuild rule sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct LastStep {
    /// Hessian-vector products it took.
    pub(crate) products: usize,
    /// Gradient norm at its start.
    pub(crate) grad_norm: f64,
    /// Whether the line search accepted its unit step.
    pub(crate) unit: bool,
}

impl LastStep {
    /// Whether the run is in its local phase at the point of gradient norm `grad_norm` this
    /// step reached: a unit step that cut the gradient norm to [`LOCAL_CONTRACTION`] of
    /// what it was.
    pub(crate) fn local(&self, grad_norm: f64) -> bool {
        self.unit && grad_norm <= LOCAL_CONTRACTION * self.grad_norm
    }
}

/// Whether a rebuild pays: the `on_block` Hessian-vector products on the theta block in use,
/// with `ahead` more for the step about to be solved (as many as the last one took: CG takes
/// more products per step, not fewer, as the forcing tightens), cost a build for `d1`
/// features ([`rebuild_budget`]).
pub(crate) fn rebuild_pays(on_block: usize, ahead: usize, d1: usize) -> bool {
    on_block + ahead >= rebuild_budget(d1)
}

impl ThetaBlock {
    /// `P = (1/n) sum c_i z_i z_i^T` from the Gram product `gram`, factored.
    fn factored(gram: &dyn Fn() -> DMatrix<f64>) -> Self {
        let (inverse_factor, trace) = ridged_inverse_factor(gram);
        ThetaBlock {
            inverse_factor,
            trace,
        }
    }

    /// The theta block of the expected information at the point whose per-sample `terms` are
    /// given, `c_i = w_i sigma_i^2`, each weight floored at [`WEIGHT_FLOOR`] times their
    /// mean, reading z from `features` (as the products do).
    pub(crate) fn at(data: &Dataset, features: FeatureMatrix<'_>, terms: &[SampleTerms]) -> Self {
        let c: Vec<f64> = terms
            .iter()
            .map(|st| st.weight * st.sigma * st.sigma)
            .collect();
        let floor = WEIGHT_FLOOR * c.iter().sum::<f64>() / c.len().max(1) as f64;
        Self::factored(&|| weighted_gram_f32(data, features, |i| c[i].max(floor)))
    }
}

impl DataPreconditioner {
    /// Builds it: the single-precision copy of an `f64` z, one single-precision Gram product
    /// of it (`n d1^2` flops), a Cholesky factorisation and a triangular inverse
    /// (`2 d1^3 / 3`), one pass for the row norms. A small ridge is added (and grown) until
    /// `P` factorises.
    ///
    /// The copy is half the size of z: the memory-bound Hessian-vector products and the step
    /// blocks read it, at half the memory traffic, and so do the Gram products (their rows
    /// are rounded to f32 anyway). They only choose the search direction (CG stops at a
    /// relative residual of at least 1e-4, the products' rounding is ~1e-7 relative); the
    /// objective, the gradient and the convergence test stay in double precision on z
    /// itself, so the optimum is the same to the solver's tolerance.
    pub fn new(data: &Dataset) -> Self {
        let z32 = match data.features() {
            FeatureMatrix::F64(z) => Some(single_precision(z)),
            FeatureMatrix::F32(_) => None,
        };
        let mut built = DataPreconditioner {
            theta: Arc::new(ThetaBlock {
                inverse_factor: DMatrix::zeros(0, 0),
                trace: 0.0,
            }),
            row_norms: row_squared_norms(data),
            z32,
        };
        let features = built.features(data);
        built.theta = Arc::new(ThetaBlock::factored(&|| {
            data_information_f32(data, features)
        }));
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
    /// The run's last step (`None` before its first).
    last: Option<LastStep>,
    /// Newton steps, CG iterations and Fisher steps so far (the objective counts passes).
    pub(crate) stats: CgStats,
}

impl NewtonCg {
    /// Newton-CG over the `free` coordinates (`Free::All` or `Free::Theta`).
    pub(crate) fn new(free: Free) -> Self {
        NewtonCg {
            free,
            last: None,
            stats: CgStats::default(),
        }
    }
}

/// One Newton step's matrices for the block CG: the `curvature` of `objective` at `at` over
/// the `free` coordinates, and the step's preconditioner `pre` (one system per column; each
/// product one pass over the data or one round of the shards).
struct StepOperator<'a, O: Objective + ?Sized> {
    objective: &'a mut O,
    at: &'a State,
    pre: &'a O::Preconditioner,
    free: Free,
}

impl<O: Objective + ?Sized> Operator for StepOperator<'_, O> {
    fn precondition(&mut self, r: &DMatrix<f64>) -> DMatrix<f64> {
        let mut out = DMatrix::zeros(r.nrows(), r.ncols());
        for (c, col) in r.column_iter().enumerate() {
            let z = self.objective.precondition(self.pre, col.as_slice());
            out.column_mut(c).copy_from_slice(&z);
        }
        out
    }

    fn products(
        &mut self,
        _systems: &[usize],
        curvatures: &[Curvature],
        p: &DMatrix<f64>,
    ) -> Result<DMatrix<f64>> {
        let mut out = DMatrix::zeros(p.nrows(), p.ncols());
        for (c, (col, &curvature)) in p.column_iter().zip(curvatures).enumerate() {
            let hp =
                (self.objective).hessian_vector(self.at, col.as_slice(), curvature, self.free)?;
            out.column_mut(c).copy_from_slice(&hp);
        }
        Ok(out)
    }
}

impl<O: Objective + ?Sized> Solver<O> for NewtonCg {
    fn step(&mut self, objective: &mut O, state: &State, tol: f64) -> Result<Step> {
        let d1 = state.params.theta.len();
        let g = self.free.gather(&state.grad, d1);
        let grad_norm = dot(&g, &g).sqrt();
        match self.last {
            None => objective.restore_theta_block(),
            Some(last) if last.local(grad_norm) => {
                objective.rebuild_theta_block(state, last.products)?;
            }
            Some(_) => {}
        }
        let pre = objective.preconditioner(state, self.free)?;
        self.stats.newton_steps += 1;
        let neg: Vec<f64> = g.iter().map(|v| -v).collect();
        let first = objective.precondition(&pre, &neg);
        let landing = Landing {
            metric: Metric::Euclidean,
            tol,
        };
        let mut op = StepOperator {
            objective: &mut *objective,
            at: state,
            pre: &pre,
            free: self.free,
        };
        let system = System { grad: &g, first };
        let solution = block_cg::solve(&mut op, vec![system], self.free.curvatures(), landing)?
            .pop()
            .expect("one system, one solution");
        self.stats.cg_iterations += solution.iterations;
        self.stats.fisher_steps += usize::from(solution.fisher);
        let direction = solution.direction;
        let slope = dot(&direction, &g);
        let step = line_step(objective, state, self.free, &direction, slope)?;
        // The line search's first trial is `along(.., 1.0)`: the unit step has those bits.
        let unit = matches!(&step, Step::Moved(next)
            if next.params == self.free.along(&state.params, &direction, 1.0));
        self.last = Some(LastStep {
            products: solution.iterations,
            grad_norm,
            unit,
        });
        Ok(step)
    }

    fn free(&self) -> Free {
        self.free
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rule's two halves: the local phase is a unit step that cut the gradient norm to
    /// `LOCAL_CONTRACTION` of what it was (no more, and not a shorter step); a rebuild pays
    /// once the products on the block and the step ahead reach `d1 / 25` (at least one).
    #[test]
    fn the_rebuild_rule_wants_a_local_phase_and_a_paid_build() {
        let last = LastStep {
            products: 3,
            grad_norm: 1e-2,
            unit: true,
        };
        assert!(last.local(2.5e-3));
        assert!(last.local(1e-9));
        assert!(!last.local(2.6e-3));
        assert!(!last.local(2e-2));
        let halved = LastStep {
            unit: false,
            ..last
        };
        assert!(!halved.local(1e-9));
        assert_eq!(rebuild_budget(2048), 81);
        assert_eq!(rebuild_budget(3), 1);
        assert!(rebuild_pays(60, 21, 2048));
        assert!(!rebuild_pays(60, 20, 2048));
        assert!(rebuild_pays(0, 1, 3));
        assert!(!rebuild_pays(0, 0, 3));
    }
}
