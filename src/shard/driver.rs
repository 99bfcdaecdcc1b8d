//! The driver-side fit: the same estimator as [`crate::fit::fit`] (damped Newton from the
//! homogeneous start, Fisher scoring where the observed Hessian is indefinite, Armijo line
//! search) and the same covariance kinds, with every sum over samples asked of an [`Oracle`]
//! — in-process shards ([`LocalOracle`]) or an engine's workers.
//!
//! A *round* is one request answered by every shard. Rounds cost far more than arithmetic on
//! an engine (milliseconds to half a second each), so the driver needs few of them:
//!
//! * the summary pass: 1 round;
//! * dense variant (up to [`crate::fit::DENSE_NEWTON_MAX_PARAMS`] parameters): every point
//!   the line search tries is one round returning the value, gradient and packed curvature
//!   matrices, so a Newton iteration whose full step is accepted is exactly one round;
//! * CG variant (above): one round per point tried (value and gradient), one round per
//!   Hessian-vector product (each CG iteration), plus one round per phase for the packed
//!   expected information that preconditions CG — the Fisher blocks move twice per fit, not
//!   every iteration;
//! * the covariance: 1 round at the estimate, fetching only what the requested covariance kind
//!   needs (expected: the expected information; observed: the observed Hessian; robust: that
//!   and the score outer products; cluster: that and the per-cluster score sums) — or all of
//!   them, after which every kind is formed on the driver ([`DistributedFit::model`]). At
//!   d1 = 4096 each packed block is 67 MB per shard and the largest pass of the fit.
//!
//! Unlike [`crate::fit::fit`], the driver runs the default start only (no random restarts:
//! each would cost a full fit of rounds); `Init::Random` and the agd solver are refused, and
//! `FitOptions::restarts` and `threads` are not used (the oracle's workers own the passes).

use super::stats::{merge_in_order, merge_summaries, Request, ShardStats, ShardSummary};
use crate::covariance::{factors_from_matrices, CovarianceKind};
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::fit::newton::Newton;
use crate::fit::newton_cg::{CgStats, NewtonCg};
use crate::fit::objective::{Free, Objective};
use crate::fit::{
    homogeneous_start, run_solver, Fit, FitControl, FitOptions, FitReport, Init, Limits,
    NewtonVariant, Run, SolverKind, State,
};
use crate::fitted::RewardModel;
use crate::likelihood::Curvature;
use crate::linalg::{dot, lower_matvec, lower_t_matvec, ridged_inverse_factor};
use crate::model::Params;
use nalgebra::DMatrix;
use std::sync::Arc;
use std::time::Instant;

/// Where the driver's sums come from: every shard's answer to a request, merged in a fixed
/// order (shard index) so that results do not depend on scheduling.
pub trait Oracle {
    /// The summary pass: every shard's [`ShardSummary`], merged by `merge_summaries`
    /// (errors name the first mismatched shard).
    fn summary(&mut self) -> Result<ShardSummary>;
    /// Every shard's [`ShardStats`] for `request`, merged in shard-index order
    /// (`merge_in_order`).
    fn compute(&mut self, request: &Request) -> Result<ShardStats>;
}

/// An [`Oracle`] over shards held in this process: each round computes every shard's answer,
/// moves it through its byte form (`ShardStats::to_bytes`, as an engine would) and merges in
/// shard order. Records the bytes moved per round.
#[derive(Debug, Clone)]
pub struct LocalOracle {
    shards: Vec<Dataset>,
    /// Bytes of every shard's serialised answer, per round (summary pass excluded).
    pub bytes_per_round: Vec<Vec<usize>>,
}

impl LocalOracle {
    /// An oracle over `shards` (shard `k` is `shards[k]`).
    pub fn new(shards: Vec<Dataset>) -> Self {
        LocalOracle {
            shards,
            bytes_per_round: Vec::new(),
        }
    }
}

impl Oracle for LocalOracle {
    fn summary(&mut self) -> Result<ShardSummary> {
        let s: Vec<ShardSummary> = self.shards.iter().map(ShardSummary::of).collect();
        merge_summaries(&s)
    }

    fn compute(&mut self, request: &Request) -> Result<ShardStats> {
        let mut answers = Vec::with_capacity(self.shards.len());
        let mut sizes = Vec::with_capacity(self.shards.len());
        for shard in &self.shards {
            let bytes = ShardStats::compute(shard, request)?.to_bytes();
            sizes.push(bytes.len());
            answers.push(ShardStats::from_bytes(&bytes)?);
        }
        self.bytes_per_round.push(sizes);
        merge_in_order(answers)
    }
}

/// Rounds a distributed fit asked for, by kind (the summary pass is not counted).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rounds {
    /// Every round.
    pub total: usize,
    /// Rounds that evaluated a point (value and gradient; with the curvature matrices in the
    /// dense variant).
    pub points: usize,
    /// Hessian-vector product rounds (CG variant).
    pub products: usize,
    /// Rounds for the CG preconditioner (packed expected information).
    pub preconditioner: usize,
    /// The covariance round.
    pub covariance: usize,
}

/// A fit driven over shards: the estimate, its report and the matrices every covariance kind
/// is formed from.
#[derive(Debug, Clone)]
pub struct DistributedFit {
    /// The estimate and how it was obtained (as [`crate::fit::fit`]'s report; `starts` is 1).
    pub fit: Fit,
    /// The Newton variant that ran (`Dense` or `Cg`).
    pub variant: NewtonVariant,
    /// Rounds asked of the oracle.
    pub rounds: Rounds,
    /// Rows over all shards.
    pub n: usize,
    /// Mean expected information at the estimate (when gathered).
    pub expected: Option<DMatrix<f64>>,
    /// Mean observed Hessian at the estimate (when gathered).
    pub observed: Option<DMatrix<f64>>,
    /// Mean per-sample score outer product (robust meat; when gathered).
    pub meat: Option<DMatrix<f64>>,
    /// Mean per-cluster score outer product (cluster meat; when gathered, which needs cluster
    /// ids in the shards).
    pub cluster_meat: Option<DMatrix<f64>>,
}

impl DistributedFit {
    /// The model with the `kind` covariance, built on the driver from the gathered matrices:
    /// equal (to rounding) to [`RewardModel::from_estimate`] on the concatenated shards.
    ///
    /// Errors: [`Error::InvalidArgument`] for a kind whose matrices the fit did not gather
    /// (`cluster` without cluster ids, or a fit asked for another kind only);
    /// [`Error::SingularInformation`] as [`RewardModel::from_estimate`].
    pub fn model(&self, kind: CovarianceKind) -> Result<RewardModel> {
        let d1 = self.fit.params.theta.len();
        let gathered = |m: &Option<DMatrix<f64>>| {
            m.clone().ok_or_else(|| {
                Error::invalid(
                    "covariance",
                    format!(
                        "the distributed fit did not gather the matrices of the `{}` covariance",
                        kind.name()
                    ),
                )
            })
        };
        let (curvature, meat) = match kind {
            CovarianceKind::Expected => (gathered(&self.expected)?, None),
            CovarianceKind::Observed => (gathered(&self.observed)?, None),
            CovarianceKind::Robust => (gathered(&self.observed)?, Some(gathered(&self.meat)?)),
            CovarianceKind::Cluster => (
                gathered(&self.observed)?,
                Some(gathered(&self.cluster_meat)?),
            ),
        };
        let f = factors_from_matrices(kind, curvature, meat, self.n, d1)?;
        RewardModel::from_parts(
            self.fit.params.clone(),
            self.n,
            kind,
            self.fit.report.clone(),
            f.theta_factor,
            f.gamma_cov,
        )
    }
}

/// Fits over the oracle's shards with `options` (Newton only; see the module docs) and
/// gathers the matrices of the `covariance` kind (`None`: of every kind the shards support):
/// `fit_shards`, then `ShardFit::gather`. `variant` picks the linear-system strategy as
/// [`crate::fit::Tuning::newton`] does (`Auto`: dense up to
/// [`crate::fit::DENSE_NEWTON_MAX_PARAMS`] parameters). `control` is checked before every
/// iteration.
///
/// Errors: the oracle's (mismatched shards, format errors...), invalid options, the
/// `cluster` covariance on shards without cluster ids (before any round),
/// [`Error::Cancelled`]. A fit that does not converge is not an error (see its report).
pub fn fit_distributed(
    oracle: &mut dyn Oracle,
    options: &FitOptions,
    variant: NewtonVariant,
    control: &FitControl,
    covariance: Option<CovarianceKind>,
) -> Result<DistributedFit> {
    fit_shards(oracle, options, variant, control, covariance)?.gather(covariance)
}

/// A fit driven over shards before its covariance round: the estimate and its report, and the
/// driver that asks the shards for the covariance matrices at it ([`ShardFit::gather`]). The
/// estimator applies its convergence rule in between (`crate::estimator::Estimator`).
pub(crate) struct ShardFit<'a> {
    driver: Driver<'a>,
    summary: ShardSummary,
    variant: NewtonVariant,
    /// The estimate and how it was obtained (as [`crate::fit::fit`]'s report; `starts` is 1).
    pub(crate) fit: Fit,
}

/// The fit of [`fit_distributed`], without the covariance round; `covariance` is checked
/// against the shards before any round.
///
/// Errors: those of [`fit_distributed`].
pub(crate) fn fit_shards<'a>(
    oracle: &'a mut dyn Oracle,
    options: &FitOptions,
    variant: NewtonVariant,
    control: &FitControl,
    covariance: Option<CovarianceKind>,
) -> Result<ShardFit<'a>> {
    let started = Instant::now();
    let summary = oracle.summary()?;
    let (d1, d2) = (summary.d1 as usize, summary.d2 as usize);
    options.check(d1, d2)?;
    if covariance == Some(CovarianceKind::Cluster) && !summary.clustered {
        return Err(Error::invalid(
            "covariance",
            "`cluster` covariance needs cluster ids in the data",
        ));
    }
    if options.solver != SolverKind::Newton {
        return Err(Error::invalid(
            "solver",
            "the distributed fit runs the newton solver only",
        ));
    }
    let variant = variant.resolve(d1 + d2);
    let mut driver = Driver {
        oracle,
        d1,
        n: summary.n as f64,
        dense: variant == NewtonVariant::Dense,
        rounds: Rounds::default(),
        current: None,
        phase: None,
    };
    let max_iter = options.effective_max_iter();
    let (at, prelude) = match &options.init {
        Init::Default => {
            // The first round also brings the expected information: the dense step's matrix,
            // or the CG preconditioner of the homogeneous phase.
            let at = driver.start(Params::zeros(d1, d2), true)?;
            // The homogeneous run's last point (with the full gradient, and the full
            // matrices in the dense variant) is the joint run's first: no round to re-fetch.
            let cg = !driver.dense;
            let mut stats = CgStats::default();
            let run = homogeneous_start(&mut driver, at, cg, options.tol, control, &mut stats)?;
            (run.state, run.iterations)
        }
        Init::Explicit(p) => (driver.start(p.clone(), driver.dense)?, 0),
        Init::Random => {
            return Err(Error::invalid(
                "init",
                "the distributed fit does not draw random starts",
            ))
        }
    };
    let limits = Limits {
        tol: options.tol,
        max_iter,
    };
    let run = driver.run(Free::All, at, limits, control)?;
    let grad_norm = dot(&run.state.grad, &run.state.grad).sqrt();
    let report = FitReport::new(
        options,
        &run,
        grad_norm,
        prelude + run.iterations,
        1,
        started,
    );
    let fit = Fit {
        params: run.state.params,
        report,
    };
    Ok(ShardFit {
        driver,
        summary,
        variant,
        fit,
    })
}

impl ShardFit<'_> {
    /// The covariance round (one round at the estimate): the matrices of the `covariance` kind
    /// (`None`: of every kind the shards support).
    ///
    /// Errors: the oracle's.
    pub(crate) fn gather(self, covariance: Option<CovarianceKind>) -> Result<DistributedFit> {
        let ShardFit {
            mut driver,
            summary,
            variant,
            fit,
        } = self;
        let wants = |kind| covariance.is_none_or(|c| c == kind);
        let mut request = Request::at(fit.params.clone());
        request.expected = wants(CovarianceKind::Expected);
        request.observed = covariance != Some(CovarianceKind::Expected);
        request.meat = wants(CovarianceKind::Robust);
        request.clusters = summary.clustered && wants(CovarianceKind::Cluster);
        let stats = driver.ask(&request)?;
        driver.rounds.covariance += 1;
        let n = summary.n as f64;
        Ok(DistributedFit {
            fit,
            variant,
            rounds: driver.rounds,
            n: summary.n as usize,
            expected: request.expected.then(|| stats.expected(n)).transpose()?,
            observed: request.observed.then(|| stats.observed(n)).transpose()?,
            meat: request.meat.then(|| stats.meat(n)).transpose()?,
            cluster_meat: request
                .clusters
                .then(|| stats.cluster_meat(n))
                .transpose()?,
        })
    }
}

/// The matrices fetched with a point: the mean expected information and observed Hessian
/// (all parameters), where they were asked for.
struct Matrices {
    params: Params,
    expected: Option<DMatrix<f64>>,
    observed: Option<DMatrix<f64>>,
}

/// The shards as an [`Objective`]: every answer is one round of the oracle.
struct Driver<'a> {
    oracle: &'a mut dyn Oracle,
    d1: usize,
    n: f64,
    dense: bool,
    rounds: Rounds,
    /// The matrices of the current point (dense: fetched with every point; CG: with the start).
    current: Option<Matrices>,
    /// CG's preconditioner for the running phase (see [`Driver::phase_preconditioner`]).
    phase: Option<Arc<DMatrix<f64>>>,
}

impl Driver<'_> {
    /// One round: the oracle's merged answer, checked to answer `request` over every row.
    fn ask(&mut self, request: &Request) -> Result<ShardStats> {
        self.rounds.total += 1;
        let stats = self.oracle.compute(request)?;
        stats.check_answers(request, self.n as u64)?;
        Ok(stats)
    }

    /// One round: the mean NLL and gradient at `params`; with `matrices`, also the expected
    /// information and, in the dense variant, the observed Hessian (fetched when d2 > 0;
    /// otherwise it is the same matrix). CG needs only the expected one (its preconditioner).
    fn point(&mut self, params: Params, matrices: bool) -> Result<(State, Matrices)> {
        let mut request = Request::at(params);
        request.value = true;
        let d2 = request.params.gamma.len();
        request.expected = matrices;
        request.observed = matrices && self.dense && d2 > 0;
        let stats = self.ask(&request)?;
        self.rounds.points += 1;
        let expected = match matrices {
            true => Some(stats.expected(self.n)?),
            false => None,
        };
        let observed = if request.observed {
            Some(stats.observed(self.n)?)
        } else if self.dense {
            expected.clone()
        } else {
            None
        };
        let state = State {
            params: request.params.clone(),
            nll: stats.nll_sum()? / self.n,
            grad: stats.grad_sum()?.iter().map(|g| g / self.n).collect(),
        };
        let fetched = Matrices {
            params: request.params,
            expected,
            observed,
        };
        Ok((state, fetched))
    }

    /// A run's starting point (one round), with the matrices when asked for.
    fn start(&mut self, params: Params, matrices: bool) -> Result<State> {
        let (state, fetched) = self.point(params, matrices)?;
        self.current = Some(fetched);
        Ok(state)
    }

    /// Damped Newton (dense variant) or Newton-CG over the `free` coordinates from `at`, by
    /// the one outer loop of every fit ([`run_solver`]); a new phase: CG builds its
    /// preconditioner again.
    fn run(&mut self, free: Free, at: State, limits: Limits, control: &FitControl) -> Result<Run> {
        self.phase = None;
        if self.dense {
            run_solver(&mut Newton::new(free), self, at, limits, control, 0)
        } else {
            run_solver(&mut NewtonCg::new(free), self, at, limits, control, 0)
        }
    }

    /// The lower Cholesky factor's inverse `X` (`P^-1 = X^T X`) of the mean expected
    /// information block of the `free` parameters at `at` (one round unless the current point
    /// has it), ridged until it factorises: CG's preconditioner for a whole phase (the Fisher
    /// blocks move twice per fit, not every iteration).
    fn phase_preconditioner(&mut self, at: &State, free: Free) -> Result<DMatrix<f64>> {
        let fetched = self
            .current
            .as_ref()
            .filter(|m| m.params == at.params)
            .and_then(|m| m.expected.clone());
        let full = match fetched {
            Some(m) => m,
            None => {
                let mut request = Request::at(at.params.clone());
                request.expected = true;
                let stats = self.ask(&request)?;
                self.rounds.preconditioner += 1;
                stats.expected(self.n)?
            }
        };
        let p = free.block(full, self.d1);
        Ok(ridged_inverse_factor(&|| p.clone()).0)
    }
}

impl Objective for Driver<'_> {
    type Trial = (State, Matrices);
    type Preconditioner = Arc<DMatrix<f64>>;

    /// One round per point tried (with the matrices in the dense variant).
    fn trial(&mut self, params: Params) -> Result<(f64, Self::Trial)> {
        let (state, fetched) = self.point(params, self.dense)?;
        Ok((state.nll, (state, fetched)))
    }

    fn accept(&mut self, (state, fetched): Self::Trial) -> Result<State> {
        self.current = Some(fetched);
        Ok(state)
    }

    fn curvature_matrices(
        &mut self,
        at: &State,
        free: Free,
    ) -> Result<(DMatrix<f64>, DMatrix<f64>)> {
        let fetched = self
            .current
            .as_ref()
            .is_some_and(|m| m.params == at.params && m.observed.is_some());
        if !fetched {
            // Only a dense start fetched without matrices (never by this driver's runs).
            let dense = std::mem::replace(&mut self.dense, true);
            let point = self.point(at.params.clone(), true);
            self.dense = dense;
            self.current = Some(point?.1);
        }
        let m = self.current.as_ref().expect("fetched above");
        let block = |m: &Option<DMatrix<f64>>| {
            free.block(m.clone().expect("fetched with the point"), self.d1)
        };
        let info = block(&m.expected);
        let observed = match free {
            Free::Theta => info.clone(),
            _ => block(&m.observed),
        };
        Ok((info, observed))
    }

    fn preconditioner(&mut self, at: &State, free: Free) -> Result<Arc<DMatrix<f64>>> {
        if self.phase.is_none() {
            self.phase = Some(Arc::new(self.phase_preconditioner(at, free)?));
        }
        Ok(self.phase.clone().expect("built above"))
    }

    fn precondition(&mut self, x: &Arc<DMatrix<f64>>, r: &[f64]) -> Vec<f64> {
        lower_t_matvec(x, &lower_matvec(x, r))
    }

    /// One round: the mean curvature times `v` (the free parameters; the others' entries are
    /// zero).
    fn hessian_vector(
        &mut self,
        at: &State,
        v: &[f64],
        curvature: Curvature,
        free: Free,
    ) -> Result<Vec<f64>> {
        let p = at.params.theta.len() + at.params.gamma.len();
        let mut request = Request::at(at.params.clone());
        request.products = vec![free.scatter(v, self.d1, p)];
        request.curvature = curvature;
        let stats = self.ask(&request)?;
        self.rounds.products += 1;
        let product: Vec<f64> = stats.product(0)?.iter().map(|h| h / self.n).collect();
        Ok(free.gather(&product, self.d1))
    }
}

#[cfg(test)]
mod tests;
