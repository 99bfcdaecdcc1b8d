//! Coverage of 95% intervals when annotators differ beyond their covariates (issue 20): the
//! annotator design of `sim::annotator_effects` (G annotators x m comparisons, a per-annotator
//! random effect u ~ N(0, tau^2) added to the rationality, d1 = 6, d2 = 2: an expert flag and
//! a continuous covariate). The target is the working model's limit (the fit of a sample of
//! `LIMIT_N` comparisons, one per annotator). Every method is measured on the same datasets:
//!
//! * `wald`: the paper's Wald interval (expected information);
//! * `bootstrap`: the product's parametric percentile bootstrap (B = `B`, default 400), which
//!   redraws labels independently;
//! * `cr0`, `cr1-t`: the cluster-robust sandwich (the model's `cluster` covariance), normal
//!   (CR0) / CR1 with t(G-1);
//! * `cv3-t`, `cv3-eff`, `cv3-bc`: the exact leave-one-cluster-out jackknife (warm refits) with
//!   t(G-1), with t(effective df), and centred at the bias-corrected estimate;
//! * `os-t`, `os-eff`: the one-step jackknife `b + (H - H_g)^-1 s_g` with t(G-1) / effective df;
//! * `pairs-pct`, `pairs-sd-t`: the cluster pairs bootstrap (B = `CB`, default 199),
//!   percentile and SD with t(G-1).
//!
//! One design (short, the CI size):
//!
//! ```text
//! G=40 M=40 TAU=0.6 R=100 cargo run --release --example cluster_coverage
//! ```
//!
//! The issue's full table (G = 40 x 40 and 300 x 10, tau in {0, 0.3, 0.6}, 400 datasets each,
//! every method; a few hours on 2 shared cores — the table in docs/intervals.md, 4 methods with B = 200,
//! took 100-700 s per design), written to `target/cluster-coverage.md`:
//!
//! ```text
//! FULL=1 cargo run --release --example cluster_coverage
//! ```
//!
//! `FALLBACK=1` keeps only the datasets where the one-step jackknife is impossible (the
//! observed Hessian without one annotator is not positive definite) though every coefficient
//! rests on at least 2 annotators: what `auto` falls back on (issue 31), e.g.
//! `FALLBACK=1 METHODS=wald,cr1-t,cv3-t G=6 M=50 TAU=0.6 R=200`.
//!
//! `METHODS=wald,bootstrap,os-eff` restricts the methods (Wald is always measured: the lengths
//! are relative to it). Datasets whose fit does not reach a finite optimum are counted and
//! left out. Seeds are fixed: dataset `r` of design `(G, M, tau)` has seed
//! `20_000_000 + 1_000_000 * tau10 + 1_000 * G + r`.

#[path = "shared/annotator_targets.rs"]
mod annotator_targets;

use annotator_targets::{env, functionals, limit, ALPHA, CLASSES};
use hetreward::calibrate::{IntervalMethod, IntervalOptions};
use hetreward::covariance::CovarianceKind;
use hetreward::data::Dataset;
use hetreward::estimator::EstimatorOptions;
use hetreward::fit::Init;
use hetreward::fit::{fit, FitControl, FitOptions};
use hetreward::fitted::RewardInterval;
use hetreward::internals::calibrate::quantile_sorted;
use hetreward::internals::cluster::{jackknife, one_step_jackknife, Clusters, Draws};
use hetreward::sim::annotator_effects;
use hetreward::{Params, RewardModel};
use rand::Rng;
use rayon::prelude::*;
use statrs::distribution::{ContinuousCDF, StudentsT};
use std::fmt::Write;

const ALL_METHODS: [&str; 12] = [
    "wald",
    "bootstrap",
    "cr0",
    "cr1-t",
    "os-t",
    "os-eff",
    "cv3-t",
    "cv3-eff",
    "cv3-bc",
    "cv3-bc-eff",
    "pairs-pct",
    "pairs-sd-t",
];

/// Where an interval is centred.
#[derive(Clone, Copy)]
enum Center {
    /// At the estimate.
    Estimate,
    /// At the jackknife's bias-corrected estimate `G hat - (G-1) v_bar` (Quenouille).
    BiasCorrected,
}

/// The degrees of freedom of the t quantile.
#[derive(Clone, Copy)]
enum Df {
    /// Fixed, e.g. `G - 1`.
    Fixed(f64),
    /// The functional's effective number of clusters with this kurtosis factor (Satterthwaite:
    /// `k (sum w^2)^2 / sum w^4`, `w_g = v_g - v_bar`), within `[1, G - 1]`.
    Effective(f64),
}

/// How the spread of the draws becomes a variance.
#[derive(Clone, Copy)]
enum Spread {
    /// Jackknife: `(G-1)/G sum_g (v_g - v_bar)^2`.
    Jackknife,
    /// Bootstrap: the draws' sample variance.
    Bootstrap,
}

/// The `t_{df, 1 - ALPHA/2}` quantile (the normal's for `df = inf`).
fn t_quantile(df: f64) -> f64 {
    if df.is_finite() {
        StudentsT::new(0.0, 1.0, df)
            .expect("df > 0")
            .inverse_cdf(1.0 - ALPHA / 2.0)
    } else {
        statrs::distribution::Normal::standard().inverse_cdf(1.0 - ALPHA / 2.0)
    }
}

/// `center +- t_df se`.
fn symmetric(center: f64, se: f64, df: f64) -> RewardInterval {
    let q = t_quantile(df);
    RewardInterval {
        reward: center,
        se,
        lower: center - q * se,
        upper: center + q * se,
    }
}

/// The 95% interval `center +- t_df se` of a functional with estimate `hat` and values
/// `projections` at the draws.
fn interval(
    hat: f64,
    projections: &[f64],
    spread: Spread,
    center: Center,
    df: Df,
) -> RewardInterval {
    let gf = projections.len() as f64;
    let mean = projections.iter().sum::<f64>() / gf.max(1.0);
    let ss: f64 = projections.iter().map(|v| (v - mean) * (v - mean)).sum();
    let var = match spread {
        Spread::Jackknife => ss * (gf - 1.0) / gf,
        Spread::Bootstrap => ss / (gf - 1.0).max(1.0),
    };
    let reward = match center {
        Center::Estimate => hat,
        Center::BiasCorrected => gf * hat - (gf - 1.0) * mean,
    };
    let dof = match df {
        Df::Fixed(d) => d,
        Df::Effective(k) => {
            let top = (gf - 1.0).max(1.0);
            let s4: f64 = projections.iter().map(|v| (v - mean).powi(4)).sum();
            if s4 <= 0.0 {
                top
            } else {
                (k * ss * ss / s4).clamp(1.0, top)
            }
        }
    };
    symmetric(reward, var.max(0.0).sqrt(), dof)
}

/// `reps` cluster (pairs) bootstrap estimates: `G` clusters drawn with replacement (resample
/// `b` from its own seeded stream), their rows refitted warm-started at `params`. `None` when
/// a resample cannot be fitted.
fn pairs_bootstrap(
    data: &Dataset,
    params: &Params,
    reps: usize,
    seed: u64,
    options: &FitOptions,
) -> Option<Draws> {
    let ids = data.cluster()?;
    let mut order: Vec<i64> = ids.to_vec();
    order.sort_unstable();
    order.dedup();
    let g = order.len();
    let rows_of =
        |c: usize| -> Vec<usize> { (0..data.n()).filter(|&i| ids[i] == order[c]).collect() };
    let members: Vec<Vec<usize>> = (0..g).map(rows_of).collect();
    let (d1, d2) = (data.d1(), data.d2());
    let fits: Vec<Option<(Params, bool)>> = (0..reps)
        .into_par_iter()
        .map(|b| {
            let mut rng =
                hetreward::sim::rng(seed ^ (b as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
            let rows: Vec<usize> = (0..g)
                .flat_map(|_| members[rng.random_range(0..g)].iter().copied())
                .collect();
            let pick = |v: &[f64], w: usize| -> Vec<f64> {
                rows.iter()
                    .flat_map(|&i| v[i * w..(i + 1) * w].iter().copied())
                    .collect()
            };
            let sample = Dataset::new(
                d1,
                d2,
                pick(data.z(), d1),
                pick(data.psi0(), 1),
                pick(data.psi(), d2),
                pick(data.y(), 1),
                Some(rows.iter().map(|&i| ids[i]).collect()),
            )
            .ok()?;
            let warm = FitOptions {
                init: Init::Explicit(params.clone()),
                ..options.clone()
            };
            let fit = fit(&sample, &warm, &FitControl::default()).ok()?;
            Some((fit.params, fit.report.converged))
        })
        .collect();
    let mut draws = Vec::with_capacity(reps);
    for f in fits {
        draws.push(f?);
    }
    Some(Draws::collect(draws, d1, d2))
}

/// Per method (in `methods` order), per class: hits, count, summed length.
type Tally = Vec<[(usize, usize, f64); 4]>;

fn one_dataset(
    g: usize,
    m: usize,
    tau: f64,
    seed: u64,
    methods: &[&str],
    truth: &[f64],
) -> Option<Tally> {
    let data = annotator_effects(g, m, tau, seed);
    let options = FitOptions {
        threads: 1,
        seed,
        ..FitOptions::default()
    };
    let model = RewardModel::estimate(
        &data,
        &options,
        CovarianceKind::Expected,
        &FitControl::default(),
    )
    .ok()?;
    if !model.diagnostics().mle_finite {
        return None;
    }
    let b = model.params().stacked();
    let clusters = Clusters::of(&data).ok()?;
    let gm1 = (g - 1) as f64;
    let n = data.n() as f64;
    let p = b.len() as f64;
    let cr1 = g as f64 / gm1 * (n - 1.0) / (n - p);
    let want = |name: &str| methods.contains(&name);
    let boot = if want("bootstrap") {
        let estimator = EstimatorOptions {
            fit: FitOptions {
                seed,
                ..options.clone()
            },
            intervals: IntervalOptions {
                method: IntervalMethod::Bootstrap,
                reps: Some(env("B", 400)),
            },
            ..EstimatorOptions::default()
        }
        .check()
        .ok()?;
        Some(estimator.recalibrate(&data, &model, None).ok()?)
    } else {
        None
    };
    // The sandwich (CR0): the model's `cluster` covariance, the spread of the draws
    // `b + H^-1 s_g`.
    let sw = RewardModel::estimate(
        &data,
        &options,
        CovarianceKind::Cluster,
        &FitControl::default(),
    )
    .ok()?;
    // FALLBACK=1 (issue 31): only the datasets where the one-step jackknife is impossible and
    // every coefficient is carried by at least 2 annotators: `auto`'s fallback candidates.
    if std::env::var("FALLBACK").is_ok_and(|v| v == "1") {
        let ids = data.cluster()?;
        let experts: std::collections::BTreeSet<i64> = (0..data.n())
            .filter(|&i| data.psi_row(i)[0] != 0.0)
            .map(|i| ids[i])
            .collect();
        let experts = experts.len();
        if experts < 2 || hetreward::cluster::one_step_obstacle(&data, model.params()).is_none() {
            return None;
        }
    }
    let os = if want("os-t") || want("os-eff") {
        Some(
            one_step_jackknife(&data, model.params(), &clusters)
                .ok()?
                .ok()?,
        )
    } else {
        None
    };
    let jk = if methods.iter().any(|m| m.starts_with("cv3")) {
        Some(jackknife(&data, model.params(), &clusters, &options, None).ok()?)
    } else {
        None
    };
    let pb = if want("pairs-pct") || want("pairs-sd-t") {
        let reps = env("CB", 199);
        Some(pairs_bootstrap(
            &data,
            model.params(),
            reps,
            seed,
            &options,
        )?)
    } else {
        None
    };
    let wald = model.wald();
    let mut tally: Tally = vec![[(0, 0, 0.0); 4]; methods.len()];
    for (class, a) in functionals() {
        let hat: f64 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        let target: f64 = a.iter().zip(truth).map(|(x, y)| x * y).sum();
        let coef = a.iter().position(|&v| v == 1.0).filter(|_| class < 3);
        let product = |mdl: &RewardModel| -> RewardInterval {
            match coef {
                Some(j) if j < 6 => mdl.theta_interval(j, ALPHA),
                Some(j) => mdl.gamma_interval(j - 6, ALPHA),
                None => mdl.reward_interval(&a[..6], ALPHA),
            }
        };
        let proj = |d: &Draws| -> Vec<f64> {
            (0..d.len())
                .map(|g| d.row(g).iter().zip(&a).map(|(x, y)| x * y).sum())
                .collect()
        };
        let sandwich_se = product(&sw).se;
        for (mi, &name) in methods.iter().enumerate() {
            let ci = match name {
                "wald" => product(&wald),
                "bootstrap" => product(boot.as_ref()?),
                "cr0" => symmetric(hat, sandwich_se, f64::INFINITY),
                "cr1-t" => symmetric(hat, sandwich_se * cr1.sqrt(), gm1),
                "os-t" | "os-eff" | "cv3-t" | "cv3-eff" | "cv3-bc" | "cv3-bc-eff" => {
                    let d = if name.starts_with("os") { &os } else { &jk };
                    let df = if name.ends_with("eff") {
                        Df::Effective(env("KURT", 3.0))
                    } else {
                        Df::Fixed(gm1)
                    };
                    let center = if name.starts_with("cv3-bc") {
                        Center::BiasCorrected
                    } else {
                        Center::Estimate
                    };
                    interval(hat, &proj(d.as_ref()?), Spread::Jackknife, center, df)
                }
                "pairs-sd-t" => interval(
                    hat,
                    &proj(pb.as_ref()?),
                    Spread::Bootstrap,
                    Center::Estimate,
                    Df::Fixed(gm1),
                ),
                "pairs-pct" => {
                    let mut v = proj(pb.as_ref()?);
                    v.sort_unstable_by(f64::total_cmp);
                    RewardInterval {
                        reward: hat,
                        se: 0.0,
                        lower: quantile_sorted(&v, ALPHA / 2.0),
                        upper: quantile_sorted(&v, 1.0 - ALPHA / 2.0),
                    }
                }
                other => panic!("unknown method {other}"),
            };
            let t = &mut tally[mi][class];
            t.0 += usize::from(ci.lower <= target && target <= ci.upper);
            t.1 += 1;
            t.2 += ci.upper - ci.lower;
        }
    }
    Some(tally)
}

fn run_design(g: usize, m: usize, tau: f64, reps: usize, methods: &[&str], out: &mut String) {
    let started = std::time::Instant::now();
    let truth = limit(tau).stacked();
    let tau10 = (tau * 10.0).round() as u64;
    let results: Vec<Option<Tally>> = (0..reps)
        .into_par_iter()
        .map(|r| {
            let seed = 20_000_000 + 1_000_000 * tau10 + 1_000 * g as u64 + r as u64;
            one_dataset(g, m, tau, seed, methods, &truth)
        })
        .collect();
    let ok: Vec<&Tally> = results.iter().flatten().collect();
    let datasets = ok.len();
    let mut sum: Tally = vec![[(0, 0, 0.0); 4]; methods.len()];
    for t in &ok {
        for (acc, row) in sum.iter_mut().zip(t.iter()) {
            for c in 0..4 {
                acc[c].0 += row[c].0;
                acc[c].1 += row[c].1;
                acc[c].2 += row[c].2;
            }
        }
    }
    let _ = writeln!(
        out,
        "\n### G = {g} x {m}, tau = {tau}: {datasets} datasets ({} without a finite MLE left out), \
         limit {:?}, {:.0} s\n",
        reps - datasets,
        truth.iter().map(|v| (v * 1e4).round() / 1e4).collect::<Vec<_>>(),
        started.elapsed().as_secs_f64()
    );
    let _ = writeln!(
        out,
        "| method | {} | length vs Wald (theta / gamma_e / gamma_c / rewards) |",
        CLASSES.join(" | ")
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|");
    let wald_len: Vec<f64> = (0..4).map(|c| sum[0][c].2 / sum[0][c].1 as f64).collect();
    for (mi, name) in methods.iter().enumerate() {
        let mut line = format!("| {name} |");
        for &(hits, count, _) in &sum[mi] {
            let cov = hits as f64 / count.max(1) as f64;
            // MC SE per quantity (pooled classes share datasets: the per-dataset SE).
            let se = (cov * (1.0 - cov) / datasets.max(1) as f64).sqrt();
            let _ = write!(line, " {cov:.3} ({se:.3}) |");
        }
        let lens: Vec<String> = (0..4)
            .map(|c| format!("{:.2}", sum[mi][c].2 / sum[mi][c].1 as f64 / wald_len[c]))
            .collect();
        let _ = write!(line, " {} |", lens.join(" / "));
        let _ = writeln!(out, "{line}");
    }
    print!("{out}");
}

fn main() {
    let methods_env = std::env::var("METHODS").unwrap_or_default();
    let mut methods: Vec<&str> = if methods_env.is_empty() {
        ALL_METHODS.to_vec()
    } else {
        methods_env.split(',').collect()
    };
    methods.retain(|m| *m != "wald");
    methods.insert(0, "wald");
    for m in &methods {
        assert!(
            ALL_METHODS.contains(m),
            "unknown method {m}; known: {ALL_METHODS:?}"
        );
    }
    let mut out = String::new();
    if env("FULL", 0) == 1 {
        let reps = env("R", 400);
        for (g, m) in [(40, 40), (300, 10)] {
            for tau in [0.0, 0.3, 0.6] {
                let mut part = String::new();
                run_design(g, m, tau, reps, &methods, &mut part);
                out.push_str(&part);
                let _ = std::fs::write("target/cluster-coverage.md", &out);
            }
        }
    } else {
        let (g, m, tau) = (env("G", 40), env("M", 40), env("TAU", 0.6));
        run_design(g, m, tau, env("R", 100), &methods, &mut out);
    }
}
