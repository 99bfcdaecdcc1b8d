//! The estimator against independent references: statsmodels on the homogeneous case, agd vs
//! the default solver, determinism, honest convergence reporting, covariance kinds.

use hetreward::covariance::CovarianceKind;
use hetreward::fit::{fit, FitControl, FitOptions, Init, SolverKind, Termination};
use hetreward::io::training::read_training;
use hetreward::sim::{one_hot_groups, paper_simulation, ActionDesign};
use hetreward::{Dataset, Error, Params, RewardModel};
use std::path::Path;

fn fixture() -> (Dataset, serde_json::Value) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let data = read_training(&dir.join("homogeneous.csv")).unwrap();
    let text = std::fs::read_to_string(dir.join("homogeneous_statsmodels.json")).unwrap();
    (data, serde_json::from_str(&text).unwrap())
}

fn floats(v: &serde_json::Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

fn assert_close(what: &str, got: &[f64], want: &[f64], rel: f64) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (j, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= rel * w.abs().max(1e-3),
            "{what}[{j}]: got {g}, statsmodels {w}"
        );
    }
}

fn estimate(data: &Dataset, kind: CovarianceKind) -> RewardModel {
    RewardModel::estimate(data, &FitOptions::default(), kind, &FitControl::default()).unwrap()
}

#[test]
fn homogeneous_case_equals_statsmodels_logit() {
    let (data, sm) = fixture();
    assert_eq!((data.n(), data.d1(), data.d2()), (400, 4, 0));
    let model = estimate(&data, CovarianceKind::Expected);
    assert!(model.report().converged);
    assert_close("theta", model.theta(), &floats(&sm["theta"]), 1e-8);
    assert_close("theta_se", model.theta_se(), &floats(&sm["theta_se"]), 1e-8);
    assert!((model.report().neg_loglik - sm["mean_nll"].as_f64().unwrap()).abs() < 1e-12);
    let cov = model.theta_cov();
    for (i, row) in sm["cov"].as_array().unwrap().iter().enumerate() {
        assert_close(
            &format!("cov row {i}"),
            &cov.row(i).iter().copied().collect::<Vec<_>>(),
            &floats(row),
            1e-7,
        );
    }
    // For the logit the observed Hessian equals the expected information.
    let observed = estimate(&data, CovarianceKind::Observed);
    assert_close(
        "observed se",
        observed.theta_se(),
        &floats(&sm["theta_se"]),
        1e-8,
    );
}

#[test]
fn sandwich_covariances_equal_statsmodels_hc0_and_cluster() {
    let (data, sm) = fixture();
    let robust = estimate(&data, CovarianceKind::Robust);
    assert_close(
        "robust se",
        robust.theta_se(),
        &floats(&sm["theta_se_hc0"]),
        1e-7,
    );
    let cluster = estimate(&data, CovarianceKind::Cluster);
    assert_close(
        "cluster se",
        cluster.theta_se(),
        &floats(&sm["theta_se_cluster"]),
        1e-7,
    );
    // The three must differ from each other (the test can tell them apart).
    assert!((robust.theta_se()[2] - cluster.theta_se()[2]).abs() > 1e-3);
}

#[test]
fn cluster_covariance_with_singleton_clusters_is_the_robust_one() {
    let data = paper_simulation(400, ActionDesign::Uniform, 5);
    let ids: Vec<i64> = (0..400).rev().collect();
    let clustered = Dataset::new(
        3,
        2,
        data.z().to_vec(),
        data.psi0().to_vec(),
        data.psi().to_vec(),
        data.y().to_vec(),
        Some(ids),
    )
    .unwrap();
    let a = estimate(&data, CovarianceKind::Robust);
    let b = estimate(&clustered, CovarianceKind::Cluster);
    assert_close("se", b.theta_se(), a.theta_se(), 1e-10);
    assert_close("gamma se", b.gamma_se(), a.gamma_se(), 1e-10);
}

#[test]
fn agd_reaches_the_default_solvers_optimum() {
    for (design, seed) in [(ActionDesign::Uniform, 11), (ActionDesign::Normal, 12)] {
        let data = paper_simulation(600, design, seed);
        let newton = fit(&data, &FitOptions::default(), &FitControl::default()).unwrap();
        let agd_options = FitOptions {
            solver: SolverKind::Agd,
            max_iter: Some(400_000),
            tol: 1e-9,
            ..FitOptions::default()
        };
        let agd = fit(&data, &agd_options, &FitControl::default()).unwrap();
        assert!(
            newton.report.converged && agd.report.converged,
            "{:?} / {:?}",
            newton.report,
            agd.report
        );
        let dist = newton
            .params
            .stacked()
            .iter()
            .zip(agd.params.stacked())
            .map(|(a, b)| (a - b).powi(2))
            .sum::<f64>()
            .sqrt();
        let dnll = agd.report.neg_loglik - newton.report.neg_loglik;
        eprintln!(
            "{}: |newton - agd| = {dist:.2e}, NLL(agd) - NLL(newton) = {dnll:.2e}; newton {} it {:.4}s, agd {} it {:.4}s",
            design.name(),
            newton.report.iterations,
            newton.report.seconds,
            agd.report.iterations,
            agd.report.seconds
        );
        assert!(dist < 1e-6, "distance {dist}");
        assert!(dnll.abs() < 1e-12, "NLL difference {dnll}");
    }
}

#[test]
fn results_do_not_depend_on_thread_count() {
    let data = one_hot_groups(
        3000,
        &[0.5, -0.3, 0.2, 0.1, 0.4, -0.6],
        &[0.5, -1.2, 0.8],
        9,
    );
    let run = |threads: usize, init: Init| {
        let options = FitOptions {
            threads,
            init,
            seed: 42,
            ..FitOptions::default()
        };
        RewardModel::estimate(
            &data,
            &options,
            CovarianceKind::Expected,
            &FitControl::default(),
        )
        .unwrap()
    };
    for init in [Init::Default, Init::Random] {
        let one = run(1, init.clone());
        let two = run(2, init.clone());
        let five = run(5, init);
        assert_eq!(one.params(), two.params());
        assert_eq!(one.params(), five.params());
        assert_eq!(one.theta_cov_factor(), five.theta_cov_factor());
    }
}

#[test]
fn hitting_the_iteration_cap_is_reported_not_hidden() {
    let data = paper_simulation(400, ActionDesign::Uniform, 3);
    let options = FitOptions {
        solver: SolverKind::Agd,
        max_iter: Some(5),
        init: Init::Random,
        ..FitOptions::default()
    };
    let f = fit(&data, &options, &FitControl::default()).unwrap();
    assert!(!f.report.converged);
    assert_eq!(f.report.termination, Termination::MaxIterations);
    assert_eq!(f.report.iterations, 5);
    assert!(f.report.grad_norm > options.tol && f.report.neg_loglik.is_finite());
}

#[test]
fn agd_is_the_papers_algorithm_step_by_step() {
    // One iteration by hand from a known point: theta moves along the gradient at the old
    // point, gamma along the gradient at (new theta, old gamma).
    let data = paper_simulation(200, ActionDesign::Uniform, 4);
    let start = Params {
        theta: vec![0.1, -0.2, 0.3],
        gamma: vec![0.4, -0.5],
    };
    let (eta1, eta2) = (0.1, 0.08);
    let (_, g0) = hetreward::internals::likelihood::nll_and_gradient(&data, &start);
    let theta1: Vec<f64> = start
        .theta
        .iter()
        .zip(&g0)
        .map(|(t, g)| t - eta1 * g)
        .collect();
    let mid = Params {
        theta: theta1.clone(),
        gamma: start.gamma.clone(),
    };
    let (_, g1) = hetreward::internals::likelihood::nll_and_gradient(&data, &mid);
    let gamma1: Vec<f64> = start
        .gamma
        .iter()
        .zip(&g1[3..])
        .map(|(c, g)| c - eta2 * g)
        .collect();
    let options = FitOptions {
        solver: SolverKind::Agd,
        max_iter: Some(1),
        init: Init::Explicit(start),
        eta1,
        eta2,
        ..FitOptions::default()
    };
    let f = fit(&data, &options, &FitControl::default()).unwrap();
    assert_eq!(f.params.theta, theta1);
    assert_eq!(f.params.gamma, gamma1);
}

#[test]
fn cancellation_from_the_progress_observer() {
    let data = paper_simulation(400, ActionDesign::Uniform, 3);
    let stop_at_three = |p: &hetreward::fit::Progress| p.iteration < 3;
    let control = FitControl {
        progress: Some(&stop_at_three),
        cancel: None,
    };
    let options = FitOptions {
        solver: SolverKind::Agd,
        ..FitOptions::default()
    };
    assert_eq!(
        fit(&data, &options, &control).unwrap_err(),
        Error::Cancelled
    );
    let flag = std::sync::atomic::AtomicBool::new(true);
    let control = FitControl {
        progress: None,
        cancel: Some(&flag),
    };
    assert_eq!(
        fit(&data, &FitOptions::default(), &control).unwrap_err(),
        Error::Cancelled
    );
}

#[test]
fn bad_options_name_the_argument() {
    let data = paper_simulation(100, ActionDesign::Uniform, 1);
    let check = |options: FitOptions, arg: &str| {
        let err = fit(&data, &options, &FitControl::default()).unwrap_err();
        assert!(
            err.is_bad_input() && err.to_string().contains(arg),
            "{arg}: {err}"
        );
    };
    check(
        FitOptions {
            eta1: -0.1,
            ..FitOptions::default()
        },
        "eta1",
    );
    check(
        FitOptions {
            eta2: f64::NAN,
            ..FitOptions::default()
        },
        "eta2",
    );
    check(
        FitOptions {
            tol: f64::INFINITY,
            ..FitOptions::default()
        },
        "tol",
    );
    check(
        FitOptions {
            max_iter: Some(0),
            ..FitOptions::default()
        },
        "max_iter",
    );
    check(
        FitOptions {
            init: Init::Explicit(Params {
                theta: vec![0.0; 2],
                gamma: vec![0.0; 2],
            }),
            ..FitOptions::default()
        },
        "theta0",
    );
    check(
        FitOptions {
            init: Init::Explicit(Params {
                theta: vec![0.0; 3],
                gamma: vec![f64::NAN, 0.0],
            }),
            ..FitOptions::default()
        },
        "gamma0",
    );
}

#[test]
fn singular_information_is_an_error_not_a_nan() {
    // z2 = 2 z1: theta is not identifiable and the information is singular.
    let n = 200;
    let base = paper_simulation(n, ActionDesign::Uniform, 8);
    let mut z = Vec::with_capacity(2 * n);
    for i in 0..n {
        z.extend([base.z()[3 * i], 2.0 * base.z()[3 * i]]);
    }
    let data = Dataset::new(2, 0, z, vec![1.0; n], vec![], base.y().to_vec(), None).unwrap();
    let err = RewardModel::estimate(
        &data,
        &FitOptions::default(),
        CovarianceKind::Expected,
        &FitControl::default(),
    )
    .unwrap_err();
    assert!(matches!(err, Error::SingularInformation { .. }), "{err}");
}

#[test]
fn fit_times_for_the_closing_note() {
    // Not a timed test: prints the figures quoted in the closing note.
    let data = paper_simulation(600, ActionDesign::Uniform, 1);
    let m = estimate(&data, CovarianceKind::Expected);
    eprintln!(
        "n = 600, d1 = 3, d2 = 2: {:.4} s, {} iterations over {} starts",
        m.report().seconds,
        m.report().total_iterations,
        m.report().starts
    );
    let theta: Vec<f64> = (0..20).map(|j| ((j as f64) * 0.7).sin() * 0.5).collect();
    let data = one_hot_groups(5000, &theta, &[0.5, -0.8, 1.0, -1.5, 0.3], 2);
    let m = estimate(&data, CovarianceKind::Expected);
    eprintln!(
        "n = 5000, d1 = 20, d2 = 5: {:.4} s, {} iterations over {} starts",
        m.report().seconds,
        m.report().total_iterations,
        m.report().starts
    );
    assert!(m.report().converged);
}
