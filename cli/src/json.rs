//! JSON documents whose field names are a contract (docs/contract.md §5): the fit report / `inspect`, and
//! the outputs of `score`, `compare` and `select`. Fields may be added; none is renamed.
//!
//! Non-finite numbers become `null`, as JSON has no NaN or infinity. One kind is expected: an
//! unbounded interval (a functional with weight on a coefficient one annotator carries alone,
//! listed in `intervals.unbounded`) has SE `+inf` and ends `-inf`, `+inf`, written `null`;
//! its estimate stays a number. Nothing else is expected to be non-finite.

use hetreward::calibrate::IntervalDiagnostics;
use hetreward::cluster::leverage::Leverage;
use hetreward::cluster::Heterogeneity;
use hetreward::fitted::{RewardInterval, RewardModel};
use hetreward::io::scoring::GroupChoice;
use hetreward::select::{Comparison, DiffMethod, Policy, WinRate};
use serde_json::{json, Value};

/// The REPORT.json / `inspect --json` document: n, d1, d2, theta, gamma, theta_se, gamma_se,
/// covariance, solver, iterations, converged, grad_norm, neg_loglik (mean NLL), seconds — plus
/// termination, starts, total_iterations, tol and the format/library version; and
/// `intervals` ([`intervals_report`]), `diagnostics` ([`diagnostics_report`]) and the 95%
/// intervals of the coefficients under the model's method: `theta_lower`, `theta_upper`,
/// `gamma_lower`, `gamma_upper` (`theta_se` / `gamma_se` stay the paper's Wald SEs).
///
/// `diagnostics` are the model's interval diagnostics (at fit time from
/// `RewardModel::diagnostics_on`, which knows the data's cluster ids); `heterogeneity` the
/// annotator-heterogeneity diagnostic of a fit whose data have cluster ids
/// ([`heterogeneity_report`]; the field is `null` otherwise), and `leverage` the annotators'
/// leverage diagnostics beside it ([`leverage_report`], likewise).
pub fn model_report(
    model: &RewardModel,
    diagnostics: &IntervalDiagnostics,
    heterogeneity: Option<&hetreward::Result<Heterogeneity>>,
    leverage: Option<&hetreward::Result<Leverage>>,
) -> Value {
    let r = model.report();
    let theta_ci: Vec<_> = (0..model.d1())
        .map(|j| model.theta_interval(j, 0.05))
        .collect();
    let gamma_ci: Vec<_> = (0..model.d2())
        .map(|k| model.gamma_interval(k, 0.05))
        .collect();
    json!({
        "intervals": intervals_report(model),
        "diagnostics": diagnostics_report(diagnostics),
        "heterogeneity": heterogeneity.map(|h| heterogeneity_report(model.d1(), h)),
        "leverage": leverage.map(|l| leverage_report(model.d1(), l)),
        "theta_lower": theta_ci.iter().map(|c| c.lower).collect::<Vec<_>>(),
        "theta_upper": theta_ci.iter().map(|c| c.upper).collect::<Vec<_>>(),
        "gamma_lower": gamma_ci.iter().map(|c| c.lower).collect::<Vec<_>>(),
        "gamma_upper": gamma_ci.iter().map(|c| c.upper).collect::<Vec<_>>(),
        "n": model.n(),
        "d1": model.d1(),
        "d2": model.d2(),
        "theta": model.theta(),
        "gamma": model.gamma(),
        "theta_se": model.theta_se(),
        "gamma_se": model.gamma_se(),
        "covariance": model.covariance().name(),
        "solver": r.solver.name(),
        "iterations": r.iterations,
        "converged": r.converged,
        "grad_norm": r.grad_norm,
        "neg_loglik": r.neg_loglik,
        "seconds": r.seconds,
        "termination": r.termination.name(),
        "starts": r.starts,
        "total_iterations": r.total_iterations,
        "tol": r.tol,
        "hetreward_version": hetreward::VERSION,
    })
}

/// The model's interval method: `{"method", "requested", "reps", "seed", "diverged", "shrink",
/// "alpha_hat", "c_hat", "unbounded", "unbounded_reason"}` (`requested` is `"auto"` when auto
/// picked `method`); `unbounded` lists the coefficients one annotator carries alone as
/// `{"coefficient", "index", "annotator"}` (name as [`coefficient_name`], stacked index,
/// the carrier's cluster id), whose intervals are unbounded (`null` bounds), and
/// `unbounded_reason` says so in words (`null` when the list is empty).
pub fn intervals_report(model: &RewardModel) -> Value {
    let c = model.calibration();
    let d1 = model.d1();
    let unbounded: Vec<Value> = c
        .unbounded()
        .iter()
        .map(|u| {
            json!({
                "coefficient": coefficient_name(d1, u.coefficient),
                "index": u.coefficient,
                "annotator": u.cluster,
            })
        })
        .collect();
    json!({
        "unbounded": unbounded,
        "unbounded_reason": c.unbounded_description(d1),
        "method": c.method().name(),
        "requested": c.requested().name(),
        "reps": c.reps(),
        "seed": c.seed(),
        "diverged": c.diverged(),
        "shrink": c.shrink(),
        "alpha_hat": c.alpha_hat(),
        "c_hat": c.c_hat(),
    })
}

/// The fit's interval diagnostics: `{"d1_over_n", "mle_finite", "max_abs_gamma",
/// "diverged_share", "warning"}` (`warning` is `null` when there is none).
pub fn diagnostics_report(d: &IntervalDiagnostics) -> Value {
    json!({
        "d1_over_n": d.d1_over_n,
        "mle_finite": d.mle_finite,
        "max_abs_gamma": d.max_abs_gamma,
        "diverged_share": d.diverged_share,
        "warning": d.warning,
    })
}

/// The name of coefficient `c` of a model with reward dimension `d1`: `theta_c` for `c < d1`,
/// else `gamma_{c - d1}` (0-based, as the CLI's tables).
pub fn coefficient_name(d1: usize, c: usize) -> String {
    if c < d1 {
        format!("theta_{c}")
    } else {
        format!("gamma_{}", c - d1)
    }
}

/// The annotator-heterogeneity diagnostic: `{"clusters", "coefficients",
/// "design_effects", "effective_clusters", "excess_z", "worst", "independent_coverage",
/// "warning"}` — per coefficient (theta then gamma, named in `coefficients`) the CR1
/// cluster-robust over the expected-information variance, its effective number of clusters
/// and its standardised excess; `worst` names the coefficient with the largest excess,
/// `independent_coverage` what an interval assuming independence covers for it, `warning` the
/// plain-words warning or `null`. When it could not be computed: `{"error": message}`.
pub fn heterogeneity_report(d1: usize, h: &hetreward::Result<Heterogeneity>) -> Value {
    match h {
        Ok(h) => json!({
            "clusters": h.clusters,
            "coefficients": (0..h.design_effects.len())
                .map(|c| coefficient_name(d1, c))
                .collect::<Vec<_>>(),
            "design_effects": h.design_effects,
            "effective_clusters": h.effective_clusters,
            "excess_z": h.excess_z,
            "worst": coefficient_name(d1, h.worst),
            "independent_coverage": h.independent_coverage,
            "warning": h.warning,
        }),
        Err(e) => json!({"error": e.to_string()}),
    }
}

/// Most annotators whose per-annotator values (`ids`, `leverage`, `partial_leverage`) the
/// [`leverage_report`] lists; above, those fields are `null` (the summaries stay).
pub const LEVERAGE_ANNOTATORS_LISTED: usize = 10_000;

/// The annotators' leverage diagnostics: `{"clusters", "coefficients", "effective_annotators",
/// "top_annotator", "top_partial_leverage", "max_leverage", "max_leverage_annotator", "ids",
/// "leverage", "partial_leverage", "warning"}` — per coefficient (named in `coefficients`) its
/// effective number of annotators `1 / sum_g P_gj^2`, the id of the annotator with the largest
/// partial leverage and that share; the largest annotator leverage `tr(I_g I^-1)` (the
/// leverages sum to d1 + d2) and its annotator; per annotator (ids increasing; `null` above
/// [`LEVERAGE_ANNOTATORS_LISTED`] annotators) its leverage and, per coefficient, its partial
/// leverage (`partial_leverage[g][j]`); `warning` the plain-words warning or `null`. When it
/// could not be computed: `{"error": message}`.
pub fn leverage_report(d1: usize, l: &hetreward::Result<Leverage>) -> Value {
    let l = match l {
        Ok(l) => l,
        Err(e) => return json!({"error": e.to_string()}),
    };
    let p = l.coefficients();
    let top = (0..l.clusters())
        .max_by(|&a, &b| l.leverage[a].total_cmp(&l.leverage[b]))
        .unwrap_or(0);
    let listed = l.clusters() <= LEVERAGE_ANNOTATORS_LISTED;
    json!({
        "clusters": l.clusters(),
        "coefficients": (0..p).map(|c| coefficient_name(d1, c)).collect::<Vec<_>>(),
        "effective_annotators": l.effective,
        "top_annotator": l.top.iter().map(|&g| l.ids[g]).collect::<Vec<_>>(),
        "top_partial_leverage": (0..p).map(|j| l.partial_of(l.top[j], j)).collect::<Vec<_>>(),
        "max_leverage": l.leverage[top],
        "max_leverage_annotator": l.ids[top],
        "ids": listed.then_some(&l.ids),
        "leverage": listed.then_some(&l.leverage),
        "partial_leverage": listed.then(|| l.partial.chunks(p.max(1)).collect::<Vec<_>>()),
        "warning": l.warning,
    })
}

/// The `score --json` document: `{"alpha", "rows": [{"reward", "se", "lower", "upper"}]}`, one
/// row per input row, in input order.
pub fn score_report(alpha: f64, rows: &[RewardInterval]) -> Value {
    let rows: Vec<Value> = rows
        .iter()
        .map(|r| json!({"reward": r.reward, "se": r.se, "lower": r.lower, "upper": r.upper}))
        .collect();
    json!({"alpha": alpha, "rows": rows})
}

/// The `compare --json` document: `{"alpha", "method", "pairs": [{"diff", "se", "lower",
/// "upper", "p_value", "verdict"}], "wins", "losses", "ties", "win_rate"}` with
/// `diff = r(a0) - r(a1)` and verdict `"win"` when a0 is significantly better.
pub fn compare_report(
    alpha: f64,
    method: DiffMethod,
    pairs: &[Comparison],
    tally: &WinRate,
) -> Value {
    let pairs: Vec<Value> = pairs
        .iter()
        .map(|c| {
            json!({
                "diff": c.diff,
                "se": c.se,
                "lower": c.lower,
                "upper": c.upper,
                "p_value": c.p_value,
                "verdict": c.verdict.name(),
            })
        })
        .collect();
    json!({
        "alpha": alpha,
        "method": method.name(),
        "pairs": pairs,
        "wins": tally.wins,
        "losses": tally.losses,
        "ties": tally.ties,
        "win_rate": tally.win_rate,
    })
}

/// The `select --json` document: `{"alpha", "policy", "groups": [{"group", "index", "row",
/// "reward", "se", "lower", "penalty", "score"}]}` — one entry per group in order of first
/// appearance; `index` is 0-based within the group, `row` 0-based in the input; plus
/// `"candidates"` (the group's size).
pub fn select_report(alpha: f64, policy: Policy, groups: &[GroupChoice]) -> Value {
    let groups: Vec<Value> = groups
        .iter()
        .map(|g| {
            let c = &g.candidate;
            json!({
                "group": g.group,
                "index": g.index,
                "row": g.row,
                "reward": c.interval.reward,
                "se": c.interval.se,
                "lower": c.interval.lower,
                "penalty": c.penalty,
                "score": c.score,
                "candidates": g.size,
            })
        })
        .collect();
    json!({"alpha": alpha, "policy": policy.name(), "groups": groups})
}
