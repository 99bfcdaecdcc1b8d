//! Cost of the cluster-aware intervals against one plain fit, measured in the same run
//! (issue 20, BENCHMARKS.md): G = 1,500 annotators x 20 comparisons (n = 30,000), d1 = 64,
//! d2 = 10 (`sim::high_dimensional`'s design with annotator ids `i / 20`).
//!
//! ```text
//! cargo run --release --example cluster_cost            # one-step jackknife (auto's pick)
//! JACKKNIFE=1 cargo run --release --example cluster_cost  # also the exact refits (slow)
//! ```
//!
//! `THREADS` (default 0 = all cores) sizes the pool; `REPEATS` (default 3) the timing runs, the
//! median of which is reported.
use hetreward::calibrate::{IntervalMethod, IntervalOptions};
use hetreward::estimator::EstimatorOptions;
use hetreward::fit::{FitControl, FitOptions};
use hetreward::sim::high_dimensional;
use hetreward::Dataset;
use std::time::Instant;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let (g, m, d1, d2) = (1500, 20, 64, 10);
    let (base, _) = high_dimensional(g * m, d1, d2, 1);
    let data = Dataset::new(
        d1,
        d2,
        base.z().to_vec(),
        base.psi0().to_vec(),
        base.psi().to_vec(),
        base.y().to_vec(),
        Some((0..g * m).map(|i| (i / m) as i64).collect()),
    )
    .unwrap();
    let options = FitOptions {
        threads: env("THREADS", 0),
        ..FitOptions::default()
    };
    let time = |method: IntervalMethod| {
        let mut secs: Vec<f64> = (0..env("REPEATS", 3))
            .map(|_| {
                let t = Instant::now();
                let model = EstimatorOptions {
                    fit: options.clone(),
                    intervals: IntervalOptions { method, reps: None },
                    ..EstimatorOptions::default()
                }
                .check()
                .unwrap()
                .estimate(&data, &FitControl::default())
                .unwrap();
                assert!(model.report().converged);
                t.elapsed().as_secs_f64()
            })
            .collect();
        secs.sort_by(f64::total_cmp);
        secs[secs.len() / 2]
    };
    let plain = time(IntervalMethod::Wald);
    println!("G = {g}, n = {}, d1 = {d1}, d2 = {d2}", g * m);
    println!("plain fit (wald): {plain:.3} s");
    let mut methods = vec![IntervalMethod::ClusterOneStep];
    if env("JACKKNIFE", 0) == 1 {
        methods.push(IntervalMethod::ClusterJackknife);
    }
    for method in methods {
        let t = time(method);
        println!(
            "fit + {}: {t:.3} s = {:.2}x the plain fit",
            method.name(),
            t / plain
        );
    }
}
