//! The estimator: its options checked once, and the pipeline fit -> covariance -> calibrate ->
//! model in one place.
//!
//! [`EstimatorOptions`] hold everything a caller configures (linfa's params): the fit, the
//! covariance kind, the interval method and whether a fit that misses its tolerance is an
//! error. [`EstimatorOptions::check`] checks every option that needs no data, once, into an
//! [`Estimator`], the only type the pipeline takes; [`Estimator::estimate`] then checks them
//! against the data and runs the steps: [`crate::fit::fit`] finds the estimate, the
//! convergence rule (`Estimator::accept`) applies `require_converged`,
//! [`RewardModel::from_estimate`] computes the covariance at it, and `calibrate::calibrate` runs
//! the interval method's refits from the estimate and the Wald factor (it never sees a model).
//! The distributed fit runs the same steps with the shards' sums
//! (`Estimator::estimate_distributed`: the fit over an oracle, the convergence rule, the
//! covariance round). The command-line program, the C fitter, the C distributed fit, the demo
//! and [`RewardModel::estimate`] all go through it.

use crate::calibrate::{self, IntervalMethod, IntervalOptions};
use crate::covariance::CovarianceKind;
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::fit::NewtonVariant;
use crate::fit::{fit, FitControl, FitOptions, FitReport};
use crate::fitted::RewardModel;
use crate::shard::driver::{fit_shards, Oracle, Rounds};
use std::sync::atomic::AtomicBool;

/// Everything the estimator is configured by. `fit.seed` is the one seed: it seeds the fit's
/// random starts and the bootstrap's label draws. Check them with [`EstimatorOptions::check`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct EstimatorOptions {
    /// The fit (solver, tolerance, starts, threads, seed).
    pub fit: FitOptions,
    /// The covariance computed at the estimate. Default: the expected information.
    pub covariance: CovarianceKind,
    /// The interval method and its refits. Default: Wald.
    pub intervals: IntervalOptions,
    /// If set, a fit that stops without meeting `fit.tol` is [`Error::NotConverged`] (nothing
    /// after the fit is computed). Default false: the model is returned and its report says
    /// `converged = false`.
    pub require_converged: bool,
}

impl EstimatorOptions {
    /// Checks every option that needs no data (the fit's [`FitOptions::check_free`], the
    /// interval options' refit count), once: the checked options are an [`Estimator`].
    ///
    /// Errors: [`Error::InvalidArgument`] naming the option.
    pub fn check(self) -> Result<Estimator> {
        self.fit.check_free()?;
        self.intervals.check()?;
        Ok(Estimator { options: self })
    }
}

/// Checked [`EstimatorOptions`]: only [`EstimatorOptions::check`] makes one, so every method
/// here starts from valid options and checks only what depends on the data.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimator {
    options: EstimatorOptions,
}

impl Estimator {
    /// The options this estimator was checked from.
    pub fn options(&self) -> &EstimatorOptions {
        &self.options
    }

    /// Fits `data`, applies the convergence rule, computes the covariance at the estimate and,
    /// for a bootstrap or cluster interval method, refits `B` resamples on the same pool
    /// (`calibrate::calibrate`). Deterministic for the options whatever `fit.threads` is.
    /// Without `require_converged`, a fit that did not converge still yields a model; check
    /// `report().converged`.
    ///
    /// Errors: the options against the data ([`FitOptions::check_data`]), those of
    /// [`fit`], `Estimator::accept`, [`RewardModel::from_estimate`] and of
    /// `calibrate::calibrate`.
    pub fn estimate(&self, data: &Dataset, control: &FitControl) -> Result<RewardModel> {
        let fitted = fit(data, &self.options.fit, control)?;
        self.accept(&fitted.report)?;
        crate::parallel::run_in_pool(self.options.fit.threads, || {
            let model = RewardModel::from_estimate(
                data,
                fitted.params,
                fitted.report,
                self.options.covariance,
            )?;
            self.with_intervals(data, model, control.cancel)
        })?
    }

    /// `model` (fitted on `data` with these fit options) with this estimator's interval
    /// method, on a pool of `fit.threads`: the calibration step of [`Estimator::estimate`]
    /// alone, for a caller that already holds the Wald model (the demo's report sets both
    /// side by side).
    ///
    /// Errors: the options against the data ([`FitOptions::check_data`]) and those of
    /// `calibrate::calibrate`.
    pub fn recalibrate(
        &self,
        data: &Dataset,
        model: &RewardModel,
        cancel: Option<&AtomicBool>,
    ) -> Result<RewardModel> {
        self.options.fit.check_data(data.d1(), data.d2())?;
        crate::parallel::run_in_pool(self.options.fit.threads, || {
            self.with_intervals(data, model.clone(), cancel)
        })?
    }

    /// [`Estimator::estimate`] over shards held elsewhere, whose sums the `oracle` answers
    /// ([`crate::shard::driver`]): the fit over the shards (`options.fit`; Newton from the
    /// default or an explicit start), the convergence rule, then the covariance round at the
    /// accepted estimate, with the rounds asked. Wald intervals (the caller refuses another
    /// interval method: calibrated intervals refit the data many times).
    ///
    /// Errors: those of the distributed fit ([`crate::shard::driver::fit_distributed`]),
    /// `Estimator::accept` and [`crate::shard::driver::DistributedFit::model`].
    pub(crate) fn estimate_distributed(
        &self,
        oracle: &mut dyn Oracle,
        control: &FitControl,
    ) -> Result<(RewardModel, Rounds)> {
        let kind = self.options.covariance;
        let fitted = fit_shards(
            oracle,
            &self.options.fit,
            NewtonVariant::Auto,
            control,
            Some(kind),
        )?;
        self.accept(&fitted.fit.report)?;
        let gathered = fitted.gather(Some(kind))?;
        Ok((gathered.model(kind)?, gathered.rounds))
    }

    /// The convergence rule, the only place `require_converged` is applied, between the fit
    /// and the covariance of [`Estimator::estimate`] and `Estimator::estimate_distributed`: a
    /// fit whose report says it did not converge is [`Error::NotConverged`], explained by
    /// [`FitReport::shortfall`], when the options ask for convergence.
    ///
    /// Errors: [`Error::NotConverged`] as above.
    fn accept(&self, report: &FitReport) -> Result<()> {
        if self.options.require_converged && !report.converged {
            return Err(Error::NotConverged {
                detail: format!("{} (require_converged is set)", report.shortfall()),
            });
        }
        Ok(())
    }

    /// The calibration step on the current pool: Wald keeps the model as it is.
    fn with_intervals(
        &self,
        data: &Dataset,
        model: RewardModel,
        cancel: Option<&AtomicBool>,
    ) -> Result<RewardModel> {
        if self.options.intervals.method == IntervalMethod::Wald {
            return Ok(model);
        }
        let expected = model.is_expected_fit_of(data).then(|| model.gamma_cov());
        let cal = calibrate::calibrate(
            data,
            model.params(),
            model.packed_factor(),
            expected,
            &self.options.intervals,
            &self.options.fit,
            cancel,
        )?;
        model.with_calibration(cal)
    }
}

impl RewardModel {
    /// Fits the data with `options` and computes the `kind` covariance at the estimate (Wald
    /// intervals): [`Estimator::estimate`] with these and the other options at their
    /// defaults.
    ///
    /// Errors: those of [`EstimatorOptions::check`] and [`Estimator::estimate`]. A fit that
    /// did not converge still yields a model; check `report().converged`.
    pub fn estimate(
        data: &Dataset,
        options: &FitOptions,
        kind: CovarianceKind,
        control: &FitControl,
    ) -> Result<Self> {
        EstimatorOptions {
            fit: options.clone(),
            covariance: kind,
            ..EstimatorOptions::default()
        }
        .check()?
        .estimate(data, control)
    }
}
