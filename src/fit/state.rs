//! Where a solver is: the current point with its objective and gradient, and the one test that
//! a point is one a run may go on from. A leaf of `fit`: the problem (`objective`), the solvers
//! and the driver loop (`iteration`) all take it.

use crate::data::Dataset;
use crate::likelihood::nll_and_gradient;
use crate::model::Params;

/// Where a solver is: the current point with its objective and gradient.
#[derive(Debug, Clone)]
pub(crate) struct State {
    /// Current parameters.
    pub params: Params,
    /// Mean NLL at `params`.
    pub nll: f64,
    /// Gradient at `params` (stacked, theta first).
    pub grad: Vec<f64>,
}

impl State {
    /// Evaluates the objective and gradient at `params`.
    pub(crate) fn at(data: &Dataset, params: Params) -> Self {
        let (nll, grad) = nll_and_gradient(data, &params);
        State { params, nll, grad }
    }

    /// Euclidean norm of the gradient.
    pub(crate) fn grad_norm(&self) -> f64 {
        self.grad.iter().map(|g| g * g).sum::<f64>().sqrt()
    }

    pub(crate) fn is_finite(&self) -> bool {
        finite_point(&self.params, self.nll, &self.grad)
    }
}

/// A point a run may go on from: finite parameters, objective and gradient (else it ends
/// `Termination::Diverged`; every loop: `run_solver` and the batched bootstrap refits).
pub(crate) fn finite_point(params: &Params, nll: f64, grad: &[f64]) -> bool {
    nll.is_finite() && params.is_finite() && grad.iter().all(|g| g.is_finite())
}
