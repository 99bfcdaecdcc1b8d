//! The progress observer's contract (the header's hetreward_progress_callback): called before
//! every solver iteration with the state that iteration starts from (`iteration` = iterations
//! done so far in the start, 0 for the start point), never after the last one.

use hetreward::fit::{fit, FitControl, FitOptions, Init, Progress, SolverKind};
use hetreward::sim::homogeneous;
use std::sync::Mutex;

fn calls(options: &FitOptions) -> (Vec<Progress>, hetreward::fit::FitReport) {
    let data = homogeneous(500, &[1.0, -0.5, 0.25], 4);
    let seen = Mutex::new(Vec::new());
    let observe = |p: &Progress| {
        seen.lock().unwrap().push(*p);
        true
    };
    let control = FitControl {
        progress: Some(&observe),
        cancel: None,
    };
    let fitted = fit(&data, options, &control).unwrap();
    (seen.into_inner().unwrap(), fitted.report)
}

#[test]
fn one_call_before_each_iteration_none_after_the_last() {
    // agd from a random start (no homogeneous pre-fit) at its iteration cap: 20 iterations,
    // 20 calls (iterations 0..19).
    let agd = FitOptions {
        solver: SolverKind::Agd,
        init: Init::Random,
        max_iter: Some(20),
        threads: 1,
        ..FitOptions::default()
    };
    let (seen, report) = calls(&agd);
    assert_eq!((report.iterations, report.total_iterations), (20, 20));
    let iterations: Vec<usize> = seen.iter().map(|p| p.iteration).collect();
    assert_eq!(iterations, (0..20).collect::<Vec<_>>());
    assert!(seen.iter().all(|p| p.start == 0 && p.max_iter == 20));
    // Newton to convergence: one call per iteration over all starts, and the last call
    // observed the state before the last iteration (the report has the one after it).
    let newton = FitOptions {
        threads: 1,
        ..FitOptions::default()
    };
    let (seen, report) = calls(&newton);
    assert!(report.converged);
    assert_eq!(seen.len(), report.total_iterations);
    assert_eq!(seen[0].iteration, 0);
    assert!(seen.last().unwrap().neg_loglik > report.neg_loglik);
}
