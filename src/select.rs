//! Decisions from a fitted model: reward differences with verdicts (SPEC §3), win rates, and
//! Best-of-N / pessimistic Best-of-N selection (SPEC §4).

#[cfg(test)]
use crate::calibrate::IntervalMethod;
use crate::codes::coded_enum;
use crate::error::{check_alpha, check_finite, Error, Result};
use crate::fitted::{RewardInterval, RewardModel};
use crate::interval::{check_features_result, Functional, PruneBound, Target};

coded_enum! {
    /// How the variance of a reward difference `D = r(a0) - r(a1)` is computed.
    #[derive(Default)]
    pub enum DiffMethod: "method", "method" {
        /// `(phi0 - phi1)^T S (phi0 - phi1) / n`: both rewards share theta_hat (default).
        #[default]
        Exact = 0 => "exact",
        /// `(phi0^T S phi0 + phi1^T S phi1) / n`: the paper's formula (treats them as
        /// independent).
        Independent = 1 => "independent",
        /// `(sqrt(phi0^T S phi0) + sqrt(phi1^T S phi1))^2 / n`: the paper's upper bound.
        Bound = 2 => "bound",
    }
}

coded_enum! {
    /// Outcome of a comparison at level alpha.
    pub enum Verdict: "verdict", "verdict" {
        /// The CI contains 0.
        Tie = 0 => "tie",
        /// The CI of `r(a0) - r(a1)` lies above 0: a0 is significantly better.
        Win = 1 => "win",
        /// The CI lies below 0: a1 is significantly better.
        Loss = 2 => "loss",
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
    let c = compare_unchecked(model, phi0, phi1, alpha, method);
    c.check_finite(0)?;
    Ok(c)
}

/// [`compare`] without input checks (`alpha` in (0, 1)).
///
/// Under the model's interval method: Wald uses `method`'s variance; the bootstrap methods
/// take the difference's interval from the same draws (`theta*_b . (phi0 - phi1)`), which is
/// exact, so `method` does not apply (percentile interval and p-value for the bootstrap,
/// `D_hat / alpha_hat +- q SD* / alpha_hat` for the resized bootstrap).
#[doc(hidden)] // reached through `crate::internals` only
pub fn compare_unchecked(
    model: &RewardModel,
    phi0: &[f64],
    phi1: &[f64],
    alpha: f64,
    method: DiffMethod,
) -> Comparison {
    let cal = model.calibration();
    let delta = || -> Vec<f64> { phi0.iter().zip(phi1).map(|(a, b)| a - b).collect() };
    let e = cal.rule().estimate(
        Functional {
            estimate: model.reward(phi0) - model.reward(phi1),
            target: Target::Theta,
            wald_se: || match method {
                DiffMethod::Exact => model.reward_se(&delta()),
                DiffMethod::Independent => model.reward_se(phi0).hypot(model.reward_se(phi1)),
                DiffMethod::Bound => model.reward_se(phi0) + model.reward_se(phi1),
            },
            draws: || cal.theta_projections(&delta()),
        },
        alpha,
    );
    let ci = e.interval;
    Comparison {
        diff: ci.reward,
        se: ci.se,
        lower: ci.lower,
        upper: ci.upper,
        p_value: e.p_value,
        verdict: verdict(ci.lower, ci.upper),
    }
}

/// Win when the interval lies above 0, loss below, tie otherwise.
fn verdict(lower: f64, upper: f64) -> Verdict {
    if lower > 0.0 {
        Verdict::Win
    } else if upper < 0.0 {
        Verdict::Loss
    } else {
        Verdict::Tie
    }
}

impl Comparison {
    /// Errors (naming `phi0`, `phi1` and `row`) when features so large that the difference, its
    /// SE or a bound overflowed made any figure non-finite.
    pub(crate) fn check_finite(&self, row: usize) -> Result<()> {
        check_features_result(
            "phi0`, `phi1",
            row,
            &[self.diff, self.se, self.lower, self.upper, self.p_value],
        )
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

coded_enum! {
    /// Which selection rule.
    pub enum Policy: "policy", "policy" {
        /// Best-of-N: maximise `r_hat - pen`.
        Bon = 0 => "bon",
        /// Pessimistic Best-of-N: maximise `r_hat - q_{1-alpha/2} se - pen` (the lower bound).
        Pbon = 1 => "pbon",
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
    let (rows, _) = checked_candidates(model, phis, penalties, alpha)?;
    let candidates: Vec<Candidate> = model
        .reward_intervals(&rows, alpha)
        .into_iter()
        .enumerate()
        .map(|(k, interval)| candidate(interval, penalties.map_or(0.0, |p| p[k]), policy, k))
        .collect::<Result<_>>()?;
    let mut index = 0;
    for (k, c) in candidates.iter().enumerate() {
        if c.score > candidates[index].score {
            index = k;
        }
    }
    Ok(Selection { index, candidates })
}

/// Validates a selection's inputs; returns the rows in `f64` and the critical value.
fn checked_candidates<T: Copy + Into<f64>>(
    model: &RewardModel,
    phis: &[T],
    penalties: Option<&[f64]>,
    alpha: f64,
) -> Result<(Vec<f64>, f64)> {
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
    Ok((rows, model.calibration().rule().quantile(alpha)))
}

/// A candidate's figures under `policy`, checked for overflow (row `k` in the message).
fn candidate(
    interval: RewardInterval,
    penalty: f64,
    policy: Policy,
    k: usize,
) -> Result<Candidate> {
    let base = match policy {
        Policy::Bon => interval.reward,
        Policy::Pbon => interval.lower,
    };
    let c = Candidate {
        interval,
        penalty,
        score: base - penalty,
    };
    let i = &c.interval;
    check_features_result("phi", k, &[i.reward, i.se, i.lower, i.upper, c.score])?;
    Ok(c)
}

/// The winner of a selection and its figures, from [`select_best`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Best {
    /// 0-based index of the chosen candidate: always the index [`select`] chooses.
    pub index: usize,
    /// The chosen candidate's figures (identical to [`select`]'s for that candidate).
    pub candidate: Candidate,
    /// How many candidates' intervals were computed (between 1 and N).
    pub se_computed: usize,
}

/// [`select`]'s choice without computing every candidate's interval, for when only the
/// winner is needed (the caller who wants every candidate's figures calls [`select`]).
///
/// BoN needs no SE to choose; the winner's interval is computed for its figures. For pBoN,
/// when the model's lower bound is `center - q se` with `se >= 0` (Wald: `center = r_hat`;
/// resized bootstrap: `center = r_hat / alpha_hat`), `center - penalty` bounds the score from
/// above, so candidates are visited in decreasing order of that bound in batches of 4, 8, 16,
/// 32, ... (one pass of the scoring kernel each), and the search stops as soon as no remaining
/// candidate's bound reaches the best score so far. When SEs are small next to the spread of
/// the rewards, a few intervals out of N decide.
///
/// Every candidate is evaluated (as by [`select`]) when pruning is not valid or could change
/// an error: under the percentile bootstrap (its lower bound is a quantile of the draws and
/// may exceed the point reward, so nothing cheap bounds the score), and when a candidate's
/// features are so large that an interval it skipped might overflow (so the same row is named
/// in the same error as [`select`]'s). Same checks, errors, figures and tie rule (lowest
/// index) as [`select`].
pub fn select_best<T: Copy + Into<f64>>(
    model: &RewardModel,
    phis: &[T],
    penalties: Option<&[f64]>,
    alpha: f64,
    policy: Policy,
) -> Result<Best> {
    const FIRST_BATCH: usize = 4;
    const MAX_BATCH: usize = 32;
    let every = |model: &RewardModel| -> Result<Best> {
        let all = select(model, phis, penalties, alpha, policy)?;
        Ok(Best {
            index: all.index,
            candidate: all.candidates[all.index],
            se_computed: all.candidates.len(),
        })
    };
    let Some(bounds) = prune_bound(model) else {
        return every(model);
    };
    let (rows, q) = checked_candidates(model, phis, penalties, alpha)?;
    let d1 = model.d1();
    let n_cand = rows.len() / d1;
    let pen = |k: usize| penalties.map_or(0.0, |p| p[k]);
    // The centre of each interval, as the model computes it (exactly).
    let centers: Vec<f64> = rows
        .chunks_exact(d1)
        .map(|phi| model.reward(phi) / bounds.center_divisor)
        .collect();
    if (0..n_cand).any(|k| !bounds.safe(&rows[k * d1..(k + 1) * d1], centers[k], pen(k), q)) {
        return every(model);
    }
    // Upper bounds of the score: center - penalty (the BoN score itself).
    let bound: Vec<f64> = (0..n_cand).map(|k| centers[k] - pen(k)).collect();
    let evaluate = |batch: &[usize]| -> Vec<RewardInterval> {
        let mut batch_rows = Vec::with_capacity(batch.len() * d1);
        for &k in batch {
            batch_rows.extend_from_slice(&rows[k * d1..(k + 1) * d1]);
        }
        let estimates: Vec<f64> = batch
            .iter()
            .map(|&k| model.reward(&rows[k * d1..(k + 1) * d1]))
            .collect();
        model.calibration().rule().theta_intervals(
            &estimates,
            || model.reward_se_batch(&batch_rows),
            || crate::linalg::project_rows(&batch_rows, d1, model.calibration().theta_draws()),
            alpha,
        )
    };
    if policy == Policy::Bon {
        let mut index = 0;
        for k in 1..n_cand {
            if bound[k] > bound[index] {
                index = k;
            }
        }
        let interval = evaluate(&[index])[0];
        return Ok(Best {
            index,
            candidate: candidate(interval, pen(index), policy, index)?,
            se_computed: 1,
        });
    }
    let mut order: Vec<usize> = (0..n_cand).collect();
    order.sort_by(|&a, &b| bound[b].total_cmp(&bound[a]).then(a.cmp(&b)));
    let mut best: Option<(usize, Candidate)> = None;
    let mut computed = 0;
    let mut next = 0;
    let mut batch_size = FIRST_BATCH;
    while next < order.len() {
        // Candidates that can still win: bound above the best score, or equal to it with a
        // lower index (a tie goes to the lowest index).
        let can_win = |k: usize| match &best {
            None => true,
            Some((i, c)) => bound[k] > c.score || (bound[k] == c.score && k < *i),
        };
        let mut batch = Vec::with_capacity(batch_size);
        while next < order.len() && batch.len() < batch_size {
            let k = order[next];
            if !can_win(k) && best.as_ref().is_some_and(|(_, c)| bound[k] < c.score) {
                next = order.len(); // bounds only decrease from here
                break;
            }
            if can_win(k) {
                batch.push(k);
            }
            next += 1;
        }
        if batch.is_empty() {
            break;
        }
        computed += batch.len();
        batch_size = (2 * batch_size).min(MAX_BATCH);
        for (&k, interval) in batch.iter().zip(evaluate(&batch)) {
            let c = candidate(interval, pen(k), policy, k)?;
            let better = match &best {
                None => true,
                Some((i, b)) => c.score > b.score || (c.score == b.score && k < *i),
            };
            if better {
                best = Some((k, c));
            }
        }
    }
    let (index, candidate) = best.expect("at least one candidate is evaluated");
    Ok(Best {
        index,
        candidate,
        se_computed: computed,
    })
}

/// What [`select_best`] needs to prune under the model's interval rule; `None` when pruning
/// is not valid.
fn prune_bound(model: &RewardModel) -> Option<PruneBound> {
    let cal = model.calibration();
    cal.rule().prune_bound(
        || model.theta_se().iter().map(|s| s * s).sum::<f64>().sqrt(),
        || {
            cal.theta_draws()
                .chunks_exact(model.d1())
                .map(|row| row.iter().map(|&v| f64::from(v).powi(2)).sum::<f64>())
                .fold(0.0f64, f64::max)
                .sqrt()
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(method: IntervalMethod) -> RewardModel {
        crate::testing::simulated_model(400, 13, method, 30, 2)
    }

    /// A seeded uniform generator on [0, 1).
    fn uniform(seed: u64) -> impl FnMut() -> f64 {
        let mut state = seed;
        move || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    #[test]
    fn select_best_chooses_what_select_chooses_under_every_interval_method() {
        for (method, trials) in [
            (IntervalMethod::Wald, 400),
            (IntervalMethod::Resized, 150),
            (IntervalMethod::Bootstrap, 60),
        ] {
            let model = model(method);
            assert_eq!(model.calibration().method(), method);
            let mut next = uniform(7 + trials as u64);
            let mut pruned = 0;
            for trial in 0..trials {
                let n_cand = 1 + trial % 40;
                let spread = [0.01, 0.3, 3.0, 30.0][trial % 4];
                let alpha = [0.05, 0.5, 1e-6, 0.2][(trial / 4) % 4];
                let mut phis: Vec<f64> = (0..n_cand * 3).map(|_| spread * (next() - 0.5)).collect();
                if trial % 5 == 0 && n_cand > 2 {
                    // Exact duplicates: ties must go to the lowest index.
                    let first: Vec<f64> = phis[..3].to_vec();
                    phis[3 * (n_cand - 1)..].copy_from_slice(&first);
                }
                if trial % 7 == 0 {
                    // Every candidate the same: the first wins.
                    let first: Vec<f64> = phis[..3].to_vec();
                    for row in phis.chunks_exact_mut(3) {
                        row.copy_from_slice(&first);
                    }
                }
                let pen: Vec<f64> = (0..n_cand).map(|_| 0.1 * next()).collect();
                // Penalties that exactly cancel reward differences make score ties.
                let cancel: Vec<f64> = phis.chunks_exact(3).map(|p| model.reward(p)).collect();
                for penalties in [None, Some(&pen[..]), Some(&cancel[..])] {
                    for policy in [Policy::Bon, Policy::Pbon] {
                        let all = select(&model, &phis, penalties, alpha, policy).unwrap();
                        let best = select_best(&model, &phis, penalties, alpha, policy).unwrap();
                        let what = format!("{method:?} trial {trial} {policy:?} {penalties:?}");
                        assert_eq!(best.index, all.index, "{what}");
                        assert_eq!(best.candidate, all.candidates[all.index], "{what}");
                        assert!(best.se_computed >= 1 && best.se_computed <= n_cand);
                        pruned += (best.se_computed < n_cand) as usize;
                    }
                }
            }
            // Pruning happens where it is valid (and only there).
            if method == IntervalMethod::Bootstrap {
                assert_eq!(pruned, 0);
            } else {
                assert!(
                    pruned > trials,
                    "{method:?}: only {pruned} pruned selections"
                );
            }
        }
    }

    #[test]
    fn select_best_reports_the_errors_select_reports() {
        for method in [IntervalMethod::Wald, IntervalMethod::Resized] {
            let model = model(method);
            // Row 2's features are so large that its SE overflows; row 5's reward does too.
            let mut phis: Vec<f64> = (0..8 * 3).map(|i| (i as f64 * 0.3).sin()).collect();
            phis[2 * 3..3 * 3].copy_from_slice(&[1e200, -1e200, 1e200]);
            phis[5 * 3..6 * 3].copy_from_slice(&[1e300, 1e300, 1e300]);
            for policy in [Policy::Bon, Policy::Pbon] {
                let a = select(&model, &phis, None, 0.05, policy).unwrap_err();
                let b = select_best(&model, &phis, None, 0.05, policy).unwrap_err();
                assert_eq!(a.to_string(), b.to_string());
                assert!(a.to_string().contains("row 2"), "{a}");
            }
            // Large but harmless features: the same choice, pruned or not.
            let big: Vec<f64> = phis.iter().map(|v| v.signum() * 1e100).collect();
            let all = select(&model, &big, None, 0.05, Policy::Pbon).unwrap();
            let best = select_best(&model, &big, None, 0.05, Policy::Pbon).unwrap();
            assert_eq!(
                (best.index, best.candidate),
                (all.index, all.candidates[all.index])
            );
        }
    }

    #[test]
    fn an_answer_has_one_interval_alone_in_a_batch_and_in_a_selection() {
        let model = model(IntervalMethod::Wald);
        let phis: Vec<f32> = (0..30).map(|i| (i as f32 * 0.37).sin()).collect();
        let batch = model.score_batch(&phis, 0.05).unwrap();
        let chosen = select(&model, &phis, None, 0.05, Policy::Pbon).unwrap();
        for (k, row) in phis.chunks_exact(3).enumerate() {
            let wide: Vec<f64> = row.iter().map(|&v| f64::from(v)).collect();
            let one = model.score(&wide, 0.05).unwrap();
            assert_eq!(one, batch[k]);
            assert_eq!(one, chosen.candidates[k].interval);
        }
    }
    /// The blocked GEMM over candidates x draws (`linalg::project_rows`, what every draws
    /// rule now uses) gives the intervals of the row-by-row dot products
    /// (`Calibration::theta_projections`, the path before issue 23) under every rule: bounds
    /// equal within 1e-12 of the rewards' scale, the same pBoN choice. At the paper's B = 400
    /// with d1 large enough for faer's blocking, 128 candidates drawn as `f32` (as the C API
    /// hands them over).
    #[test]
    fn gemm_projections_give_the_row_by_row_intervals_under_every_rule() {
        use crate::interval::{Functional, Rule, Target};
        let (d1, reps, n_cand) = (300, 400, 128);
        let mut next = uniform(23);
        let draws: Vec<f32> = (0..reps * d1).map(|_| (next() - 0.5) as f32).collect();
        let rows: Vec<f64> = (0..n_cand * d1)
            .map(|_| f64::from((4.0 * (next() - 0.5)) as f32))
            .collect();
        let estimates: Vec<f64> = (0..n_cand).map(|_| next() - 0.5).collect();
        let row_by_row = |k: usize| -> Vec<f64> {
            draws
                .chunks_exact(d1)
                .map(|theta| crate::linalg::dot_f32(&rows[k * d1..(k + 1) * d1], theta))
                .collect()
        };
        let scale = 1e-12 * row_by_row(0).iter().fold(0.0f64, |m, v| m.max(v.abs()));
        for rule in [
            Rule::Percentile,
            Rule::Resized { alpha_hat: 0.7 },
            Rule::Jackknife { df: 39.0 },
        ] {
            for alpha in [0.05, 0.2, 1e-3] {
                let gemm = rule.theta_intervals(
                    &estimates,
                    || unreachable!(),
                    || crate::linalg::project_rows(&rows, d1, &draws),
                    alpha,
                );
                let mut chosen = [0usize; 2];
                for (k, g) in gemm.iter().enumerate() {
                    let old = rule
                        .estimate(
                            Functional {
                                estimate: estimates[k],
                                target: Target::Theta,
                                wald_se: || unreachable!(),
                                draws: || row_by_row(k),
                            },
                            alpha,
                        )
                        .interval;
                    for (a, b) in [(g.reward, old.reward), (g.se, old.se)]
                        .into_iter()
                        .chain([(g.lower, old.lower), (g.upper, old.upper)])
                    {
                        assert!((a - b).abs() <= scale, "{rule:?} {alpha} {k}: {a} vs {b}");
                    }
                    if g.lower > gemm[chosen[0]].lower {
                        chosen[0] = k;
                    }
                }
                let old_lower: Vec<f64> = (0..n_cand)
                    .map(|k| {
                        rule.theta_intervals(
                            &estimates[k..=k],
                            || unreachable!(),
                            || row_by_row(k),
                            alpha,
                        )[0]
                        .lower
                    })
                    .collect();
                for k in 1..n_cand {
                    if old_lower[k] > old_lower[chosen[1]] {
                        chosen[1] = k;
                    }
                }
                assert_eq!(chosen[0], chosen[1], "{rule:?} {alpha}");
            }
        }
    }
}
