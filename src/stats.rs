//! The normal distribution: quantiles for confidence intervals and two-sided p-values.
//! Thin wrappers over `statrs` so the rest of the crate reads as the formulas do.

use statrs::distribution::{ContinuousCDF, Normal};
use statrs::function::erf::erfc;

/// `q_{1-alpha/2}`, the two-sided critical value of the standard normal for level `alpha`
/// (1.959964 for `alpha = 0.05`). `alpha` must be in (0, 1) (checked by callers).
pub fn critical_value(alpha: f64) -> f64 {
    Normal::standard().inverse_cdf(1.0 - alpha / 2.0)
}

/// Two-sided p-value of the standardised statistic `z`: `P(|N(0,1)| >= |z|)`, computed with
/// `erfc` so tiny p-values keep their precision.
pub fn two_sided_p_value(z: f64) -> f64 {
    erfc(z.abs() / std::f64::consts::SQRT_2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn textbook_values() {
        assert!((critical_value(0.05) - 1.959963984540054).abs() < 1e-9);
        assert!((critical_value(0.10) - 1.6448536269514722).abs() < 1e-9);
        assert!((two_sided_p_value(1.959963984540054) - 0.05).abs() < 1e-9);
        let p = two_sided_p_value(-1.0);
        // statrs' erfc is accurate to ~1e-10 relative: plenty for a p-value.
        assert!((p - 0.31731050786291415).abs() < 1e-9, "{p}");
        let tiny = two_sided_p_value(30.0); // scipy: 9.81342785429749e-198, no cancellation to 0
        assert!((tiny / 9.81342785429749e-198 - 1.0).abs() < 1e-9, "{tiny}");
    }
}
