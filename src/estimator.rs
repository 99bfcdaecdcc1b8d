//! The estimator pipeline: fit -> covariance -> calibrate -> model, in one place.
//!
//! [`estimate`] is the only code that composes the steps: [`crate::fit::fit`] finds the
//! estimate, [`RewardModel::from_estimate`] computes the covariance at it, and
//! `calibrate::calibrate` runs the interval method's refits from the estimate and the Wald
//! factor (it never sees a model). The command-line program, the C API and
//! [`RewardModel::estimate`] all call it.

use crate::calibrate::{self, IntervalMethod, IntervalOptions};
use crate::data::Dataset;
use crate::error::Result;
use crate::fit::{fit, FitControl, FitOptions};
use crate::fitted::RewardModel;
use crate::inference::CovarianceKind;
use std::sync::atomic::AtomicBool;

/// Fits `data` with `options`, computes the `kind` covariance at the estimate and, for a
/// bootstrap or cluster interval method, refits `B` resamples on the same pool
/// (`calibrate::calibrate`). Deterministic for `options` and `intervals.seed` whatever
/// `options.threads` is. A fit that did not converge still yields a model; check
/// `report().converged`.
///
/// Errors: invalid `intervals`, those of [`fit`], of [`RewardModel::from_estimate`] and of
/// `calibrate::calibrate`.
pub fn estimate(
    data: &Dataset,
    options: &FitOptions,
    kind: CovarianceKind,
    intervals: &IntervalOptions,
    control: &FitControl,
) -> Result<RewardModel> {
    intervals.check()?;
    let fitted = fit(data, options, control)?;
    crate::parallel::run_in_pool(options.threads, || {
        let model = RewardModel::from_estimate(data, fitted.params, fitted.report, kind)?;
        with_intervals(data, model, intervals, options, control.cancel)
    })?
}

/// `model` (fitted on `data` with `estimator`) with the interval method of `intervals`, on a
/// pool of `estimator.threads`: the calibration step of [`estimate`] alone, for a caller that
/// already holds the Wald model (the demo's report sets both side by side).
///
/// Errors: those of `calibrate::calibrate`.
pub fn recalibrate(
    data: &Dataset,
    model: &RewardModel,
    intervals: &IntervalOptions,
    estimator: &FitOptions,
    cancel: Option<&AtomicBool>,
) -> Result<RewardModel> {
    crate::parallel::run_in_pool(estimator.threads, || {
        with_intervals(data, model.clone(), intervals, estimator, cancel)
    })?
}

/// The calibration step on the current pool: Wald keeps the model as it is.
fn with_intervals(
    data: &Dataset,
    model: RewardModel,
    intervals: &IntervalOptions,
    estimator: &FitOptions,
    cancel: Option<&AtomicBool>,
) -> Result<RewardModel> {
    if intervals.method == IntervalMethod::Wald {
        return Ok(model);
    }
    let cal = calibrate::calibrate(
        data,
        model.params(),
        model.packed_factor(),
        intervals,
        estimator,
        cancel,
    )?;
    model.with_calibration(cal)
}

impl RewardModel {
    /// Fits the data with `options` and computes the `kind` covariance at the estimate (Wald
    /// intervals): [`estimate`] with the default [`IntervalOptions`].
    ///
    /// Errors: those of [`fit`] and of [`RewardModel::from_estimate`]. A fit that did not
    /// converge still yields a model; check `report().converged`.
    pub fn estimate(
        data: &Dataset,
        options: &FitOptions,
        kind: CovarianceKind,
        control: &FitControl,
    ) -> Result<Self> {
        estimate(data, options, kind, &IntervalOptions::default(), control)
    }

    /// [`RewardModel::estimate`] with the interval method of `intervals`: the pipeline
    /// [`estimate`].
    ///
    /// Errors: those of [`estimate`].
    pub fn estimate_with(
        data: &Dataset,
        options: &FitOptions,
        kind: CovarianceKind,
        intervals: &IntervalOptions,
        control: &FitControl,
    ) -> Result<Self> {
        estimate(data, options, kind, intervals, control)
    }
}
