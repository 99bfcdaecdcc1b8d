//! The normal and Student's t distributions: quantiles for confidence intervals and two-sided
//! p-values. Thin wrappers over `statrs` so the rest of the crate reads as the formulas do.

use statrs::distribution::{ContinuousCDF, Normal, StudentsT};
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
pub(crate) fn two_sided_p_value(z: f64) -> f64 {
    erfc(z.abs() / std::f64::consts::SQRT_2)
}

/// `t_{df, 1-alpha/2}`, the two-sided critical value of Student's t with `df > 0` degrees of
/// freedom (2.022691 for `alpha = 0.05, df = 39`); the normal's [`critical_value`] for
/// infinite `df`. `alpha` in (0, 1) (checked by callers).
pub(crate) fn t_critical_value(alpha: f64, df: f64) -> f64 {
    if !df.is_finite() {
        return critical_value(alpha);
    }
    let tail = (alpha / 2.0).max(f64::from_bits(1));
    match StudentsT::new(0.0, 1.0, df) {
        Ok(t) => -t.inverse_cdf(tail),
        Err(_) => f64::INFINITY,
    }
}

/// Two-sided p-value of the statistic `t` under Student's t with `df` degrees of freedom (the
/// normal's [`two_sided_p_value`] for infinite `df`).
pub(crate) fn t_two_sided_p_value(t: f64, df: f64) -> f64 {
    if !df.is_finite() {
        return two_sided_p_value(t);
    }
    match StudentsT::new(0.0, 1.0, df) {
        Ok(dist) => (2.0 * dist.cdf(-t.abs())).min(1.0),
        Err(_) => 1.0,
    }
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

    #[test]
    fn student_t_textbook_values() {
        // R: qt(0.975, c(39, 9, 1)); 2 * pt(-2, 9) (Simpson on the density: 0.0765528).
        assert!((t_critical_value(0.05, 39.0) - 2.022690911734728).abs() < 1e-7);
        assert!((t_critical_value(0.05, 9.0) - 2.262157162798205).abs() < 1e-7);
        assert!((t_critical_value(0.05, 1.0) - 12.70620473617471).abs() < 1e-5);
        assert_eq!(t_critical_value(0.05, f64::INFINITY), critical_value(0.05));
        assert!((t_two_sided_p_value(2.0, 9.0) - 0.07655282377069206).abs() < 1e-7);
    }
}
