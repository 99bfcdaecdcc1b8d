//! Coverage of the cluster-aware intervals through the product's path (issue 20): models fitted
//! with `--intervals auto` on data with annotator ids (auto picks the one-step cluster
//! jackknife), against the paper's Wald intervals on the same datasets, in the annotator design
//! of `sim::annotator_effects` (G = 40 annotators x 40 comparisons, rationality SD tau = 0.6
//! beyond the covariates; target: the working model's limit, the fit of 400,000 comparisons).
//!
//! The CI run (this test, ~30 s on 2 cores) uses 80 datasets and a band widened by their
//! Monte-Carlo error, [0.88, 0.995], for gamma_k and theta_j; it also checks that the band can
//! fail: Wald's gamma coverage must fall below it. The full table (every method, four
//! designs and tau = 0, 400 datasets each, MC SEs and lengths) is one command:
//! `FULL=1 cargo run --release --example cluster_coverage` (docs/intervals.md, "Annotators").

use hetreward::calibrate::{IntervalMethod, IntervalOptions};
use hetreward::estimator::EstimatorOptions;
use hetreward::fit::{fit, FitControl, FitOptions};
use hetreward::sim::annotator_effects;
use rayon::prelude::*;

#[test]
fn auto_with_annotator_ids_covers_where_wald_does_not() {
    let (g, m, tau, reps) = (40, 40, 0.6, 80u64);
    let limit = fit(
        &annotator_effects(400_000, 1, tau, 7_777),
        &FitOptions::default(),
        &FitControl::default(),
    )
    .unwrap()
    .params;
    // Per dataset: [theta hits, gamma hits] for [wald, auto].
    let hits: Vec<[[usize; 2]; 2]> = (0..reps)
        .into_par_iter()
        .map(|r| {
            let data = annotator_effects(g, m, tau, 20_000_000 + 6_000_000 + 1_000 * 40 + r);
            let options = FitOptions {
                threads: 1,
                ..FitOptions::default()
            };
            // Auto picks the one-step jackknife here, which draws nothing: the fit's seed
            // (random starts) stays the default.
            let model = EstimatorOptions {
                fit: options,
                intervals: IntervalOptions {
                    method: IntervalMethod::Auto,
                    reps: None,
                },
                ..EstimatorOptions::default()
            }
            .check()
            .unwrap()
            .estimate(&data, &FitControl::default())
            .unwrap();
            assert_eq!(model.calibration().method(), IntervalMethod::ClusterOneStep);
            let mut out = [[0usize; 2]; 2];
            for (k, m) in [model.wald(), model].iter().enumerate() {
                for j in 0..6 {
                    let ci = m.theta_interval(j, 0.05);
                    out[k][0] +=
                        usize::from(ci.lower <= limit.theta[j] && limit.theta[j] <= ci.upper);
                }
                for j in 0..2 {
                    let ci = m.gamma_interval(j, 0.05);
                    out[k][1] +=
                        usize::from(ci.lower <= limit.gamma[j] && limit.gamma[j] <= ci.upper);
                }
            }
            out
        })
        .collect();
    let cov = |k: usize, c: usize, per: f64| {
        hits.iter().map(|h| h[k][c]).sum::<usize>() as f64 / (per * reps as f64)
    };
    let (wald_theta, wald_gamma) = (cov(0, 0, 6.0), cov(0, 1, 2.0));
    let (auto_theta, auto_gamma) = (cov(1, 0, 6.0), cov(1, 1, 2.0));
    println!("wald theta {wald_theta:.3} gamma {wald_gamma:.3}; auto (cluster-onestep) theta {auto_theta:.3} gamma {auto_gamma:.3}");
    for (what, c) in [("theta", auto_theta), ("gamma", auto_gamma)] {
        assert!((0.88..=0.995).contains(&c), "auto {what} covers {c}");
    }
    assert!(
        wald_gamma < 0.88,
        "the band must be able to fail: Wald gamma {wald_gamma}"
    );
}
