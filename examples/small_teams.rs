//! Coverage of `--intervals auto` where small annotation teams are: G = 6, 10 and 15
//! annotators, balanced or lognormal sizes, with and without an annotator random effect.
//!
//! Data: `sim::annotator_effects_sized` — the annotator design of `sim::annotator_effects`
//! (d1 = 6, d2 = 2: an expert flag `e_c ~ Bern(0.3)` and a continuous covariate; rationality
//! `1 + 0.5 e_c + 0.25 x_c + u_c`, `u_c ~ N(0, tau^2)`) with annotator `c` making `sizes[c]`
//! comparisons. Every dataset has `N` (default 480) comparisons — what 6 annotators make at 80
//! each, within the 300-600 of a small team's first round; holding `N` fixed across G shows
//! the effect of the number of annotators apart from the sample size:
//!
//! * `balanced`: every annotator makes `N / G` (80, 48, 32 at G = 6, 10, 15);
//! * `lognormal`: the sizes are fixed per G (the same for every dataset and both tau): one
//!   draw `z_c ~ N(0, 1)` from seed `31_000 + G`, weights `exp(s z_c)` apportioned to `N`
//!   comparisons (at least one each, largest remainders), with `s` the smallest multiple of
//!   0.05 for which the integer sizes have `max / median >= 10` (the median of an even count
//!   is the mean of the two middle sizes): the least extreme lognormal sizes of that draw
//!   meeting the ratio. The table's design section lists the sizes and `s`.
//!
//! A dataset needs an expert and a non-expert annotator (all experts: the flag's column is
//! `psi0`, not identifiable; no expert: the flag's column is zero). Dataset `r` of a cell is
//! drawn from seed `(tau10 << 56) | (sizes << 52) | (G << 40) | (r << 8) | k` with
//! `sizes` 0 (balanced) / 1 (lognormal) and `k` the first of 0, 1, 2, ... whose draw has both;
//! the redraws (`k > 0`) are counted. The coverage is thus conditional on the flag existing.
//!
//! Per dataset, the product's path: the public `Estimator` with `IntervalMethod::Auto` on the
//! data with cluster ids (what `hetreward fit --intervals auto` runs; fit seed = the dataset's
//! seed, one thread per fit, the datasets in parallel), and Wald on the same fit for the
//! lengths. The target is the working model's limit (`annotator_targets::limit`, shared with
//! `cluster_coverage`), the quantities theirs: theta's 6 coefficients (pooled), gamma_expert,
//! gamma_cont, the rewards of 3 fixed answers (pooled).
//!
//! Rows split each cell by how many annotators carry the expert flag: the smaller of its
//! experts and non-experts (the flag's coefficient is identified by their contrast: without
//! the only non-expert the flag's column equals `psi0`, as without the only expert it is
//! zero). Theta and gamma_cont are carried by every annotator. The target [0.93, 0.97] applies
//! to the rows `>= 3`; the rows of one carrier say whether it is the only expert or the only
//! non-expert.
//!
//! Per row: coverage (Monte-Carlo SE `sqrt(p (1 - p) / datasets)`) over the fits that returned
//! intervals; the median over datasets and the class's quantities of the interval's length
//! over Wald's on the same fit; what `auto` used (its method as the model records it:
//! `cluster-onestep`, or `cluster-jackknife` after the one-step was impossible); the fits
//! that exited with an error, by error class; the fits with at least one unbounded interval
//! (an infinite bound or SE: it covers by definition and is left out of the length medians);
//! Wald's coverage on the same fits. Fits whose MLE is not finite are counted and left out.
//!
//! The table of docs/intervals.md (12 cells, 2,000 datasets each: the rows `>= 3` at G = 6,
//! where 3 of 6 annotators are experts, hold about a fifth of them), written to
//! `target/small-teams.md` and printed:
//!
//! ```text
//! cargo run --release --example small_teams
//! ```
//!
//! Knobs: `R` (datasets per cell, default 2,000), `N` (comparisons per dataset, 480), `G`
//! (annotator counts, default `6,10,15`), `SIZES` (`balanced,lognormal`), `TAU` (`0,0.6`),
//! `LIMIT_N` (the limit's sample, 1,000,000), `OUT` (the table's file). Deterministic for the
//! knobs whatever the thread count.

#[path = "shared/annotator_targets.rs"]
mod annotator_targets;

use annotator_targets::{env, functionals, limit, ALPHA, CLASSES};
use hetreward::calibrate::{IntervalMethod, IntervalOptions};
use hetreward::data::Dataset;
use hetreward::estimator::EstimatorOptions;
use hetreward::fit::{FitControl, FitOptions};
use hetreward::fitted::RewardInterval;
use hetreward::sim::annotator_effects_sized;
use hetreward::RewardModel;
use rand::Rng;
use rand_distr::StandardNormal;
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::fmt::Write;

/// Smallest `max / median` of the lognormal sizes.
const MIN_SPREAD: f64 = 10.0;
/// Redraws tried before a cell's dataset is declared impossible.
const MAX_REDRAWS: u64 = 256;
/// Row labels: annotators carrying the expert flag (the smaller of experts and non-experts;
/// one carrier split by which side it is on).
const GROUPS: [&str; 4] = [">= 3", "2", "1 (one non-expert)", "1 (one expert)"];

/// How the comparisons are spread over the annotators.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Sizes {
    /// Every annotator makes the same number.
    Balanced,
    /// Lognormal sizes with `max / median >= MIN_SPREAD`.
    Lognormal,
}

impl Sizes {
    fn name(self) -> &'static str {
        match self {
            Sizes::Balanced => "balanced",
            Sizes::Lognormal => "lognormal",
        }
    }
}

/// `max / median` of `sizes` (the median of an even count: the mean of the two middle ones).
fn spread(sizes: &[usize]) -> f64 {
    let mut s = sizes.to_vec();
    s.sort_unstable();
    let k = s.len();
    let median = if k % 2 == 1 {
        s[k / 2] as f64
    } else {
        (s[k / 2 - 1] + s[k / 2]) as f64 / 2.0
    };
    s[k - 1] as f64 / median
}

/// `n` comparisons apportioned to `weights`: one each, the rest by largest remainders.
fn apportion(weights: &[f64], n: usize) -> Vec<usize> {
    let g = weights.len();
    let total: f64 = weights.iter().sum();
    let rest = (n - g) as f64;
    let exact: Vec<f64> = weights.iter().map(|w| rest * w / total).collect();
    let mut sizes: Vec<usize> = exact.iter().map(|e| 1 + e.floor() as usize).collect();
    let mut order: Vec<usize> = (0..g).collect();
    order.sort_by(|&a, &b| (exact[b] - exact[b].floor()).total_cmp(&(exact[a] - exact[a].floor())));
    let short = n - sizes.iter().sum::<usize>();
    for &c in order.iter().take(short) {
        sizes[c] += 1;
    }
    sizes
}

/// The design's sizes of `g` annotators making `n` comparisons, and the log-SD `s` of the
/// lognormal ones: `z_c ~ N(0, 1)` drawn once from seed `31_000 + g`, weights `exp(s z_c)`
/// apportioned to `n`, with `s` the smallest multiple of 0.05 whose integer sizes have
/// `max / median >= MIN_SPREAD` (the least extreme sizes of that draw that meet it).
fn design_sizes(kind: Sizes, g: usize, n: usize) -> (Vec<usize>, f64) {
    assert!(
        n >= g,
        "N = {n} comparisons cannot give each of {g} annotators one"
    );
    match kind {
        Sizes::Balanced => (apportion(&vec![1.0; g], n), 0.0),
        Sizes::Lognormal => {
            let mut rng = hetreward::sim::rng(31_000 + g as u64);
            let z: Vec<f64> = (0..g).map(|_| rng.sample(StandardNormal)).collect();
            (1..=200)
                .map(|k| 0.05 * k as f64)
                .find_map(|s| {
                    let weights: Vec<f64> = z.iter().map(|z| (s * z).exp()).collect();
                    let sizes = apportion(&weights, n);
                    (spread(&sizes) >= MIN_SPREAD).then_some((sizes, s))
                })
                .unwrap_or_else(|| {
                    panic!("no log-SD up to 10 gives {g} annotators max/median >= {MIN_SPREAD}")
                })
        }
    }
}

/// The number of expert annotators (`psi[.., 0] = 1` in their first row).
fn experts(data: &Dataset, sizes: &[usize]) -> usize {
    let mut first = 0;
    let mut count = 0;
    for &m in sizes {
        count += usize::from(data.psi_row(first)[0] != 0.0);
        first += m;
    }
    count
}

/// What one dataset gave.
struct Outcome {
    /// Index into [`GROUPS`].
    group: usize,
    /// Draws refused before this one (one-sided expert flag).
    redraws: u64,
    /// The fit: its method's name and per functional (class, auto interval, Wald interval,
    /// target); or the error's class and message.
    result: Result<Fit, (String, String)>,
}

struct Fit {
    method: &'static str,
    finite_mle: bool,
    intervals: Vec<(usize, RewardInterval, RewardInterval, f64)>,
}

/// The error's class: its variant's name.
fn class_of(e: &hetreward::error::Error) -> String {
    format!("{e:?}")
        .chars()
        .take_while(|c| c.is_alphanumeric())
        .collect()
}

/// Draws dataset `r` of a cell and fits it as `hetreward fit --intervals auto` does.
fn one_dataset(cell_seed: u64, r: u64, sizes: &[usize], tau: f64, truth: &[f64]) -> Outcome {
    let g = sizes.len();
    let (data, e, redraws, seed) = (0..MAX_REDRAWS)
        .find_map(|k| {
            let seed = cell_seed | (r << 8) | k;
            let data = annotator_effects_sized(sizes, tau, seed).ok()?;
            let e = experts(&data, sizes);
            (e > 0 && e < g).then_some((data, e, k, seed))
        })
        .expect("a draw with experts and non-experts");
    let carriers = e.min(g - e);
    let group = match carriers {
        1 if e == 1 => 3,
        1 => 2,
        2 => 1,
        _ => 0,
    };
    let estimator = EstimatorOptions {
        fit: FitOptions {
            threads: 1,
            seed,
            ..FitOptions::default()
        },
        intervals: IntervalOptions {
            method: IntervalMethod::Auto,
            reps: None,
        },
        ..EstimatorOptions::default()
    }
    .check()
    .expect("valid options");
    let result = match estimator.estimate(&data, &FitControl::default()) {
        Err(err) => Err((class_of(&err), err.to_string())),
        Ok(model) => {
            let wald = model.wald();
            // The product's interval of functional `a` of class `class` under model `m`.
            let interval = |m: &RewardModel, class: usize, a: &[f64]| match class {
                0 => m.theta_interval(a.iter().position(|&v| v == 1.0).unwrap_or(0), ALPHA),
                1 | 2 => m.gamma_interval(class - 1, ALPHA),
                _ => m.reward_interval(&a[..6], ALPHA),
            };
            let intervals = functionals()
                .into_iter()
                .map(|(class, a)| {
                    let target: f64 = a.iter().zip(truth).map(|(x, y)| x * y).sum();
                    (
                        class,
                        interval(&model, class, &a),
                        interval(&wald, class, &a),
                        target,
                    )
                })
                .collect();
            Ok(Fit {
                method: model.calibration().method().name(),
                finite_mle: model.diagnostics().mle_finite,
                intervals,
            })
        }
    };
    Outcome {
        group,
        redraws,
        result,
    }
}

/// True when the interval has an infinite bound or SE.
fn unbounded(ci: &RewardInterval) -> bool {
    ci.se.is_infinite() || ci.lower.is_infinite() || ci.upper.is_infinite()
}

fn median(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_unstable_by(f64::total_cmp);
    let k = v.len();
    Some(if k % 2 == 1 {
        v[k / 2]
    } else {
        (v[k / 2 - 1] + v[k / 2]) / 2.0
    })
}

/// Coverage with its Monte-Carlo SE over `datasets`.
fn coverage(hits: usize, count: usize, datasets: usize) -> String {
    if count == 0 {
        return "—".into();
    }
    let p = hits as f64 / count as f64;
    format!("{p:.3} ({:.3})", (p * (1.0 - p) / datasets as f64).sqrt())
}

/// `count` of `total` as a percentage (`0` when none).
fn share(count: usize, total: usize) -> String {
    if count == 0 {
        "0".into()
    } else {
        format!("{:.1}%", 100.0 * count as f64 / total as f64)
    }
}

/// One table row per group of `outcomes` (the groups that occur).
fn rows(label: &str, outcomes: &[Outcome], out: &mut String) {
    for (gi, group) in GROUPS.iter().enumerate() {
        let mine: Vec<&Outcome> = outcomes.iter().filter(|o| o.group == gi).collect();
        if mine.is_empty() {
            continue;
        }
        let total = mine.len();
        let mut hits = [(0usize, 0usize); 4];
        let mut wald_hits = [0usize; 4];
        let mut ratios: [Vec<f64>; 4] = Default::default();
        let mut used: BTreeMap<&str, usize> = BTreeMap::new();
        let mut errors: BTreeMap<&str, usize> = BTreeMap::new();
        let (mut with_unbounded, mut no_mle) = (0, 0);
        for o in &mine {
            let fit = match &o.result {
                Err((class, _)) => {
                    *errors.entry(class.as_str()).or_default() += 1;
                    continue;
                }
                Ok(fit) => fit,
            };
            *used.entry(fit.method).or_default() += 1;
            if !fit.finite_mle {
                no_mle += 1;
                continue;
            }
            let mut any_unbounded = false;
            for (class, auto, wald, target) in &fit.intervals {
                let open = unbounded(auto);
                any_unbounded |= open;
                let h = &mut hits[*class];
                h.0 += usize::from(open || (auto.lower <= *target && *target <= auto.upper));
                h.1 += 1;
                wald_hits[*class] += usize::from(wald.lower <= *target && *target <= wald.upper);
                if !open {
                    ratios[*class].push((auto.upper - auto.lower) / (wald.upper - wald.lower));
                }
            }
            with_unbounded += usize::from(any_unbounded);
        }
        let covered = total - errors.values().sum::<usize>() - no_mle;
        let cov: Vec<String> = (0..4)
            .map(|c| coverage(hits[c].0, hits[c].1, covered))
            .collect();
        let lengths: Vec<String> = ratios
            .iter_mut()
            .map(|v| median(v).map_or("—".into(), |m| format!("{m:.2}")))
            .collect();
        let wald: Vec<String> = (0..4)
            .map(|c| {
                if hits[c].1 == 0 {
                    "—".into()
                } else {
                    format!("{:.3}", wald_hits[c] as f64 / hits[c].1 as f64)
                }
            })
            .collect();
        let onestep = used.remove("cluster-onestep").unwrap_or(0);
        let exact = used.remove("cluster-jackknife").unwrap_or(0);
        let named = |m: &BTreeMap<&str, usize>| -> String {
            if m.is_empty() {
                "0".into()
            } else {
                m.iter()
                    .map(|(k, v)| format!("{} {k}", share(*v, total)))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        };
        let mut excluded = String::new();
        if no_mle > 0 {
            excluded = format!(" ({no_mle} without a finite MLE left out)");
        }
        let _ = writeln!(
            out,
            "| {label} | {group} | {total}{excluded} | {} | {} | {} | {} | {} | {} | {} | {} |",
            cov.join(" | "),
            lengths.join(" / "),
            share(onestep, total),
            share(exact, total),
            named(&errors),
            named(&used),
            share(with_unbounded, total),
            wald.join(" / "),
        );
    }
}

fn list<T: std::str::FromStr>(name: &str, default: &str) -> Vec<T> {
    std::env::var(name)
        .unwrap_or_else(|_| default.into())
        .split(',')
        .map(|v| {
            v.trim()
                .parse()
                .unwrap_or_else(|_| panic!("{name}: cannot parse {v:?}"))
        })
        .collect()
}

fn main() {
    let started = std::time::Instant::now();
    let reps: u64 = env("R", 2000);
    let n: usize = env("N", 480);
    let gs: Vec<usize> = list("G", "6,10,15");
    let taus: Vec<f64> = list("TAU", "0,0.6");
    let kinds: Vec<Sizes> = list::<String>("SIZES", "balanced,lognormal")
        .iter()
        .map(|s| match s.as_str() {
            "balanced" => Sizes::Balanced,
            "lognormal" => Sizes::Lognormal,
            other => panic!("SIZES: unknown {other:?} (balanced, lognormal)"),
        })
        .collect();
    let path = std::env::var("OUT").unwrap_or_else(|_| "target/small-teams.md".into());
    let commit = std::process::Command::new("git")
        .args(["describe", "--always", "--dirty"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    let truths: Vec<Vec<f64>> = taus.iter().map(|&t| limit(t).stacked()).collect();
    let mut table = String::new();
    let _ = writeln!(
        table,
        "| G | sizes | tau | flag carriers | datasets | {} | length / Wald ({}) | one-step | \
         exact jackknife | error | other method | unbounded | Wald ({}) |",
        CLASSES.join(" | "),
        CLASSES.join(" / "),
        CLASSES.join(" / ")
    );
    let _ = writeln!(table, "|{}", "---|".repeat(16));
    let mut designs = String::new();
    let _ = writeln!(
        designs,
        "| G | sizes | comparisons per annotator | max / median | redraws (tau = {}) | time |",
        taus.iter()
            .map(|t| t.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let _ = writeln!(designs, "|---|---|---|---|---|---|");
    let mut messages: BTreeMap<String, String> = BTreeMap::new();
    let write = |table: &str, designs: &str, messages: &BTreeMap<String, String>, done: bool| {
        let mut out = format!(
            "Made at commit {commit}: R = {reps} datasets per cell, N = {n} comparisons, \
             limit at tau = {:?}: {:?}{}\n\n{table}\n{designs}",
            taus,
            truths
                .iter()
                .map(|t| t
                    .iter()
                    .map(|v| (v * 1e4).round() / 1e4)
                    .collect::<Vec<_>>())
                .collect::<Vec<_>>(),
            if done {
                format!(", {:.0} s in all", started.elapsed().as_secs_f64())
            } else {
                " (unfinished)".into()
            }
        );
        for (class, message) in messages {
            let _ = writeln!(out, "\nFirst {class} message: `{message}`");
        }
        let written = std::path::Path::new(&path)
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(&path, &out));
        if let Err(e) = written {
            eprintln!("cannot write {path}: {e}");
        }
        out
    };
    for &g in &gs {
        for &kind in &kinds {
            let (sizes, log_sd) = design_sizes(kind, g, n);
            let cell_started = std::time::Instant::now();
            let mut redraws = Vec::new();
            for (&tau, truth) in taus.iter().zip(&truths) {
                let tau10 = (tau * 10.0).round() as u64;
                let cell_seed = (tau10 << 56) | ((kind as u64) << 52) | ((g as u64) << 40);
                let outcomes: Vec<Outcome> = (0..reps)
                    .into_par_iter()
                    .map(|r| one_dataset(cell_seed, r, &sizes, tau, truth))
                    .collect();
                redraws.push(outcomes.iter().map(|o| o.redraws).sum::<u64>());
                for o in &outcomes {
                    if let Err((class, message)) = &o.result {
                        messages
                            .entry(class.clone())
                            .or_insert_with(|| message.clone());
                    }
                }
                rows(
                    &format!("{g} | {} | {tau}", kind.name()),
                    &outcomes,
                    &mut table,
                );
                write(&table, &designs, &messages, false);
            }
            let _ = writeln!(
                designs,
                "| {g} | {} | {:?} | {:.1}{} | {} | {:.0} s |",
                kind.name(),
                sizes,
                spread(&sizes),
                if kind == Sizes::Lognormal {
                    format!(" (log-SD {log_sd:.2})")
                } else {
                    String::new()
                },
                redraws
                    .iter()
                    .map(|r| r.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                cell_started.elapsed().as_secs_f64()
            );
        }
    }
    print!("{}", write(&table, &designs, &messages, true));
    eprintln!("written to {path}");
}
