//! The interval of a linear functional from its values at the cluster draws.

use crate::interval::RewardInterval;
use crate::stats::t_critical_value;

/// Where the interval is centred.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Center {
    /// At the estimate.
    Estimate,
    /// At the jackknife's bias-corrected estimate `G hat - (G-1) v_bar` (Quenouille).
    BiasCorrected,
}

/// The degrees of freedom of the t quantile.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Df {
    /// Fixed, e.g. `G - 1` with `G` the number of clusters.
    Fixed(f64),
    /// The functional's effective number of clusters (`effective_df`) with this kurtosis
    /// factor, at most `G - 1`.
    Effective(f64),
}

/// How the spread of the draws becomes a variance.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Spread {
    /// Jackknife: `(G-1)/G sum_g (v_g - v_bar)^2`.
    Jackknife,
    /// Sandwich draws ([`super::draws::sandwich`]): `c sum_g (v_g - v_bar)^2` with `c` the small-sample
    /// factor (1 for CR0, `G/(G-1) (n-1)/(n-p)` for CR1).
    Sandwich(f64),
    /// Bootstrap: the draws' sample variance.
    Bootstrap,
}

/// Satterthwaite's degrees of freedom of `sum_g w_g^2` (`w_g = v_g - v_bar`) when the `w_g`
/// are independent normals of unequal variances, the variances estimated by `w_g^2` itself:
/// `kurtosis (sum w^2)^2 / sum w^4` (`kurtosis` = 3 estimates each `sigma_g^4` by `w_g^4 / 3`;
/// 1 is Kish's effective number of clusters), within `[1, G - 1]`. Small when a few clusters
/// carry the functional (an expert flag held by few annotators).
pub(crate) fn effective_df(projections: &[f64], kurtosis: f64) -> f64 {
    let g = projections.len();
    let top = g.saturating_sub(1).max(1) as f64;
    let mean = projections.iter().sum::<f64>() / g.max(1) as f64;
    let (s2, s4) = projections.iter().fold((0.0, 0.0), |(a, b), v| {
        let w = (v - mean) * (v - mean);
        (a + w, b + w * w)
    });
    if s4 <= 0.0 {
        return top;
    }
    (kurtosis * s2 * s2 / s4).clamp(1.0, top)
}

/// The `(1 - alpha)` interval `center +- t_df se` of a functional with estimate `hat` and
/// values `projections` at the draws.
pub fn interval(
    hat: f64,
    projections: &[f64],
    spread: Spread,
    center: Center,
    df: Df,
    alpha: f64,
) -> RewardInterval {
    let g = projections.len();
    let gf = g as f64;
    let mean = projections.iter().sum::<f64>() / gf.max(1.0);
    let ss: f64 = projections.iter().map(|v| (v - mean) * (v - mean)).sum();
    let var = match spread {
        Spread::Jackknife => ss * (gf - 1.0) / gf,
        Spread::Sandwich(c) => ss * c,
        Spread::Bootstrap => ss / (gf - 1.0).max(1.0),
    };
    let se = var.max(0.0).sqrt();
    let reward = match center {
        Center::Estimate => hat,
        Center::BiasCorrected => gf * hat - (gf - 1.0) * mean,
    };
    let dof = match df {
        Df::Fixed(d) => d,
        Df::Effective(k) => effective_df(projections, k),
    };
    let q = t_critical_value(alpha, dof);
    RewardInterval {
        reward,
        se,
        lower: reward - q * se,
        upper: reward + q * se,
    }
}
