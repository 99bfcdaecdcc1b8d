//! Calibrated confidence intervals: the interval method of a model, chosen at fit
//! time and stored in it.
//!
//! The paper's Wald intervals (`theta_hat . phi +- q se`, [`IntervalMethod::Wald`], the
//! default) under-cover where users are: at small n (0.86 for rewards at n = 200 in the paper's
//! §6.1 design: a quarter of the datasets put the MLE on the shoulder of the
//! `|gamma| -> infinity` valley) and in high dimension (`d1 / n = 0.06`: the MLE is inflated
//! away from zero, Sur & Candès 2019, and gamma's Wald interval covers 0.85). Two parametric
//! bootstraps fix this:
//!
//! * [`IntervalMethod::Bootstrap`]: labels redrawn from the fitted model on the same
//!   covariates, each refit warm-started at the estimate (`draws`); the percentile interval
//!   of the `B` (default 400) refits' values of the quantity.
//! * [`IntervalMethod::Resized`]: Zhao & Candès' adaptively resized parametric bootstrap for
//!   high-dimensional GLMs (`resized`): data drawn from `(s theta_hat, gamma_hat)` with the
//!   shrink `s` chosen so that refits reproduce `||theta_hat||`; `B` (default 100) refits from
//!   there give the inflation `alpha_hat` and the spreads: rewards and theta are reported as
//!   `theta_hat . phi / alpha_hat +- q SD* / alpha_hat`, gamma as `gamma_hat - bias* +- q SD*`.
//! * [`IntervalMethod::Auto`] picks one of the three by `auto_pick`'s documented rules and
//!   the model says what it picked.
//!
//! A [`Calibration`] holds the refits' draws of theta and gamma in `f32` (`B x d1` and
//! `B x d2`): scoring an answer costs `O(B d1)` ([`Calibration::theta_projections`]) and any
//! linear functional (a reward, a difference of rewards, a coefficient, a rationality) gets
//! its interval from the same draws (by the one interval rule, `src/interval.rs`), so
//! differences are exact.
//! Everything is deterministic for a seed whatever the thread count: draw `b` has its own
//! random stream and the draws are collected in order.

pub(crate) mod batched;
pub(crate) mod draws;
pub(crate) mod resized;

use crate::cluster::identified::{describe_all, Carried};
use crate::codes::coded_enum;
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::fit::{FitOptions, FitReport, Termination};
pub(crate) use crate::interval::sample_sd;
use crate::interval::Rule;
use crate::linalg::{dot_f32, PackedLower};
use crate::model::Params;
use crate::resample::Draws;
use batched::Preconditioner;
use nalgebra::DMatrix;
use std::sync::atomic::AtomicBool;

coded_enum! {
    /// How a model's confidence intervals are computed.
    #[derive(Default)]
    pub enum IntervalMethod: "intervals", "interval method" {
        /// The paper's Wald intervals from the information matrix (the default; exactly as
        /// before, so published numbers reproduce).
        #[default]
        Wald = 0 => "wald",
        /// Parametric bootstrap, percentile interval (B default [`DEFAULT_BOOTSTRAP_REPS`]).
        Bootstrap = 1 => "bootstrap",
        /// Adaptively resized parametric bootstrap for high dimension (B default
        /// [`DEFAULT_RESIZED_REPS`]).
        Resized = 2 => "resized",
        /// Picked at fit time by `auto_pick_for`: a cluster method when the data have
        /// cluster ids, else one of the three above by `auto_pick`.
        Auto = 3 => "auto",
        /// Cluster jackknife (CV3): the estimates without each cluster (annotator),
        /// refitted warm from the estimate ([`crate::cluster::jackknife`]); any functional's
        /// variance is `(G-1)/G sum_g (v_g - v_bar)^2`, quantiles t(G-1). Needs cluster ids.
        ClusterJackknife = 4 => "cluster-jackknife",
        /// One-step cluster jackknife: each leave-one-cluster-out estimate by one Newton step
        /// `b + (H - H_g)^-1 s_g` ([`crate::cluster::one_step_jackknife`], no refits), then as
        /// [`IntervalMethod::ClusterJackknife`]. Needs cluster ids.
        ClusterOneStep = 5 => "cluster-onestep",
    }
}

impl IntervalMethod {
    /// True for the methods that treat comparisons by one annotator as dependent.
    pub fn is_cluster(self) -> bool {
        matches!(
            self,
            IntervalMethod::ClusterJackknife | IntervalMethod::ClusterOneStep
        )
    }
}

/// Refits of the percentile bootstrap by default (fewer, 50-100, cover only 0.90-0.95).
pub const DEFAULT_BOOTSTRAP_REPS: usize = 400;
/// Refits of the resized bootstrap by default (after the shrink search).
pub const DEFAULT_RESIZED_REPS: usize = 100;
/// Fewest bootstrap refits accepted (a percentile needs a distribution).
pub const MIN_REPS: usize = 10;
/// Most bootstrap refits accepted (the draws are stored: `4 B (d1 + d2)` bytes).
pub const MAX_REPS: usize = 100_000;

/// `auto` picks [`IntervalMethod::Resized`] above this `d1 / n`, and the diagnostics warn that
/// Wald under-covers above it. At `d1 / n = 0.06` the MLE is inflated by 11% and gamma's Wald
/// interval covers 0.85; the inflation grows roughly linearly in `d1 / n` (Sur & Candès 2019),
/// so at 0.02 it is ~3-4%, about a tenth of a typical SE in the direction of theta.
pub(crate) const HIGH_DIMENSION_RATIO: f64 = 0.02;
/// `auto` picks [`IntervalMethod::Bootstrap`] below this many comparisons per parameter
/// (`n / (d1 + d2)`), and the diagnostics warn that Wald under-covers below it: the paper's
/// design has Wald reward coverage 0.86 at 40 per parameter (n = 200), 0.90 at 120 (n = 600)
/// and reaches 0.95 only around 1,600 (n = 8,000).
pub(crate) const SMALL_SAMPLE_PER_PARAMETER: f64 = 1000.0;

/// The diagnostics warn when more than this share of the bootstrap refits diverged (converged
/// from neither the warm start nor the estimator's own starts): such fits sit near the
/// `|gamma| -> infinity` valley, where the percentile bootstrap can under-cover. In the paper's
/// design (1,000 datasets per n, `tests/calibrated_coverage.rs` seeds, docs/intervals.md)
/// rewards cover 0.664 on the 6% of n = 600 datasets above this share (0.954 on the others);
/// at n = 200 the 31% above it cover 0.950 (0.970 on the others).
pub(crate) const DIVERGED_SHARE_WARNING: f64 = 0.05;

/// The interval method asked for at fit time, with its settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IntervalOptions {
    /// The method. Default [`IntervalMethod::Wald`].
    pub method: IntervalMethod,
    /// Bootstrap refits `B`; `None` = the method's default ([`DEFAULT_BOOTSTRAP_REPS`],
    /// [`DEFAULT_RESIZED_REPS`]). Ignored by Wald.
    pub reps: Option<usize>,
}

impl IntervalOptions {
    /// Checks `reps` against [`MIN_REPS`]..=[`MAX_REPS`].
    pub fn check(&self) -> Result<()> {
        match self.reps {
            Some(b) if !(MIN_REPS..=MAX_REPS).contains(&b) => Err(Error::invalid(
                "bootstrap_reps",
                format!("must lie in [{MIN_REPS}, {MAX_REPS}]; got {b}"),
            )),
            _ => Ok(()),
        }
    }
}

/// What `auto` picks for a problem of this shape (see [`HIGH_DIMENSION_RATIO`] and
/// [`SMALL_SAMPLE_PER_PARAMETER`]):
///
/// 1. `d1 / n > 0.02`: [`IntervalMethod::Resized`] (the MLE is inflated; the plain bootstrap
///    doubles the bias);
/// 2. else fewer than 1,000 comparisons per parameter: [`IntervalMethod::Bootstrap`];
/// 3. else [`IntervalMethod::Wald`] (large samples: the Wald interval is accurate and free).
pub(crate) fn auto_pick(n: usize, d1: usize, d2: usize) -> IntervalMethod {
    let (n, d1, p) = (n as f64, d1 as f64, (d1 + d2) as f64);
    if d1 / n > HIGH_DIMENSION_RATIO {
        IntervalMethod::Resized
    } else if n / p < SMALL_SAMPLE_PER_PARAMETER {
        IntervalMethod::Bootstrap
    } else {
        IntervalMethod::Wald
    }
}

/// What `auto` picks for `data`: with cluster (annotator) ids
/// [`IntervalMethod::ClusterOneStep`] whatever the shape — comparisons by one annotator are
/// dependent, every other method assumes they are not (docs/intervals.md: Wald and the
/// parametric bootstrap cover gamma 0.61-0.73 at 40 annotators with a rationality SD of 0.6
/// beyond the covariates; the one-step jackknife covers like the exact one at no refit
/// cost, docs/intervals.md) — else [`auto_pick`] on its shape.
pub(crate) fn auto_pick_for(data: &Dataset) -> IntervalMethod {
    if data.cluster().is_some() {
        IntervalMethod::ClusterOneStep
    } else {
        auto_pick(data.n(), data.d1(), data.d2())
    }
}

/// Why `auto` picks `method` (the rule of `auto_pick_for` that leads to it), in plain words.
pub fn auto_reason(method: IntervalMethod) -> &'static str {
    match method {
        IntervalMethod::ClusterOneStep => {
            "the data have cluster (annotator) ids: one annotator's comparisons are dependent, so \
             auto uses the one-step cluster jackknife and never an interval that assumes \
             independent comparisons"
        }
        IntervalMethod::ClusterJackknife => {
            "the data have cluster (annotator) ids, so auto uses the cluster jackknife; the \
             one-step jackknife was impossible (the observed Hessian without one annotator is \
             not positive definite), so auto fell back to the exact leave-one-annotator-out \
             refits"
        }
        IntervalMethod::Resized => {
            "d1/n > 0.02: in high dimension the MLE is inflated and Wald under-covers"
        }
        IntervalMethod::Bootstrap => {
            "fewer than 1,000 comparisons per parameter: Wald under-covers at small n"
        }
        IntervalMethod::Wald | IntervalMethod::Auto => {
            "at least 1,000 comparisons per parameter and d1/n <= 0.02: Wald is accurate"
        }
    }
}

/// How messages name a resolved interval method.
fn title(method: IntervalMethod) -> &'static str {
    match method {
        IntervalMethod::Wald => "Wald",
        IntervalMethod::Bootstrap => "the percentile bootstrap",
        IntervalMethod::Resized => "the resized bootstrap",
        IntervalMethod::ClusterJackknife => "the cluster jackknife",
        IntervalMethod::ClusterOneStep => "the cluster jackknife (one-step)",
        IntervalMethod::Auto => "auto",
    }
}

/// How many draws a calibration of the resolved `method` holds — the one definition the fit,
/// [`Calibration::from_parts`] and the model-file reader share: none for Wald; `B` refits,
/// [`MIN_REPS`]..=[`MAX_REPS`], for the bootstraps (the range `fit` accepts); one per cluster,
/// `G` in [`crate::cluster::MIN_CLUSTERS`]..=[`crate::cluster::MAX_CLUSTERS`], for the
/// cluster jackknives (the cluster counts their fits accept).
pub(crate) fn draw_counts(method: IntervalMethod) -> std::ops::RangeInclusive<usize> {
    use crate::cluster::{MAX_CLUSTERS, MIN_CLUSTERS};
    match method {
        IntervalMethod::Wald | IntervalMethod::Auto => 0..=0,
        IntervalMethod::Bootstrap | IntervalMethod::Resized => MIN_REPS..=MAX_REPS,
        IntervalMethod::ClusterJackknife | IntervalMethod::ClusterOneStep => {
            MIN_CLUSTERS..=MAX_CLUSTERS
        }
    }
}

/// Every count of draws some method may hold (the hull of [`draw_counts`] over the methods
/// with draws): what a model file's length may imply before its method byte is read.
pub(crate) fn any_draw_count() -> std::ops::RangeInclusive<usize> {
    let ranges = IntervalMethod::ALL.map(draw_counts);
    let with_draws = || ranges.iter().filter(|r| *r.end() > 0);
    let lo = with_draws().map(|r| *r.start()).min().unwrap_or(0);
    let hi = with_draws().map(|r| *r.end()).max().unwrap_or(0);
    lo..=hi
}

/// Checks `count` draws against [`draw_counts`] of `method`; the error says what the draws
/// are and the range, naming the method ("`count` refits: the percentile bootstrap holds 10
/// to 100000").
pub(crate) fn check_draw_count(
    method: IntervalMethod,
    count: usize,
) -> std::result::Result<(), String> {
    let range = draw_counts(method);
    if range.contains(&count) {
        return Ok(());
    }
    let (lo, hi) = (range.start(), range.end());
    Err(if method.is_cluster() {
        format!(
            "{count} draws (one per cluster): {} holds {lo} to {hi}",
            title(method)
        )
    } else if method == IntervalMethod::Wald {
        format!("{count} draws: Wald holds none")
    } else {
        format!("{count} refits: {} holds {lo} to {hi}", title(method))
    })
}

/// A calibration's resolved interval method, each variant with its own figures only, built
/// by its checked constructor ([`Method::percentile`], [`Method::resized`],
/// [`Method::jackknife`]) by the fit and the model-file reader alike.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Method {
    /// The paper's Wald intervals: nothing stored.
    Wald,
    /// The parametric bootstrap's percentile intervals.
    Percentile {
        /// `B` refits, [`MIN_REPS`]..=[`MAX_REPS`].
        draws: Draws,
        /// Seed of the label draws.
        seed: u64,
    },
    /// The adaptively resized bootstrap.
    Resized {
        /// `B` refits from `(s theta_hat, gamma_hat)`.
        draws: Draws,
        /// Seed of the label draws.
        seed: u64,
        /// The shrink `s`, in [`resized::MIN_SHRINK`]..=[`resized::MAX_SHRINK`].
        shrink: f64,
        /// The inflation `alpha_hat` (positive).
        alpha_hat: f64,
        /// `mean gamma* - gamma_hat` (`d2`, finite).
        gamma_bias: Vec<f64>,
    },
    /// The cluster jackknives: one draw per cluster.
    Jackknife {
        /// `G` leave-one-cluster-out estimates.
        draws: Draws,
        /// True for the one-step estimates (`cluster-onestep`), false for the exact refits.
        one_step: bool,
        /// The coefficients one cluster carries alone, with that cluster, in coefficient
        /// order: their intervals, and those of every functional with weight on them, are
        /// unbounded (`crate::cluster::identified`).
        unbounded: Vec<Carried>,
    },
}

impl Method {
    /// The percentile bootstrap of `draws` (labels drawn from `seed`).
    ///
    /// Errors: as [`check_draws`].
    pub(crate) fn percentile(draws: Draws, seed: u64) -> std::result::Result<Self, String> {
        check_draws(IntervalMethod::Bootstrap, &draws, &[])?;
        Ok(Method::Percentile { draws, seed })
    }

    /// The resized bootstrap of `draws` with its shrink, inflation and bias of gamma
    /// ([`resized::Resized`] as the search found it).
    ///
    /// Errors: as [`check_draws`]; an inflation that is not positive and finite, a shrink
    /// outside the search's range, a bias of gamma that is not `d2` finite values.
    pub(crate) fn resized(r: resized::Resized, seed: u64) -> std::result::Result<Self, String> {
        use resized::{MAX_SHRINK, MIN_SHRINK};
        let resized::Resized {
            shrink,
            alpha_hat,
            gamma_bias,
            draws,
        } = r;
        check_draws(IntervalMethod::Resized, &draws, &[])?;
        if !(alpha_hat.is_finite() && alpha_hat > 0.0) {
            return Err(format!(
                "`alpha_hat` = {alpha_hat}: the inflation is positive and finite"
            ));
        }
        if !(MIN_SHRINK..=MAX_SHRINK).contains(&shrink) {
            return Err(format!(
                "`shrink` = {shrink}: the resized bootstrap's shrink lies in [{MIN_SHRINK}, \
                 {MAX_SHRINK}]"
            ));
        }
        let d2 = draws.dims().1;
        if gamma_bias.len() != d2 {
            return Err(format!(
                "`gamma_bias`: {} values, not d2 = {d2}",
                gamma_bias.len()
            ));
        }
        if let Some(k) = gamma_bias.iter().position(|v| !v.is_finite()) {
            return Err(format!("`gamma_bias`[{k}] = {}: not finite", gamma_bias[k]));
        }
        Ok(Method::Resized {
            draws,
            seed,
            shrink,
            alpha_hat,
            gamma_bias,
        })
    }

    /// The cluster jackknife of `draws` (one per cluster), one-step or exact, with the
    /// coefficients whose intervals are unbounded (`unbounded`: stacked indices, each carried
    /// by one cluster).
    ///
    /// Errors: an unbounded coefficient out of range (`d1 + d2` coefficients) or the list not
    /// strictly increasing (sorted, each once); then as [`check_draws`], which allows draws
    /// without spread in the unbounded coefficients only.
    pub(crate) fn jackknife(
        draws: Draws,
        one_step: bool,
        unbounded: Vec<Carried>,
    ) -> std::result::Result<Self, String> {
        let kind = if one_step {
            IntervalMethod::ClusterOneStep
        } else {
            IntervalMethod::ClusterJackknife
        };
        let (d1, d2) = draws.dims();
        for (i, c) in unbounded.iter().enumerate() {
            if c.coefficient >= d1 + d2 {
                return Err(format!(
                    "`unbounded`[{i}] = coefficient {}: the model has {} coefficients",
                    c.coefficient,
                    d1 + d2
                ));
            }
            if i > 0 && unbounded[i - 1].coefficient >= c.coefficient {
                return Err(format!(
                    "`unbounded`[{i}] = coefficient {}: the unbounded coefficients are listed \
                     once each, in increasing order",
                    c.coefficient
                ));
            }
        }
        let stacked: Vec<usize> = unbounded.iter().map(|c| c.coefficient).collect();
        check_draws(kind, &draws, &stacked)?;
        Ok(Method::Jackknife {
            draws,
            one_step,
            unbounded,
        })
    }

    /// The [`IntervalMethod`] this is (never `Auto`).
    pub(crate) fn kind(&self) -> IntervalMethod {
        match self {
            Method::Wald => IntervalMethod::Wald,
            Method::Percentile { .. } => IntervalMethod::Bootstrap,
            Method::Resized { .. } => IntervalMethod::Resized,
            Method::Jackknife { one_step: true, .. } => IntervalMethod::ClusterOneStep,
            Method::Jackknife {
                one_step: false, ..
            } => IntervalMethod::ClusterJackknife,
        }
    }

    /// The draws, if the method has any.
    pub(crate) fn draws(&self) -> Option<&Draws> {
        match self {
            Method::Wald => None,
            Method::Percentile { draws, .. }
            | Method::Resized { draws, .. }
            | Method::Jackknife { draws, .. } => Some(draws),
        }
    }
}

/// What every method with draws asks of them: the count of [`check_draw_count`], finite
/// values, and every coefficient's draws not all equal — draws all equal give a coefficient
/// SE 0, a zero-width interval and `z = inf`, an interval that cannot be honest — except the
/// stacked coefficients `unbounded` (increasing), whose intervals do not come from the draws.
///
/// Errors: the field and the rule, naming the method.
fn check_draws(
    method: IntervalMethod,
    draws: &Draws,
    unbounded: &[usize],
) -> std::result::Result<(), String> {
    let reps = draws.len();
    check_draw_count(method, reps).map_err(|rule| format!("`B` = {rule}"))?;
    let (d1, d2) = draws.dims();
    for (field, values, width, offset) in [
        ("theta draws", draws.theta(), d1, 0),
        ("gamma draws", draws.gamma(), d2, d1),
    ] {
        if let Some(i) = values.iter().position(|v| !v.is_finite()) {
            return Err(format!(
                "`{field}`[{}][{}] = {}: not finite",
                i / width,
                i % width,
                values[i]
            ));
        }
        if let Some(j) = (0..width).find(|&j| {
            unbounded.binary_search(&(offset + j)).is_err() && constant_column(values, width, j)
        }) {
            return Err(format!(
                "`{field}`[*][{j}]: all {reps} draws equal {}: {} gives the coefficient no \
                 spread (SE 0, a zero-width interval, z = inf)",
                values[j],
                title(method)
            ));
        }
    }
    Ok(())
}

/// The parts of a calibration as a model file stores them (one flat record for every method:
/// the figures a method does not estimate are stored as 1, its bias as zeros), before
/// [`Calibration::from_parts`] has checked them and built the method they describe.
#[derive(Debug, Clone, PartialEq)]
pub struct Parts {
    /// The method asked for (`Auto` allowed).
    pub requested: IntervalMethod,
    /// The method used (never `Auto`).
    pub method: IntervalMethod,
    /// `B` refits, or `G` clusters (one draw each); 0 for Wald.
    pub reps: usize,
    /// Seed of the label draws (0 for Wald and the cluster methods).
    pub seed: u64,
    /// Refits that did not converge.
    pub diverged: usize,
    /// `[shrink, alpha_hat, c_hat]` (1 where the method estimates none).
    pub figures: [f64; 3],
    /// Bias of gamma_hat (`d2`: zeros but for the resized bootstrap; empty for Wald).
    pub gamma_bias: Vec<f64>,
    /// `B x d1`, row-major.
    pub theta_draws: Vec<f32>,
    /// `B x d2`, row-major.
    pub gamma_draws: Vec<f32>,
    /// The coefficients one cluster carries alone, whose intervals are unbounded (the
    /// cluster methods only; empty otherwise), in increasing coefficient order.
    pub unbounded: Vec<Carried>,
}

impl Parts {
    /// The calibration these parts describe, for a model with `d1` reward and `d2`
    /// rationality features, built through the constructors a fit's calibration is built by
    /// (docs/model-format.md, "What a reader checks"); the error begins "interval section:"
    /// and names the field:
    ///
    /// * the method is resolved (never `auto`) and is the one requested unless that was `auto`;
    /// * Wald: no draws, seed, diverged count or bias, figures all 1 (one representation);
    /// * the methods with draws: `B x d1` theta and `B x d2` gamma draws, `diverged <= B`, a
    ///   bias of `d2`, then the method's constructor ([`Method::percentile`],
    ///   [`Method::resized`], [`Method::jackknife`]); the figures a method does not estimate
    ///   stored as 1 (`shrink`, `alpha_hat`), its bias as zeros, the cluster methods' seed 0;
    /// * `c_hat` as [`Calibration::new`].
    pub(crate) fn build(self, d1: usize, d2: usize) -> std::result::Result<Calibration, String> {
        self.method_of(d1, d2)
            .and_then(|(requested, method, c_hat)| Calibration::new(requested, method, c_hat))
            .map_err(|m| format!("interval section: {m}"))
    }

    /// The requested method, the resolved method these parts describe and `c_hat`.
    fn method_of(
        self,
        d1: usize,
        d2: usize,
    ) -> std::result::Result<(IntervalMethod, Method, f64), String> {
        let Parts {
            requested,
            method,
            reps,
            seed,
            diverged,
            figures: [shrink, alpha_hat, c_hat],
            gamma_bias,
            theta_draws,
            gamma_draws,
            unbounded,
        } = self;
        let stores = |field: &str, v: f64, what: &str| {
            Err(format!("`{field}` = {v}: {} stores {what}", title(method)))
        };
        let draws = |reps, theta, gamma, diverged| {
            if gamma_bias.len() != d2 {
                return Err(format!(
                    "`gamma_bias`: {} values, not d2 = {d2}",
                    gamma_bias.len()
                ));
            }
            Draws::new((reps, d1, d2), theta, gamma, diverged)
        };
        let unit_figures = || {
            if shrink != 1.0 {
                return stores("shrink", shrink, "1");
            }
            if alpha_hat != 1.0 {
                return stores("alpha_hat", alpha_hat, "1");
            }
            match gamma_bias.iter().position(|&v| v != 0.0) {
                Some(k) => Err(format!(
                    "`gamma_bias`[{k}] = {}: {} stores 0",
                    gamma_bias[k],
                    title(method)
                )),
                None => Ok(()),
            }
        };
        let resolved = match method {
            IntervalMethod::Auto => {
                return Err("`method` = auto: a stored method is resolved".into());
            }
            _ if !unbounded.is_empty() && !method.is_cluster() => {
                return Err(format!(
                    "`unbounded`: {} lists no unbounded coefficients (a cluster method's)",
                    title(method)
                ));
            }
            IntervalMethod::Wald => {
                let nothing = reps == 0
                    && seed == 0
                    && diverged == 0
                    && [shrink, alpha_hat, c_hat] == [1.0; 3]
                    && theta_draws.is_empty()
                    && gamma_draws.is_empty()
                    && gamma_bias.is_empty();
                if !nothing {
                    return Err("wald carries no draws, seed, diverged count or figures \
                                other than 1"
                        .into());
                }
                Method::Wald
            }
            IntervalMethod::Bootstrap => {
                let d = draws(reps, theta_draws, gamma_draws, diverged)?;
                unit_figures()?;
                Method::percentile(d, seed)?
            }
            IntervalMethod::Resized => Method::resized(
                resized::Resized {
                    shrink,
                    alpha_hat,
                    gamma_bias: gamma_bias.clone(),
                    draws: draws(reps, theta_draws, gamma_draws, diverged)?,
                },
                seed,
            )?,
            IntervalMethod::ClusterJackknife | IntervalMethod::ClusterOneStep => {
                let d = draws(reps, theta_draws, gamma_draws, diverged)?;
                unit_figures()?;
                if seed != 0 {
                    return Err(format!("`seed` = {seed}: {} stores 0", title(method)));
                }
                Method::jackknife(d, method == IntervalMethod::ClusterOneStep, unbounded)?
            }
        };
        Ok((requested, resolved, c_hat))
    }
}

/// True when column `j` of the row-major `rows x width` `draws` holds one value only (and
/// there is at least one row).
fn constant_column(draws: &[f32], width: usize, j: usize) -> bool {
    let mut column = draws.iter().skip(j).step_by(width);
    match column.next() {
        Some(first) => column.all(|v| v == first),
        None => false,
    }
}

/// A model's interval method: the method asked for, the resolved method (`Method`) with its own
/// draws and figures, and `c_hat`. Immutable; built by the pipeline
/// ([`crate::estimator::Estimator::estimate`]) or from stored [`Parts`]
/// ([`Calibration::from_parts`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Calibration {
    requested: IntervalMethod,
    method: Method,
    c_hat: f64,
}

impl Calibration {
    /// The Wald method (nothing stored); `requested` is `Wald` or `Auto` (auto picked Wald).
    pub fn wald(requested: IntervalMethod) -> Self {
        Calibration {
            requested,
            method: Method::Wald,
            c_hat: 1.0,
        }
    }

    /// `method`, asked for as `requested`, with `c_hat`.
    ///
    /// Errors: `requested` neither `method`'s kind nor `auto`; `c_hat` not 1 for Wald, not
    /// positive and finite otherwise.
    pub(crate) fn new(
        requested: IntervalMethod,
        method: Method,
        c_hat: f64,
    ) -> std::result::Result<Self, String> {
        let kind = method.kind();
        if requested != kind && requested != IntervalMethod::Auto {
            return Err(format!(
                "`requested`: requested {} but carries {}",
                requested.name(),
                kind.name()
            ));
        }
        let allowed = match method {
            Method::Wald => c_hat == 1.0,
            Method::Percentile { .. } | Method::Resized { .. } | Method::Jackknife { .. } => {
                c_hat.is_finite() && c_hat > 0.0
            }
        };
        if !allowed {
            return Err(format!(
                "`c_hat` = {c_hat}: a mean ratio of standard deviations is positive and finite \
                 (1 for Wald)"
            ));
        }
        Ok(Calibration {
            requested,
            method,
            c_hat,
        })
    }

    /// Assembles a calibration from stored [`Parts`] for a model with `d1` reward and `d2`
    /// rationality features, checked and built by the constructors a fit's calibration is
    /// built by (`Parts::build`).
    ///
    /// Errors: [`Error::InvalidArgument`] (`intervals`) naming the field and the rule.
    pub fn from_parts(parts: Parts, d1: usize, d2: usize) -> Result<Self> {
        parts
            .build(d1, d2)
            .map_err(|m| Error::invalid("intervals", m))
    }

    /// The resolved method with its draws and figures.
    pub(crate) fn resolved(&self) -> &Method {
        &self.method
    }
    /// The method the intervals use (never `Auto`).
    pub fn method(&self) -> IntervalMethod {
        self.method.kind()
    }
    /// The method asked for at fit time (`Auto` when auto picked [`Calibration::method`]).
    pub fn requested(&self) -> IntervalMethod {
        self.requested
    }
    /// True for the methods whose intervals come from stored draws.
    pub fn uses_draws(&self) -> bool {
        self.rule().uses_draws()
    }
    /// `(d1, d2)` of the draws (`None` for Wald, which stores none).
    pub(crate) fn dims(&self) -> Option<(usize, usize)> {
        self.method.draws().map(Draws::dims)
    }

    /// The interval rule of [`Calibration::method`]: every consumer's intervals, p-values and
    /// pruning bounds come from it ([`crate::interval`]).
    pub(crate) fn rule(&self) -> Rule {
        match &self.method {
            Method::Wald => Rule::Wald,
            Method::Percentile { .. } => Rule::Percentile,
            Method::Resized { alpha_hat, .. } => Rule::Resized {
                alpha_hat: *alpha_hat,
            },
            // Degrees of freedom of the t quantiles: `G - 1`.
            Method::Jackknife { draws, .. } => Rule::Jackknife {
                df: (draws.len().max(2) - 1) as f64,
            },
        }
    }
    /// Number of draws: bootstrap refits B, or clusters G (0 for Wald).
    pub fn reps(&self) -> usize {
        self.method.draws().map_or(0, Draws::len)
    }
    /// Seed of the label draws (0 for Wald and the cluster methods).
    pub fn seed(&self) -> u64 {
        match self.method {
            Method::Percentile { seed, .. } | Method::Resized { seed, .. } => seed,
            Method::Wald | Method::Jackknife { .. } => 0,
        }
    }
    /// Refits that converged from neither the warm start nor the estimator's own starts (kept at
    /// their last iterate).
    pub fn diverged(&self) -> usize {
        self.method.draws().map_or(0, Draws::diverged)
    }
    /// The resized bootstrap's shrink `s` (1 otherwise).
    pub fn shrink(&self) -> f64 {
        match self.method {
            Method::Resized { shrink, .. } => shrink,
            Method::Wald | Method::Percentile { .. } | Method::Jackknife { .. } => 1.0,
        }
    }
    /// The resized bootstrap's inflation estimate `alpha_hat` (1 otherwise).
    pub fn alpha_hat(&self) -> f64 {
        match self.method {
            Method::Resized { alpha_hat, .. } => alpha_hat,
            Method::Wald | Method::Percentile { .. } | Method::Jackknife { .. } => 1.0,
        }
    }
    /// Mean over (up to 256) training rows `z_i` of `SD*(z_i) / (alpha_hat se_wald(z_i))`:
    /// `r_hat / alpha_hat +- q c_hat se_wald` serves at Wald's cost (1 for Wald).
    pub fn c_hat(&self) -> f64 {
        self.c_hat
    }
    /// Bias of gamma_hat estimated by the resized bootstrap (`d2` values; empty for the other
    /// methods, which estimate none).
    pub fn gamma_bias(&self) -> &[f64] {
        match &self.method {
            Method::Resized { gamma_bias, .. } => gamma_bias,
            Method::Wald | Method::Percentile { .. } | Method::Jackknife { .. } => &[],
        }
    }
    /// The coefficients one cluster (annotator) carries alone, with that cluster, in
    /// increasing stacked order (`theta[j]` is `j`, `gamma[k]` is `d1 + k`): without the
    /// carrier the data cannot estimate them, so their intervals are unbounded. Empty but for
    /// a cluster method on such data.
    pub fn unbounded(&self) -> &[Carried] {
        match &self.method {
            Method::Jackknife { unbounded, .. } => unbounded,
            Method::Wald | Method::Percentile { .. } | Method::Resized { .. } => &[],
        }
    }

    /// True when the linear functional with `weights` on the stacked coefficients `offset..`
    /// (`offset` 0 and `d1` weights: a reward or a difference of rewards; `offset = d1` and
    /// `d2` weights: a rationality) puts non-zero weight on an unbounded coefficient
    /// ([`Calibration::unbounded`]): its interval is unbounded. The one definition every
    /// interval path asks.
    pub(crate) fn touches_unbounded(&self, offset: usize, weights: &[f64]) -> bool {
        self.unbounded().iter().any(|c| {
            c.coefficient
                .checked_sub(offset)
                .and_then(|j| weights.get(j))
                .is_some_and(|&w| w != 0.0)
        })
    }

    /// The unbounded coefficients ([`Calibration::unbounded`]) and their carriers in plain
    /// words, for a model with `d1` reward features (`None` when there are none).
    pub fn unbounded_description(&self, d1: usize) -> Option<String> {
        describe_all(self.unbounded(), d1)
    }

    /// The draws' theta, `B x d1` row-major `f32` (empty for Wald).
    pub fn theta_draws(&self) -> &[f32] {
        self.method.draws().map_or(&[], Draws::theta)
    }
    /// The draws' gamma, `B x d2` row-major `f32` (empty for Wald).
    pub fn gamma_draws(&self) -> &[f32] {
        self.method.draws().map_or(&[], Draws::gamma)
    }

    /// `theta*_b . phi` for every draw `b` (`O(B d1)`; `phi` of length d1).
    pub fn theta_projections(&self, phi: &[f64]) -> Vec<f64> {
        self.theta_draws()
            .chunks_exact(phi.len())
            .map(|row| dot_f32(phi, row))
            .collect()
    }

    /// `psi0 + gamma*_b . psi` for every draw `b`.
    pub fn gamma_projections(&self, psi0: f64, psi: &[f64]) -> Vec<f64> {
        if psi.is_empty() {
            return vec![psi0; self.reps()];
        }
        self.gamma_draws()
            .chunks_exact(psi.len())
            .map(|row| psi0 + dot_f32(psi, row))
            .collect()
    }

    /// The SE of a functional from its values at the draws, as its [`Calibration::rule`]
    /// reports it before the resized bootstrap's division by `alpha_hat`: the jackknife's
    /// `sqrt((G-1)/G sum (v - v_bar)^2)` for the cluster methods, the sample SD otherwise.
    fn draws_se(&self, projections: &[f64]) -> f64 {
        let sd = sample_sd(projections);
        match self.method {
            Method::Jackknife { .. } => {
                let g = projections.len() as f64;
                sd * (g - 1.0) / g.sqrt()
            }
            Method::Wald | Method::Percentile { .. } | Method::Resized { .. } => sd,
        }
    }
}

/// The figures every fit reports about its intervals (issue 11): `d1 / n`, whether the MLE is
/// finite, `max |gamma_hat|`, the share of bootstrap refits that diverged, and a plain-words
/// warning when the model's intervals are Wald and Wald is known to under-cover here.
#[derive(Debug, Clone, PartialEq)]
pub struct IntervalDiagnostics {
    /// `d1 / n`.
    pub d1_over_n: f64,
    /// The fit converged to a finite optimum (false: the likelihood runs off into the
    /// `|gamma| -> infinity` valley or the data are separated, or the solver stopped early).
    pub mle_finite: bool,
    /// `max_k |gamma_hat_k|` (0 when d2 = 0).
    pub max_abs_gamma: f64,
    /// Share of bootstrap refits that did not converge (0 for Wald).
    pub diverged_share: f64,
    /// Why Wald intervals are not to be trusted here, if they are the model's; `None` otherwise.
    pub warning: Option<String>,
}

/// The [`IntervalDiagnostics`] of a fit of `n` samples with this report, estimate and
/// calibration, on data whose cluster ids are unknown ([`diagnostics_clustered`]).
pub(crate) fn diagnostics(
    n: usize,
    params: &Params,
    report: &FitReport,
    calibration: &Calibration,
) -> IntervalDiagnostics {
    diagnostics_clustered(n, params, report, calibration, false)
}

/// [`diagnostics`] of a fit whose data have cluster ids (`clustered`): the small-sample hint
/// then recommends the cluster-aware method, since the bootstrap redraws comparisons
/// independently and inherits the independence the ids deny (docs/intervals.md, "Annotators").
pub(crate) fn diagnostics_clustered(
    n: usize,
    params: &Params,
    report: &FitReport,
    calibration: &Calibration,
    clustered: bool,
) -> IntervalDiagnostics {
    let (d1, d2) = (params.theta.len(), params.gamma.len());
    let mle_finite = report.converged && report.termination == Termination::Converged;
    let max_abs_gamma = params.gamma.iter().fold(0.0f64, |m, g| m.max(g.abs()));
    let d1_over_n = d1 as f64 / n.max(1) as f64;
    let per_param = n as f64 / (d1 + d2) as f64;
    let mut warnings = Vec::new();
    if !mle_finite {
        warnings.push(format!(
            "the fit did not reach a finite optimum ({}): the likelihood may have no finite \
             maximiser (|gamma| -> infinity) and no interval is reliable",
            report.termination.name()
        ));
    }
    if calibration.method() == IntervalMethod::Wald {
        if d1_over_n > HIGH_DIMENSION_RATIO {
            warnings.push(format!(
                "d1/n = {d1_over_n:.3} > {HIGH_DIMENSION_RATIO}: in high dimension the MLE is \
                 inflated away from zero and Wald intervals under-cover (gamma 0.85 at d1/n = \
                 0.06); refit with --intervals resized (or auto)"
            ));
        } else if per_param < SMALL_SAMPLE_PER_PARAMETER {
            let remedy = if clustered {
                "the data have cluster ids, so refit with --intervals cluster-onestep (or \
                 auto), not the bootstrap, which assumes independent comparisons"
            } else {
                "refit with --intervals bootstrap (or auto)"
            };
            warnings.push(format!(
                "only {per_param:.0} comparisons per parameter: Wald reward intervals \
                 under-cover here (0.86 at n = 200, 0.90 at n = 600 in the paper's design); \
                 {remedy}"
            ));
        }
    }
    let diverged_share = if calibration.reps() > 0 {
        calibration.diverged() as f64 / calibration.reps() as f64
    } else {
        0.0
    };
    // Measured on the paper's design (docs/intervals.md): see DIVERGED_SHARE_WARNING.
    if diverged_share > DIVERGED_SHARE_WARNING {
        warnings.push(format!(
            "{:.0}% of the bootstrap refits did not converge (kept at their last iterate): the \
             estimate is near the |gamma| -> infinity valley, where the bootstrap's intervals \
             can under-cover (rewards 0.66 on such datasets at n = 600 in the paper's design)",
            100.0 * diverged_share
        ));
    }
    IntervalDiagnostics {
        d1_over_n,
        mle_finite,
        max_abs_gamma,
        diverged_share,
        warning: (!warnings.is_empty()).then(|| warnings.join("; ")),
    }
}

/// Computes the calibration asked for by `options` of the estimate `params` of `data`, on the
/// current rayon pool: resolves `auto`, runs the bootstrap's refits, and returns the
/// [`Calibration`] to attach with `RewardModel::with_calibration` (the pipeline
/// [`crate::estimator::Estimator::estimate`] does). `wald_factor` is the packed lower Cholesky
/// factor of the Wald `Cov(theta_hat)` at `params` (for `c_hat`); `expected_gamma_cov` is
/// `Some(Cov(gamma_hat))` when that covariance is the `expected` kind fitted on `data`
/// (`RewardModel::is_expected_fit_of`): the batched refits' preconditioner is then rebuilt
/// from the two ([`information_inverse`]) instead of computed from the data; on `None`, or if
/// the rebuild fails, it is computed as before. `estimator` are the fit
/// options `params` were fitted with: the refits run at their tolerance, a refit that does not
/// converge from the warm start is solved again from the estimator's own starts ([`draws`]),
/// and `estimator.seed` seeds the label draws. Both option sets come checked, against `data`
/// too, from an [`crate::estimator::Estimator`].
///
/// Errors: [`Error::Cancelled`] (checked before every refit iteration),
/// [`Error::NotConverged`] when the resized bootstrap cannot estimate a positive inflation.
pub(crate) fn calibrate(
    data: &Dataset,
    params: &Params,
    wald_factor: &PackedLower,
    expected_gamma_cov: Option<&DMatrix<f64>>,
    options: &IntervalOptions,
    estimator: &FitOptions,
    cancel: Option<&AtomicBool>,
) -> Result<Calibration> {
    let method = match options.method {
        IntervalMethod::Auto => auto_pick_for(data),
        m => m,
    };
    let refits = || draws::Refits::new(crate::resample::Settings::new(data, estimator, cancel));
    // The parametric bootstraps' batches start at the estimate, where the preconditioner is
    // the inverse expected information: the model's own covariance when it is that one.
    let seeded_refits = || {
        let s = refits();
        match expected_gamma_cov {
            Some(gamma_cov) if s.batched() => {
                match information_inverse(data, params, wald_factor, gamma_cov) {
                    Ok(inverse) => {
                        s.with_preconditioner(Preconditioner::from_inverse(data, inverse))
                    }
                    Err(_) => s,
                }
            }
            _ => s,
        }
    };
    let built = match method {
        IntervalMethod::Wald | IntervalMethod::Auto => {
            return Ok(Calibration::wald(options.method));
        }
        IntervalMethod::ClusterJackknife | IntervalMethod::ClusterOneStep => {
            let (one_step, d, unbounded) =
                cluster_draws(data, params, method, options.method, estimator, cancel)?;
            Method::jackknife(d, one_step, unbounded)
        }
        IntervalMethod::Bootstrap => {
            let reps = options.reps.unwrap_or(DEFAULT_BOOTSTRAP_REPS);
            let set = draws::parametric(
                data,
                params,
                params,
                reps,
                estimator.seed,
                crate::resample::Stream::Bootstrap,
                &seeded_refits(),
            )?;
            Method::percentile(set, estimator.seed)
        }
        IntervalMethod::Resized => {
            let reps = options.reps.unwrap_or(DEFAULT_RESIZED_REPS);
            let r = resized::run(data, params, reps, estimator.seed, &seeded_refits())?;
            Method::resized(r, estimator.seed)
        }
    };
    // The fit's calibration is built by the constructors a reader builds by: a model that is
    // written loads. Draws without spread in some coefficient (which a fit whose information
    // is positive definite does not produce, short of f32 rounding) are refused here, not
    // written.
    let refused = |m: String| Error::invalid("intervals", format!("interval section: {m}"));
    let cal = built
        .and_then(|m| Calibration::new(options.method, m, 1.0))
        .map_err(refused)?;
    let c_hat = c_hat(data, wald_factor, &cal);
    Calibration::new(cal.requested, cal.method, c_hat).map_err(refused)
}

/// What a user can do when the one-step jackknife cannot take a leave-one-out estimate.
const ONE_STEP_REMEDY: &str =
    "use --intervals cluster-jackknife (exact refits) or auto, which falls back to it";

/// The draws of a cluster method (`method`, resolved from `requested`), whether the method
/// that made them is the one-step jackknife, and the coefficients whose intervals are
/// unbounded. First the detector ([`crate::cluster::identified::carried_by_one`]): a
/// coefficient whose covariate only one annotator's rows carry has no leave-one-out estimate
/// without that annotator; every cluster method takes that annotator's draw with the
/// coefficient held at the estimate (the likelihood without it does not depend on it) and
/// records the coefficient as unbounded, with its carrier.
/// Then the one-step jackknife; when the Hessian without some annotator is not positive
/// definite, an explicit `cluster-onestep` refuses naming the coefficient and the annotator,
/// and `auto` falls back to the exact refits (`cluster-jackknife`, stored with `requested =
/// auto`: the model file records the fallback).
///
/// Errors: [`Error::InvalidArgument`] (`cluster`) on too few or too many clusters,
/// [`Error::SingularInformation`] as above, [`Error::Cancelled`].
fn cluster_draws(
    data: &Dataset,
    params: &Params,
    method: IntervalMethod,
    requested: IntervalMethod,
    estimator: &FitOptions,
    cancel: Option<&AtomicBool>,
) -> Result<(bool, Draws, Vec<Carried>)> {
    let clusters = crate::cluster::Clusters::of(data)?;
    // The count the model will hold, checked before any draw is computed.
    check_draw_count(method, clusters.len()).map_err(|m| Error::invalid("cluster", m))?;
    let unbounded = crate::cluster::identified::carried_by_one(data, &clusters);
    let exact = || crate::cluster::jackknife(data, params, &clusters, estimator, cancel);
    if method == IntervalMethod::ClusterJackknife {
        return Ok((false, exact()?, unbounded));
    }
    match crate::cluster::one_step_jackknife(data, params, &clusters)? {
        Ok(d) => Ok((true, d, unbounded)),
        Err(_) if requested == IntervalMethod::Auto => Ok((false, exact()?, unbounded)),
        Err(obstacle) => Err(Error::SingularInformation {
            detail: format!("{}; {ONE_STEP_REMEDY}", obstacle.describe(data.d1())),
        }),
    }
}

/// The inverse of the mean expected information at `params` from its `expected` covariance
/// (`wald_factor`, `gamma_cov`) and the information's gamma blocks (one pass over the data):
/// [`crate::covariance::expected_information_inverse`].
///
/// Errors: as that function.
fn information_inverse(
    data: &Dataset,
    params: &Params,
    wald_factor: &PackedLower,
    gamma_cov: &DMatrix<f64>,
) -> Result<DMatrix<f64>> {
    let (b, _, d) = crate::likelihood::gamma_blocks(data, params);
    crate::covariance::expected_information_inverse(
        &wald_factor.to_dense(),
        gamma_cov,
        data.n(),
        &b,
        &d,
    )
}

/// Training rows used for `c_hat`.
const C_HAT_ROWS: usize = 256;

/// `c_hat`: mean over the first (up to 256) training rows `z_i` with a positive Wald SE (and
/// no weight on an unbounded coefficient, [`Calibration::touches_unbounded`]) of
/// `SD*(z_i) / (alpha_hat se_wald(z_i))`, with `se_wald(z) = ||L^T z||` from the packed
/// `wald_factor` `L` (the scoring kernel's SEs to the last bit).
fn c_hat(data: &Dataset, wald_factor: &PackedLower, cal: &Calibration) -> f64 {
    let d1 = data.d1();
    let rows = data.n().min(C_HAT_ROWS);
    let z: Vec<f64> = match data.features() {
        crate::data::FeatureMatrix::F64(v) => v[..rows * d1].to_vec(),
        crate::data::FeatureMatrix::F32(v) => {
            v[..rows * d1].iter().map(|&x| f64::from(x)).collect()
        }
    };
    let ses = wald_factor
        .squared_norms(&z, |v| v)
        .into_iter()
        .map(f64::sqrt);
    let (mut sum, mut count) = (0.0, 0usize);
    for (phi, se) in z.chunks_exact(d1).zip(ses) {
        // A row with weight on an unbounded coefficient has no finite SE to compare.
        if se > 0.0 && !cal.touches_unbounded(0, phi) {
            sum += cal.draws_se(&cal.theta_projections(phi)) / (cal.alpha_hat() * se);
            count += 1;
        }
    }
    if count == 0 {
        1.0
    } else {
        sum / count as f64
    }
}

#[cfg(test)]
mod tests;
