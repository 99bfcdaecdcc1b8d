//! The fitted reward model: estimates plus what scoring needs, immutable once built.
//!
//! A [`RewardModel`] holds theta, gamma, the lower Cholesky factor `L` of `Cov(theta_hat) =
//! S_theta^2 / n` and `Cov(gamma_hat) = S_gamma^2 / n`. The SE of a reward is then
//! `se(phi) = ||L^T phi||` (= `sqrt(phi^T S_theta^2 phi / n)`, SPEC §3) — one triangular
//! product per answer, batched as a GEMM.
//!
//! `RewardModel` is `Send + Sync`: any number of threads may score with one model at once.

use crate::data::Dataset;
use crate::error::{check_alpha, check_finite, Error, Result};
use crate::fit::{fit, FitControl, FitOptions, FitReport};
use crate::inference::{asymptotic_covariance, CovarianceKind};
use crate::linalg::cholesky;
use crate::model::{dot, Params};
use crate::stats::critical_value;
use nalgebra::DMatrix;

/// A point reward with its standard error and `(1 - alpha)` confidence interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RewardInterval {
    /// `r_hat = theta_hat . phi`.
    pub reward: f64,
    /// `se(phi) = sqrt(phi^T S_theta^2 phi / n)`.
    pub se: f64,
    /// `r_hat - q_{1-alpha/2} se` (also the pessimistic reward of pBoN).
    pub lower: f64,
    /// `r_hat + q_{1-alpha/2} se`.
    pub upper: f64,
}

/// A fitted model, ready to score. Build with [`RewardModel::estimate`] (fit + covariance),
/// [`RewardModel::from_estimate`] (covariance at given parameters) or
/// [`RewardModel::from_parts`] (e.g. from a model file).
#[derive(Debug, Clone, PartialEq)]
pub struct RewardModel {
    params: Params,
    n: usize,
    covariance: CovarianceKind,
    report: FitReport,
    theta_cov_factor: DMatrix<f64>,
    gamma_cov: DMatrix<f64>,
    theta_se: Vec<f64>,
    gamma_se: Vec<f64>,
}

impl RewardModel {
    /// Fits the data with `options` and computes the `kind` covariance at the estimate.
    ///
    /// Errors: those of [`fit`] and of [`RewardModel::from_estimate`]. A fit that did not
    /// converge still yields a model; check `report().converged`.
    pub fn estimate(
        data: &Dataset,
        options: &FitOptions,
        kind: CovarianceKind,
        control: &FitControl,
    ) -> Result<Self> {
        let fitted = fit(data, options, control)?;
        crate::parallel::run_in_pool(options.threads, || {
            Self::from_estimate(data, fitted.params, fitted.report, kind)
        })?
    }

    /// Computes the `kind` covariance of the estimator at `params` (on the current rayon pool)
    /// and builds the model.
    ///
    /// Errors: [`Error::SingularInformation`] (information or covariance not invertible /
    /// not positive definite), [`Error::InvalidArgument`] (cluster kind without ids).
    pub fn from_estimate(
        data: &Dataset,
        params: Params,
        report: FitReport,
        kind: CovarianceKind,
    ) -> Result<Self> {
        let v = asymptotic_covariance(data, &params, kind)?;
        let (d1, d2) = (data.d1(), data.d2());
        let n = data.n() as f64;
        let theta_cov = v.view((0, 0), (d1, d1)) / n;
        let gamma_cov = v.view((d1, d1), (d2, d2)) / n;
        let factor = cholesky(
            &theta_cov,
            &format!("the {} covariance of theta", kind.name()),
        )?;
        Self::from_parts(params, data.n(), kind, report, factor, gamma_cov)
    }

    /// Assembles a model from stored parts (checked): `theta_cov_factor` is the lower Cholesky
    /// factor of `Cov(theta_hat)` (`d1 x d1`), `gamma_cov` is `Cov(gamma_hat)` (`d2 x d2`).
    pub fn from_parts(
        params: Params,
        n: usize,
        covariance: CovarianceKind,
        report: FitReport,
        theta_cov_factor: DMatrix<f64>,
        gamma_cov: DMatrix<f64>,
    ) -> Result<Self> {
        let (d1, d2) = (params.theta.len(), params.gamma.len());
        if d1 == 0 {
            return Err(Error::dims("theta", "d1 >= 1", 0));
        }
        if theta_cov_factor.shape() != (d1, d1) {
            return Err(Error::dims(
                "theta_cov_factor",
                format!("{d1} x {d1}"),
                format!("{:?}", theta_cov_factor.shape()),
            ));
        }
        if gamma_cov.shape() != (d2, d2) {
            return Err(Error::dims(
                "gamma_cov",
                format!("{d2} x {d2}"),
                format!("{:?}", gamma_cov.shape()),
            ));
        }
        check_finite("theta", &params.theta)?;
        check_finite("gamma", &params.gamma)?;
        check_finite("theta_cov_factor", theta_cov_factor.as_slice())?;
        check_finite("gamma_cov", gamma_cov.as_slice())?;
        let theta_se = (0..d1).map(|j| theta_cov_factor.row(j).norm()).collect();
        let gamma_se = (0..d2)
            .map(|k| {
                let v = gamma_cov[(k, k)];
                if v >= 0.0 {
                    Ok(v.sqrt())
                } else {
                    Err(Error::SingularInformation {
                        detail: format!("variance of gamma[{k}] is negative ({v:e})"),
                    })
                }
            })
            .collect::<Result<Vec<f64>>>()?;
        Ok(RewardModel {
            params,
            n,
            covariance,
            report,
            theta_cov_factor,
            gamma_cov,
            theta_se,
            gamma_se,
        })
    }

    /// Reward dimension d1.
    pub fn d1(&self) -> usize {
        self.params.theta.len()
    }
    /// Covariate dimension d2.
    pub fn d2(&self) -> usize {
        self.params.gamma.len()
    }
    /// Training sample size n.
    pub fn n(&self) -> usize {
        self.n
    }
    /// The estimate (theta_hat, gamma_hat).
    pub fn params(&self) -> &Params {
        &self.params
    }
    /// theta_hat.
    pub fn theta(&self) -> &[f64] {
        &self.params.theta
    }
    /// gamma_hat.
    pub fn gamma(&self) -> &[f64] {
        &self.params.gamma
    }
    /// SE of each theta_j: `sqrt((S_theta^2)_jj / n)`.
    pub fn theta_se(&self) -> &[f64] {
        &self.theta_se
    }
    /// SE of each gamma_k: `sqrt((S_gamma^2)_kk / n)`.
    pub fn gamma_se(&self) -> &[f64] {
        &self.gamma_se
    }
    /// Covariance kind the SEs come from.
    pub fn covariance(&self) -> CovarianceKind {
        self.covariance
    }
    /// How the estimate was obtained.
    pub fn report(&self) -> &FitReport {
        &self.report
    }
    /// Lower Cholesky factor `L` of `Cov(theta_hat)`, `d1 x d1`.
    pub fn theta_cov_factor(&self) -> &DMatrix<f64> {
        &self.theta_cov_factor
    }
    /// `Cov(theta_hat) = L L^T = S_theta^2 / n`.
    pub fn theta_cov(&self) -> DMatrix<f64> {
        &self.theta_cov_factor * self.theta_cov_factor.transpose()
    }
    /// `Cov(gamma_hat) = S_gamma^2 / n`, `d2 x d2`.
    pub fn gamma_cov(&self) -> &DMatrix<f64> {
        &self.gamma_cov
    }

    /// Checks that a feature vector has length d1 and finite entries; `arg` names it in errors.
    pub fn check_features(&self, arg: &str, phi: &[f64]) -> Result<()> {
        if phi.len() != self.d1() {
            return Err(Error::dims(
                arg,
                format!("{} values (the model's d1)", self.d1()),
                phi.len(),
            ));
        }
        check_finite(arg, phi)
    }

    /// Point reward `theta_hat . phi` (unchecked length: use [`RewardModel::score`] at a
    /// boundary).
    pub fn reward(&self, phi: &[f64]) -> f64 {
        dot(&self.params.theta, phi)
    }

    /// `sqrt(phi^T S_theta^2 phi / n) = ||L^T phi||` (unchecked length).
    pub fn reward_se(&self, phi: &[f64]) -> f64 {
        let d1 = self.d1();
        let l = &self.theta_cov_factor;
        // (L^T phi)_k = sum_{j >= k} L_jk phi_j: lower-triangular, column-major storage.
        let mut ss = 0.0;
        for k in 0..d1 {
            let col = &l.as_slice()[k * d1..(k + 1) * d1];
            let v = dot(&col[k..], &phi[k..]);
            ss += v * v;
        }
        ss.sqrt()
    }

    /// Reward, SE and `(1 - alpha)` CI of one answer with features `phi` (length d1).
    pub fn score(&self, phi: &[f64], alpha: f64) -> Result<RewardInterval> {
        check_alpha(alpha)?;
        self.check_features("phi", phi)?;
        Ok(self.interval(phi, critical_value(alpha)))
    }

    /// [`RewardModel::score`] for `m` row-major feature vectors (`phis.len() = m * d1`), in
    /// `f32` (as inference engines hand them out) or `f64`.
    pub fn score_batch<T: Copy + Into<f64>>(
        &self,
        phis: &[T],
        alpha: f64,
    ) -> Result<Vec<RewardInterval>> {
        check_alpha(alpha)?;
        let rows = self.rows_f64("phi", phis)?;
        let q = critical_value(alpha);
        Ok(rows
            .chunks_exact(self.d1())
            .map(|phi| self.interval(phi, q))
            .collect())
    }

    /// Converts `m * d1` row-major values to `f64`, checking the length and finiteness.
    pub fn rows_f64<T: Copy + Into<f64>>(&self, arg: &str, values: &[T]) -> Result<Vec<f64>> {
        let d1 = self.d1();
        if values.len() % d1 != 0 {
            return Err(Error::dims(
                arg,
                format!("a multiple of d1 = {d1} values"),
                values.len(),
            ));
        }
        let rows: Vec<f64> = values.iter().map(|&v| v.into()).collect();
        check_finite(arg, &rows)?;
        Ok(rows)
    }

    /// Reward interval with a precomputed critical value `q` (unchecked input).
    pub fn interval(&self, phi: &[f64], q: f64) -> RewardInterval {
        let reward = self.reward(phi);
        let se = self.reward_se(phi);
        RewardInterval {
            reward,
            se,
            lower: reward - q * se,
            upper: reward + q * se,
        }
    }

    /// Rationality `sigma_hat(x) = psi0 + gamma_hat . psi` of an annotator profile and its SE
    /// `sqrt(psi^T Cov(gamma_hat) psi)` (psi0 is known, so it carries no variance).
    pub fn rationality(&self, psi0: f64, psi: &[f64]) -> Result<(f64, f64)> {
        if psi.len() != self.d2() {
            return Err(Error::dims(
                "psi",
                format!("{} values (the model's d2)", self.d2()),
                psi.len(),
            ));
        }
        check_finite("psi0", &[psi0])?;
        check_finite("psi", psi)?;
        let sigma = psi0 + dot(&self.params.gamma, psi);
        let v = nalgebra::DVector::from_column_slice(psi);
        let var = (v.transpose() * &self.gamma_cov * &v)[(0, 0)];
        Ok((sigma, var.max(0.0).sqrt()))
    }
}
