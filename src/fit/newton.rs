//! The default solver: damped Newton with an Armijo line search.
//!
//! Each iteration solves `H d = -g` with the curvatures of the shared Fisher-scoring rule
//! ([`Free::curvatures`]): the observed Hessian `H`, and where `H` is not positive definite
//! (away from a minimum — `L_n` is not jointly convex) or gives no descent direction, the
//! expected information `I` (a Gram matrix, positive semi-definite), with Levenberg damping
//! added until it factorises. The step is then chosen by the shared Armijo line search
//! (`super::iteration::line_step`).

use super::iteration::{line_step, Solver, Step};
use super::objective::{Free, Objective};
use super::state::State;
use crate::error::Result;
use crate::likelihood::Curvature;
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
        let mut observed = Some(observed);
        let direction = (self.free.curvatures().iter())
            .find_map(|curvature| match curvature {
                Curvature::Observed => (observed.take())
                    .and_then(|h| solve_spd(h, &g))
                    .filter(|d| d.dot(&g) < 0.0),
                Curvature::Expected => Some(damped_direction(&info, &g)),
            })
            .expect("the expected information always gives a direction");
        let slope = direction.dot(&g);
        line_step(objective, state, self.free, direction.as_slice(), slope)
    }

    fn free(&self) -> Free {
        self.free
    }
}
