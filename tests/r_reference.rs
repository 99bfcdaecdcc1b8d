//! An outside reference for the cluster-robust variances: R's `sandwich` and `clubSandwich`
//! (tests/r/cluster_vcov.R) on the homogeneous special case of the model — no gamma,
//! `psi0 = 1`: a logistic regression without intercept, `glm(y ~ 0 + z, family = binomial)`,
//! whose observed Hessian is its expected information (canonical link).
//!
//! Three fixtures (balanced annotators, lognormal sizes, one dominant annotator), each with an
//! annotator effect in the utility so that the clusters matter. On each, to 1e-8 relative:
//!
//! * CR0 — the `cluster` covariance kind — is `vcovCL(type = "HC0", cadjust = FALSE)` and
//!   `vcovCR(type = "CR0")`;
//! * CR1 — the heterogeneity diagnostic's cluster-robust variance, `G/(G-1) (n-1)/(n-p)` CR0 —
//!   is `vcovCL(type = "HC1")` (whose `cadjust` is `G/(G-1)`) and `vcovCR(type = "CR1S")`
//!   (clubSandwich's `CR1` is `G/(G-1)` alone);
//! * the one-step jackknife's steps `delta_g = b_(g) - b = (H - H_g)^-1 s_g` (in `f64`) give
//!   `sum_g delta_g delta_g^T = vcovCR(type = "CR3")`: clubSandwich's CR3 for a GLM is
//!   `M X_g^T W_g (I - X_g M X_g^T W_g)^-1 e_g` per cluster (`M = (X^T W X)^-1`, `e_g` the
//!   working residuals), which is `(H - H_g)^-1 s_g` by the push-through identity. It is
//!   neither centred nor scaled: the jackknife variance the intervals use,
//!   `(G-1)/G sum_g (b_(g) - b_bar)^2`, is `(G-1)/G (CR3 - G (b_bar - b)^2)`, checked on the
//!   model's coefficient SEs to the precision of the `f32` draws a model stores
//!   ([`REFIT_RELATIVE`]);
//! * the exact jackknife (leave-one-annotator-out refits) with that variance is, to the
//!   refits' tolerance ([`REFIT_RELATIVE`]), MacKinnon, Nielsen & Webb's CV3 from R's own `glm`
//!   refits (`sandwich` 3.0.2, Debian bookworm's, has
//!   no jackknife estimator; `vcovJK` came with 3.1); clubSandwich's CR3 is *not* the exact
//!   refits for a GLM (it is the one-step above).
//!
//! R is part of the test command (scripts/ci.d/00-system-packages.sh installs `r-base-core`,
//! `r-cran-sandwich`, `r-cran-clubsandwich`): without `Rscript` or a package this test fails.

use hetreward::calibrate::{IntervalMethod, IntervalOptions};
use hetreward::cluster::heterogeneity;
use hetreward::covariance::CovarianceKind;
use hetreward::data::Dataset;
use hetreward::estimator::EstimatorOptions;
use hetreward::fit::{fit, FitControl, FitOptions};
use hetreward::internals::cluster::{jackknife, one_step_deltas, Clusters};
use hetreward::internals::covariance::covariance_factors;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;
use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;

const RELATIVE: f64 = 1e-8;
/// The exact jackknife's refits stop at a gradient norm of 1e-7 (`calibrate::draws::REFIT_TOL`:
/// the draws are stored in `f32`), so they agree with R's refits to about 1e-7 relative (3e-7
/// measured), not 1e-8: the refits are compared at this tolerance.
const REFIT_RELATIVE: f64 = 1e-5;

/// Annotator `c` judges `sizes[c]` pairs: `z ~ N(0, I_3)`, utility
/// `(0.8, -0.5, 0.3) . z + u_c` with `u_c ~ N(0, 0.5^2)` (an annotator effect the model
/// misses), `y ~ Bern(logistic(utility))`.
fn fixture(sizes: &[usize], seed: u64) -> Dataset {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let theta = [0.8, -0.5, 0.3];
    let (mut z, mut y, mut cluster) = (Vec::new(), Vec::new(), Vec::new());
    for (c, &m) in sizes.iter().enumerate() {
        let u = 0.5 * rng.sample::<f64, _>(StandardNormal);
        for _ in 0..m {
            let row: Vec<f64> = (0..3).map(|_| rng.sample(StandardNormal)).collect();
            let t: f64 = theta.iter().zip(&row).map(|(a, b)| a * b).sum::<f64>() + u;
            y.push(if rng.random::<f64>() < 1.0 / (1.0 + (-t).exp()) {
                1.0
            } else {
                0.0
            });
            z.extend(row);
            cluster.push(100 + 7 * c as i64);
        }
    }
    let n = y.len();
    Dataset::new(3, 0, z, vec![1.0; n], vec![], y, Some(cluster)).unwrap()
}

fn fixtures() -> Vec<(&'static str, Dataset)> {
    let mut rng = ChaCha8Rng::seed_from_u64(31);
    let lognormal: Vec<usize> = (0..20)
        .map(|_| {
            let x: f64 = rng.sample(StandardNormal);
            ((30f64.ln() + x).exp().round() as usize).max(4)
        })
        .collect();
    let mut dominant = vec![20; 10];
    dominant[3] = 500;
    vec![
        ("balanced", fixture(&[60; 8], 1)),
        ("lognormal", fixture(&lognormal, 2)),
        ("dominant", fixture(&dominant, 3)),
    ]
}

/// Runs the R script on `data`; its estimates by name.
fn r_reference(name: &str, data: &Dataset) -> HashMap<String, Vec<f64>> {
    let dir = std::env::temp_dir().join(format!("hetreward-r-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (input, output) = (dir.join("data.csv"), dir.join("out.txt"));
    let mut csv = String::from("cluster,y,z1,z2,z3\n");
    let ids = data.cluster().unwrap();
    for (i, (id, y)) in ids.iter().zip(data.y()).enumerate() {
        let z = data.z_row(i);
        csv += &format!("{},{},{:e},{:e},{:e}\n", id, y, z[0], z[1], z[2]);
    }
    std::fs::write(&input, csv).unwrap();
    let script: PathBuf = [env!("CARGO_MANIFEST_DIR"), "tests", "r", "cluster_vcov.R"]
        .iter()
        .collect();
    let run = Command::new("Rscript")
        .arg(&script)
        .arg(&input)
        .arg(&output)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "Rscript could not be run ({e}): the R reference is part of the test command; \
                 install r-base-core, r-cran-sandwich and r-cran-clubsandwich \
                 (scripts/ci.d/00-system-packages.sh)"
            )
        });
    assert!(
        run.status.success(),
        "the R reference failed: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let text = std::fs::read_to_string(&output).unwrap();
    std::fs::remove_dir_all(&dir).ok();
    text.lines()
        .map(|line| {
            let mut parts = line.split_whitespace();
            let key = parts.next().unwrap().to_string();
            (key, parts.map(|v| v.parse().unwrap()).collect())
        })
        .collect()
}

/// `a` equals `b` (row-major `p x p` or vectors) to [`RELATIVE`] of `b`'s largest entry, and
/// every diagonal entry to [`RELATIVE`] of itself.
fn assert_close(what: &str, a: &[f64], b: &[f64]) {
    assert_close_to(what, a, b, RELATIVE);
}

/// [`assert_close`] at tolerance `relative`.
fn assert_close_to(what: &str, a: &[f64], b: &[f64], relative: f64) {
    assert_eq!(a.len(), b.len(), "{what}");
    let scale = b.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    for (k, (x, y)) in a.iter().zip(b).enumerate() {
        assert!(
            (x - y).abs() <= relative * scale,
            "{what}[{k}]: hetreward {x:e}, R {y:e} (relative {:e})",
            (x - y).abs() / scale
        );
    }
    let p = (b.len() as f64).sqrt() as usize;
    if p * p == b.len() && p > 1 {
        for j in 0..p {
            let (x, y) = (a[j * p + j], b[j * p + j]);
            assert!(
                (x - y).abs() <= relative * y.abs(),
                "{what} diagonal {j}: {x:e} vs {y:e}"
            );
        }
    }
}

/// `c sum_g (v_g - center)(v_g - center)^T` of the vectors `v` (each of length `p`),
/// row-major, with `center` the estimate `b` or (`None`) their mean.
fn outer(v: &[Vec<f64>], b: Option<&[f64]>, c: f64) -> Vec<f64> {
    let p = v[0].len();
    let mean: Vec<f64> = match b {
        Some(b) => b.to_vec(),
        None => (0..p)
            .map(|j| v.iter().map(|row| row[j]).sum::<f64>() / v.len() as f64)
            .collect(),
    };
    let mut out = vec![0.0; p * p];
    for row in v {
        for a in 0..p {
            for bb in 0..p {
                out[a * p + bb] += c * (row[a] - mean[a]) * (row[bb] - mean[bb]);
            }
        }
    }
    out
}

/// The squared SEs of the coefficients of the model the estimator builds on `data` with the
/// interval method `method`: the variance its intervals use (from the draws as a model stores
/// them, in `f32`).
fn interval_variances(data: &Dataset, fit: &FitOptions, method: IntervalMethod) -> Vec<f64> {
    let model = EstimatorOptions {
        fit: fit.clone(),
        intervals: IntervalOptions { method, reps: None },
        ..EstimatorOptions::default()
    }
    .check()
    .unwrap()
    .estimate(data, &FitControl::default())
    .unwrap();
    let table = model.coefficients(0.05).unwrap();
    table.rows().iter().map(|c| c.se * c.se).collect()
}

#[test]
fn cluster_variances_equal_rs_sandwich_and_clubsandwich() {
    let options = FitOptions {
        tol: 1e-13,
        ..FitOptions::default()
    };
    for (name, data) in fixtures() {
        let r = r_reference(name, &data);
        let params = fit(&data, &options, &FitControl::default()).unwrap().params;
        let b = params.stacked();
        assert_close(&format!("{name}: estimate"), &b, &r["coef"]);
        let p = b.len();

        // CR0: the `cluster` covariance kind.
        let f = covariance_factors(&data, &params, CovarianceKind::Cluster).unwrap();
        let cr0: Vec<f64> = (&f.theta_factor * f.theta_factor.transpose())
            .transpose()
            .iter()
            .copied()
            .collect();
        assert_close(&format!("{name}: CR0 vs vcovCL HC0"), &cr0, &r["cl_hc0"]);
        assert_close(&format!("{name}: CR0 vs vcovCR CR0"), &cr0, &r["cr_cr0"]);

        // CR1: the heterogeneity diagnostic's design effect times the model variance.
        let h = heterogeneity(&data, &params).unwrap();
        let e = covariance_factors(&data, &params, CovarianceKind::Expected).unwrap();
        let model_var = &e.theta_factor * e.theta_factor.transpose();
        let cr1: Vec<f64> = (0..p)
            .map(|j| h.design_effects[j] * model_var[(j, j)])
            .collect();
        let diag = |key: &str| -> Vec<f64> { (0..p).map(|j| r[key][j * p + j]).collect() };
        assert_close(&format!("{name}: CR1 vs vcovCL HC1"), &cr1, &diag("cl_hc1"));
        assert_close(
            &format!("{name}: CR1 vs vcovCR CR1S"),
            &cr1,
            &diag("cr_cr1s"),
        );

        // CR3: the one-step jackknife's steps delta_g = b_(g) - b, uncentred and unscaled.
        let clusters = Clusters::of(&data).unwrap();
        let g = clusters_len(&data) as f64;
        let deltas: Vec<Vec<f64>> = one_step_deltas(&data, &params, &clusters)
            .unwrap()
            .expect("every leave-one-out Hessian is positive definite")
            .iter()
            .map(|d| d.iter().copied().collect())
            .collect();
        let cr3 = outer(&deltas, Some(&vec![0.0; p]), 1.0);
        assert_close(
            &format!("{name}: one-step CR3 vs vcovCR CR3"),
            &cr3,
            &r["cr_cr3"],
        );
        // ... and the one-step intervals' variance is (G-1)/G (CR3 - G (b_bar - b)^2), to the
        // precision of the draws a model stores (f32).
        let want: Vec<f64> = (0..p)
            .map(|j| {
                let mean = deltas.iter().map(|d| d[j]).sum::<f64>() / g;
                (g - 1.0) / g * (r["cr_cr3"][j * p + j] - g * mean * mean)
            })
            .collect();
        assert_close_to(
            &format!("{name}: the one-step intervals' variance vs CR3"),
            &interval_variances(&data, &options, IntervalMethod::ClusterOneStep),
            &want,
            REFIT_RELATIVE,
        );

        // The exact jackknife (refits): CV3 of R's glm refits.
        let exact = jackknife(&data, &params, &clusters, &options, None).unwrap();
        assert_eq!(exact.diverged(), 0);
        let rows: Vec<Vec<f64>> = (0..exact.len()).map(|k| exact.row(k)).collect();
        assert_close_to(
            &format!("{name}: exact jackknife vs glm refits"),
            &outer(&rows, None, (g - 1.0) / g),
            &r["loo_jack"],
            REFIT_RELATIVE,
        );
        assert_close_to(
            &format!("{name}: the intervals' jackknife variance vs glm refits"),
            &interval_variances(&data, &options, IntervalMethod::ClusterJackknife),
            &diag("loo_jack"),
            REFIT_RELATIVE,
        );
        println!(
            "{name}: G = {g}, n = {}: CR0, CR1 and the one-step CR3 agree with R to \
             {RELATIVE:e}, the exact jackknife to {REFIT_RELATIVE:e}",
            data.n()
        );
    }
}

fn clusters_len(data: &Dataset) -> usize {
    let mut ids = data.cluster().unwrap().to_vec();
    ids.sort_unstable();
    ids.dedup();
    ids.len()
}
