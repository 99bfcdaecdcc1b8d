//! Decisions from a fitted model: reward differences with verdicts (SPEC §3), win rates, and
//! Best-of-N / pessimistic Best-of-N selection (SPEC §4).

use crate::error::{check_alpha, check_finite, Error, Result};
use crate::fitted::{RewardInterval, RewardModel};
use crate::stats::{critical_value, two_sided_p_value};

/// How the variance of a reward difference `D = r(a0) - r(a1)` is computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiffMethod {
    /// `(phi0 - phi1)^T S (phi0 - phi1) / n`: both rewards share theta_hat (default).
    Exact,
    /// `(phi0^T S phi0 + phi1^T S phi1) / n`: the paper's formula (treats them as independent).
    Independent,
    /// `(sqrt(phi0^T S phi0) + sqrt(phi1^T S phi1))^2 / n`: the paper's upper bound.
    Bound,
}

impl DiffMethod {
    /// Stable name ("exact", "independent", "bound").
    pub fn name(self) -> &'static str {
        match self {
            DiffMethod::Exact => "exact",
            DiffMethod::Independent => "independent",
            DiffMethod::Bound => "bound",
        }
    }

    /// Parses a name as produced by [`DiffMethod::name`].
    pub fn from_name(name: &str) -> Result<Self> {
        [
            DiffMethod::Exact,
            DiffMethod::Independent,
            DiffMethod::Bound,
        ]
        .into_iter()
        .find(|m| m.name() == name)
        .ok_or_else(|| {
            Error::invalid(
                "method",
                format!("unknown method `{name}` (expected exact, independent or bound)"),
            )
        })
    }
}

/// Outcome of a comparison at level alpha.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The CI of `r(a0) - r(a1)` lies above 0: a0 is significantly better.
    Win,
    /// The CI lies below 0: a1 is significantly better.
    Loss,
    /// The CI contains 0.
    Tie,
}

impl Verdict {
    /// Stable name ("win", "loss", "tie").
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Win => "win",
            Verdict::Loss => "loss",
            Verdict::Tie => "tie",
        }
    }
}

/// A reward difference `D = r(a0) - r(a1)` with its SE, CI, p-value and verdict.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Comparison {
    /// `r_hat(a0) - r_hat(a1)`.
    pub diff: f64,
    /// SE of the difference under the chosen method.
    pub se: f64,
    /// Lower end of the `(1 - alpha)` CI.
    pub lower: f64,
    /// Upper end of the CI.
    pub upper: f64,
    /// Two-sided p-value of `D = 0`.
    pub p_value: f64,
    /// Win / loss / tie.
    pub verdict: Verdict,
}

/// Compares answer a0 (features `phi0`) with a1 (`phi1`), both of length d1.
pub fn compare(
    model: &RewardModel,
    phi0: &[f64],
    phi1: &[f64],
    alpha: f64,
    method: DiffMethod,
) -> Result<Comparison> {
    check_alpha(alpha)?;
    model.check_features("phi0", phi0)?;
    model.check_features("phi1", phi1)?;
    Ok(compare_unchecked(
        model,
        phi0,
        phi1,
        critical_value(alpha),
        method,
    ))
}

/// [`compare`] with a precomputed critical value and no input checks.
pub fn compare_unchecked(
    model: &RewardModel,
    phi0: &[f64],
    phi1: &[f64],
    q: f64,
    method: DiffMethod,
) -> Comparison {
    let diff = model.reward(phi0) - model.reward(phi1);
    let se = match method {
        DiffMethod::Exact => {
            let delta: Vec<f64> = phi0.iter().zip(phi1).map(|(a, b)| a - b).collect();
            model.reward_se(&delta)
        }
        DiffMethod::Independent => model.reward_se(phi0).hypot(model.reward_se(phi1)),
        DiffMethod::Bound => model.reward_se(phi0) + model.reward_se(phi1),
    };
    let (lower, upper) = (diff - q * se, diff + q * se);
    let verdict = if lower > 0.0 {
        Verdict::Win
    } else if upper < 0.0 {
        Verdict::Loss
    } else {
        Verdict::Tie
    };
    let p_value = if se > 0.0 {
        two_sided_p_value(diff / se)
    } else if diff == 0.0 {
        1.0
    } else {
        0.0
    };
    Comparison {
        diff,
        se,
        lower,
        upper,
        p_value,
        verdict,
    }
}

/// Counts of verdicts over many prompts and the win rate (win 1, tie 0.5, loss 0).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WinRate {
    /// Comparisons won by a0.
    pub wins: usize,
    /// Comparisons lost by a0.
    pub losses: usize,
    /// Ties.
    pub ties: usize,
    /// `(wins + ties / 2) / total`; NaN for an empty set.
    pub win_rate: f64,
}

/// Tallies verdicts into a [`WinRate`].
pub fn win_rate(comparisons: &[Comparison]) -> WinRate {
    let count = |v: Verdict| comparisons.iter().filter(|c| c.verdict == v).count();
    let (wins, losses, ties) = (
        count(Verdict::Win),
        count(Verdict::Loss),
        count(Verdict::Tie),
    );
    let total = comparisons.len() as f64;
    WinRate {
        wins,
        losses,
        ties,
        win_rate: (wins as f64 + 0.5 * ties as f64) / total,
    }
}

/// Which selection rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// Best-of-N: maximise `r_hat - pen`.
    Bon,
    /// Pessimistic Best-of-N: maximise `r_hat - q_{1-alpha/2} se - pen` (the lower bound).
    Pbon,
}

impl Policy {
    /// Stable name ("bon", "pbon").
    pub fn name(self) -> &'static str {
        match self {
            Policy::Bon => "bon",
            Policy::Pbon => "pbon",
        }
    }

    /// Parses a name as produced by [`Policy::name`].
    pub fn from_name(name: &str) -> Result<Self> {
        match name {
            "bon" => Ok(Policy::Bon),
            "pbon" => Ok(Policy::Pbon),
            other => Err(Error::invalid(
                "policy",
                format!("unknown policy `{other}` (expected bon or pbon)"),
            )),
        }
    }
}

/// One candidate's figures in a selection.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Candidate {
    /// Reward, SE and CI (`lower` is the pessimistic reward).
    pub interval: RewardInterval,
    /// The caller's penalty (0 if none).
    pub penalty: f64,
    /// The policy's objective: `reward - penalty` (BoN) or `lower - penalty` (pBoN).
    pub score: f64,
}

/// Result of a selection over N candidates.
#[derive(Debug, Clone, PartialEq)]
pub struct Selection {
    /// 0-based index of the chosen candidate (ties go to the lowest index).
    pub index: usize,
    /// Every candidate's figures, in input order.
    pub candidates: Vec<Candidate>,
}

/// Selects among `N` candidates given as `N * d1` row-major features (`f32` or `f64`), with
/// optional per-candidate penalties (length `N`, finite).
///
/// Errors: `alpha` outside (0,1), no candidates, length not a multiple of d1, non-finite
/// features or penalties, penalty length different from `N`.
pub fn select<T: Copy + Into<f64>>(
    model: &RewardModel,
    phis: &[T],
    penalties: Option<&[f64]>,
    alpha: f64,
    policy: Policy,
) -> Result<Selection> {
    check_alpha(alpha)?;
    let rows = model.rows_f64("phi", phis)?;
    let n_cand = rows.len() / model.d1();
    if n_cand == 0 {
        return Err(Error::dims("phi", "at least one candidate", 0));
    }
    if let Some(pen) = penalties {
        if pen.len() != n_cand {
            return Err(Error::dims(
                "penalty",
                format!("{n_cand} values (one per candidate)"),
                pen.len(),
            ));
        }
        check_finite("penalty", pen)?;
    }
    let q = critical_value(alpha);
    let candidates: Vec<Candidate> = rows
        .chunks_exact(model.d1())
        .enumerate()
        .map(|(k, phi)| {
            let interval = model.interval(phi, q);
            let penalty = penalties.map_or(0.0, |p| p[k]);
            let base = match policy {
                Policy::Bon => interval.reward,
                Policy::Pbon => interval.lower,
            };
            Candidate {
                interval,
                penalty,
                score: base - penalty,
            }
        })
        .collect();
    let mut index = 0;
    for (k, c) in candidates.iter().enumerate() {
        if c.score > candidates[index].score {
            index = k;
        }
    }
    Ok(Selection { index, candidates })
}
