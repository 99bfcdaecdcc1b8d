//! Maximum-likelihood estimation of `(theta, gamma)` (docs/contract.md §2).
//!
//! Two solvers sit behind one small `Solver` trait and one driver loop (`run_solver`) that
//! owns termination: tolerance, iteration cap, divergence, cancellation and progress reporting.
//! The solvers are written once against the problem (`objective.rs`, argmin's problem/solver
//! split): the data in memory, the shards of a distributed fit (`crate::shard::driver`) or a
//! profile's constrained problem ([`crate::profile`]), with one mask of the coordinates that
//! move (all, theta only, all but one).
//!
//! * [`SolverKind::Newton`] (default): damped Newton on the joint likelihood with an Armijo
//!   line search, falling back to Fisher scoring (the expected information, always positive
//!   semi-definite) where the observed Hessian is indefinite. Two ways to solve each step's
//!   linear system, chosen by size ([`NewtonVariant::Auto`]):
//!   * up to [`DENSE_NEWTON_MAX_PARAMS`] parameters, the full Hessian is formed and factored
//!     every iteration (`newton`; quadratic convergence, exact steps);
//!   * above, inexact Newton with preconditioned conjugate gradients (`newton_cg`): the
//!     Hessian is never formed, each CG iteration is one pass over the data, and the
//!     preconditioner is a single-precision information matrix built once per fit (and
//!     rebuilt at the current weights near an optimum, once CG has spent as much as a
//!     build). At the
//!     paper's scale (n = 33,845, d1 = 2048, d2 = 38) this is what makes a fit take seconds.
//!
//!   Because `L_n` is biconvex but not jointly convex, small problems (up to
//!   [`MULTI_START_MAX_PARAMS`] parameters) are also run from `restarts` seeded random
//!   starts and the lowest optimum wins; see [`FitOptions::restarts`].
//! * [`SolverKind::Agd`]: the paper's Algorithm 1, faithfully (see `agd`).
//!
//! Results are deterministic for a seed whatever the thread count (see [`crate::parallel`]).

pub(crate) mod agd;
pub(crate) mod block_cg;
pub(crate) mod in_memory;
pub(crate) mod iteration;
pub(crate) mod line_search;
pub(crate) mod newton;
pub(crate) mod newton_cg;
pub(crate) mod objective;
pub(crate) mod state;

use crate::codes::coded_enum;
use crate::data::Dataset;
use crate::error::{check_finite, Error, Result};
use crate::model::Params;
use crate::parallel::run_in_pool;
use in_memory::InMemory;
pub(crate) use iteration::{run_solver, stop_reason, Limits, Run};
pub use iteration::{FitControl, Progress, Termination};
use objective::Free;
use rand::Rng;
pub(crate) use state::{finite_point, State};
use std::sync::atomic::AtomicBool;
use std::time::Instant;

/// Problems with at most this many parameters (`d1 + d2`) use the dense Newton variant (and
/// random restarts); larger ones use Newton-CG.
pub const DENSE_NEWTON_MAX_PARAMS: usize = 256;

/// Random restarts ([`FitOptions::restarts`]) are run only up to this many parameters.
pub const MULTI_START_MAX_PARAMS: usize = DENSE_NEWTON_MAX_PARAMS;

/// Largest accepted [`FitOptions::restarts`]. Each restart is a full solve whose start is held
/// in memory, so the count is bounded rather than trusted: a caller's `UINT32_MAX` is an
/// invalid argument, not a 200 GB allocation.
pub const MAX_RESTARTS: usize = 1000;

/// Largest accepted [`FitOptions::threads`]. A pool is spawned per fit; past a few times the
/// core count more threads only cost start-up time, and a million of them cost a minute.
pub const MAX_THREADS: usize = 1024;

/// Largest accepted [`FitOptions::max_iter`] (one billion iterations: far beyond any
/// convergent fit; cancel a long fit instead of relying on the cap).
pub const MAX_ITERATIONS: usize = 1_000_000_000;

/// How the Newton solver solves the linear system of each step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[doc(hidden)] // reached through `crate::internals` only
pub enum NewtonVariant {
    /// Dense up to [`DENSE_NEWTON_MAX_PARAMS`] parameters, CG above (the default).
    #[default]
    Auto,
    /// Form and factor the full Hessian every iteration (`Newton`).
    Dense,
    /// Preconditioned conjugate gradients on Hessian-vector products (`NewtonCg`).
    Cg,
}

impl NewtonVariant {
    /// The variant that runs on a problem of `n_params` parameters (`d1 + d2`): `Auto` is
    /// dense up to [`DENSE_NEWTON_MAX_PARAMS`], CG above; the others as they are. The one
    /// choice of the in-memory and the distributed fit.
    pub(crate) fn resolve(self, n_params: usize) -> NewtonVariant {
        match self {
            NewtonVariant::Auto if n_params <= DENSE_NEWTON_MAX_PARAMS => NewtonVariant::Dense,
            NewtonVariant::Auto => NewtonVariant::Cg,
            v => v,
        }
    }
}

/// Expert settings of a fit that are not part of [`FitOptions`] (which the CLI and the C ABI
/// mirror). [`Tuning::default`] is what [`fit`] uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[doc(hidden)] // reached through `crate::internals` only
pub struct Tuning {
    /// Linear-system strategy of the Newton solver. Default [`NewtonVariant::Auto`].
    pub newton: NewtonVariant,
}

/// Work done by a fit, for benchmarks and diagnostics.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
#[doc(hidden)] // reached through `crate::internals` only
pub struct Diagnostics {
    /// The Newton variant that ran (`Dense` or `Cg`; `Auto` for agd).
    pub newton: NewtonVariant,
    /// Newton-CG counters summed over the homogeneous start and every start (zero for the
    /// dense variant and agd).
    pub cg: newton_cg::CgStats,
}

coded_enum! {
    /// Which algorithm minimises `L_n`.
    pub enum SolverKind: "solver", "solver" {
        /// Damped Newton / Fisher scoring with line search and multi-start (the default).
        Newton = 0 => "newton",
        /// The paper's alternating gradient descent (Algorithm 1).
        Agd = 1 => "agd",
    }
}

/// Where the solver starts.
#[derive(Debug, Clone, PartialEq)]
pub enum Init {
    /// theta from the homogeneous fit (gamma held at 0, a convex problem), gamma = 0.
    Default,
    /// The paper's start: every coefficient drawn from U(-1, 1) with the options' seed.
    Random,
    /// Explicit starting values (the paper's Algorithm 1 from a known point).
    Explicit(Params),
}

coded_enum! {
    /// Which kind of [`Init`] (its code and name, without the explicit values).
    pub enum InitKind: "init", "start" {
        /// [`Init::Default`].
        Default = 0 => "default",
        /// [`Init::Random`].
        Random = 1 => "random",
        /// [`Init::Explicit`].
        Explicit = 2 => "explicit",
    }
}

impl Init {
    /// The kind of this start.
    pub fn kind(&self) -> InitKind {
        match self {
            Init::Default => InitKind::Default,
            Init::Random => InitKind::Random,
            Init::Explicit(_) => InitKind::Explicit,
        }
    }
}

/// Options of a fit. [`FitOptions::default`] gives the documented defaults; validate with
/// [`FitOptions::check`] (done by [`fit`]).
#[derive(Debug, Clone, PartialEq)]
pub struct FitOptions {
    /// The algorithm. Default: Newton.
    pub solver: SolverKind,
    /// agd step size for theta (eta1). Default 0.1 (the paper's §6.1).
    pub eta1: f64,
    /// agd step size for gamma (eta2). Default 0.08 (the paper's §6.1).
    pub eta2: f64,
    /// Iteration cap per start; `None` = the solver's default (Newton 100, agd 10,000).
    pub max_iter: Option<usize>,
    /// Convergence: Euclidean norm of the gradient of the mean NLL. Default 1e-8.
    pub tol: f64,
    /// Seed for random starts. Default 0.
    pub seed: u64,
    /// Starting point. Default: the homogeneous fit.
    pub init: Init,
    /// Extra seeded U(-1,1) starts tried by the Newton solver (the best optimum wins) on
    /// problems with at most [`MULTI_START_MAX_PARAMS`] parameters (`d1 + d2`) and `d2 > 0`.
    /// Larger problems are fitted from the default start only: a U(-1,1) start in hundreds of
    /// dimensions puts every logit deep in saturation and costs a full solve of its own. The
    /// report's `starts` says how many were run. Default 2. Ignored by agd, which is
    /// single-start as in the paper.
    pub restarts: usize,
    /// Worker threads; 0 = all cores. Results do not depend on it.
    pub threads: usize,
}

impl Default for FitOptions {
    fn default() -> Self {
        FitOptions {
            solver: SolverKind::Newton,
            eta1: 0.1,
            eta2: 0.08,
            max_iter: None,
            tol: 1e-8,
            seed: 0,
            init: Init::Default,
            restarts: 2,
            threads: 0,
        }
    }
}

impl FitOptions {
    /// The iteration cap that applies to this solver.
    pub fn effective_max_iter(&self) -> usize {
        self.max_iter.unwrap_or(match self.solver {
            SolverKind::Newton => 100,
            SolverKind::Agd => 10_000,
        })
    }

    /// Checks every option against its domain and the data's dimensions:
    /// [`FitOptions::check_free`], then [`FitOptions::check_data`].
    pub fn check(&self, d1: usize, d2: usize) -> Result<()> {
        self.check_free()?;
        self.check_data(d1, d2)
    }

    /// The checks that need no data: positive finite step sizes and tolerance, counts within
    /// [`MAX_ITERATIONS`], [`MAX_RESTARTS`] and [`MAX_THREADS`], explicit starting values
    /// finite.
    pub fn check_free(&self) -> Result<()> {
        for (name, v) in [("eta1", self.eta1), ("eta2", self.eta2)] {
            if !(v.is_finite() && v > 0.0) {
                return Err(Error::invalid(
                    name,
                    format!("must be a positive, finite step size; got {v}"),
                ));
            }
        }
        if !(self.tol.is_finite() && self.tol >= 0.0) {
            return Err(Error::invalid(
                "tol",
                format!(
                    "must be a non-negative, finite gradient norm; got {}",
                    self.tol
                ),
            ));
        }
        if self.max_iter == Some(0) {
            return Err(Error::invalid("max_iter", "must be at least 1"));
        }
        let counts = [
            ("max_iter", self.max_iter.unwrap_or(0), MAX_ITERATIONS),
            ("restarts", self.restarts, MAX_RESTARTS),
            ("threads", self.threads, MAX_THREADS),
        ];
        for (name, value, limit) in counts {
            if value > limit {
                return Err(Error::invalid(
                    name,
                    format!("{value} is above the limit of {limit}"),
                ));
            }
        }
        if let Init::Explicit(p) = &self.init {
            check_finite("theta0", &p.theta)?;
            check_finite("gamma0", &p.gamma)?;
        }
        Ok(())
    }

    /// The checks against the data: explicit starting values of `d1` and `d2` values.
    pub fn check_data(&self, d1: usize, d2: usize) -> Result<()> {
        if let Init::Explicit(p) = &self.init {
            if p.theta.len() != d1 {
                return Err(Error::dims(
                    "theta0",
                    format!("{d1} values (d1)"),
                    p.theta.len(),
                ));
            }
            if p.gamma.len() != d2 {
                return Err(Error::dims(
                    "gamma0",
                    format!("{d2} values (d2)"),
                    p.gamma.len(),
                ));
            }
        }
        Ok(())
    }
}

/// How the fit went (docs/contract.md §2: every fit reports these).
#[derive(Debug, Clone, PartialEq)]
pub struct FitReport {
    /// Solver used.
    pub solver: SolverKind,
    /// Iterations of the winning start.
    pub iterations: usize,
    /// Total iterations over all starts, including those of the homogeneous fit that makes
    /// the default start.
    pub total_iterations: usize,
    /// Number of starts tried.
    pub starts: usize,
    /// Whether the winning start met the tolerance.
    pub converged: bool,
    /// Why the winning start stopped.
    pub termination: Termination,
    /// Final gradient norm (Euclidean, of the mean NLL).
    pub grad_norm: f64,
    /// Final mean negative log-likelihood.
    pub neg_loglik: f64,
    /// Wall-clock seconds of the whole fit.
    pub seconds: f64,
    /// The tolerance asked for.
    pub tol: f64,
}

impl FitReport {
    /// The report of a fit with `options` whose winning start ended as `best`, with gradient
    /// norm `grad_norm`, after `total_iterations` iterations over `starts` starts (the
    /// homogeneous fit's included), begun at `started`: the one report of the in-memory and
    /// the distributed fit. The norm is the caller's: the distributed driver sums it with
    /// `crate::linalg::dot`, the in-memory fit in order ([`State::grad_norm`]), which may
    /// differ in the last digit.
    pub(crate) fn new(
        options: &FitOptions,
        best: &Run,
        grad_norm: f64,
        total_iterations: usize,
        starts: usize,
        started: Instant,
    ) -> Self {
        FitReport {
            solver: options.solver,
            iterations: best.iterations,
            total_iterations,
            starts,
            converged: best.termination == Termination::Converged,
            termination: best.termination,
            grad_norm,
            neg_loglik: best.state.nll,
            seconds: started.elapsed().as_secs_f64(),
            tol: options.tol,
        }
    }

    /// Why this fit did not converge, in plain words with what to change (options named as
    /// the library's fields, the command line's flags in parentheses): separated data, the
    /// iteration cap, a stalled line search. The one explanation the estimator's
    /// `require_converged` error and the command line's warning give.
    pub fn shortfall(&self) -> String {
        let solver = self.solver.name();
        let (it, grad, tol) = (self.iterations, self.grad_norm, self.tol);
        match self.termination {
            Termination::Diverged => format!(
                "{solver} found no finite estimate: the data are separated (a combination of the \
                 features predicts every label), so the likelihood keeps rising as the estimate \
                 runs off to infinity, and the estimates and standard errors are not meaningful; \
                 look for a feature or covariate that predicts the labels perfectly, or add data"
            ),
            Termination::MaxIterations => format!(
                "{solver} reached the iteration cap ({it} iterations) with the gradient norm \
                 {grad:.3e} still above tol {tol:.1e}; raise max_iter (--max-iter){}",
                if self.solver == SolverKind::Agd {
                    " or use the newton solver (--solver newton)"
                } else {
                    ""
                }
            ),
            Termination::Stalled => format!(
                "{solver} stalled after {it} iterations: no step decreased the objective any \
                 more, with the gradient norm {grad:.3e} still above tol {tol:.1e} (the \
                 tolerance is finer than double precision reaches on these data, or the \
                 likelihood has no finite maximum, e.g. nearly separated data); loosen tol \
                 (--tol) or check the data"
            ),
            Termination::Converged => format!(
                "{solver} ended after {it} iterations with the gradient norm {grad:.3e} above \
                 tol {tol:.1e}"
            ),
        }
    }
}

/// A fitted parameter vector with its report.
#[derive(Debug, Clone, PartialEq)]
pub struct Fit {
    /// The estimate.
    pub params: Params,
    /// How it was obtained.
    pub report: FitReport,
}

/// Fits `(theta, gamma)` by maximum likelihood on a local pool of `options.threads` threads.
///
/// Errors: invalid options ([`Error::InvalidArgument`], [`Error::DimensionMismatch`]),
/// [`Error::Cancelled`]. A fit that does not converge is *not* an error: its report says so
/// (`converged = false` and the [`Termination`]).
pub fn fit(data: &Dataset, options: &FitOptions, control: &FitControl) -> Result<Fit> {
    fit_with(data, options, &Tuning::default(), control).map(|(fit, _)| fit)
}

/// [`fit`] with expert [`Tuning`], also returning the [`Diagnostics`] (work counters).
#[doc(hidden)] // reached through `crate::internals` only
pub fn fit_with(
    data: &Dataset,
    options: &FitOptions,
    tuning: &Tuning,
    control: &FitControl,
) -> Result<(Fit, Diagnostics)> {
    options.check(data.d1(), data.d2())?;
    let started = Instant::now();
    let (best, runs, diagnostics, prelude_iterations) = run_in_pool(options.threads, || {
        fit_in_pool(data, options, tuning, control)
    })??;
    let total_iterations = prelude_iterations + runs.iter().map(|r| r.iterations).sum::<usize>();
    let fit = Fit {
        report: FitReport::new(
            options,
            &best,
            best.state.grad_norm(),
            total_iterations,
            runs.len(),
            started,
        ),
        params: best.state.params,
    };
    Ok((fit, diagnostics))
}

/// One warm-started Newton solve from `start`, on the current rayon pool: no homogeneous start,
/// no restarts, no progress reports (only `control.cancel` is honoured). This is the refit of
/// the parametric bootstrap ([`crate::calibrate`]): hundreds of them share one data
/// preconditioner (`shared`, Newton-CG only; `None` builds one).
///
/// Errors: [`Error::Cancelled`].
pub(crate) fn refit(
    data: &Dataset,
    start: Params,
    limits: Limits,
    shared: Option<std::sync::Arc<newton_cg::DataPreconditioner>>,
    cancel: Option<&AtomicBool>,
) -> Result<Run> {
    let control = FitControl {
        progress: None,
        cancel,
    };
    let state = State::at(data, start);
    match newton_variant(data, &Tuning::default()) {
        NewtonVariant::Cg => {
            let shared = shared.unwrap_or_else(|| newton_cg::DataPreconditioner::shared(data).0);
            let mut objective = InMemory::cg(data, shared);
            let mut solver = newton_cg::NewtonCg::new(Free::All);
            run_solver(&mut solver, &mut objective, state, limits, &control, 0)
        }
        _ => {
            let mut solver = newton::Newton::new(Free::All);
            let mut objective = InMemory::dense(data);
            run_solver(&mut solver, &mut objective, state, limits, &control, 0)
        }
    }
}

/// The estimator itself — [`fit`]'s starts (`options.init`, then the seeded restarts) and
/// lowest optimum — on the current rayon pool, without a pool of its own, timing or progress
/// reports (only `cancel` is honoured); always Newton, whatever `options.solver` (the optimum,
/// not the algorithm, is what is replicated), and `options.max_iter` Newton iterations per
/// start. The parametric bootstrap's fallback when a
/// warm-started [`refit`] does not converge: the likelihood can have several branches, and a
/// warm start on the shoulder of the `|gamma| -> infinity` valley can run off along it while
/// the estimator's own starts find a finite optimum with a lower NLL.
///
/// `options` must have passed [`FitOptions::check`] for `data`'s dimensions.
///
/// Errors: [`Error::Cancelled`].
pub(crate) fn refit_from_scratch(
    data: &Dataset,
    options: &FitOptions,
    cancel: Option<&AtomicBool>,
) -> Result<Run> {
    let options = FitOptions {
        solver: SolverKind::Newton,
        ..options.clone()
    };
    let control = FitControl {
        progress: None,
        cancel,
    };
    fit_in_pool(data, &options, &Tuning::default(), &control).map(|(best, ..)| best)
}

/// True when [`refit`] on `data` runs Newton-CG (and so can use a shared data preconditioner).
pub(crate) fn refit_uses_cg(data: &Dataset) -> bool {
    newton_variant(data, &Tuning::default()) == NewtonVariant::Cg
}

/// The Newton variant that `tuning` selects for `data`.
fn newton_variant(data: &Dataset, tuning: &Tuning) -> NewtonVariant {
    tuning.newton.resolve(data.n_params())
}

fn fit_in_pool(
    data: &Dataset,
    options: &FitOptions,
    tuning: &Tuning,
    control: &FitControl,
) -> Result<(Run, Vec<Run>, Diagnostics, usize)> {
    let max_iter = options.effective_max_iter();
    let variant = newton_variant(data, tuning);
    let mut diagnostics = Diagnostics {
        newton: if options.solver == SolverKind::Newton {
            variant
        } else {
            NewtonVariant::Auto
        },
        ..Diagnostics::default()
    };
    let mut rng = crate::rng::rng(options.seed);
    // Iterations spent finding the first start (the homogeneous fit) count towards it.
    // Newton-CG's data preconditioner, the context of every Newton-CG run of this fit (the
    // homogeneous start and the joint runs): built once, here, and handed to each. Then the
    // homogeneous start's last evaluation (its per-sample terms serve the joint run's first
    // step).
    let needs_cg = variant == NewtonVariant::Cg
        && (options.solver == SolverKind::Newton || matches!(options.init, Init::Default));
    let shared = needs_cg.then(|| {
        let (built, stats) = newton_cg::DataPreconditioner::shared(data);
        add_stats(&mut diagnostics.cg, &stats);
        built
    });
    let mut objective = match &shared {
        Some(base) => InMemory::cg(data, base.clone()),
        None => InMemory::dense(data),
    };
    let (first, prelude_iterations) = match &options.init {
        Init::Default => {
            let at_zero = State::at(data, Params::zeros(data.d1(), data.d2()));
            let cg = variant == NewtonVariant::Cg;
            let stats = &mut diagnostics.cg;
            let run = homogeneous_start(&mut objective, at_zero, cg, options.tol, control, stats)?;
            (run.state.params, run.iterations)
        }
        Init::Random => (random_params(data, &mut rng), 0),
        Init::Explicit(p) => (p.clone(), 0),
    };
    let mut starts = vec![first];
    if options.solver == SolverKind::Newton
        && data.d2() > 0
        && data.n_params() <= MULTI_START_MAX_PARAMS
    {
        starts.extend((0..options.restarts).map(|_| random_params(data, &mut rng)));
    }
    let limits = Limits {
        tol: options.tol,
        max_iter,
    };
    let mut runs = Vec::with_capacity(starts.len());
    for (k, start) in starts.into_iter().enumerate() {
        // A start where the homogeneous run stopped takes over its last evaluation.
        let state = objective.state(start);
        let run = match (options.solver, variant) {
            (SolverKind::Newton, NewtonVariant::Cg) => {
                let mut solver = newton_cg::NewtonCg::new(Free::All);
                let run = run_solver(&mut solver, &mut objective, state, limits, control, k);
                add_stats(&mut diagnostics.cg, &solver.stats);
                run?
            }
            (SolverKind::Newton, _) => {
                let mut solver = newton::Newton::new(Free::All);
                run_solver(&mut solver, &mut objective, state, limits, control, k)?
            }
            (SolverKind::Agd, _) => {
                let mut solver = agd::Agd::new(options.eta1, options.eta2);
                run_solver(&mut solver, &mut objective, state, limits, control, k)?
            }
        };
        runs.push(run);
    }
    add_stats(&mut diagnostics.cg, &objective.stats);
    let best = best_run(&runs).clone();
    Ok((best, runs, diagnostics, prelude_iterations))
}

fn add_stats(total: &mut newton_cg::CgStats, s: &newton_cg::CgStats) {
    total.newton_steps += s.newton_steps;
    total.cg_iterations += s.cg_iterations;
    total.passes += s.passes;
    total.fisher_steps += s.fisher_steps;
    total.preconditioner_builds += s.preconditioner_builds;
    total.preconditioner_seconds += s.preconditioner_seconds;
    total.product_seconds += s.product_seconds;
    total.evaluation_seconds += s.evaluation_seconds;
    total.block_seconds += s.block_seconds;
    total.apply_seconds += s.apply_seconds;
}

/// The start whose optimum is best: converged runs beat unconverged ones, then the lower NLL
/// wins, then the earlier start.
fn best_run(runs: &[Run]) -> &Run {
    let mut best = &runs[0];
    for r in &runs[1..] {
        let better = match (
            r.termination == Termination::Converged,
            best.termination == Termination::Converged,
        ) {
            (true, false) => true,
            (false, true) => false,
            _ => r.state.nll < best.state.nll,
        };
        if better {
            best = r;
        }
    }
    best
}

/// The paper's random start: every coefficient from U(-1, 1).
fn random_params(data: &Dataset, rng: &mut impl Rng) -> Params {
    let mut draw = |k: usize| (0..k).map(|_| rng.random_range(-1.0..1.0)).collect();
    Params {
        theta: draw(data.d1()),
        gamma: draw(data.d2()),
    }
}

/// Newton-CG solves the homogeneous start to this fraction of its initial gradient norm (or
/// the fit's tolerance, if tighter): it is only a start, and the joint run that follows (for
/// d2 = 0, the same problem) goes on to the tolerance. At 1e-4 the heavy-tailed paper-scale
/// file (BENCHMARKS.md) spent 8 of its 14 start steps with |g| between 0.02 and 0.23 while
/// the NLL moved by 5e-4, against 0.017 in the joint run, which took 9 steps either way.
const HOMOGENEOUS_START_RTOL: f64 = 1e-2;
/// Gradient tolerance of dense Newton's homogeneous start.
const HOMOGENEOUS_DENSE_TOL: f64 = 1e-10;
/// Iteration cap of the homogeneous start.
const HOMOGENEOUS_MAX_ITER: usize = 50;

/// The default start: gamma = 0 and theta the maximiser with gamma held at 0 — a convex
/// logistic regression of y on `psi0 * z` (exactly the MLE when d2 = 0) — solved by Newton-CG
/// (`cg`) or dense Newton over [`Free::Theta`] from `at_zero`, the state at zero, for a fit to
/// `tol`: the in-memory and the distributed fit alike. Newton-CG's work counters are added to
/// `stats`.
pub(crate) fn homogeneous_start<O: objective::Objective + ?Sized>(
    objective: &mut O,
    at_zero: State,
    cg: bool,
    tol: f64,
    control: &FitControl,
    stats: &mut newton_cg::CgStats,
) -> Result<Run> {
    let d1 = at_zero.params.theta.len();
    let g0 = at_zero.grad[..d1].iter().map(|g| g * g).sum::<f64>().sqrt();
    let limits = Limits {
        tol: if cg {
            (HOMOGENEOUS_START_RTOL * g0).max(tol)
        } else {
            HOMOGENEOUS_DENSE_TOL
        },
        max_iter: HOMOGENEOUS_MAX_ITER,
    };
    if cg {
        let mut solver = newton_cg::NewtonCg::new(Free::Theta);
        let run = run_solver(&mut solver, objective, at_zero, limits, control, 0);
        add_stats(stats, &solver.stats);
        run
    } else {
        let mut solver = newton::Newton::new(Free::Theta);
        run_solver(&mut solver, objective, at_zero, limits, control, 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::one_hot_groups;

    fn data() -> Dataset {
        let theta: Vec<f64> = (0..40).map(|j| ((j as f64) * 0.37).sin() * 0.6).collect();
        one_hot_groups(4000, &theta, &[0.6, -0.5, 0.9, -1.4], 5)
    }

    fn run(data: &Dataset, newton: NewtonVariant, threads: usize) -> (Fit, Diagnostics) {
        let options = FitOptions {
            threads,
            restarts: 0,
            ..FitOptions::default()
        };
        fit_with(data, &options, &Tuning { newton }, &FitControl::default()).unwrap()
    }

    #[test]
    fn newton_cg_reaches_the_dense_newton_optimum() {
        let data = data();
        let (dense, dd) = run(&data, NewtonVariant::Dense, 2);
        let (cg, dc) = run(&data, NewtonVariant::Cg, 2);
        assert_eq!(dd.newton, NewtonVariant::Dense);
        assert_eq!(dc.newton, NewtonVariant::Cg);
        assert!(dense.report.converged && cg.report.converged);
        assert!(dc.cg.cg_iterations > 0 && dc.cg.passes > dc.cg.cg_iterations);
        // d1 = 40: a build costs one product, so the theta block is rebuilt near the optimum.
        assert!(dc.cg.preconditioner_builds > 1, "{:?}", dc.cg);
        let dist = dense
            .params
            .stacked()
            .iter()
            .zip(cg.params.stacked())
            .map(|(a, b)| (a - b).powi(2))
            .sum::<f64>()
            .sqrt();
        assert!(dist < 1e-7, "distance {dist}");
        assert!((dense.report.neg_loglik - cg.report.neg_loglik).abs() < 1e-13);
    }

    #[test]
    fn newton_cg_does_not_depend_on_thread_count() {
        let data = data();
        let (one, _) = run(&data, NewtonVariant::Cg, 1);
        let (three, _) = run(&data, NewtonVariant::Cg, 3);
        assert_eq!(one.params, three.params);
        assert_eq!(one.report.iterations, three.report.iterations);
    }

    #[test]
    fn automatic_variant_and_restarts_follow_the_size() {
        let small = crate::sim::paper_simulation(300, crate::sim::ActionDesign::Uniform, 2);
        let (f, d) = fit_with(
            &small,
            &FitOptions::default(),
            &Tuning::default(),
            &FitControl::default(),
        )
        .unwrap();
        assert_eq!(d.newton, NewtonVariant::Dense);
        assert_eq!(f.report.starts, 3); // homogeneous start + 2 restarts
        let theta = vec![0.05; DENSE_NEWTON_MAX_PARAMS];
        let big = one_hot_groups(5000, &theta, &[0.5], 3);
        let (f, d) = fit_with(
            &big,
            &FitOptions::default(),
            &Tuning::default(),
            &FitControl::default(),
        )
        .unwrap();
        assert_eq!(d.newton, NewtonVariant::Cg);
        assert_eq!(f.report.starts, 1); // above MULTI_START_MAX_PARAMS: no restarts
        assert!(f.report.converged, "{:?}", f.report);
    }
}
