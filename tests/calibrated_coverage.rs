//! Coverage of the calibrated 95% intervals (issue 11), with the paper's Wald intervals
//! measured beside them on the same datasets:
//!
//! * the paper's §6.1 uniform design at n = 200 and n = 600: rewards at the paper's four
//!   points (Table 2), Wald vs the parametric percentile bootstrap (B = 400);
//! * the paper's LLM application shape (`sim::high_dimensional`, d1/n = 0.06, d2 = 4):
//!   theta_j, rewards of new answers and gamma_k, Wald vs the resized bootstrap (B = 100).
//!
//! The default run is sized for CI (a few minutes on 2 cores): fewer replications and, for the
//! high-dimensional design, n = 1000 with d1 = 60 (the same d1/n); its bands are widened by the
//! Monte-Carlo error of its size. `HETREWARD_COVERAGE_FULL=1` runs the sizes (1,000
//! datasets per n; n = 3400, d1 = 205 with 300 replications, twice the minimum: at 150
//! the band's +-0.015 is only +-1.7 Monte-Carlo SEs for gamma's 4 coefficients, so an exact
//! method fails it one time in ten) against the band [0.935, 0.965]. Either way the
//! test also checks that the band can fail: the same intervals shrunk to 0.8 of their
//! half-widths (SEs x 0.8) must fall outside it.
//!
//! `HETREWARD_COVERAGE_HIGHDIM_REPS=N` overrides the number of high-dimensional replications
//! (for a quicker measurement; the bands are meant for the sizes above).
//!
//! Datasets whose fit does not reach a finite optimum are counted separately and left out.
//! The table is printed (`--nocapture`) and written to `target/calibrated-coverage-report.md`.

use hetreward::calibrate::{IntervalMethod, IntervalOptions};
use hetreward::estimator::EstimatorOptions;
use hetreward::fit::{FitControl, FitOptions};
use hetreward::fitted::RewardInterval;
use hetreward::model::dot;
use hetreward::sim::{
    high_dimensional, paper_phi, paper_simulation, rng, ActionDesign, PAPER_THETA,
};
use hetreward::{Dataset, RewardModel};
use rand::Rng;
use rand_distr::StandardNormal;
use rayon::prelude::*;
use std::fmt::Write;

const POINTS: [(f64, f64); 4] = [(0.5, 0.25), (0.5, 0.5), (1.0, 0.25), (1.0, 0.5)];
/// New answers scored per high-dimensional replication.
const NEW_ANSWERS: usize = 10;
/// The scale of the power check.
const SHRUNK: f64 = 0.8;

fn full() -> bool {
    std::env::var("HETREWARD_COVERAGE_FULL").is_ok_and(|v| v == "1")
}

/// The band asserted: the in the full run; in the default run widened by the
/// Monte-Carlo error of its smaller size.
fn band() -> (f64, f64) {
    if full() {
        (0.935, 0.965)
    } else {
        (0.92, 0.975)
    }
}

/// Hits and interval lengths of one class of quantities under one method.
#[derive(Clone, Copy, Default)]
struct Tally {
    count: f64,
    hits: f64,
    hits_shrunk: f64,
    length: f64,
}

impl Tally {
    fn add(&mut self, ci: &RewardInterval, truth: f64) {
        self.count += 1.0;
        self.hits += f64::from(u8::from(ci.lower <= truth && truth <= ci.upper));
        let lo = ci.reward - SHRUNK * (ci.reward - ci.lower);
        let hi = ci.reward + SHRUNK * (ci.upper - ci.reward);
        self.hits_shrunk += f64::from(u8::from(lo <= truth && truth <= hi));
        self.length += ci.upper - ci.lower;
    }
    fn merge(&mut self, o: &Tally) {
        self.count += o.count;
        self.hits += o.hits;
        self.hits_shrunk += o.hits_shrunk;
        self.length += o.length;
    }
    fn coverage(&self) -> f64 {
        self.hits / self.count
    }
    fn coverage_shrunk(&self) -> f64 {
        self.hits_shrunk / self.count
    }
    fn mean_length(&self) -> f64 {
        self.length / self.count
    }
}

/// Tallies of one replication: `[class][0 = wald, 1 = calibrated]`.
type Record = Vec<[Tally; 2]>;

fn fit(data: &Dataset, method: IntervalMethod, seed: u64) -> Option<RewardModel> {
    let options = FitOptions {
        threads: 1,
        seed,
        ..FitOptions::default()
    };
    // One seed: the fit's random starts and the bootstrap's label draws.
    let model = EstimatorOptions {
        fit: options,
        intervals: IntervalOptions { method, reps: None },
        ..EstimatorOptions::default()
    }
    .check()
    .ok()?
    .estimate(data, &FitControl::default())
    .ok()?;
    model.diagnostics().mle_finite.then_some(model)
}

/// One dataset of the paper's design: reward coverage at the four points (one class).
fn paper_replication(n: usize, seed: u64) -> Option<Record> {
    let data = paper_simulation(n, ActionDesign::Uniform, seed);
    let model = fit(&data, IntervalMethod::Bootstrap, seed)?;
    let wald = model.wald();
    let mut t = [Tally::default(); 2];
    for &(s, a) in &POINTS {
        let phi = paper_phi(s, a);
        let truth = dot(&PAPER_THETA, &phi);
        t[0].add(&wald.score(&phi, 0.05).unwrap(), truth);
        t[1].add(&model.score(&phi, 0.05).unwrap(), truth);
    }
    Some(vec![t])
}

/// One dataset of the high-dimensional design: classes theta_j, new rewards, gamma_k.
fn high_dim_replication(n: usize, d1: usize, seed: u64) -> Option<Record> {
    let (data, truth) = high_dimensional(n, d1, 4, seed);
    let model = fit(&data, IntervalMethod::Resized, seed)?;
    let wald = model.wald();
    let mut rec = vec![[Tally::default(); 2]; 3];
    for j in 0..d1 {
        rec[0][0].add(&wald.theta_interval(j, 0.05), truth.theta[j]);
        rec[0][1].add(&model.theta_interval(j, 0.05), truth.theta[j]);
    }
    let mut answers = rng(seed ^ 0xA5A5);
    for _ in 0..NEW_ANSWERS {
        let phi: Vec<f64> = (0..d1).map(|_| answers.sample(StandardNormal)).collect();
        let r = dot(&truth.theta, &phi);
        rec[1][0].add(&wald.score(&phi, 0.05).unwrap(), r);
        rec[1][1].add(&model.score(&phi, 0.05).unwrap(), r);
    }
    for k in 0..4 {
        rec[2][0].add(&wald.gamma_interval(k, 0.05), truth.gamma[k]);
        rec[2][1].add(&model.gamma_interval(k, 0.05), truth.gamma[k]);
    }
    Some(rec)
}

/// Runs `reps` replications and sums their tallies; returns them and the failed count.
fn study(
    reps: usize,
    classes: usize,
    run: impl Fn(u64) -> Option<Record> + Sync + Send,
) -> (Record, usize) {
    let recs: Vec<Option<Record>> = (0..reps as u64).into_par_iter().map(run).collect();
    let mut total = vec![[Tally::default(); 2]; classes];
    for rec in recs.iter().flatten() {
        for (t, r) in total.iter_mut().zip(rec) {
            t[0].merge(&r[0]);
            t[1].merge(&r[1]);
        }
    }
    let failed = recs.iter().filter(|r| r.is_none()).count();
    (total, failed)
}

struct Row {
    design: String,
    quantity: &'static str,
    method: &'static str,
    failed: usize,
    wald: Tally,
    calibrated: Tally,
}

fn table(rows: &[Row]) -> String {
    let mut s = String::new();
    let (lo, hi) = band();
    writeln!(
        s,
        "# Coverage of 95% intervals: Wald vs calibrated ({} run; band [{lo}, {hi}])\n",
        if full() { "full" } else { "default CI" }
    )
    .unwrap();
    writeln!(s, "| design | quantity | method | datasets without finite MLE | Wald coverage | Wald length | calibrated coverage | calibrated length | calibrated, SEs x 0.8 |").unwrap();
    writeln!(s, "{}|", "|---".repeat(9)).unwrap();
    for r in rows {
        writeln!(
            s,
            "| {} | {} | {} | {} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} |",
            r.design,
            r.quantity,
            r.method,
            r.failed,
            r.wald.coverage(),
            r.wald.mean_length(),
            r.calibrated.coverage(),
            r.calibrated.mean_length(),
            r.calibrated.coverage_shrunk()
        )
        .unwrap();
    }
    s
}

#[test]
fn calibrated_intervals_cover_at_their_nominal_rate() {
    let paper_reps = if full() { 1000 } else { 250 };
    let (hd_n, hd_d1, hd_reps) = if full() {
        (3400, 205, 300)
    } else {
        (1000, 60, 60)
    };
    let hd_reps = std::env::var("HETREWARD_COVERAGE_HIGHDIM_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(hd_reps);
    let mut rows = Vec::new();
    for n in [200usize, 600] {
        let (t, failed) = study(paper_reps, 1, |r| {
            paper_replication(n, 91_000_000 + 10_000 * n as u64 + r)
        });
        rows.push(Row {
            design: format!("paper §6.1 uniform, n = {n}, {paper_reps} datasets"),
            quantity: "rewards (4 points)",
            method: "bootstrap B = 400",
            failed,
            wald: t[0][0],
            calibrated: t[0][1],
        });
    }
    let (t, failed) = study(hd_reps, 3, |r| {
        high_dim_replication(hd_n, hd_d1, 92_000_000 + r)
    });
    for (c, quantity) in ["theta_j", "rewards of new answers", "gamma_k"]
        .into_iter()
        .enumerate()
    {
        rows.push(Row {
            design: format!("high-dim n = {hd_n}, d1 = {hd_d1}, d2 = 4, {hd_reps} datasets"),
            quantity,
            method: "resized B = 100",
            failed,
            wald: t[c][0],
            calibrated: t[c][1],
        });
    }
    let text = table(&rows);
    eprintln!("{text}");
    let target = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target/calibrated-coverage-report.md");
    let _ = std::fs::write(target, &text);
    let (lo, hi) = band();
    for r in &rows {
        let label = format!("{}: {} ({})", r.design, r.quantity, r.method);
        let cov = r.calibrated.coverage();
        assert!(
            lo <= cov && cov <= hi,
            "{label}: coverage {cov:.3} outside [{lo}, {hi}]"
        );
        // The check has power: the same intervals with SEs x 0.8 fail it.
        let shrunk = r.calibrated.coverage_shrunk();
        assert!(shrunk < lo, "{label}: SEs x 0.8 still cover {shrunk:.3}");
        assert!(
            r.failed * 20 <= paper_reps.max(hd_reps),
            "{label}: {} failed fits",
            r.failed
        );
    }
}
