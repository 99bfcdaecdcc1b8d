//! The one interval rule: how the interval, the SE and the p-value of any linear functional of
//! the estimate (a reward, a difference, a coefficient, a rationality) are made from its
//! estimate and either its Wald SE or its values at the bootstrap draws, how a selection may
//! prune, and the check every result passes.
//!
//! Every consumer ([`crate::fitted`], [`crate::select`], [`crate::coefficients`]) describes its
//! functional ([`Functional`]: estimate, target, and how to get its Wald SE and its draws, both
//! lazily) and asks the model's [`Rule`]; the rule's `match`es are exhaustive and written only
//! here, so a new interval method is a compile error here, and in
//! [`crate::calibrate::Calibration::rule`], until it is given an interval, a p-value and a
//! pruning bound. `estimate +- q se` is built in one place ([`RewardInterval::symmetric`]).
//!
//! A leaf: it imports the error type and the normal and t distributions. The effective number
//! of clusters of a functional (`effective_df`, which the heterogeneity diagnostic reports) is
//! here too, beside the jackknife's spread.

use crate::error::{Error, Result};
use crate::stats::{critical_value, t_critical_value, t_two_sided_p_value, two_sided_p_value};

/// A point reward (or any linear functional) with its standard error and `(1 - alpha)`
/// confidence interval, under the model's interval method.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RewardInterval {
    /// The estimate: `r_hat = theta_hat . phi` (Wald, bootstrap); `r_hat / alpha_hat`, the
    /// de-inflated reward (resized bootstrap).
    pub reward: f64,
    /// Wald: `se(phi) = sqrt(phi^T S_theta^2 phi / n)`; bootstrap methods: the SD of the
    /// refits' rewards (on the reported scale).
    pub se: f64,
    /// Lower end: `reward - q_{1-alpha/2} se` (Wald, resized), the `alpha/2` quantile of the
    /// refits' rewards (bootstrap). Also the pessimistic reward of pBoN.
    pub lower: f64,
    /// Upper end, likewise.
    pub upper: f64,
}

impl RewardInterval {
    /// `center +- q se`: the only place a symmetric interval is built.
    pub(crate) fn symmetric(center: f64, se: f64, q: f64) -> Self {
        RewardInterval {
            reward: center,
            se,
            lower: center - q * se,
            upper: center + q * se,
        }
    }

    /// The interval of a functional the data cannot bound (it puts weight on a coefficient
    /// one annotator carries alone): the estimate, SE `+inf`, `(-inf, +inf)`. The only place
    /// an unbounded interval is built.
    pub(crate) fn unbounded(center: f64) -> Self {
        RewardInterval {
            reward: center,
            se: f64::INFINITY,
            lower: f64::NEG_INFINITY,
            upper: f64::INFINITY,
        }
    }

    /// True for an interval the data cannot bound (SE `+inf`, `(-inf, +inf)`): the
    /// functional puts weight on a coefficient one annotator carries alone
    /// ([`crate::calibrate::Calibration::unbounded`]).
    pub fn is_unbounded(&self) -> bool {
        self.se == f64::INFINITY && self.lower == f64::NEG_INFINITY && self.upper == f64::INFINITY
    }

    /// The figures the result check ([`check_result`]) reads: the four, or only the estimate
    /// of an interval unbounded by construction (`unbounded`: the functional's flag, never
    /// inferred from the values, so that an overflow is still refused).
    pub(crate) fn checked_figures(&self, unbounded: bool) -> Vec<f64> {
        if unbounded {
            vec![self.reward]
        } else {
            vec![self.reward, self.se, self.lower, self.upper]
        }
    }
}

/// Which kind of linear functional an interval is for (the resized bootstrap corrects theta
/// and gamma differently).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Target {
    /// A functional of theta (a reward, a difference, a coefficient): resized divides the
    /// estimate and the spread by `alpha_hat`.
    Theta,
    /// A functional of gamma: resized subtracts `bias` (the functional applied to the
    /// estimated bias of gamma_hat).
    Gamma {
        /// The functional applied to the calibration's gamma bias.
        bias: f64,
    },
}

/// How a model's intervals are made: one variant per interval method, with what it needs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Rule {
    /// `estimate +- z_{1-alpha/2} se` with the Wald SE; the normal p-value of `estimate / se`.
    Wald,
    /// The percentile interval of the draws' values; the bootstrap p-value
    /// `2 min(#{v_b <= 0}, #{v_b >= 0}) / B`; the SE is the draws' SD.
    Percentile,
    /// The resized bootstrap: `center +- z SD` with `center = hat / alpha_hat`, `SD = SD* /
    /// alpha_hat` (theta) or `center = hat - bias`, `SD = SD*` (gamma); the normal p-value.
    Resized {
        /// The inflation estimate `alpha_hat` (> 0).
        alpha_hat: f64,
    },
    /// The cluster jackknives (CV3): `estimate +- t_{df, 1-alpha/2} se` centred at the
    /// full-data estimate (no bias correction), `se^2 = (G-1)/G sum_g (v_g - v_bar)^2` over
    /// the `G` leave-one-cluster-out draws; the t(df) p-value of `estimate / se`.
    Jackknife {
        /// Degrees of freedom of the t quantile and p-value: `G - 1`.
        df: f64,
    },
}

/// A linear functional as the rule needs it: its estimate and target, and how to get its Wald
/// SE and its values at the draws (each computed only if the rule asks for it).
pub(crate) struct Functional<S, D> {
    /// `theta_hat . phi`, `psi0 + gamma_hat . psi`, ...
    pub estimate: f64,
    /// Theta or gamma (with its bias).
    pub target: Target,
    /// The Wald SE.
    pub wald_se: S,
    /// The functional's value at every draw.
    pub draws: D,
    /// True when the functional puts weight on a coefficient whose interval is unbounded
    /// (`crate::calibrate::Calibration::touches_unbounded`): its interval is unbounded
    /// whatever the rule, SE `+inf`, p-value 1.
    pub unbounded: bool,
}

/// An interval with the p-value of "functional = 0" consistent with it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Estimate {
    /// Estimate, SE and interval.
    pub interval: RewardInterval,
    /// Two-sided p-value.
    pub p_value: f64,
}

/// What a selection needs to prune: the centre of an interval is `r_hat / center_divisor`,
/// the lower end is at most [`Rule::lower_cap`] (the centre, or a bound from the first
/// `screen` draws), and bounds that prove a candidate's interval cannot overflow.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct PruneBound {
    /// The centre is `r_hat / center_divisor` (1 for Wald and the percentile bootstrap,
    /// `alpha_hat` for resized).
    pub center_divisor: f64,
    /// How many of the leading draws every candidate is screened on for [`Rule::lower_cap`]
    /// (0: the lower end is `center - q se` for an `se >= 0`, and the centre bounds it).
    pub screen: usize,
    /// Every intermediate of the SE of `phi` is at most `||phi|| * raw` in magnitude.
    pub raw: f64,
    /// The SE of `phi` is at most `||phi|| * se`.
    pub se: f64,
}

impl PruneBound {
    /// True when no figure of this candidate's interval and score can overflow: every
    /// intermediate below 1e140 in magnitude (its square and a sum of 1e5 squares stay
    /// finite) and `|center| + q se + |penalty|` below 1e300. Ordinary features are far inside.
    /// `norm` is at least the candidate's `||phi||` ([`norm_bound`]).
    pub(crate) fn safe(&self, norm: f64, center: f64, penalty: f64, q: f64) -> bool {
        norm * self.raw < 1e140
            && norm * self.se < 1e140
            && center.abs() + q * norm * self.se + penalty.abs() < 1e300
    }
}

/// `sqrt(len) max |phi_i| >= ||phi||`: a norm bound without a sum (of finite values).
pub(crate) fn norm_bound(phi: &[f64]) -> f64 {
    // Lane-wise maxima, which vectorise, then across the lanes.
    let mut lanes = [0.0f64; 8];
    let chunks = phi.chunks_exact(8);
    let tail = chunks.remainder();
    for chunk in chunks {
        for (m, v) in lanes.iter_mut().zip(chunk) {
            let a = v.abs();
            if a > *m {
                *m = a;
            }
        }
    }
    let max_abs = lanes.iter().chain(tail).fold(0.0f64, |m, v| m.max(v.abs()));
    max_abs * (phi.len() as f64).sqrt()
}

impl Rule {
    /// True for the rules that read the bootstrap draws.
    pub(crate) fn uses_draws(&self) -> bool {
        match self {
            Rule::Wald => false,
            Rule::Percentile | Rule::Resized { .. } | Rule::Jackknife { .. } => true,
        }
    }

    /// The critical value the rule's symmetric intervals use at level `alpha`: the normal's,
    /// or t(df)'s for the cluster jackknives.
    pub(crate) fn quantile(&self, alpha: f64) -> f64 {
        match *self {
            Rule::Wald | Rule::Percentile | Rule::Resized { .. } => critical_value(alpha),
            Rule::Jackknife { df } => t_critical_value(alpha, df),
        }
    }

    /// The `(1 - alpha)` interval and p-value of `f` (unchecked: see [`check_result`]).
    pub(crate) fn estimate<S, D>(&self, f: Functional<S, D>, alpha: f64) -> Estimate
    where
        S: FnOnce() -> f64,
        D: FnOnce() -> Vec<f64>,
    {
        if f.unbounded {
            return Estimate {
                interval: RewardInterval::unbounded(f.estimate),
                p_value: 1.0,
            };
        }
        match *self {
            Rule::Wald => {
                let interval =
                    RewardInterval::symmetric(f.estimate, (f.wald_se)(), self.quantile(alpha));
                Estimate {
                    interval,
                    p_value: normal_p_value(&interval),
                }
            }
            Rule::Percentile => {
                let mut v = (f.draws)();
                let sd = sample_sd(&v);
                let below = v.iter().filter(|&&x| x <= 0.0).count();
                let above = v.iter().filter(|&&x| x >= 0.0).count();
                Estimate {
                    interval: RewardInterval {
                        reward: f.estimate,
                        se: sd,
                        lower: quantile_unsorted(&mut v, alpha / 2.0),
                        upper: quantile_unsorted(&mut v, 1.0 - alpha / 2.0),
                    },
                    p_value: (2.0 * below.min(above) as f64 / v.len().max(1) as f64).min(1.0),
                }
            }
            Rule::Resized { alpha_hat } => {
                let sd = sample_sd(&(f.draws)());
                let (center, se) = match f.target {
                    Target::Theta => (f.estimate / alpha_hat, sd / alpha_hat),
                    Target::Gamma { bias } => (f.estimate - bias, sd),
                };
                let interval = RewardInterval::symmetric(center, se, self.quantile(alpha));
                Estimate {
                    interval,
                    p_value: normal_p_value(&interval),
                }
            }
            Rule::Jackknife { df } => {
                let se = jackknife_se(&(f.draws)());
                let interval = RewardInterval::symmetric(f.estimate, se, self.quantile(alpha));
                Estimate {
                    interval,
                    p_value: zero_aware_p_value(&interval, |t| t_two_sided_p_value(t, df)),
                }
            }
        }
    }

    /// Intervals of many reward functionals at once: `estimates[k]`, and as the rule needs
    /// the Wald SEs of all of them (`wald_ses`, one batched pass) or their values at every
    /// draw (`draws`: `m x B` row-major, one blocked product, e.g. [`crate::linalg`]'s
    /// `project_rows`); `unbounded(k)` is functional `k`'s [`Functional::unbounded`] (asked
    /// by the rules with draws, the only ones that have unbounded coefficients).
    pub(crate) fn theta_intervals(
        &self,
        estimates: &[f64],
        wald_ses: impl FnOnce() -> Vec<f64>,
        draws: impl FnOnce() -> Vec<f64>,
        unbounded: impl Fn(usize) -> bool + Sync,
        alpha: f64,
    ) -> Vec<RewardInterval> {
        use rayon::prelude::*;
        match self {
            Rule::Wald => {
                let q = self.quantile(alpha);
                estimates
                    .iter()
                    .zip(wald_ses())
                    .map(|(&r, se)| RewardInterval::symmetric(r, se, q))
                    .collect()
            }
            Rule::Percentile | Rule::Resized { .. } | Rule::Jackknife { .. } => {
                let values = draws();
                let reps = values.len() / estimates.len().max(1);
                let one = |k: usize| {
                    self.estimate(
                        Functional {
                            estimate: estimates[k],
                            target: Target::Theta,
                            wald_se: || unreachable!("a draws rule asks for no Wald SE"),
                            draws: || values[k * reps..(k + 1) * reps].to_vec(),
                            unbounded: unbounded(k),
                        },
                        alpha,
                    )
                    .interval
                };
                if estimates.len() > 64 && rayon::current_thread_index().is_some() {
                    (0..estimates.len()).into_par_iter().map(one).collect()
                } else {
                    (0..estimates.len()).map(one).collect()
                }
            }
        }
    }

    /// The pruning bound of a selection at level `alpha` under this rule with `reps` draws
    /// (`None`: pruning is not valid or would not pay). `wald_frobenius` is `||L||_F`;
    /// `max_draw_norm` is `max_b ||theta*_b||`.
    pub(crate) fn prune_bound(
        &self,
        reps: usize,
        alpha: f64,
        wald_frobenius: impl FnOnce() -> f64,
        max_draw_norm: impl FnOnce() -> f64,
    ) -> Option<PruneBound> {
        // |theta*_b . phi| <= max_b ||theta*_b|| ||phi|| = V; the draws' SD <= sqrt(2) 2V.
        let draws = |center_divisor: f64, screen: usize| {
            let max_norm = max_draw_norm();
            PruneBound {
                center_divisor,
                screen,
                raw: max_norm,
                se: 3.0 * max_norm / center_divisor,
            }
        };
        match *self {
            // se = ||L^T phi|| <= ||L||_F ||phi||, and so is every partial sum of L^T phi.
            Rule::Wald => {
                let frobenius = wald_frobenius();
                Some(PruneBound {
                    center_divisor: 1.0,
                    screen: 0,
                    raw: frobenius,
                    se: frobenius,
                })
            }
            Rule::Resized { alpha_hat } => Some(draws(alpha_hat, 0)),
            // The lower end is the alpha/2 quantile of the draws' values, at most their order
            // statistic `hi` (the higher of the two it interpolates between), which is at most
            // the same order statistic over any subset of the draws: screening on the first
            // `screen` draws bounds it once they hold `hi + 1` values, and the bound tightens
            // as `screen` grows. At least `SCREEN_PER_ORDER (hi + 1)` draws and a sixteenth of
            // them (the bound is then near the `1 / SCREEN_PER_ORDER` quantile), at most half
            // (beyond that the screen costs about what it saves: every candidate is computed).
            Rule::Percentile => {
                if reps < 2 {
                    return None;
                }
                let (_, hi, _) = order_statistics(reps, alpha / 2.0);
                let screen = (SCREEN_PER_ORDER * (hi + 1)).max(reps / 16);
                (2 * screen <= reps).then(|| draws(1.0, screen))
            }
            // The lower bound of a t interval over the jackknife's spread is not covered by
            // the bounds above: no pruning.
            Rule::Jackknife { .. } => None,
        }
    }

    /// An upper bound of the lower end of a theta functional's interval under this rule, for
    /// a selection's pruning (with [`Rule::prune_bound`]'s `screen` and `reps`, at the same
    /// `alpha`): at least the lower end [`Rule::theta_intervals`] computes, rounding included.
    ///
    /// Rules with `screen = 0` (Wald, resized: `center - q se` with `q se >= 0`): `center`.
    /// The percentile bootstrap: `screened` holds the functional's values at the first
    /// `screen` draws (reordered here), each within `error` of the value the full
    /// computation gets at that draw, and every value is at most `magnitude` in absolute
    /// value. The bound is their order statistic `hi` (0-based) of the quantile's two, plus
    /// `error` and the rounding of the interpolation (`<= 4 u magnitude`), doubled; infinite
    /// (nothing pruned) when fewer than `hi + 1` values were screened.
    pub(crate) fn lower_cap(
        &self,
        center: f64,
        screened: &mut [f64],
        reps: usize,
        alpha: f64,
        error: f64,
        magnitude: f64,
    ) -> f64 {
        match *self {
            Rule::Wald | Rule::Resized { .. } => center,
            Rule::Percentile => {
                let (_, hi, _) = order_statistics(reps, alpha / 2.0);
                if screened.len() <= hi {
                    return f64::INFINITY;
                }
                let (_, &mut stat, _) = screened.select_nth_unstable_by(hi, f64::total_cmp);
                stat + (2.0 * error + 8.0 * f64::EPSILON * magnitude)
            }
            Rule::Jackknife { .. } => f64::INFINITY,
        }
    }
}

/// A selection under the percentile bootstrap screens on `SCREEN_PER_ORDER` times as many
/// draws as the order statistic its bound uses (see [`Rule::prune_bound`]).
const SCREEN_PER_ORDER: usize = 2;

/// The normal two-sided p-value of `reward / se` (1 for `0 / 0`, 0 for a non-zero estimate
/// with no spread).
fn normal_p_value(i: &RewardInterval) -> f64 {
    zero_aware_p_value(i, two_sided_p_value)
}

/// `p(reward / se)` for a two-sided p-value `p` (1 for `0 / 0`, 0 for a non-zero estimate with
/// no spread).
fn zero_aware_p_value(i: &RewardInterval, p: impl FnOnce(f64) -> f64) -> f64 {
    if i.se > 0.0 {
        p(i.reward / i.se)
    } else if i.reward == 0.0 {
        1.0
    } else {
        0.0
    }
}

/// Sample standard deviation (`B - 1` denominator; 0 for fewer than two values).
pub(crate) fn sample_sd(v: &[f64]) -> f64 {
    if v.len() < 2 {
        return 0.0;
    }
    let m = v.iter().sum::<f64>() / v.len() as f64;
    (v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (v.len() - 1) as f64).sqrt()
}

/// The two order statistics (0-based, `lo <= hi`) the `p`-quantile of `len >= 1` values
/// interpolates between, and the weight of `hi` (type 7: `h = (len - 1) p`).
fn order_statistics(len: usize, p: f64) -> (usize, usize, f64) {
    let h = (len - 1) as f64 * p.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    (lo, (lo + 1).min(len - 1), h - lo as f64)
}

/// The `p`-quantile of sorted values, linear interpolation between order statistics (type 7:
/// `h = (B - 1) p`).
pub fn quantile_sorted(sorted: &[f64], p: f64) -> f64 {
    let (lo, hi, w) = order_statistics(sorted.len(), p);
    sorted[lo] + w * (sorted[hi] - sorted[lo])
}

/// [`quantile_sorted`] of values in any order, by selection (`O(B)`, reordering `values`):
/// the same order statistics, hence the same value, as sorting them first.
pub(crate) fn quantile_unsorted(values: &mut [f64], p: f64) -> f64 {
    let (lo, _, w) = order_statistics(values.len(), p);
    let (_, &mut low, rest) = values.select_nth_unstable_by(lo, f64::total_cmp);
    // The next order statistic is the least of those above (the last one's own).
    let high = rest.iter().copied().min_by(f64::total_cmp).unwrap_or(low);
    low + w * (high - low)
}

/// The one result check of every interval path (reward, difference, coefficient, rationality,
/// selection bound, under every method): an estimate, SE, bound, p-value or score that is not
/// finite is bad input naming `arg` (what caused it: `phi`, `psi`, `model`, ...) with
/// `detail`, never handed out.
pub(crate) fn check_result(
    arg: &str,
    detail: impl FnOnce() -> String,
    values: &[f64],
) -> Result<()> {
    if values.iter().all(|v| v.is_finite()) {
        Ok(())
    } else {
        Err(Error::invalid(arg, detail()))
    }
}

/// [`check_result`] of figures computed from feature rows (scores, differences, selection
/// bounds): names `arg` and the row.
pub(crate) fn check_features_result(arg: &str, row: usize, values: &[f64]) -> Result<()> {
    check_result(
        arg,
        || {
            format!(
                "row {row}: the features are so large that the reward, its standard error or a \
                 confidence bound overflows a double; rescale them"
            )
        },
        values,
    )
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

/// The cluster jackknife's SE of a functional from its values `v_g` at the `G` draws:
/// `sqrt((G-1)/G sum_g (v_g - v_bar)^2)`.
fn jackknife_se(projections: &[f64]) -> f64 {
    let gf = projections.len() as f64;
    let mean = projections.iter().sum::<f64>() / gf.max(1.0);
    let ss: f64 = projections.iter().map(|v| (v - mean) * (v - mean)).sum();
    (ss * (gf - 1.0) / gf).max(0.0).sqrt()
}

#[cfg(test)]
mod tests {
    use crate::calibrate::{Calibration, IntervalMethod, Parts};
    use crate::select::{compare, select, select_best, DiffMethod, Policy};

    /// Selection gives the sorted quantile exactly, ties, signed zeros and ends included.
    #[test]
    fn quantiles_by_selection_are_the_sorted_quantiles() {
        use super::{quantile_sorted, quantile_unsorted};
        let mut state = 17u64;
        for n in [1, 2, 3, 7, 400, 401] {
            let v: Vec<f64> = (0..n)
                .map(|i| {
                    state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
                    match i % 5 {
                        0 => 0.0,
                        1 => -0.0,
                        _ => ((state >> 40) % 9) as f64 - 4.0 + (state >> 60) as f64 / 7.0,
                    }
                })
                .collect();
            let mut sorted = v.clone();
            sorted.sort_unstable_by(f64::total_cmp);
            for p in [0.0, 1e-3, 0.025, 0.1, 0.5, 0.975, 0.999, 1.0] {
                let want = quantile_sorted(&sorted, p);
                let got = quantile_unsorted(&mut v.clone(), p);
                assert_eq!(got.to_bits(), want.to_bits(), "n {n} p {p}");
            }
        }
    }

    /// The percentile bootstrap's screening bound caps the lower end it is computed for, from
    /// any subset of the draws big enough (the adversarial one included: the smallest values,
    /// where the bound is tight, so that capping with the lower order statistic or with the
    /// subset's own quantile fails here), with every screened value off by up to `error`; it
    /// is infinite (nothing is pruned) when the subset is too small for the order statistic,
    /// and the screen `prune_bound` asks for always holds it, or there is none.
    #[test]
    fn the_screening_bound_caps_the_percentile_lower_end_from_any_subset() {
        use super::{order_statistics, quantile_unsorted, Rule};
        let mut state = 5u64;
        let mut next = move || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        let rule = Rule::Percentile;
        let mut checked = 0;
        for reps in [2, 3, 11, 30, 101, 400] {
            for alpha in [1e-6, 0.01, 0.05, 0.2, 0.5, 0.9] {
                let (_, hi, _) = order_statistics(reps, alpha / 2.0);
                for trial in 0..20 {
                    let scale = [1e-3, 1.0, 1e3][trial % 3];
                    let values: Vec<f64> = (0..reps)
                        .map(|_| match trial % 4 {
                            // Ties: a few distinct values.
                            0 => scale * (next() * 4.0).floor(),
                            _ => scale * (next() - 0.5),
                        })
                        .collect();
                    let lower = quantile_unsorted(&mut values.clone(), alpha / 2.0);
                    let magnitude = values.iter().fold(0.0f64, |m, v| m.max(v.abs()));
                    let mut sorted = values.clone();
                    sorted.sort_by(f64::total_cmp);
                    for m in [hi, hi + 1, hi + 2, reps / 4, reps / 2, reps] {
                        let m = m.min(reps);
                        let error = [0.0, 1e-9 * scale][trial % 2];
                        let subsets = [
                            sorted[..m].to_vec(),
                            values[..m].to_vec(),
                            values[reps - m..].to_vec(),
                        ];
                        for mut subset in subsets {
                            // The screen's values, each off by up to `error`.
                            for v in subset.iter_mut() {
                                *v += error * (2.0 * next() - 1.0);
                            }
                            let cap = rule.lower_cap(
                                0.0,
                                &mut subset,
                                reps,
                                alpha,
                                error,
                                magnitude + error,
                            );
                            if m <= hi {
                                assert_eq!(cap, f64::INFINITY, "B {reps} alpha {alpha} m {m}");
                            } else {
                                assert!(
                                    cap >= lower,
                                    "B {reps} alpha {alpha} m {m}: {cap} < {lower}"
                                );
                                checked += 1;
                            }
                        }
                        if m > hi && error == 0.0 {
                            // Tight on the smallest values: the order statistic itself.
                            let cap = rule.lower_cap(
                                0.0,
                                &mut sorted[..m].to_vec(),
                                reps,
                                alpha,
                                0.0,
                                magnitude,
                            );
                            assert!(cap <= sorted[hi] + 16.0 * f64::EPSILON * magnitude);
                        }
                    }
                }
                match rule.prune_bound(reps, alpha, || 0.0, || 1.0) {
                    Some(b) => assert!(b.screen > hi && 2 * b.screen <= reps, "B {reps} {alpha}"),
                    None => assert!(reps < 2 || 4 * (hi + 1) > reps, "B {reps} {alpha}"),
                }
            }
        }
        assert!(checked > 1000);
        // The centre bounds Wald's and the resized bootstrap's lower end; nothing bounds the
        // jackknife's.
        for (rule, want) in [
            (Rule::Wald, 2.5),
            (Rule::Resized { alpha_hat: 0.5 }, 2.5),
            (Rule::Jackknife { df: 9.0 }, f64::INFINITY),
        ] {
            assert_eq!(rule.lower_cap(2.5, &mut [], 40, 0.05, 0.0, 1.0), want);
        }
    }

    /// The one result check is on every interval path (issue 22, item 2): a calibration whose
    /// figures are finite but extreme (alpha_hat = 1e-310, a gamma bias of 1e308) makes every
    /// functional overflow, and each path answers with an error naming its input, never an
    /// infinite or NaN figure. The same model with Wald intervals is unaffected.
    #[test]
    fn every_interval_path_refuses_a_non_finite_result() {
        let model = crate::testing::simulated_model(300, 5, IntervalMethod::Resized, 20, 1);
        let (d1, d2) = (model.d1(), model.d2());
        let c = model.calibration();
        let extreme = Calibration::from_parts(
            Parts {
                requested: c.requested(),
                method: c.method(),
                reps: c.reps(),
                seed: c.seed(),
                diverged: c.diverged(),
                figures: [c.shrink(), 1e-310, c.c_hat()],
                gamma_bias: vec![1e308; d2],
                theta_draws: c.theta_draws().to_vec(),
                gamma_draws: c.gamma_draws().to_vec(),
                unbounded: Vec::new(),
            },
            d1,
            d2,
        )
        .unwrap();
        let m = model.clone().with_calibration(extreme).unwrap();
        let phi = [1.0, 0.5, 0.25];
        let other = [0.25, -0.5, 1.0];
        let named = |e: crate::Error, arg: &str| {
            let text = e.to_string();
            assert!(
                text.contains(&format!("`{arg}`")) && text.contains("overflows"),
                "{text}"
            );
        };
        named(m.score(&phi, 0.05).unwrap_err(), "phi");
        named(
            m.score_batch(&[phi, other].concat(), 0.05).unwrap_err(),
            "phi",
        );
        named(
            compare(&m, &phi, &other, 0.05, DiffMethod::Exact).unwrap_err(),
            "phi1",
        );
        for policy in [Policy::Bon, Policy::Pbon] {
            let phis = [phi, other].concat();
            named(select(&m, &phis, None, 0.05, policy).unwrap_err(), "phi");
            named(
                select_best(&m, &phis, None, 0.05, policy).unwrap_err(),
                "phi",
            );
        }
        named(m.coefficients(0.05).unwrap_err(), "model");
        named(
            m.rationality_interval(1.0, &vec![2.0; d2], 0.05)
                .unwrap_err(),
            "psi",
        );
        // The paper's Wald intervals of the same model are finite.
        let wald = m.wald();
        assert!(wald.score(&phi, 0.05).is_ok());
        assert!(compare(&wald, &phi, &other, 0.05, DiffMethod::Exact).is_ok());
        assert!(wald.coefficients(0.05).is_ok());
        assert!(wald.rationality_interval(1.0, &vec![2.0; d2], 0.05).is_ok());
    }
}
