//! Coverage of the profile-likelihood intervals of the five coefficients against Wald's, on
//! the paper's §6.1 uniform design (the seeds of `tests/calibrated_coverage.rs`):
//!
//! ```text
//! N=200 R=300 cargo run --release --example profile_coverage
//! ```
//!
//! Datasets without a finite MLE are left out; unbounded intervals (one side never crosses
//! the threshold) count as covering when the truth is on their bounded side's inside.
use hetreward::covariance::CovarianceKind;
use hetreward::fit::{FitControl, FitOptions};
use hetreward::profile::coefficient_interval;
use hetreward::sim::{paper_simulation, ActionDesign, PAPER_GAMMA, PAPER_THETA};
use hetreward::RewardModel;
use rayon::prelude::*;

/// Per dataset: theta hits `[wald, profile]`, gamma hits `[wald, profile]`, constrained fits,
/// unbounded intervals.
type Tally = ([usize; 2], [usize; 2], usize, usize);

fn main() {
    let n: usize = std::env::var("N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let reps: u64 = std::env::var("R")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let truth: Vec<f64> = PAPER_THETA
        .iter()
        .chain(PAPER_GAMMA.iter())
        .copied()
        .collect();
    let t = std::time::Instant::now();
    let res: Vec<Option<Tally>> = (0..reps)
        .into_par_iter()
        .map(|r| {
            let seed = 91_000_000 + 10_000 * n as u64 + r;
            let data = paper_simulation(n, ActionDesign::Uniform, seed);
            let options = FitOptions {
                threads: 1,
                seed,
                ..FitOptions::default()
            };
            let m = RewardModel::estimate(
                &data,
                &options,
                CovarianceKind::Expected,
                &FitControl::default(),
            )
            .ok()?;
            if !m.diagnostics().mle_finite {
                return None;
            }
            let (mut th, mut ga) = ([0usize; 2], [0usize; 2]);
            let mut fits = 0;
            let mut unbounded = 0;
            for (c, &tv) in truth.iter().enumerate() {
                let w = if c < 3 {
                    m.theta_interval(c, 0.05)
                } else {
                    m.gamma_interval(c - 3, 0.05)
                };
                let p = coefficient_interval(&data, m.params(), c, 0.05).ok()?;
                fits += p.fits;
                unbounded += usize::from(!p.lower.is_finite() || !p.upper.is_finite());
                let hw = usize::from(w.lower <= tv && tv <= w.upper);
                let hp = usize::from(p.lower <= tv && tv <= p.upper);
                let acc = if c < 3 { &mut th } else { &mut ga };
                acc[0] += hw;
                acc[1] += hp;
            }
            Some((th, ga, fits, unbounded))
        })
        .collect();
    let ok: Vec<_> = res.iter().flatten().collect();
    let k = ok.len() as f64;
    println!("n={n} datasets={} theta wald={:.3} profile={:.3} | gamma wald={:.3} profile={:.3} | fits/interval={:.1} unbounded intervals={} | {:.1}s",
        ok.len(),
        ok.iter().map(|r| r.0[0]).sum::<usize>() as f64 / (3.0 * k),
        ok.iter().map(|r| r.0[1]).sum::<usize>() as f64 / (3.0 * k),
        ok.iter().map(|r| r.1[0]).sum::<usize>() as f64 / (2.0 * k),
        ok.iter().map(|r| r.1[1]).sum::<usize>() as f64 / (2.0 * k),
        ok.iter().map(|r| r.2).sum::<usize>() as f64 / (5.0 * k),
        ok.iter().map(|r| r.3).sum::<usize>(),
        t.elapsed().as_secs_f64());
}
