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

/// Armijo sufficient-decrease fraction.
pub(crate) const ARMIJO: f64 = 1e-4;
/// Step halvings before the line search gives up.
pub(crate) const MAX_HALVINGS: usize = 60;

/// Backtracks from a point with mean NLL `nll` along a direction of slope `slope` (negative):
/// `value_at(t)` evaluates the trial point at step length `t` and returns its mean NLL with
/// whatever the caller keeps of the evaluation; the first accepted trial's is returned, `None`
/// when the slope is not negative (no descent direction: nothing is evaluated) or no step
/// within [`MAX_HALVINGS`] halvings is accepted. The caller forms the trial point
/// (a parameter vector, or per-sample terms moved along a precomputed direction as the batched
/// bootstrap refits do), so every Newton iteration shares this one rule.
///
/// Errors: those of `value_at`.
pub(crate) fn backtrack<T>(
    nll: f64,
    slope: f64,
    mut value_at: impl FnMut(f64) -> Result<(f64, T)>,
) -> Result<Option<T>> {
    if slope.is_nan() || slope >= 0.0 {
        return Ok(None);
    }
    let noise = 16.0 * f64::EPSILON * nll.abs().max(1.0);
    let mut t = 1.0;
    for _ in 0..MAX_HALVINGS {
        let (value, kept) = value_at(t)?;
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

    /// f(x) = (x - 3)^2 / 2 from x = 0.
    fn f(x: f64) -> f64 {
        0.5 * (x - 3.0).powi(2)
    }

    #[test]
    fn accepts_the_full_newton_step_and_halves_an_overshoot() {
        // Newton step: d = 3, slope g.d = -3 * 3.
        let full = backtrack(f(0.0), -9.0, |t| Ok((f(3.0 * t), 3.0 * t)));
        assert_eq!(full.unwrap(), Some(3.0));
        // A step of 12 overshoots to f = 40.5 > 4.5; t = 1/2 gives x = 6 (f = 4.5, not a
        // sufficient decrease), t = 1/4 gives x = 3.
        let mut tried = Vec::new();
        let halved = backtrack(f(0.0), -36.0, |t| {
            tried.push(12.0 * t);
            Ok((f(12.0 * t), 12.0 * t))
        });
        assert_eq!(halved.unwrap(), Some(3.0));
        assert_eq!(tried, vec![12.0, 6.0, 3.0]);
    }

    #[test]
    fn gives_up_on_an_ascent_and_accepts_a_change_within_rounding_noise() {
        let mut calls = 0;
        let none = backtrack(0.0, -1.0, |t| {
            calls += 1;
            Ok((f(3.0 + t) + 1.0, ()))
        });
        assert_eq!(none.unwrap(), None);
        assert_eq!(calls, MAX_HALVINGS);
        // A predicted decrease below the noise of f = 1e6 (16 eps 1e6 ~ 3.6e-9), no actual
        // decrease: accepted rather than halved to nothing.
        let flat = backtrack(1e6, -1e-9, |t| Ok((1e6, t)));
        assert_eq!(flat.unwrap(), Some(1.0));
        // An ascent or undefined slope is no direction to search along.
        for slope in [0.0, 1.0, f64::NAN] {
            let up = backtrack(0.0, slope, |_| -> Result<(f64, ())> { unreachable!() });
            assert_eq!(up.unwrap(), None);
        }
        // Errors of the evaluation pass through.
        let err = backtrack(0.0, -1.0, |_| -> Result<(f64, ())> {
            Err(crate::Error::Cancelled)
        });
        assert!(err.is_err());
    }
}
