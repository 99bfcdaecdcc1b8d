//! The default solver: damped Newton with an Armijo line search.
//!
//! Each iteration solves `H d = -g` with the observed Hessian `H`. Where `H` is not positive
//! definite (away from a minimum — `L_n` is not jointly convex) it uses the expected
//! information `I` instead (Fisher scoring: `I` is a Gram matrix, positive semi-definite), with
//! Levenberg damping added until it factorises. The step is then chosen by the shared Armijo
//! line search (`fit/line_search.rs`).

use super::line_search::backtrack;
use super::{Solver, State, Step};
use crate::data::Dataset;
use crate::error::Result;
use crate::likelihood::{
    add_residual_cross_term, expected_information, mean_nll, residual_cross_term,
};
use nalgebra::{DMatrix, DVector};

/// Which parameters the Newton solver moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Block {
    /// theta and gamma together.
    Joint,
    /// theta only, gamma held fixed (the homogeneous start; a convex problem).
    ThetaOnly,
}

/// Damped Newton / Fisher scoring (see the module docs).
#[derive(Debug, Clone)]
pub struct Newton {
    block: Block,
}

impl Newton {
    /// Newton on the joint parameter vector (theta, gamma).
    pub fn joint() -> Self {
        Newton {
            block: Block::Joint,
        }
    }

    /// Newton on theta with gamma held fixed.
    pub fn theta_only() -> Self {
        Newton {
            block: Block::ThetaOnly,
        }
    }

    fn free(&self, data: &Dataset) -> usize {
        match self.block {
            Block::Joint => data.n_params(),
            Block::ThetaOnly => data.d1(),
        }
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
            1e-10 * scale
        } else {
            lambda * 10.0
        };
        if lambda > 1e10 * scale {
            // Nothing factorises: fall back to steepest descent.
            return -g.clone();
        }
    }
}

impl Solver for Newton {
    fn step(&mut self, data: &Dataset, state: &State) -> Result<Step> {
        let m = self.free(data);
        let g = DVector::from_column_slice(&state.grad[..m]);
        let mut info = expected_information(data, &state.params);
        if self.block == Block::ThetaOnly {
            info = info.view((0, 0), (m, m)).into_owned();
        }
        let observed = match self.block {
            Block::Joint if data.d2() > 0 => {
                let mut h = info.clone();
                add_residual_cross_term(&mut h, &residual_cross_term(data, &state.params));
                h
            }
            _ => info.clone(),
        };
        let direction = match solve_spd(observed, &g) {
            Some(d) if d.dot(&g) < 0.0 => d,
            _ => damped_direction(&info, &g),
        };
        let slope = direction.dot(&g);
        if slope.is_nan() || slope >= 0.0 {
            return Ok(Step::Stalled);
        }
        let accepted = backtrack(&state.params, state.nll, direction.as_slice(), slope, |p| {
            Ok((mean_nll(data, &p), p))
        })?;
        Ok(match accepted {
            Some(params) => Step::Moved(State::at(data, params)),
            None => Step::Stalled,
        })
    }

    fn grad_norm(&self, state: &State) -> f64 {
        let m = match self.block {
            Block::Joint => state.grad.len(),
            Block::ThetaOnly => state.params.theta.len(),
        };
        state.grad[..m].iter().map(|g| g * g).sum::<f64>().sqrt()
    }
}
