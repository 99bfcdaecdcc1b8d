//! The Armijo backtracking line search of every Newton solver (dense Newton, Newton-CG and the
//! distributed driver of [`crate::shard`]).
//!
//! From `x` with mean NLL `f(x)` and a descent `direction` `d` with slope `g . d < 0`, the
//! step `t = 1, 1/2, 1/4, ...` is halved until `f(x + t d) <= f(x) + ARMIJO t (g . d)`.
//! Near the optimum the predicted decrease falls below the rounding noise of `f`; a step that
//! changes `f` by no more than that noise (`16 eps max(|f|, 1)`) is then accepted too —
//! otherwise the search would halve `t` down to nothing and the gradient could never reach a
//! tight tolerance.

use crate::error::Result;
use crate::model::Params;

/// Armijo sufficient-decrease fraction.
pub(crate) const ARMIJO: f64 = 1e-4;
/// Step halvings before the line search gives up.
pub(crate) const MAX_HALVINGS: usize = 60;

/// Backtracks from `start` (mean NLL `nll`) along `direction`, which moves the first
/// `direction.len()` stacked parameters (theta, then gamma; the rest stay fixed) and has slope
/// `slope` (negative). `value_at(params)` evaluates a trial point and returns its mean NLL with
/// whatever the caller keeps of the evaluation; the first accepted point's is returned, `None`
/// when no step within [`MAX_HALVINGS`] halvings is accepted.
///
/// Errors: those of `value_at`.
pub(crate) fn backtrack<T>(
    start: &Params,
    nll: f64,
    direction: &[f64],
    slope: f64,
    mut value_at: impl FnMut(Params) -> Result<(f64, T)>,
) -> Result<Option<T>> {
    let d1 = start.theta.len();
    let base = start.stacked();
    let noise = 16.0 * f64::EPSILON * nll.abs().max(1.0);
    let mut t = 1.0;
    for _ in 0..MAX_HALVINGS {
        let mut trial = base.clone();
        for (x, d) in trial[..direction.len()].iter_mut().zip(direction) {
            *x += t * d;
        }
        let (value, kept) = value_at(Params::from_stacked(&trial, d1))?;
        let sufficient = value <= nll + ARMIJO * t * slope;
        let within_noise = -t * slope <= noise && value <= nll + noise;
        if value.is_finite() && (sufficient || within_noise) {
            return Ok(Some(kept));
        }
        t *= 0.5;
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// f(x) = (x - 3)^2 / 2 on one theta coordinate.
    fn f(p: &Params) -> f64 {
        0.5 * (p.theta[0] - 3.0).powi(2)
    }

    #[test]
    fn accepts_the_full_newton_step_and_halves_an_overshoot() {
        let start = Params {
            theta: vec![0.0],
            gamma: vec![],
        };
        let nll = f(&start);
        // Newton step: d = 3, slope g.d = -3 * 3.
        let full = backtrack(&start, nll, &[3.0], -9.0, |p| Ok((f(&p), p.theta[0])));
        assert_eq!(full.unwrap(), Some(3.0));
        // A step of 12 overshoots to f = 40.5 > 4.5; t = 1/2 gives x = 6 (f = 4.5, not a
        // sufficient decrease), t = 1/4 gives x = 3.
        let mut tried = Vec::new();
        let halved = backtrack(&start, nll, &[12.0], -36.0, |p| {
            tried.push(p.theta[0]);
            Ok((f(&p), p.theta[0]))
        });
        assert_eq!(halved.unwrap(), Some(3.0));
        assert_eq!(tried, vec![12.0, 6.0, 3.0]);
    }

    #[test]
    fn gives_up_on_an_ascent_and_moves_only_the_free_block() {
        let start = Params {
            theta: vec![3.0],
            gamma: vec![5.0],
        };
        let mut calls = 0;
        let none = backtrack(&start, 0.0, &[1.0], -1.0, |p| {
            calls += 1;
            assert_eq!(p.gamma, vec![5.0]);
            Ok((f(&p) + 1.0, ()))
        });
        assert_eq!(none.unwrap(), None);
        assert_eq!(calls, MAX_HALVINGS);
    }
}
