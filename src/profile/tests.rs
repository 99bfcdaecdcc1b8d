use super::*;
use crate::fit::{fit, FitControl, FitOptions};
use crate::sim::{homogeneous, paper_simulation, ActionDesign};

fn estimate(data: &Dataset) -> Params {
    let options = FitOptions {
        threads: 1,
        ..FitOptions::default()
    };
    let f = fit(data, &options, &FitControl::default()).unwrap();
    assert!(f.report.converged);
    f.params
}

/// The data with gamma_k held at `b`: `psi0 + b psi_k` as the base rationality, psi without
/// column k. Its unconstrained MLE is the profile's constrained optimum, found by the crate's
/// own estimator — an independent path to `L_c(b)`.
fn gamma_held(data: &Dataset, k: usize, b: f64) -> Dataset {
    let (n, d1, d2) = (data.n(), data.d1(), data.d2());
    let z = match data.features() {
        crate::data::FeatureMatrix::F64(z) => z.to_vec(),
        crate::data::FeatureMatrix::F32(_) => unreachable!("the simulations store f64"),
    };
    let mut psi0 = Vec::with_capacity(n);
    let mut psi = Vec::with_capacity(n * (d2 - 1));
    for i in 0..n {
        let row = data.psi_row(i);
        psi0.push(data.psi0()[i] + b * row[k]);
        psi.extend(
            row.iter()
                .enumerate()
                .filter(|&(j, _)| j != k)
                .map(|(_, v)| *v),
        );
    }
    Dataset::new(d1, d2 - 1, z, psi0, psi, data.y().to_vec(), None).unwrap()
}

#[test]
fn gamma_endpoints_match_an_independent_constrained_fit() {
    let data = paper_simulation(600, ActionDesign::Uniform, 11);
    let est = estimate(&data);
    let nll_hat = mean_nll(&data, &est);
    let alpha = 0.05;
    let q2 = critical_value(alpha).powi(2);
    for k in 0..2 {
        let ci = coefficient_interval(&data, &est, 3 + k, alpha).unwrap();
        assert!(ci.lower < ci.estimate && ci.estimate < ci.upper, "{ci:?}");
        for end in [ci.lower, ci.upper] {
            assert!(end.is_finite(), "{ci:?}");
            let held = gamma_held(&data, k, end);
            let at = estimate(&held);
            let deviance = 2.0 * data.n() as f64 * (mean_nll(&held, &at) - nll_hat);
            assert!(
                (deviance - q2).abs() < 1e-6 * q2,
                "gamma_{k} end {end}: {deviance} vs {q2}"
            );
        }
    }
}

#[test]
fn large_sample_homogeneous_profile_is_wald() {
    // Logistic regression with n = 20,000: the profile interval and est +- q se agree to a
    // few per cent of the half-width (they are asymptotically equivalent).
    let data = homogeneous(20_000, &[0.5, -1.0, 0.25], 3);
    let est = estimate(&data);
    let q = critical_value(0.05);
    for j in 0..3 {
        let ci = coefficient_interval(&data, &est, j, 0.05).unwrap();
        let se = wald_se(&data, &est, j);
        let (lo, hi) = (est.theta[j] - q * se, est.theta[j] + q * se);
        assert!(
            (ci.lower - lo).abs() < 0.03 * q * se,
            "theta_{j}: {ci:?} vs ({lo}, {hi})"
        );
        assert!(
            (ci.upper - hi).abs() < 0.03 * q * se,
            "theta_{j}: {ci:?} vs ({lo}, {hi})"
        );
        assert!(ci.fits > 4 && ci.fits < 400, "{ci:?}");
    }
}

#[test]
fn arguments_are_checked() {
    let data = paper_simulation(200, ActionDesign::Uniform, 1);
    let est = estimate(&data);
    for (index, alpha) in [(5, 0.05), (0, 0.0), (0, 1.0), (0, f64::NAN), (0, -0.5)] {
        let e = coefficient_interval(&data, &est, index, alpha).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { .. }), "{e:?}");
    }
    let bad = Params {
        theta: vec![f64::NAN, 0.0, 0.0],
        gamma: vec![0.0, 0.0],
    };
    let e = coefficient_interval(&data, &bad, 0, 0.05).unwrap_err();
    assert!(matches!(e, Error::NonFinite { .. }), "{e:?}");
    let short = Params {
        theta: vec![0.0; 3],
        gamma: vec![0.0],
    };
    let e = coefficient_interval(&data, &short, 0, 0.05).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { .. }), "{e:?}");
}
