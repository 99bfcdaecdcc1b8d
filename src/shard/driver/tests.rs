use super::*;
use crate::fit::fit;
use crate::sim::{one_hot_groups, paper_simulation, ActionDesign};
use crate::testing::{contiguous, shuffled, split_rows, with_clusters};
use std::sync::atomic::AtomicBool;

/// Tight enough that both fits sit at the optimum to rounding (Newton converges
/// quadratically: the last step takes the gradient from ~1e-7 to ~1e-15).
const TOL: f64 = 1e-13;

fn options() -> FitOptions {
    FitOptions {
        tol: TOL,
        ..FitOptions::default()
    }
}

/// The paper's §6.1 data with annotator ids spread over every shard.
fn paper_data() -> Dataset {
    with_clusters(&paper_simulation(2000, ActionDesign::Uniform, 11), |i| {
        ((i * 7919) % 97) as i64
    })
}

/// n = 20,000, d1 = 64, d2 = 5, 400 annotators spread over every shard.
fn medium_data() -> Dataset {
    let theta: Vec<f64> = (0..64).map(|j| ((j as f64) * 0.61).sin() * 0.25).collect();
    let base = one_hot_groups(20_000, &theta, &[0.6, -0.4, 0.9, -0.3, 0.5], 17);
    with_clusters(&base, |i| ((i * 104_729) % 400) as i64)
}

/// The fit, and a description of the bytes per round: (largest shard answer, rounds of that
/// size), smallest size first.
fn run(
    data: &Dataset,
    parts: &[Vec<usize>],
    variant: NewtonVariant,
) -> (DistributedFit, Vec<(usize, usize)>) {
    let mut oracle = LocalOracle::new(split_rows(data, parts));
    let fit = fit_distributed(
        &mut oracle,
        &options(),
        variant,
        &FitControl::default(),
        None,
    )
    .unwrap();
    assert_eq!(oracle.bytes_per_round.len(), fit.rounds.total);
    let mut sizes = std::collections::BTreeMap::new();
    for round in &oracle.bytes_per_round {
        *sizes.entry(*round.iter().max().unwrap()).or_insert(0) += 1;
    }
    (fit, sizes.into_iter().collect())
}

fn max_rel(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs() / y.abs().max(1e-3))
        .fold(0.0, f64::max)
}

/// Estimates and the SEs of all four covariance kinds against the single-process fit.
fn assert_matches_single_process(data: &Dataset, d: &DistributedFit, rtol: f64) {
    let single = fit(data, &options(), &FitControl::default()).unwrap();
    assert!(single.report.converged && d.fit.report.converged);
    let diff = max_rel(&d.fit.params.stacked(), &single.params.stacked());
    assert!(diff <= rtol, "estimates differ by {diff:e}");
    assert!((d.fit.report.neg_loglik - single.report.neg_loglik).abs() < 1e-13);
    for kind in CovarianceKind::ALL {
        let want =
            RewardModel::from_estimate(data, single.params.clone(), single.report.clone(), kind)
                .unwrap();
        let got = d.model(kind).unwrap();
        assert_eq!(got.covariance(), kind);
        let dt = max_rel(got.theta_se(), want.theta_se());
        let dg = max_rel(got.gamma_se(), want.gamma_se());
        assert!(
            dt <= rtol && dg <= rtol,
            "{kind:?}: SEs differ by {dt:e} / {dg:e}"
        );
    }
    // The kinds differ from each other (the comparison above can fail).
    let e = d.model(CovarianceKind::Expected).unwrap();
    let c = d.model(CovarianceKind::Cluster).unwrap();
    assert!(max_rel(c.theta_se(), e.theta_se()) > 1e-3);
}

#[test]
fn paper_data_on_eight_shards_equals_one_process() {
    let data = paper_data();
    let (d, bytes) = run(&data, &shuffled(data.n(), 8, 3), NewtonVariant::Auto);
    assert_eq!(d.variant, NewtonVariant::Dense);
    eprintln!(
        "paper §6.1, 8 shards, dense: {:?}, (largest shard answer in bytes, rounds): {bytes:?}",
        d.rounds
    );
    assert_matches_single_process(&data, &d, 1e-10);
    // Few rounds: one per Newton iteration when full steps are accepted.
    assert!(d.rounds.total <= 25, "{:?}", d.rounds);
    assert_eq!(d.rounds.covariance, 1);
    assert_eq!(d.rounds.products, 0);
}

#[test]
fn medium_data_on_eight_shards_equals_one_process_both_variants() {
    let data = medium_data();
    let parts = shuffled(data.n(), 8, 5);
    let (dense, dense_bytes) = run(&data, &parts, NewtonVariant::Dense);
    eprintln!(
        "medium, 8 shards, dense: {:?}, (bytes, rounds): {dense_bytes:?}",
        dense.rounds
    );
    assert_matches_single_process(&data, &dense, 1e-10);
    let (cg, cg_bytes) = run(&data, &parts, NewtonVariant::Cg);
    eprintln!(
        "medium, 8 shards, cg: {:?}, (bytes, rounds): {cg_bytes:?}",
        cg.rounds
    );
    assert_eq!(cg.variant, NewtonVariant::Cg);
    assert!(cg.rounds.products > 0 && cg.rounds.preconditioner == 1);
    assert_matches_single_process(&data, &cg, 1e-10);
    // Shard order and partitioning: within 1e-12.
    let mut reversed = parts.clone();
    reversed.reverse();
    for other in [reversed, contiguous(data.n(), 5)] {
        let (again, _) = run(&data, &other, NewtonVariant::Dense);
        let diff = max_rel(&again.fit.params.stacked(), &dense.fit.params.stacked());
        assert!(diff <= 1e-12, "estimates moved by {diff:e}");
        for kind in CovarianceKind::ALL {
            let (a, b) = (again.model(kind).unwrap(), dense.model(kind).unwrap());
            assert!(max_rel(a.theta_se(), b.theta_se()) <= 1e-12, "{kind:?}");
            assert!(max_rel(a.gamma_se(), b.gamma_se()) <= 1e-12, "{kind:?}");
        }
    }
}

#[test]
fn mismatched_shards_fail_before_any_round() {
    let a = paper_simulation(300, ActionDesign::Uniform, 1);
    let b = one_hot_groups(300, &[0.3, 0.2, 0.1], &[0.5], 2);
    let mut oracle = LocalOracle::new(vec![a, b]);
    let err = fit_distributed(
        &mut oracle,
        &options(),
        NewtonVariant::Auto,
        &FitControl::default(),
        None,
    )
    .unwrap_err();
    assert!(err.to_string().contains("shard 1"), "{err}");
    assert!(oracle.bytes_per_round.is_empty());
}

#[test]
fn options_and_cancellation_are_honoured() {
    let data = paper_simulation(400, ActionDesign::Uniform, 2);
    let shards = || LocalOracle::new(split_rows(&data, &contiguous(400, 2)));
    let random = FitOptions {
        init: Init::Random,
        ..options()
    };
    let agd = FitOptions {
        solver: SolverKind::Agd,
        ..options()
    };
    for bad in [random, agd] {
        let r = fit_distributed(
            &mut shards(),
            &bad,
            NewtonVariant::Auto,
            &FitControl::default(),
            None,
        );
        assert!(matches!(r, Err(Error::InvalidArgument { .. })));
    }
    let cancel = AtomicBool::new(true);
    let control = FitControl {
        cancel: Some(&cancel),
        ..FitControl::default()
    };
    let r = fit_distributed(
        &mut shards(),
        &options(),
        NewtonVariant::Auto,
        &control,
        None,
    );
    assert!(matches!(r, Err(Error::Cancelled)));
    // No cluster ids: the cluster kind is refused, the others are available.
    let d = fit_distributed(
        &mut shards(),
        &options(),
        NewtonVariant::Auto,
        &FitControl::default(),
        None,
    )
    .unwrap();
    assert!(d.cluster_meat.is_none());
    assert!(matches!(
        d.model(CovarianceKind::Cluster),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(d.model(CovarianceKind::Robust).is_ok());
}

#[test]
fn a_fit_for_one_kind_gathers_only_its_matrices() {
    let data = paper_data();
    let parts = shuffled(data.n(), 4, 9);
    let (all, _) = run(&data, &parts, NewtonVariant::Auto);
    let full_round = {
        let mut o = LocalOracle::new(split_rows(&data, &parts));
        fit_distributed(
            &mut o,
            &options(),
            NewtonVariant::Auto,
            &FitControl::default(),
            None,
        )
        .unwrap();
        o.bytes_per_round.last().unwrap()[0]
    };
    for kind in CovarianceKind::ALL {
        let mut oracle = LocalOracle::new(split_rows(&data, &parts));
        let one = fit_distributed(
            &mut oracle,
            &options(),
            NewtonVariant::Auto,
            &FitControl::default(),
            Some(kind),
        )
        .unwrap();
        let (a, b) = (one.model(kind).unwrap(), all.model(kind).unwrap());
        assert_eq!(a.theta_se(), b.theta_se(), "{kind:?}");
        assert_eq!(a.gamma_se(), b.gamma_se(), "{kind:?}");
        // The covariance round is smaller, and the other kinds were not gathered.
        let last = oracle.bytes_per_round.last().unwrap()[0];
        assert!(last < full_round, "{kind:?}: {last} >= {full_round}");
        for other in CovarianceKind::ALL {
            let needs_same = match (kind, other) {
                (k, o) if k == o => true,
                (CovarianceKind::Robust | CovarianceKind::Cluster, CovarianceKind::Observed) => {
                    true
                }
                _ => false,
            };
            assert_eq!(
                one.model(other).is_ok(),
                needs_same,
                "{kind:?} then {other:?}"
            );
        }
    }
    // The cluster kind on shards without ids fails before any round.
    let plain = paper_simulation(400, ActionDesign::Uniform, 4);
    let mut oracle = LocalOracle::new(split_rows(&plain, &contiguous(400, 2)));
    let err = fit_distributed(
        &mut oracle,
        &options(),
        NewtonVariant::Auto,
        &FitControl::default(),
        Some(CovarianceKind::Cluster),
    )
    .unwrap_err();
    assert!(err.to_string().contains("cluster ids"), "{err}");
    assert!(oracle.bytes_per_round.is_empty());
}
