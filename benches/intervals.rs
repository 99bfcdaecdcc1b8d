//! Cost of the interval methods (issue 11; results in BENCHMARKS.md).
//!
//! ```text
//! cargo bench --bench intervals -- [--threads T] [--reps R] [--paper | --paper-d1 D] [--smoke]
//! ```
//!
//! * time per fit (fit + covariance + the method's refits) with each method, against one
//!   plain (Wald) fit of the same data measured in the same run, at the paper's §6.1 design
//!   (n = 200) and at the LLM application's shape scaled down (n = 3400, d1 = 205, d2 = 4);
//!   with `--paper`, plain, resized and bootstrap at paper scale (n = 33,845, d1 = 2048,
//!   d2 = 38, `sim::high_dimensional`, z in f64); `--paper-d1 D` the same shape at d1 = D
//!   (n = 33,845 D / 2048);
//! * pBoN of 128 candidates, 1 thread, with each method's model: Wald (`d1^2 / 2` per answer,
//!   pruned), bootstrap draws (`B d1` per answer, B = 400) and resized (B = 100), at d1 = 205
//!   and d1 = 2048.
//!
//! `--paper-only` skips the small designs and pBoN.
//!
//! A measurement tool, not a test.

use hetreward::calibrate::{Calibration, IntervalMethod, IntervalOptions, Parts};
use hetreward::covariance::CovarianceKind;
use hetreward::estimator::EstimatorOptions;
use hetreward::fit::{FitControl, FitOptions, FitReport, SolverKind, Termination};
use hetreward::select::{select_best, Policy};
use hetreward::sim::{high_dimensional, paper_simulation, rng, ActionDesign};
use hetreward::{Dataset, Params, RewardModel};
use nalgebra::DMatrix;
use rand::Rng;
use rand_distr::StandardNormal;
use std::time::Instant;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn fit(
    data: &Dataset,
    method: IntervalMethod,
    reps: Option<usize>,
    threads: usize,
) -> (f64, RewardModel) {
    let estimator = EstimatorOptions {
        fit: FitOptions {
            threads,
            seed: 1,
            ..FitOptions::default()
        },
        intervals: IntervalOptions { method, reps },
        ..EstimatorOptions::default()
    }
    .check()
    .expect("options");
    let t = Instant::now();
    let m = estimator
        .estimate(data, &FitControl::default())
        .expect("fit");
    (t.elapsed().as_secs_f64(), m)
}

/// Times each method on `data` (`reps` repetitions, median) and prints ratios to Wald.
fn fit_costs(
    label: &str,
    data: &Dataset,
    methods: &[(IntervalMethod, Option<usize>)],
    reps: usize,
    threads: usize,
) {
    let mut wald = 0.0;
    for &(method, b) in methods {
        let runs: Vec<(f64, RewardModel)> =
            (0..reps).map(|_| fit(data, method, b, threads)).collect();
        let t = median(runs.iter().map(|r| r.0).collect());
        let model = &runs[runs.len() - 1].1;
        if method == IntervalMethod::Wald {
            wald = t;
        }
        let c = model.calibration();
        // The draws' mean spread per coordinate (what the intervals' widths follow): a change
        // of the refits' solver must leave it and alpha_hat in place.
        let d1 = data.d1();
        let spread = if c.reps() > 0 {
            (0..d1)
                .map(|j| {
                    let col: Vec<f64> = c
                        .theta_draws()
                        .chunks_exact(d1)
                        .map(|r| f64::from(r[j]))
                        .collect();
                    let m = col.iter().sum::<f64>() / col.len() as f64;
                    (col.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (col.len() - 1) as f64)
                        .sqrt()
                })
                .sum::<f64>()
                / d1 as f64
        } else {
            0.0
        };
        println!(
            "{label} | {} | B = {} | {:.4} s | {:.1}x Wald | diverged {} | alpha_hat {:.5} | \
             mean SD* {:.5}",
            method.name(),
            c.reps(),
            t,
            t / wald,
            c.diverged(),
            c.alpha_hat(),
            spread
        );
    }
}

/// A model of dimension d1 (identity-scaled covariance) with random draws of the method.
fn synthetic_model(d1: usize, method: IntervalMethod, b: usize) -> RewardModel {
    let mut r = rng(7);
    let theta: Vec<f64> = (0..d1)
        .map(|_| r.sample::<f64, _>(StandardNormal) / (d1 as f64).sqrt())
        .collect();
    let report = FitReport {
        solver: SolverKind::Newton,
        iterations: 1,
        total_iterations: 1,
        starts: 1,
        converged: true,
        termination: Termination::Converged,
        grad_norm: 0.0,
        neg_loglik: 0.5,
        seconds: 0.0,
        tol: 1e-8,
    };
    let l = DMatrix::<f64>::identity(d1, d1) * 0.01;
    let model = RewardModel::from_parts(
        Params {
            theta: theta.clone(),
            gamma: vec![],
        },
        33845,
        CovarianceKind::Expected,
        report,
        l,
        DMatrix::zeros(0, 0),
    )
    .unwrap();
    if method == IntervalMethod::Wald {
        return model;
    }
    let draws: Vec<f32> = (0..b)
        .flat_map(|_| {
            theta
                .iter()
                .map(|t| (t + 0.01 * r.sample::<f64, _>(StandardNormal)) as f32)
                .collect::<Vec<_>>()
        })
        .collect();
    let cal = Calibration::from_parts(
        Parts {
            requested: method,
            method,
            reps: b,
            seed: 1,
            diverged: 0,
            // Only the resized bootstrap estimates an inflation; the others store 1.
            figures: if method == IntervalMethod::Resized {
                [1.0, 1.05, 1.0]
            } else {
                [1.0; 3]
            },
            gamma_bias: vec![],
            theta_draws: draws,
            gamma_draws: vec![],
            unbounded: Vec::new(),
        },
        d1,
        0,
    )
    .unwrap();
    model.with_calibration(cal).unwrap()
}

fn pbon_costs(d1: usize) {
    let mut r = rng(3);
    let phis: Vec<f32> = (0..128 * d1)
        .map(|_| r.sample::<f32, _>(StandardNormal))
        .collect();
    for (method, b) in [
        (IntervalMethod::Wald, 0),
        (IntervalMethod::Bootstrap, 400),
        (IntervalMethod::Resized, 100),
    ] {
        let model = synthetic_model(d1, method, b);
        let _ = select_best(&model, &phis, None, 0.05, Policy::Pbon).unwrap();
        let times: Vec<f64> = (0..30)
            .map(|_| {
                let t = Instant::now();
                let best = select_best(&model, &phis, None, 0.05, Policy::Pbon).unwrap();
                std::hint::black_box(best);
                t.elapsed().as_secs_f64()
            })
            .collect();
        println!(
            "pBoN-128 d1 = {d1} | {} B = {b} | {:.3} ms (1 thread, median of 30)",
            method.name(),
            1e3 * median(times)
        );
    }
}

/// The small designs and pBoN (skipped with `--paper-only`).
fn small_costs(smoke: bool, reps: usize, threads: usize) {
    let small = paper_simulation(200, ActionDesign::Uniform, 5);
    fit_costs(
        "paper §6.1 n = 200",
        &small,
        &[
            (IntervalMethod::Wald, None),
            (IntervalMethod::Bootstrap, None),
            (IntervalMethod::Resized, None),
            (IntervalMethod::Auto, None),
        ],
        reps.max(5),
        threads,
    );
    let (n, d1) = if smoke { (1000, 60) } else { (3400, 205) };
    let (hd, _) = high_dimensional(n, d1, 4, 5);
    fit_costs(
        &format!("high-dim n = {n}, d1 = {d1}, d2 = 4"),
        &hd,
        &[
            (IntervalMethod::Wald, None),
            (IntervalMethod::Resized, None),
            (IntervalMethod::Bootstrap, None),
        ],
        1,
        threads,
    );
    pbon_costs(205);
    pbon_costs(2048);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let flag = |f: &str| args.iter().any(|a| a == f);
    let value = |f: &str, d: usize| {
        args.iter()
            .position(|a| a == f)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let threads = value("--threads", 2);
    let reps = value("--reps", 3);
    let smoke = flag("--smoke");
    println!("# interval methods: time per fit (median of {reps}), {threads} threads");
    if !flag("--paper-only") {
        small_costs(smoke, reps, threads);
    }
    // `--paper-d1 D`: the paper's shape (n / d1 and d2 as at paper scale) at d1 = D.
    let paper_d1 = value("--paper-d1", if flag("--paper") { 2048 } else { 0 });
    if paper_d1 > 0 {
        let n = 33845 * paper_d1 / 2048;
        let (big, _) = high_dimensional(n, paper_d1, 38, 5);
        fit_costs(
            &format!("paper scale n = {n}, d1 = {paper_d1}, d2 = 38"),
            &big,
            &[
                (IntervalMethod::Wald, None),
                (IntervalMethod::Resized, None),
                (IntervalMethod::Bootstrap, None),
            ],
            1,
            threads,
        );
    }
}
