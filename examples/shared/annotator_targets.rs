//! What the annotator-design coverage studies (`cluster_coverage`, `small_teams`) cover and
//! the values their intervals must contain: the quantities (theta's six coefficients, the two
//! gamma coefficients, the rewards of three fixed answers), in four classes, and the working
//! model's limit at a given annotator random-effect SD `tau`. Included by each example with
//! `#[path]`.

use hetreward::fit::{fit, FitControl, FitOptions};
use hetreward::sim::{annotator_effects, ANNOTATOR_GAMMA, ANNOTATOR_THETA};
use hetreward::Params;

/// The intervals' level: 95%.
pub const ALPHA: f64 = 0.05;

/// Fixed answers whose rewards are covered.
pub const ANSWERS: [[f64; 6]; 3] = [
    [0.5, 0.5, 0.5, 0.5, 0.5, 0.5],
    [1.0, 0.5, 0.0, -0.5, 0.0, 0.25],
    [-0.3, 0.8, 0.4, 0.1, -0.6, 0.2],
];

/// Quantity classes: theta (6 pooled), gamma expert, gamma continuous, rewards (3 pooled).
pub const CLASSES: [&str; 4] = ["theta_j", "gamma_expert", "gamma_cont", "rewards"];

/// The value of environment variable `name`, or `default` when it is unset or does not parse.
pub fn env<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The covered functionals `a` (length 8, over the stacked `(theta, gamma)`) with their class
/// (an index into [`CLASSES`]).
pub fn functionals() -> Vec<(usize, Vec<f64>)> {
    let mut out = Vec::new();
    for j in 0..6 {
        let mut a = vec![0.0; 8];
        a[j] = 1.0;
        out.push((0, a));
    }
    for k in 0..2 {
        let mut a = vec![0.0; 8];
        a[6 + k] = 1.0;
        out.push((1 + k, a));
    }
    for phi in ANSWERS {
        let mut a = phi.to_vec();
        a.extend([0.0, 0.0]);
        out.push((3, a));
    }
    out
}

/// The working model's limit at this tau: the true parameters at `tau = 0` (the model is
/// well specified); with `tau > 0` the fit of one sample of `LIMIT_N` (default 1,000,000)
/// comparisons, each by its own annotator (`annotator_effects(LIMIT_N, 1, tau, 7_777)`).
/// The annotators' sizes do not move it: their covariates and effects are drawn independently
/// of how many comparisons they make.
pub fn limit(tau: f64) -> Params {
    if tau == 0.0 {
        return Params {
            theta: ANNOTATOR_THETA.to_vec(),
            gamma: ANNOTATOR_GAMMA.to_vec(),
        };
    }
    let n = env("LIMIT_N", 1_000_000usize);
    let data = annotator_effects(n, 1, tau, 7_777);
    fit(&data, &FitOptions::default(), &FitControl::default())
        .expect("limit fit")
        .params
}
