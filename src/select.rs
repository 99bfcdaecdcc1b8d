//! Decisions from a fitted model: reward differences with verdicts (docs/contract.md §3), win rates, and
//! Best-of-N / pessimistic Best-of-N selection (docs/contract.md §4).

#[cfg(test)]
use crate::calibrate::IntervalMethod;
use crate::codes::coded_enum;
use crate::error::{check_alpha, check_finite, Error, Result};
use crate::fitted::{RewardInterval, RewardModel};
use crate::interval::{check_features_result, norm_bound, Functional, PruneBound, Rule, Target};

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
    compare_checked(model, phi0, phi1, alpha, method, 0)
}

/// [`compare_unchecked`] with its result checked ([`Comparison::check_finite`], naming
/// `row`): features of length d1, finite, `alpha` in (0, 1).
pub(crate) fn compare_checked(
    model: &RewardModel,
    phi0: &[f64],
    phi1: &[f64],
    alpha: f64,
    method: DiffMethod,
    row: usize,
) -> Result<Comparison> {
    let c = compare_unchecked(model, phi0, phi1, alpha, method);
    c.check_finite(row, difference_unbounded(model, phi0, phi1))?;
    Ok(c)
}

/// True when the difference `r(phi0) - r(phi1)` puts weight on a coefficient whose interval
/// is unbounded (a feature one annotator carries alone, not shared equally by both answers).
fn difference_unbounded(model: &RewardModel, phi0: &[f64], phi1: &[f64]) -> bool {
    let delta: Vec<f64> = phi0.iter().zip(phi1).map(|(a, b)| a - b).collect();
    model.reward_unbounded(&delta)
}

/// [`compare`] without input checks (`alpha` in (0, 1)).
///
/// Under the model's interval method: Wald uses `method`'s variance; the bootstrap methods
/// take the difference's interval from the same draws (`theta*_b . (phi0 - phi1)`), which is
/// exact, so `method` does not apply (percentile interval and p-value for the bootstrap,
/// `D_hat / alpha_hat +- q SD* / alpha_hat` for the resized bootstrap). A difference with
/// weight on an unbounded coefficient has an unbounded interval: a tie, never a win.
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
            unbounded: difference_unbounded(model, phi0, phi1),
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
    /// SE or a bound overflowed made any figure non-finite; an `unbounded` difference's
    /// infinite SE and ends are by construction.
    fn check_finite(&self, row: usize, unbounded: bool) -> Result<()> {
        let interval = RewardInterval {
            reward: self.diff,
            se: self.se,
            lower: self.lower,
            upper: self.upper,
        };
        check_features_result(
            "phi0`, `phi1",
            row,
            &[interval.checked_figures(unbounded), vec![self.p_value]].concat(),
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
    let d1 = model.d1();
    let candidates: Vec<Candidate> = model
        .reward_intervals(&rows, alpha)
        .into_iter()
        .enumerate()
        .map(|(k, interval)| {
            let unbounded = model.reward_unbounded(&rows[k * d1..(k + 1) * d1]);
            candidate(
                interval,
                penalties.map_or(0.0, |p| p[k]),
                policy,
                k,
                unbounded,
            )
        })
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

/// A candidate's figures under `policy`, checked for overflow (row `k` in the message). An
/// `unbounded` candidate's interval is unbounded by construction: its pBoN score is `-inf`
/// (it wins only when every candidate's is), its figures otherwise checked.
fn candidate(
    interval: RewardInterval,
    penalty: f64,
    policy: Policy,
    k: usize,
    unbounded: bool,
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
    let score = match policy {
        Policy::Pbon if unbounded => Vec::new(),
        Policy::Bon | Policy::Pbon => vec![c.score],
    };
    check_features_result(
        "phi",
        k,
        &[c.interval.checked_figures(unbounded), score].concat(),
    )?;
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
/// every candidate gets an upper bound of its score, `cap - penalty`, from the model's
/// interval rule (`interval::Rule::lower_cap`): when the lower bound is `center - q
/// se` with `se >= 0` (Wald: `center = r_hat`; resized bootstrap: `center = r_hat /
/// alpha_hat`), `cap = center`; under the percentile bootstrap, whose lower bound is a
/// quantile of the draws and may exceed the point reward, every candidate's values at the
/// first few draws (one GEMM over a sixteenth to a half of them) cap its quantile over all of
/// them. Candidates are visited in decreasing order of that bound in batches of 4, 8, 16, 32,
/// ... (one pass of the scoring kernel each; the same computation as [`select`]'s, so the
/// same bits), and the search stops as soon as no remaining candidate's bound reaches the
/// best score so far. When SEs are small next to the spread of the rewards, a few intervals
/// out of N decide. When they are not (close candidates: N answers to one prompt, rewards
/// within a few SEs) and more than 16 candidates are left that could win, a Wald model's
/// bounds are tightened by lower bounds of every candidate's SE (Cauchy-Schwarz from the
/// candidates' mean, whose product with the factor comes with the first batch's SEs, then one
/// more pass over the factor: `wald_se_floors`), `center - q floor - penalty`, and the search
/// goes on in the new order.
///
/// Every candidate is evaluated (as by [`select`]) when pruning is not valid or could change
/// an error: under the cluster jackknives, under the percentile bootstrap when `alpha` is so
/// large that the screen would need more than half the draws, and when a candidate's
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
    // More candidates than this left that could win: the Wald SE floors pay for their pass
    // over the factor (`L u`, about one small batch's pass).
    const FLOOR_AFTER: usize = 16;
    let every = |model: &RewardModel| -> Result<Best> {
        let all = select(model, phis, penalties, alpha, policy)?;
        Ok(Best {
            index: all.index,
            candidate: all.candidates[all.index],
            se_computed: all.candidates.len(),
        })
    };
    let Some(bounds) = prune_bound(model, alpha) else {
        return every(model);
    };
    let (rows, q) = checked_candidates(model, phis, penalties, alpha)?;
    let d1 = model.d1();
    let n_cand = rows.len() / d1;
    let pen = |k: usize| penalties.map_or(0.0, |p| p[k]);
    let unbounded = |k: usize| model.reward_unbounded(&rows[k * d1..(k + 1) * d1]);
    // The centre of each interval, as the model computes it (exactly).
    let centers: Vec<f64> = rows
        .chunks_exact(d1)
        .map(|phi| model.reward(phi) / bounds.center_divisor)
        .collect();
    let norms: Vec<f64> = rows.chunks_exact(d1).map(norm_bound).collect();
    if (0..n_cand).any(|k| !bounds.safe(norms[k], centers[k], pen(k), q)) {
        return every(model);
    }
    let rule = model.calibration().rule();
    let draws = model.theta_draws_f64();
    let reps = model.calibration().reps();
    // Intervals of the candidates `batch`; with an `anchor` (Wald only), the pass of the
    // scoring kernel that gives their SEs also gives the anchor's product `L^T anchor`.
    let evaluate = |batch: &[usize], anchor: Option<&[f64]>| {
        let mut batch_rows = Vec::with_capacity((batch.len() + 1) * d1);
        for &k in batch {
            batch_rows.extend_from_slice(&rows[k * d1..(k + 1) * d1]);
        }
        let estimates: Vec<f64> = batch
            .iter()
            .map(|&k| model.reward(&rows[k * d1..(k + 1) * d1]))
            .collect();
        let Some(anchor) = anchor else {
            let intervals = rule.theta_intervals(
                &estimates,
                || model.reward_se_batch(&batch_rows),
                || crate::linalg::project_rows(&batch_rows, d1, draws, reps),
                |i| unbounded(batch[i]),
                alpha,
            );
            return (intervals, Vec::new());
        };
        batch_rows.extend_from_slice(anchor);
        let (squares, product) =
            model
                .packed_factor()
                .norms_and_products(&batch_rows, &|v: f64| v, 1);
        // `reward_se_batch`'s SEs, to the bit (the kernel's lanes are independent).
        let ses: Vec<f64> = squares.into_iter().map(f64::sqrt).collect();
        let intervals = rule.theta_intervals(
            &estimates,
            || ses,
            || unreachable!(),
            |i| unbounded(batch[i]),
            alpha,
        );
        (intervals, product)
    };
    if policy == Policy::Bon {
        // The BoN score itself: center - penalty.
        let mut index = 0;
        for k in 1..n_cand {
            if centers[k] - pen(k) > centers[index] - pen(index) {
                index = k;
            }
        }
        let interval = evaluate(&[index], None).0[0];
        return Ok(Best {
            index,
            candidate: candidate(interval, pen(index), policy, index, unbounded(index))?,
            se_computed: 1,
        });
    }
    // Upper bounds of the score: cap - penalty (rounding is monotone: the score, lower -
    // penalty, is at most the bound).
    let m = bounds.screen;
    let mut screened = if m == 0 {
        Vec::new()
    } else {
        crate::linalg::project_rows(&rows, d1, draws, m)
    };
    let mut bound: Vec<f64> = (0..n_cand)
        .map(|k| {
            // V >= ||phi|| max_b ||theta*_b|| >= |theta*_b . phi| (as computed, too).
            let magnitude = 1.01 * norms[k] * model.max_draw_norm();
            let values = screened.get_mut(k * m..(k + 1) * m).unwrap_or_default();
            let error = 2.0 * crate::linalg::project_rows_error(d1, magnitude);
            rule.lower_cap(centers[k], values, reps, alpha, error, 2.0 * magnitude) - pen(k)
        })
        .collect();
    let mut order: Vec<usize> = (0..n_cand).collect();
    order.sort_by(|&a, &b| bound[b].total_cmp(&bound[a]).then(a.cmp(&b)));
    // Wald SEs can be bounded from below (`wald_se_floors`) when the centres alone leave many
    // candidates that could win: close candidates, whose rewards are within a few SEs. The
    // anchor of the floors, the candidates' mean, rides along the first batch (whose size then
    // leaves room for it in the kernel's four lanes).
    let mut floored = !matches!(rule, Rule::Wald);
    let mut anchor = (!floored).then(|| {
        let mut w = vec![0.0f64; d1];
        for phi in rows.chunks_exact(d1) {
            crate::linalg::axpy(1.0 / n_cand as f64, phi, &mut w);
        }
        w
    });
    let mut product = Vec::new();
    let mut best: Option<(usize, Candidate)> = None;
    let mut computed = 0;
    let mut next = 0;
    let mut batch_size = FIRST_BATCH - usize::from(anchor.is_some());
    while next < order.len() {
        // Candidates that can still win: bound above the best score, or equal to it with a
        // lower index (a tie goes to the lowest index).
        let can_win = |k: usize| match &best {
            None => true,
            Some((i, c)) => bound[k] > c.score || (bound[k] == c.score && k < *i),
        };
        let left = || order[next..].iter().filter(|&&k| can_win(k)).count();
        if !floored && best.is_some() && left() > FLOOR_AFTER {
            floored = true;
            let w = anchor.take().expect("the anchor of a Wald selection");
            if product.is_empty() {
                product = model.packed_factor().products(&w);
            }
            let floors = wald_se_floors(model, &product, &rows, &norms, bounds.se);
            for &k in &order[next..] {
                bound[k] = bound[k].min(floored_bound(centers[k], floors[k], q, pen(k)));
            }
            order[next..].sort_by(|&a, &b| bound[b].total_cmp(&bound[a]).then(a.cmp(&b)));
            continue;
        }
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
        let first = computed == batch.len() && !floored;
        let (intervals, p) = evaluate(&batch, anchor.as_deref().filter(|_| first));
        if !p.is_empty() {
            product = p;
        }
        for (&k, interval) in batch.iter().zip(intervals) {
            let c = candidate(interval, pen(k), policy, k, unbounded(k))?;
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

/// Lower bounds of the Wald SEs `||L^T phi_k||` of the candidates (rows of `rows`, `norms`
/// at least their norms, `frobenius` at least `||L||_F`) from an anchor's product `u = L^T w`
/// (any `u` gives valid bounds), each at most the SE the scoring kernel computes for that row,
/// rounding included.
///
/// Cauchy-Schwarz in the covariance's inner product, from one anchor: for any `u`,
/// `||L^T phi|| >= |phi . (L u)| / ||u||`. With `u = L^T w` for the candidates' mean `w`,
/// `L u = Sigma w` and the bound is `SE(phi) cos(angle)`: it falls short of the SE by about
/// `||L^T (phi - w)||^2 / (2 SE)`, second order in the candidates' spread, so close candidates
/// get tight bounds for one pass over the factor (`L u`; `u` comes with a batch's SEs) and
/// one dot product each. Rounding: `L u`, the dot products and the norms are each within `g = 2 (d1 + 16) u`
/// (relative, `u` the unit roundoff doubled) of `||L||_F ||u|| ||phi||`-sized terms, and the
/// kernel's SE within as much of the exact one (its sums run over `d1` terms in order); the
/// floor subtracts both. Non-finite intermediates (features near the overflow checks) give 0.
fn wald_se_floors(
    model: &RewardModel,
    u: &[f64],
    rows: &[f64],
    norms: &[f64],
    frobenius: f64,
) -> Vec<f64> {
    let d1 = model.d1();
    let h = model.packed_factor().matvec(u);
    let norm = |v: &[f64]| crate::linalg::dot(v, v).sqrt();
    let g = 2.0 * (d1 + 16) as f64 * f64::EPSILON;
    let (u_up, h_up, f_up) = (
        norm(u) * (1.0 + g),
        norm(&h) * (1.0 + g),
        frobenius * (1.0 + g),
    );
    rows.chunks_exact(d1)
        .zip(norms)
        .map(|(phi, &nb)| {
            let p = crate::linalg::dot(phi, &h).abs();
            let cs = (p - g * nb * (h_up + f_up * u_up)) / u_up;
            let floor = cs * (1.0 - g) - g * f_up * nb;
            // Also 0 for NaN (a zero anchor gives 0 / 0) and for overflowed terms.
            if floor > 0.0 && floor.is_finite() {
                floor
            } else {
                0.0
            }
        })
        .collect()
}

/// An upper bound of the pBoN score `(center - q se) - penalty` of a candidate whose computed
/// SE is at least `floor`: the same expression at `floor` plus a few roundings of its terms.
fn floored_bound(center: f64, floor: f64, q: f64, penalty: f64) -> f64 {
    let value = (center - q * floor) - penalty;
    value + 4.0 * f64::EPSILON * (center.abs() + q * floor + penalty.abs())
}

/// What [`select_best`] needs to prune under the model's interval rule at level `alpha`;
/// `None` when pruning is not valid.
fn prune_bound(model: &RewardModel, alpha: f64) -> Option<PruneBound> {
    let cal = model.calibration();
    cal.rule().prune_bound(
        cal.reps(),
        alpha,
        || model.theta_se().iter().map(|s| s * s).sum::<f64>().sqrt(),
        || model.max_draw_norm(),
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

    /// pBoN's pruned search ([`select_best`]) on the candidates `narrow` (`f32`) and on their
    /// `f64` copy `wide`, checked against the unpruned [`select`]: the same index, and the
    /// chosen candidate's figures to the bit. Returns the pruned search and the chosen
    /// candidate.
    fn pruned_pbon_matches_select(
        model: &RewardModel,
        narrow: &[f32],
        wide: &[f64],
        penalties: Option<&[f64]>,
        alpha: f64,
        what: &str,
    ) -> (Best, Candidate) {
        let bits = |c: &Candidate| {
            let i = c.interval;
            [i.reward, i.se, i.lower, i.upper, c.penalty, c.score].map(f64::to_bits)
        };
        let all = select(model, narrow, penalties, alpha, Policy::Pbon).unwrap();
        let best = select_best(model, narrow, penalties, alpha, Policy::Pbon).unwrap();
        assert_eq!(best.index, all.index, "{what}");
        let chosen = all.candidates[all.index];
        assert_eq!(bits(&best.candidate), bits(&chosen), "{what}");
        let f64s = select_best(model, wide, penalties, alpha, Policy::Pbon).unwrap();
        assert_eq!(f64s.index, best.index, "{what}");
        assert_eq!(bits(&f64s.candidate), bits(&chosen), "{what}");
        (best, chosen)
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
            // Pruned selections per policy (BoN, pBoN).
            let mut pruned = [0usize; 2];
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
                        pruned[policy as usize] += (best.se_computed < n_cand) as usize;
                    }
                }
            }
            // Pruning happens under every method: BoN always (one interval), pBoN on the
            // centres (Wald, resized) or on a screen of the draws (percentile).
            assert!(
                pruned[0] > trials && pruned[1] > trials / 2,
                "{method:?}: only {pruned:?} pruned selections"
            );
        }
    }

    /// A Wald model of dimension `d1`: theta uniform of width `theta_scale`, `L` the Cholesky
    /// factor of a random SPD matrix times `cov_scale`.
    fn wald_model(d1: usize, seed: u64, theta_scale: f64, cov_scale: f64) -> RewardModel {
        let mut next = uniform(seed);
        let theta: Vec<f64> = (0..d1).map(|_| theta_scale * (next() - 0.5)).collect();
        let l =
            crate::linalg::cholesky(&(crate::testing::random_spd(d1, seed + 1) * cov_scale), "A")
                .unwrap();
        wald_with(theta, l)
    }

    /// A Wald model with estimate `theta` (one rationality feature, gamma 0), `theta_factor`
    /// the lower Cholesky factor of theta's covariance, fitted on 1,000 rows.
    fn wald_with(theta: Vec<f64>, theta_factor: nalgebra::DMatrix<f64>) -> RewardModel {
        let report = model(IntervalMethod::Wald).report().clone();
        RewardModel::from_parts(
            crate::model::Params {
                theta,
                gamma: vec![0.0],
            },
            1000,
            crate::covariance::CovarianceKind::Expected,
            report,
            theta_factor,
            nalgebra::DMatrix::identity(1, 1),
        )
        .unwrap()
    }

    /// The SE floors never exceed the SE the kernel computes, rounding included, even where
    /// Cauchy-Schwarz is an equality (every candidate a multiple of the candidates' mean,
    /// which is then the anchor's direction): the margins are what keeps them below.
    #[test]
    fn se_floors_lie_below_the_computed_ses_even_where_they_are_exact() {
        let frob = |m: &RewardModel| m.theta_se().iter().map(|s| s * s).sum::<f64>().sqrt();
        let mut tight = 0;
        for (d1, seed) in [(3, 1u64), (64, 2), (300, 3)] {
            let model = wald_model(d1, seed, 1.0, 1e-3);
            let mut next = uniform(seed + 10);
            for trial in 0..30 {
                let n_cand = [1, 7, 64][trial % 3];
                let center: Vec<f64> = (0..d1).map(|_| next() - 0.5).collect();
                let spread = [0.0, 1e-9, 1e-3, 0.05, 1.0][trial % 5];
                let rows: Vec<f64> = if trial % 2 == 0 {
                    // Multiples of one direction: the bound is exact but for rounding.
                    (0..n_cand)
                        .flat_map(|k| {
                            let t = 1.0 + spread * k as f64;
                            center.iter().map(move |c| c * t).collect::<Vec<_>>()
                        })
                        .collect()
                } else {
                    (0..n_cand * d1)
                        .map(|i| center[i % d1] + spread * (next() - 0.5))
                        .collect()
                };
                let norms: Vec<f64> = rows.chunks_exact(d1).map(norm_bound).collect();
                let mut w = vec![0.0; d1];
                for phi in rows.chunks_exact(d1) {
                    crate::linalg::axpy(1.0 / n_cand as f64, phi, &mut w);
                }
                let u = model.packed_factor().products(&w);
                let floors = wald_se_floors(&model, &u, &rows, &norms, frob(&model));
                let ses = model.reward_se_batch(&rows);
                for (k, (f, se)) in floors.iter().zip(&ses).enumerate() {
                    assert!(f <= se, "d1 {d1} trial {trial} row {k}: {f} > {se}");
                    assert!(*f >= 0.0);
                    tight += (*f > se * (1.0 - 1e-6)) as usize;
                }
            }
        }
        assert!(tight > 100, "only {tight} floors within 1e-6 of their SE");
    }

    /// pBoN among close candidates (N answers to one prompt: around one point, rewards within
    /// a few SEs), where the SE floors decide: the pruned search chooses what `select` chooses
    /// with the same figures to the bit, with exact duplicates, near-duplicates, every
    /// candidate the same, penalties (random, cancelling the rewards, and equal ones making
    /// score ties), `f32` and `f64` features; and it computes far fewer than N SEs.
    #[test]
    fn close_candidates_choose_what_select_chooses() {
        let (mut cases, mut computed, mut offered) = (0, 0, 0);
        for (d1, seed) in [(8, 5u64), (64, 6), (200, 7)] {
            // Rewards and SEs of one order, as a fitted model's.
            let model = wald_model(d1, seed, 2.0 / (d1 as f64).sqrt(), 1.0 / d1 as f64);
            let mut next = uniform(seed + 20);
            for trial in 0..24 {
                let n_cand = [128, 40, 17, 128][trial % 4];
                let spread = [0.05, 0.01, 0.2, 1e-4][trial % 4];
                let center: Vec<f64> = (0..d1).map(|_| next() - 0.5).collect();
                let mut phis: Vec<f64> = (0..n_cand * d1)
                    .map(|i| center[i % d1] + spread * (next() - 0.5))
                    .collect();
                if trial % 3 == 1 {
                    // Duplicates of a few rows throughout, and near-duplicates (an ulp away).
                    for k in (3..n_cand).step_by(3) {
                        let src = (k % 3) * d1;
                        let row: Vec<f64> = phis[src..src + d1].to_vec();
                        phis[k * d1..(k + 1) * d1].copy_from_slice(&row);
                        if k % 2 == 0 {
                            phis[k * d1] *= 1.0 + f64::EPSILON;
                        }
                    }
                }
                if trial % 8 == 7 {
                    let first = phis[..d1].to_vec();
                    for row in phis.chunks_exact_mut(d1) {
                        row.copy_from_slice(&first);
                    }
                }
                let narrow: Vec<f32> = phis.iter().map(|&v| v as f32).collect();
                let wide: Vec<f64> = narrow.iter().map(|&v| f64::from(v)).collect();
                let pen: Vec<f64> = (0..n_cand).map(|_| 0.01 * next()).collect();
                let cancel: Vec<f64> = wide.chunks_exact(d1).map(|p| model.reward(p)).collect();
                let same = vec![0.25; n_cand];
                for alpha in [0.05, 0.5, 1e-4] {
                    for penalties in [None, Some(&pen[..]), Some(&cancel[..]), Some(&same[..])] {
                        let what = format!("d1 {d1} trial {trial} alpha {alpha} {penalties:?}");
                        let (best, _) = pruned_pbon_matches_select(
                            &model, &narrow, &wide, penalties, alpha, &what,
                        );
                        cases += 1;
                        computed += best.se_computed;
                        offered += n_cand;
                    }
                }
            }
        }
        assert!(cases > 800);
        assert!(
            computed * 4 < offered,
            "{computed} of {offered} SEs computed: the floors do not prune close candidates"
        );
    }

    /// A percentile-bootstrap model of dimension `d1` with `reps` draws `theta + shift + s
    /// N(0, I)` (`s = spread`; `shift` moves every draw, so that a candidate's quantiles may
    /// lie above its point reward) and the Wald factor `s I`.
    pub(crate) fn percentile_model(
        d1: usize,
        reps: usize,
        spread: f64,
        shift: f64,
        seed: u64,
    ) -> RewardModel {
        use crate::calibrate::{Calibration, Parts};
        let mut next = uniform(seed);
        let mut normal =
            move || (-2.0 * (next() + 1e-300).ln()).sqrt() * (std::f64::consts::TAU * next()).cos();
        let theta: Vec<f64> = (0..d1).map(|_| 0.1 * normal()).collect();
        let offset: Vec<f64> = (0..d1).map(|_| shift * normal()).collect();
        let draws: Vec<f32> = (0..reps * d1)
            .map(|i| (theta[i % d1] + offset[i % d1] + spread * normal()) as f32)
            .collect();
        let wald = wald_with(theta, nalgebra::DMatrix::identity(d1, d1) * spread);
        let cal = Calibration::from_parts(
            Parts {
                requested: IntervalMethod::Bootstrap,
                method: IntervalMethod::Bootstrap,
                reps,
                seed: 1,
                diverged: 0,
                figures: [1.0; 3],
                gamma_bias: vec![0.0],
                theta_draws: draws,
                // Gamma's draws vary, as every stored coefficient's must.
                gamma_draws: (0..reps).map(|b| 0.01 * (b % 2) as f32).collect(),
                unbounded: Vec::new(),
            },
            d1,
            1,
        )
        .unwrap();
        wald.with_calibration(cal).unwrap()
    }

    /// The percentile bootstrap's pruned pBoN (a screen on the first draws, then the full
    /// computation in decreasing order of the screen's bound) chooses what every candidate's
    /// interval chooses, with the same figures to the bit: many random models and candidate
    /// sets, B from 24 to 400, candidates whose lower bound lies above their point reward
    /// (shifted draws), exact duplicates and near-ties (rows a few ulps apart), penalties that
    /// cancel the rewards, `f32` and `f64` features, and levels where the screen would need
    /// more than half the draws (every candidate computed).
    #[test]
    fn percentile_pruning_keeps_the_choice_and_its_bits() {
        let (mut pruned, mut above, mut cases) = (0, 0, 0);
        for (m, (d1, reps)) in [(16, 400), (7, 24), (40, 100), (3, 57)]
            .into_iter()
            .enumerate()
        {
            for (j, &(spread, shift)) in [(0.05, 0.0), (0.2, 0.3), (1.0, 1.0)].iter().enumerate() {
                let model = percentile_model(d1, reps, spread, shift, 31 + 7 * m as u64 + j as u64);
                let mut next = uniform(97 + m as u64 * 5 + j as u64);
                for trial in 0..24 {
                    let n_cand = [2, 9, 40, 128][trial % 4];
                    let scale = [0.1, 1.0, 10.0][trial % 3];
                    let mut phis: Vec<f64> =
                        (0..n_cand * d1).map(|_| scale * (next() - 0.5)).collect();
                    if trial % 3 == 1 {
                        // Near-ties: every other row a few ulps from its neighbour, and an
                        // exact duplicate of the first row last.
                        for k in (1..n_cand).step_by(2) {
                            for i in 0..d1 {
                                let v = phis[(k - 1) * d1 + i];
                                phis[k * d1 + i] = v * (1.0 + (trial % 4) as f64 * f64::EPSILON);
                            }
                        }
                        let first = phis[..d1].to_vec();
                        phis[(n_cand - 1) * d1..].copy_from_slice(&first);
                    }
                    let narrow: Vec<f32> = phis.iter().map(|&v| v as f32).collect();
                    let wide: Vec<f64> = narrow.iter().map(|&v| f64::from(v)).collect();
                    let pen: Vec<f64> = (0..n_cand).map(|_| 0.05 * next()).collect();
                    let cancel: Vec<f64> = wide.chunks_exact(d1).map(|p| model.reward(p)).collect();
                    for alpha in [0.05, 0.2, 1e-3, 0.5] {
                        for penalties in [None, Some(&pen[..]), Some(&cancel[..])] {
                            let what = format!("B {reps} d1 {d1} trial {trial} alpha {alpha}");
                            let (best, chosen) = pruned_pbon_matches_select(
                                &model, &narrow, &wide, penalties, alpha, &what,
                            );
                            cases += 1;
                            pruned += (best.se_computed < n_cand) as usize;
                            above += (chosen.interval.lower > chosen.interval.reward) as usize;
                            let screens = model
                                .calibration()
                                .rule()
                                .prune_bound(reps, alpha, || 0.0, || 0.0)
                                .is_some();
                            if !screens {
                                assert_eq!(best.se_computed, n_cand, "{what}");
                            }
                        }
                    }
                }
            }
        }
        assert!(
            pruned > cases / 3,
            "only {pruned} of {cases} selections pruned"
        );
        assert!(
            above > cases / 10,
            "only {above} of {cases} choices lie above their reward"
        );
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
        let wide = crate::linalg::transposed(&draws, d1);
        for rule in [
            Rule::Percentile,
            Rule::Resized { alpha_hat: 0.7 },
            Rule::Jackknife { df: 39.0 },
        ] {
            for alpha in [0.05, 0.2, 1e-3] {
                let gemm = rule.theta_intervals(
                    &estimates,
                    || unreachable!(),
                    || crate::linalg::project_rows(&rows, d1, &wide, reps),
                    |_| false,
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
                                unbounded: false,
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
                            |_| false,
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
