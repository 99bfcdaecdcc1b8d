//! The default solver: damped Newton with an Armijo line search.
//!
//! Each iteration solves `H d = -g` with the observed Hessian `H`. Where `H` is not positive
//! definite (away from a minimum — `L_n` is not jointly convex) it uses the expected
//! information `I` instead (Fisher scoring: `I` is a Gram matrix, positive semi-definite), with
//! Levenberg damping added until it factorises. The step is then chosen by the shared Armijo
//! line search (`fit/line_search.rs`).

use super::iteration::{Solver, Step};
use super::line_search::backtrack;
use super::objective::{Free, Objective};
use super::state::State;
use crate::error::Result;
use crate::linalg::RIDGE_START;
use nalgebra::{DMatrix, DVector};

/// Damped Newton / Fisher scoring (see the module docs) over the free coordinates of any
/// [`Objective`]: the data in memory, the shards of a distributed fit, or a profile's
/// constrained problem.
#[derive(Debug, Clone)]
pub(crate) struct Newton {
    free: Free,
}

impl Newton {
    /// Newton over the `free` coordinates.
    pub(crate) fn new(free: Free) -> Self {
        Newton { free }
    }
}

/// Solves `a d = -g` by Cholesky; `None` if `a` is not numerically positive definite.
pub(crate) fn solve_spd(a: DMatrix<f64>, g: &DVector<f64>) -> Option<DVector<f64>> {
    let chol = nalgebra::Cholesky::new(a)?;
    let d = -chol.solve(g);
    d.iter().all(|v| v.is_finite()).then_some(d)
}

/// The Fisher-scoring direction, damped (Levenberg) until the system factorises.
pub(crate) fn damped_direction(info: &DMatrix<f64>, g: &DVector<f64>) -> DVector<f64> {
    let m = info.nrows();
    let scale = (info.trace() / m as f64).max(f64::MIN_POSITIVE);
    let mut lambda = 0.0;
    loop {
        let mut a = info.clone();
        for j in 0..m {
            a[(j, j)] += lambda;
        }
        if let Some(d) = solve_spd(a, g) {
            return d;
        }
        lambda = if lambda == 0.0 {
            RIDGE_START * scale
        } else {
            lambda * 10.0
        };
        if lambda > 1e10 * scale {
            // Nothing factorises: fall back to steepest descent.
            return -g.clone();
        }
    }
}

impl<O: Objective + ?Sized> Solver<O> for Newton {
    fn step(&mut self, objective: &mut O, state: &State, _tol: f64) -> Result<Step> {
        let g = DVector::from_vec(self.free.gather(&state.grad, state.params.theta.len()));
        let (info, observed) = objective.curvature_matrices(state, self.free)?;
        let direction = match solve_spd(observed, &g) {
            Some(d) if d.dot(&g) < 0.0 => d,
            _ => damped_direction(&info, &g),
        };
        let slope = direction.dot(&g);
        if slope.is_nan() || slope >= 0.0 {
            return Ok(Step::Stalled);
        }
        let free = self.free;
        let accepted = backtrack(state.nll, slope, |t| {
            objective.trial(free.along(&state.params, direction.as_slice(), t))
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
