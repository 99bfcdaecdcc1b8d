//! The fitted reward model: estimates plus what scoring needs, immutable once built.
//!
//! A [`RewardModel`] holds theta, gamma, the lower Cholesky factor `L` of `Cov(theta_hat) =
//! S_theta^2 / n` and `Cov(gamma_hat) = S_gamma^2 / n`. The SE of a reward is then
//! `se(phi) = ||L^T phi||` (= `sqrt(phi^T S_theta^2 phi / n)`, docs/contract.md §3) — one triangular
//! product per answer. `L` is packed once, at construction, into 4-column panels
//! (`PackedLower`) and a register-tiled kernel streams it once per 16 answers: scoring a
//! batch costs `m d1^2 / 2` multiply-adds with no per-call packing, and an answer's SE is the
//! same to the last bit whether it is scored alone, in a batch or in a selection.
//!
//! `RewardModel` is `Send + Sync`: any number of threads may score with one model at once.

mod cluster_diagnostics;

use crate::calibrate::{self, Calibration, IntervalDiagnostics, IntervalMethod};
use crate::covariance::{covariance_factors, CovarianceKind};
use crate::data::Dataset;
use crate::error::{check_alpha, check_finite, Error, Result};
use crate::fit::FitReport;
use crate::interval::{check_features_result, check_result, Functional, Target};
use crate::linalg::PackedLower;
use crate::model::{dot, Params};
use nalgebra::DMatrix;

pub use crate::interval::RewardInterval;

/// A fitted model, ready to score. Build with [`RewardModel::estimate`] (the pipeline
/// [`crate::estimator::Estimator::estimate`]: fit, covariance, calibration),
/// [`RewardModel::from_estimate`] (covariance at given parameters) or
/// [`RewardModel::from_parts`] (e.g. from a model file).
#[derive(Debug, Clone, PartialEq)]
pub struct RewardModel {
    params: Params,
    n: usize,
    covariance: CovarianceKind,
    report: FitReport,
    gamma_cov: DMatrix<f64>,
    /// A square root `F` of `Cov(gamma_hat) = F F^T` (from its eigen-decomposition, checked
    /// positive semi-definite): rationality SEs are `||F^T psi||`, never the square root of a
    /// rounded-negative quadratic form.
    gamma_root: DMatrix<f64>,
    theta_se: Vec<f64>,
    gamma_se: Vec<f64>,
    /// The lower Cholesky factor `L` of `Cov(theta_hat)`, packed for the scoring kernel (the
    /// only copy the model keeps: ~`d1^2 / 2` values).
    packed: PackedLower,
    /// `L` as a dense matrix, made on the first call of [`RewardModel::theta_cov_factor`].
    dense: DenseFactor,
    /// The interval method and its bootstrap draws (shared by clones).
    calibration: std::sync::Arc<Calibration>,
    /// The calibration's theta draws in `f64`, made on first use (shared by clones; a new
    /// calibration starts a new cache).
    draws: DrawCache,
}

/// The theta draws as the GEMM of every draws rule reads them: widened to `f64` (exactly)
/// once per model instead of on every call (`8 B d1` bytes, 6.5 MB at B = 400, d1 = 2048),
/// with the largest draw's norm, which bounds every projection (pruning, overflow checks).
struct WideDraws {
    /// `d1 x B` row-major (coordinate-major: as `linalg::project_rows` reads them).
    theta: Vec<f64>,
    /// `max_b ||theta*_b||` (0 without draws).
    max_norm: f64,
}

/// [`WideDraws`], made on first use. Ignored by `==` (a function of the calibration); clones
/// share it, as they share the calibration.
#[derive(Clone, Default)]
struct DrawCache(std::sync::Arc<std::sync::OnceLock<WideDraws>>);

impl PartialEq for DrawCache {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for DrawCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DrawCache")
    }
}

/// The dense `L`, materialised on demand. Ignored by `==` (it is a function of the packed
/// factor); not cloned.
#[derive(Default)]
struct DenseFactor(std::sync::OnceLock<DMatrix<f64>>);

impl Clone for DenseFactor {
    fn clone(&self) -> Self {
        DenseFactor::default()
    }
}

impl PartialEq for DenseFactor {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for DenseFactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DenseFactor")
    }
}

impl RewardModel {
    /// Computes the `kind` covariance of the estimator at `params` (on the current rayon pool)
    /// and builds the model.
    ///
    /// Errors: [`Error::SingularInformation`] (information or covariance not invertible /
    /// not positive definite), [`Error::InvalidArgument`] (cluster kind without ids).
    #[doc(hidden)] // unchecked or internal: for the tests and benchmarks only
    pub fn from_estimate(
        data: &Dataset,
        params: Params,
        report: FitReport,
        kind: CovarianceKind,
    ) -> Result<Self> {
        let f = covariance_factors(data, &params, kind)?;
        let (factor, gamma_cov) = (f.theta_factor, f.gamma_cov);
        Self::from_parts(params, data.n(), kind, report, factor, gamma_cov)
    }

    /// Assembles a model from stored parts (checked): `theta_cov_factor` is the lower Cholesky
    /// factor of `Cov(theta_hat)` (`d1 x d1`; its strict upper triangle is ignored),
    /// `gamma_cov` is `Cov(gamma_hat)` (`d2 x d2`).
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
        check_report(&report)?;
        if n == 0 {
            return Err(Error::invalid(
                "n",
                "a model needs at least one training sample",
            ));
        }
        // L must be a Cholesky factor: a positive diagonal (the covariance is then positive
        // definite), and every row norm (a theta_j's SE) finite.
        if let Some(j) = (0..d1).find(|&j| theta_cov_factor[(j, j)] <= 0.0) {
            return Err(Error::SingularInformation {
                detail: format!(
                    "the Cholesky factor of Cov(theta) has a non-positive diagonal entry {:e} at \
                     [{j}, {j}]: the covariance is not positive definite",
                    theta_cov_factor[(j, j)]
                ),
            });
        }
        // Row norms of L, accumulated column by column (contiguous in column-major storage).
        let mut theta_ss = vec![0.0f64; d1];
        for (k, col) in theta_cov_factor.as_slice().chunks_exact(d1).enumerate() {
            for (acc, v) in theta_ss[k..].iter_mut().zip(&col[k..]) {
                *acc += v * v;
            }
        }
        let theta_se: Vec<f64> = theta_ss.into_iter().map(f64::sqrt).collect();
        if let Some(j) = theta_se.iter().position(|v| !v.is_finite()) {
            return Err(Error::SingularInformation {
                detail: format!("the standard error of theta[{j}] overflows a double"),
            });
        }
        let gamma_root = psd_root(&gamma_cov)?;
        // The diagonal is non-negative (checked by psd_root).
        let gamma_se = (0..d2).map(|k| gamma_cov[(k, k)].sqrt()).collect();
        // Packed in place: the dense factor's buffer becomes the packed one.
        let packed = PackedLower::from_lower(theta_cov_factor);
        Ok(RewardModel {
            params,
            n,
            covariance,
            report,
            gamma_cov,
            gamma_root,
            theta_se,
            gamma_se,
            packed,
            dense: DenseFactor::default(),
            calibration: std::sync::Arc::new(Calibration::wald(IntervalMethod::Wald)),
            draws: DrawCache::default(),
        })
    }

    /// The model with `calibration` as its interval method.
    ///
    /// Errors: [`Error::DimensionMismatch`] when the draws do not have the model's d1 / d2.
    pub fn with_calibration(mut self, calibration: Calibration) -> Result<Self> {
        if calibration
            .dims()
            .is_some_and(|dims| dims != (self.d1(), self.d2()))
        {
            return Err(Error::dims(
                "calibration",
                format!("draws of d1 = {}, d2 = {}", self.d1(), self.d2()),
                "other dimensions",
            ));
        }
        self.calibration = std::sync::Arc::new(calibration);
        self.draws = DrawCache::default();
        Ok(self)
    }

    /// The packed lower Cholesky factor of `Cov(theta_hat)`: what the calibration needs of the
    /// Wald model (its `c_hat` divides by the Wald SEs).
    pub(crate) fn packed_factor(&self) -> &PackedLower {
        &self.packed
    }

    /// The interval method every consumer of this model uses (scores, comparisons, pBoN,
    /// rationality, coefficient intervals), with its bootstrap draws and figures.
    pub fn calibration(&self) -> &Calibration {
        &self.calibration
    }

    /// The calibration's theta draws in `f64`, `d1 x B` row-major (empty for Wald): widened
    /// and transposed once, on the first call, and kept, for `linalg::project_rows`.
    pub(crate) fn theta_draws_f64(&self) -> &[f64] {
        &self.wide_draws().theta
    }

    /// `max_b ||theta*_b||` over the calibration's draws (0 for Wald): `|theta*_b . phi| <=
    /// ||phi||` times this (up to the rounding of its sum of squares, relative `d1 * 2^-53`).
    pub(crate) fn max_draw_norm(&self) -> f64 {
        self.wide_draws().max_norm
    }

    fn wide_draws(&self) -> &WideDraws {
        self.draws.0.get_or_init(|| {
            let draws = self.calibration.theta_draws();
            let max_norm = draws
                .chunks_exact(self.d1())
                .map(|row| row.iter().map(|&v| f64::from(v).powi(2)).sum::<f64>())
                .fold(0.0f64, f64::max)
                .sqrt();
            let theta = crate::linalg::transposed(draws, self.d1());
            WideDraws { theta, max_norm }
        })
    }

    /// The same model with the paper's Wald intervals: how the published figures stay
    /// reachable on a model fitted with a bootstrap method (shares everything but the draws).
    pub fn wald(&self) -> RewardModel {
        RewardModel {
            calibration: std::sync::Arc::new(Calibration::wald(IntervalMethod::Wald)),
            draws: DrawCache::default(),
            ..self.clone()
        }
    }

    /// The fit's interval diagnostics (d1/n, finite MLE, max |gamma_hat|, diverged refits,
    /// a warning when Wald is known to under-cover here).
    pub fn diagnostics(&self) -> IntervalDiagnostics {
        calibrate::diagnostics(self.n, &self.params, &self.report, &self.calibration)
    }

    /// [`RewardModel::diagnostics`] of the model fitted to `data`: with cluster ids in `data`
    /// the hints recommend the cluster-aware intervals.
    pub fn diagnostics_on(&self, data: &Dataset) -> IntervalDiagnostics {
        calibrate::diagnostics_clustered(
            self.n,
            &self.params,
            &self.report,
            &self.calibration,
            data.cluster().is_some(),
        )
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
    ///
    /// The model keeps `L` packed for scoring; this dense copy (`8 d1^2` bytes) is made on the
    /// first call and kept.
    #[doc(hidden)] // unchecked or internal: for the tests and benchmarks only
    pub fn theta_cov_factor(&self) -> &DMatrix<f64> {
        self.dense.0.get_or_init(|| self.packed.to_dense())
    }
    /// `Cov(theta_hat) = L L^T = S_theta^2 / n`.
    #[doc(hidden)] // unchecked or internal: for the tests and benchmarks only
    pub fn theta_cov(&self) -> DMatrix<f64> {
        let l = self.theta_cov_factor();
        l * l.transpose()
    }
    /// Whether this model's covariance is the inverse expected information of `data` at its
    /// estimate, as [`crate::estimator::Estimator::estimate`] builds it from its training data:
    /// the `expected` kind and `data`'s sample size and shape (the caller vouches that `data`
    /// are the training data). Then the model's factors stand in for that information's
    /// inverse (the heterogeneity diagnostic, the bootstraps' preconditioner).
    pub(crate) fn is_expected_fit_of(&self, data: &Dataset) -> bool {
        self.covariance() == CovarianceKind::Expected
            && (self.n(), self.d1(), self.d2()) == (data.n(), data.d1(), data.d2())
    }

    /// `Cov(gamma_hat) = S_gamma^2 / n`, `d2 x d2`.
    pub(crate) fn gamma_cov(&self) -> &DMatrix<f64> {
        &self.gamma_cov
    }

    /// Checks that a feature vector has length d1 and finite entries; `arg` names it in errors.
    pub(crate) fn check_features(&self, arg: &str, phi: &[f64]) -> Result<()> {
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
    #[doc(hidden)] // unchecked or internal: for the tests and benchmarks only
    pub fn reward(&self, phi: &[f64]) -> f64 {
        dot(&self.params.theta, phi)
    }

    /// `sqrt(phi^T S_theta^2 phi / n) = ||L^T phi||` (unchecked length).
    #[doc(hidden)] // unchecked or internal: for the tests and benchmarks only
    pub fn reward_se(&self, phi: &[f64]) -> f64 {
        self.packed.squared_norms(&phi[..self.d1()], |v| v)[0].sqrt()
    }

    /// [`RewardModel::reward_se`] of each of the `m` row-major feature vectors in `phis`
    /// (`m * d1` values, `f32` or `f64`; unchecked values, length a multiple of d1).
    ///
    /// Runs on the calling thread; called inside a rayon pool (e.g.
    /// [`crate::parallel::run_in_pool`]) with more than 256 rows it spreads blocks of 256 rows
    /// over the pool. Each row's SE is identical whichever way it is computed.
    pub(crate) fn reward_se_batch<T: Copy + Into<f64> + Sync>(&self, phis: &[T]) -> Vec<f64> {
        use rayon::prelude::*;
        const BLOCK: usize = 256;
        let d1 = self.d1();
        let m = phis.len() / d1;
        let norms = |x: &[T]| -> Vec<f64> {
            self.packed
                .squared_norms(x, |v: T| v.into())
                .into_iter()
                .map(f64::sqrt)
                .collect()
        };
        if m > BLOCK && rayon::current_thread_index().is_some() {
            phis[..m * d1]
                .par_chunks(BLOCK * d1)
                .flat_map_iter(norms)
                .collect()
        } else {
            norms(&phis[..m * d1])
        }
    }

    /// Reward intervals of `m` row-major feature vectors under the model's interval method
    /// (unchecked input; `alpha` in (0, 1)). Wald: see [`RewardModel::reward_se_batch`] for
    /// threading; draws methods: every row's values at every draw as one blocked GEMM
    /// (`linalg::project_rows`: the same values alone or in any batch, on any thread count),
    /// spread over the current rayon pool above 64 rows, as are the intervals.
    pub(crate) fn reward_intervals(&self, phis: &[f64], alpha: f64) -> Vec<RewardInterval> {
        let d1 = self.d1();
        let estimates: Vec<f64> = phis.chunks_exact(d1).map(|phi| self.reward(phi)).collect();
        self.calibration.rule().theta_intervals(
            &estimates,
            || self.reward_se_batch(phis),
            || {
                crate::linalg::project_rows(
                    phis,
                    d1,
                    self.theta_draws_f64(),
                    self.calibration.reps(),
                )
            },
            |k| self.reward_unbounded(&phis[k * d1..(k + 1) * d1]),
            alpha,
        )
    }

    /// True when the reward (or reward difference) of `phi` puts weight on a coefficient
    /// whose interval is unbounded (`Calibration::unbounded`): its interval is unbounded.
    pub(crate) fn reward_unbounded(&self, phi: &[f64]) -> bool {
        self.calibration.touches_unbounded(0, phi)
    }

    /// Reward interval of one feature vector under the model's interval method (unchecked
    /// input; `alpha` in (0, 1)).
    #[doc(hidden)] // unchecked or internal: for the tests and benchmarks only
    pub fn reward_interval(&self, phi: &[f64], alpha: f64) -> RewardInterval {
        self.calibration
            .rule()
            .estimate(
                Functional {
                    estimate: self.reward(phi),
                    target: Target::Theta,
                    wald_se: || self.reward_se(phi),
                    draws: || {
                        crate::linalg::project_rows(
                            phi,
                            self.d1(),
                            self.theta_draws_f64(),
                            self.calibration.reps(),
                        )
                    },
                    unbounded: self.reward_unbounded(phi),
                },
                alpha,
            )
            .interval
    }

    /// Reward, SE and `(1 - alpha)` CI of one answer with features `phi` (length d1).
    pub fn score(&self, phi: &[f64], alpha: f64) -> Result<RewardInterval> {
        check_alpha(alpha)?;
        self.check_features("phi", phi)?;
        let r = self.reward_interval(phi, alpha);
        check_features_result("phi", 0, &r.checked_figures(self.reward_unbounded(phi)))?;
        Ok(r)
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
        let d1 = self.d1();
        self.reward_intervals(&rows, alpha)
            .into_iter()
            .enumerate()
            .map(|(i, r)| {
                let unbounded = self.reward_unbounded(&rows[i * d1..(i + 1) * d1]);
                check_features_result("phi", i, &r.checked_figures(unbounded))?;
                Ok(r)
            })
            .collect()
    }

    /// Converts `m * d1` row-major values to `f64`, checking the length and finiteness.
    pub(crate) fn rows_f64<T: Copy + Into<f64>>(
        &self,
        arg: &str,
        values: &[T],
    ) -> Result<Vec<f64>> {
        let d1 = self.d1();
        if values.len() % d1 != 0 {
            return Err(Error::dims(
                arg,
                format!("a multiple of d1 = {d1} values"),
                values.len(),
            ));
        }
        let mut rows = crate::error::try_with_capacity(arg, values.len())?;
        // Widened and checked in one pass, a block at a time (a flag per block vectorises);
        // `check_finite` names the first bad value.
        let mut finite = true;
        for block in values.chunks(256) {
            let start = rows.len();
            rows.extend(block.iter().map(|&v| v.into()));
            finite &= rows[start..].iter().fold(true, |ok, v| ok & v.is_finite());
        }
        if !finite {
            check_finite(arg, &rows)?;
        }
        Ok(rows)
    }

    /// Rationality `sigma_hat(x) = psi0 + gamma_hat . psi` of an annotator profile and its SE
    /// under the model's interval method: Wald `sqrt(psi^T Cov(gamma_hat) psi)` (psi0 is
    /// known, so it carries no variance); the bootstrap's SD of the refits' rationalities
    /// (resized: the estimate is bias-corrected, `psi0 + (gamma_hat - bias) . psi`).
    pub fn rationality(&self, psi0: f64, psi: &[f64]) -> Result<(f64, f64)> {
        let r = self.rationality_interval(psi0, psi, 0.05)?;
        Ok((r.reward, r.se))
    }

    /// [`RewardModel::rationality`] with its `(1 - alpha)` interval (in a [`RewardInterval`]:
    /// `reward` holds sigma).
    pub(crate) fn rationality_interval(
        &self,
        psi0: f64,
        psi: &[f64],
        alpha: f64,
    ) -> Result<RewardInterval> {
        check_alpha(alpha)?;
        let (sigma, se) = self.wald_rationality(psi0, psi)?;
        let cal = &self.calibration;
        let unbounded = cal.touches_unbounded(self.d1(), psi);
        let r = cal
            .rule()
            .estimate(
                Functional {
                    estimate: sigma,
                    target: Target::Gamma {
                        // A Wald model stores no bias (an empty vector), not d2 zeros.
                        bias: if cal.gamma_bias().is_empty() {
                            0.0
                        } else {
                            dot(cal.gamma_bias(), psi)
                        },
                    },
                    wald_se: || se,
                    draws: || cal.gamma_projections(psi0, psi),
                    unbounded,
                },
                alpha,
            )
            .interval;
        check_result(
            "psi",
            rationality_interval_overflow,
            &r.checked_figures(unbounded),
        )?;
        Ok(r)
    }

    /// The paper's Wald rationality and SE, whatever the model's method (checked input).
    pub(crate) fn wald_rationality(&self, psi0: f64, psi: &[f64]) -> Result<(f64, f64)> {
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
        let se = (self.gamma_root.tr_mul(&v)).norm();
        check_result("psi", rationality_overflow, &[sigma, se])?;
        Ok((sigma, se))
    }
}

/// The fit report of a stored model must describe a fit that can have happened: finite,
/// non-negative figures (gradient norm, mean NLL, seconds, tolerance), at least one start, no
/// more iterations in the winning start than in all, and `converged` exactly when the
/// termination says so.
fn check_report(r: &FitReport) -> Result<()> {
    let figures = [
        ("grad_norm", r.grad_norm),
        ("neg_loglik", r.neg_loglik),
        ("seconds", r.seconds),
        ("tol", r.tol),
    ];
    for (name, v) in figures {
        if !(v.is_finite() && v >= 0.0) {
            return Err(Error::invalid(
                format!("report.{name}"),
                format!("must be finite and non-negative; got {v}"),
            ));
        }
    }
    if r.starts == 0 {
        return Err(Error::invalid("report.starts", "must be at least 1"));
    }
    if r.iterations > r.total_iterations {
        return Err(Error::invalid(
            "report.iterations",
            format!(
                "{} iterations in the winning start but {} in all",
                r.iterations, r.total_iterations
            ),
        ));
    }
    if r.converged != (r.termination == crate::fit::Termination::Converged) {
        return Err(Error::invalid(
            "report.converged",
            format!(
                "converged = {} disagrees with the termination `{}`",
                r.converged,
                r.termination.name()
            ),
        ));
    }
    Ok(())
}

/// A square root `F` (`cov = F F^T`) of a symmetric positive semi-definite covariance.
///
/// Scale-invariant: with `s = sqrt(diag(cov))`, the correlation matrix `C = cov / (s s^T)` is
/// eigen-decomposed (`C = U diag(lambda) U^T`) and `F = diag(s) U diag(sqrt(lambda))`, so
/// coefficients on wildly different scales (1e-10 next to 1e10) keep their full precision. A
/// negative variance, asymmetry beyond rounding, or an eigenvalue of `C` below `-1e-9` (`C`'s
/// eigenvalues lie in `[0, d]`; rounding gives ~`1e-15`) means the matrix is not a covariance:
/// [`Error::SingularInformation`]. Eigenvalues within rounding of zero count as zero.
fn psd_root(cov: &DMatrix<f64>) -> Result<DMatrix<f64>> {
    let d = cov.nrows();
    if d == 0 {
        return Ok(DMatrix::zeros(0, 0));
    }
    let not_psd = |detail: String| Error::SingularInformation {
        detail: format!("Cov(gamma) is not a covariance matrix: {detail}"),
    };
    if let Some(k) = (0..d).find(|&k| cov[(k, k)] < 0.0 || cov[(k, k)].is_nan()) {
        return Err(not_psd(format!(
            "the variance of gamma[{k}] is negative ({:e})",
            cov[(k, k)]
        )));
    }
    let s: Vec<f64> = (0..d).map(|k| cov[(k, k)].sqrt()).collect();
    let mut corr = DMatrix::zeros(d, d);
    for i in 0..d {
        for j in 0..d {
            let (a, b) = (cov[(i, j)], cov[(j, i)]);
            let scale = s[i] * s[j];
            if (a - b).abs() > 1e-12 * scale.max(a.abs()) {
                return Err(not_psd(format!(
                    "asymmetric at [{i}, {j}] ({a:e} vs {b:e})"
                )));
            }
            corr[(i, j)] = match scale > 0.0 {
                true => a / scale,
                // A zero variance: its row must be zero too (checked through |corr| <= 1).
                false if a == 0.0 => 0.0,
                false => f64::INFINITY,
            };
            if corr[(i, j)].is_nan() || corr[(i, j)].abs() > 1.0 + 1e-9 {
                return Err(not_psd(format!(
                    "the covariance at [{i}, {j}] ({a:e}) exceeds the product of the standard \
                     errors ({scale:e})"
                )));
            }
        }
    }
    let eig = nalgebra::SymmetricEigen::new(corr);
    let smallest = eig.eigenvalues.min();
    if smallest < -1e-9 {
        return Err(not_psd(format!(
            "its correlation matrix has the negative eigenvalue {smallest:e}"
        )));
    }
    let mut root = eig.eigenvectors;
    for (k, &lambda) in eig.eigenvalues.iter().enumerate() {
        root.column_mut(k).scale_mut(lambda.max(0.0).sqrt());
    }
    for (i, &si) in s.iter().enumerate() {
        root.row_mut(i).scale_mut(si);
    }
    Ok(root)
}

/// Why a rationality is refused: it or its SE is not finite.
fn rationality_overflow() -> String {
    "psi0 and psi are so large that the rationality or its standard error overflows a double; \
     rescale them"
        .to_string()
}

/// Why a rationality interval is refused: a bound or the calibrated estimate is not finite.
fn rationality_interval_overflow() -> String {
    "the rationality of psi0 and psi under the model's interval method (its calibrated estimate, \
     standard error or a confidence bound) overflows a double: psi0 and psi are too large or the \
     model's calibration figures extreme"
        .to_string()
}
