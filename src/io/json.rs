//! JSON documents whose field names are a contract (SPEC §5): the fit report / `inspect`.

use crate::fitted::RewardModel;
use serde_json::{json, Value};

/// The REPORT.json / `inspect --json` document: n, d1, d2, theta, gamma, theta_se, gamma_se,
/// covariance, solver, iterations, converged, grad_norm, neg_loglik (mean NLL), seconds — plus
/// termination, starts, total_iterations, tol and the format/library version.
pub fn model_report(model: &RewardModel) -> Value {
    let r = model.report();
    json!({
        "n": model.n(),
        "d1": model.d1(),
        "d2": model.d2(),
        "theta": model.theta(),
        "gamma": model.gamma(),
        "theta_se": model.theta_se(),
        "gamma_se": model.gamma_se(),
        "covariance": model.covariance().name(),
        "solver": r.solver.name(),
        "iterations": r.iterations,
        "converged": r.converged,
        "grad_norm": r.grad_norm,
        "neg_loglik": r.neg_loglik,
        "seconds": r.seconds,
        "termination": r.termination.name(),
        "starts": r.starts,
        "total_iterations": r.total_iterations,
        "tol": r.tol,
        "hetreward_version": crate::VERSION,
    })
}
