//! The normal distribution: quantiles for confidence intervals and two-sided p-values.
//! Thin wrappers over `statrs` so the rest of the crate reads as the formulas do.

use statrs::distribution::{ContinuousCDF, Normal};
use statrs::function::erf::erfc;

/// `q_{1-alpha/2}`, the two-sided critical value of the standard normal for level `alpha`
/// (1.959964 for `alpha = 0.05`). `alpha` must be in (0, 1) (checked by callers).
///
/// Computed as `-Phi^{-1}(alpha / 2)`, the lower tail, so that no `1 - alpha/2` rounds to 1:
/// every `alpha` in (0, 1) gives a finite quantile with full precision (`alpha = 1e-15` gives
/// 8.02686, `alpha = 1e-300` gives 37.066). Below the smallest positive double `alpha / 2`
/// would underflow; it is then taken as that smallest double (a quantile of 38.5).
pub fn critical_value(alpha: f64) -> f64 {
    let tail = (alpha / 2.0).max(f64::from_bits(1));
    -Normal::standard().inverse_cdf(tail)
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
        // Small alpha: no cancellation in 1 - alpha/2 (mpmath: the root of erfc(q / sqrt 2) = alpha, 40 digits).
        for (alpha, q) in [
            (1e-10, 6.466_951_087_240_516),
            (1e-15, 8.026_858_882_534_54),
            (1e-16, 8.304_785_425_194_114),
            (1e-100, 21.305_940_069_351_53),
            (1e-300, 37.06578788077213),
        ] {
            let got = critical_value(alpha);
            assert!((got / q - 1.0).abs() < 1e-9, "alpha {alpha}: {got} vs {q}");
        }
        assert!(critical_value(f64::from_bits(1)).is_finite());
        assert!(critical_value(1.0 - f64::EPSILON) > 0.0);
        let tiny = two_sided_p_value(30.0); // scipy: 9.81342785429749e-198, no cancellation to 0
        assert!((tiny / 9.81342785429749e-198 - 1.0).abs() < 1e-9, "{tiny}");
    }
}
