//! The paper's Algorithm 1: alternating full-batch gradient descent, faithfully.
//!
//! ```text
//! theta_t = theta_{t-1} - eta1 * grad_theta L_n(theta_{t-1}, gamma_{t-1})
//! gamma_t = gamma_{t-1} - eta2 * grad_gamma L_n(theta_t,     gamma_{t-1})
//! ```
//!
//! with the model's `sigma = psi0 + gamma . psi` in the gradients (docs/contract.md §7.1: the paper's
//! algorithm box writes `gamma . psi`). Two passes over the data per iteration, the minimum
//! (the gamma step needs `theta_t . z_i`, the next theta step the new residuals): the first
//! computes `t_i = theta_t . z_i` and the gamma gradient at `(theta_t, gamma_{t-1})` (dot
//! products only); the second reuses the `t_i` (theta has not moved) for the full gradient at
//! the new point (the next theta step and the convergence check; updates only).

use super::in_memory::InMemory;
use super::iteration::{Solver, Step};
use super::state::State;
use crate::error::Result;
use crate::likelihood::{gamma_gradient_and_t, nll_and_gradient_given_t};
use crate::model::Params;

/// Alternating gradient descent with fixed step sizes.
#[derive(Debug, Clone)]
pub(crate) struct Agd {
    eta1: f64,
    eta2: f64,
}

impl Agd {
    /// Step size `eta1` for theta, `eta2` for gamma.
    pub(crate) fn new(eta1: f64, eta2: f64) -> Self {
        Agd { eta1, eta2 }
    }
}

impl Solver<InMemory<'_>> for Agd {
    fn step(&mut self, objective: &mut InMemory<'_>, state: &State, _tol: f64) -> Result<Step> {
        let data = objective.data();
        let d1 = data.d1();
        let theta: Vec<f64> = state
            .params
            .theta
            .iter()
            .zip(&state.grad[..d1])
            .map(|(t, g)| t - self.eta1 * g)
            .collect();
        let mut params = Params {
            theta,
            gamma: state.params.gamma.clone(),
        };
        if data.d2() == 0 {
            return Ok(Step::Moved(State::at(data, params)));
        }
        let (grad_gamma, t) = gamma_gradient_and_t(data, &params);
        for (c, g) in params.gamma.iter_mut().zip(&grad_gamma) {
            *c -= self.eta2 * g;
        }
        let (nll, grad) = nll_and_gradient_given_t(data, &params, &t);
        Ok(Step::Moved(State { params, nll, grad }))
    }
}
