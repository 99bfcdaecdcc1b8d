//! The estimator's iteration: one `Solver` trait (a step from a state over a problem) and one
//! driver loop, [`run_solver`], that owns termination — tolerance, iteration cap, divergence,
//! cancellation ([`FitControl`]) and progress reporting ([`Progress`]) — with [`stop_reason`],
//! the one stopping rule every loop shares (this driver's, the distributed driver's and the
//! batched refits').

use super::line_search::backtrack;
use super::objective::{Free, Objective};
use super::state::State;
use crate::codes::coded_enum;
use crate::error::{Error, Result};
use std::sync::atomic::{AtomicBool, Ordering};

coded_enum! {
    /// Why a solver stopped.
    pub enum Termination: "termination", "termination" {
        /// The gradient norm met the tolerance.
        Converged = 0 => "converged",
        /// The iteration cap was reached first.
        MaxIterations = 1 => "max_iterations",
        /// The line search could not decrease the objective any further (numerical floor or
        /// a likelihood without a finite optimum, e.g. separable data).
        Stalled = 2 => "stalled",
        /// The estimate runs off to infinity: parameters or objective became non-finite, or
        /// the gradient vanished only because the data are perfectly separated (mean NLL
        /// below `SEPARATED_NLL`: every label predicted with certainty, the MLE lies at
        /// infinity).
        Diverged = 3 => "diverged",
    }
}

/// A gradient that meets the tolerance at a mean NLL below this is not a finite optimum: the
/// data are completely separated (every label predicted with probability > 1 - 1e-6 on
/// average) and `||theta||` grows without bound. Such fits end [`Termination::Diverged`].
/// Quasi-complete separation (only a subset separated) is not detected this way.
pub(crate) const SEPARATED_NLL: f64 = 1e-6;

/// What the progress observer sees before each iteration: the state it starts from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Progress {
    /// Which start (0-based) is running.
    pub start: usize,
    /// Iterations done in this start before the one about to run (0: the start point).
    pub iteration: usize,
    /// The iteration cap.
    pub max_iter: usize,
    /// Current mean NLL.
    pub neg_loglik: f64,
    /// Current gradient norm.
    pub grad_norm: f64,
}

/// Caller's hooks into a running fit: a progress observer (return `false` to cancel) and a
/// cancellation flag that another thread may set.
#[derive(Default)]
pub struct FitControl<'a> {
    /// Called before every iteration (not after the last: the report has the final state);
    /// returning `false` cancels the fit before that iteration's work.
    pub progress: Option<&'a (dyn Fn(&Progress) -> bool + Sync)>,
    /// Checked before every iteration; `true` cancels the fit.
    pub cancel: Option<&'a AtomicBool>,
}

impl FitControl<'_> {
    pub(crate) fn should_stop(&self, p: &Progress) -> bool {
        self.cancel.is_some_and(|c| c.load(Ordering::Relaxed))
            || self.progress.is_some_and(|f| !f(p))
    }
}

/// What one solver iteration produced.
pub(crate) enum Step {
    /// A new point.
    Moved(State),
    /// No acceptable step exists from here (line search failure).
    Stalled,
}

/// One iterative algorithm over an objective `O` (the problem: [`objective::Objective`]):
/// from a state, produce the next one. The driver (`run_solver`) decides when to stop.
pub(crate) trait Solver<O: ?Sized> {
    /// Performs one iteration from `state`. `tol` is the driver's gradient tolerance: an
    /// inexact solver may stop its inner solve once the step would meet it.
    fn step(&mut self, objective: &mut O, state: &State, tol: f64) -> Result<Step>;

    /// The coordinates this solver moves: the gradient norm driven to the tolerance is theirs
    /// (default: every coordinate).
    fn free(&self) -> Free {
        Free::All
    }
}

/// A Newton solver's step from `state` along `direction` (over the `free` coordinates) of
/// slope `slope`: the shared Armijo line search ([`backtrack`]) with the accepted trial as the
/// next state, or [`Step::Stalled`] when `direction` is no descent direction or no step is
/// accepted.
///
/// Errors: those of the objective's trials and acceptance.
pub(crate) fn line_step<O: Objective + ?Sized>(
    objective: &mut O,
    state: &State,
    free: Free,
    direction: &[f64],
    slope: f64,
) -> Result<Step> {
    let accepted = backtrack(state.nll, slope, |t| {
        objective.trial(free.along(&state.params, direction, t))
    })?;
    Ok(match accepted {
        Some(trial) => Step::Moved(objective.accept(trial)?),
        None => Step::Stalled,
    })
}

/// Outcome of one start.
#[derive(Debug, Clone)]
pub(crate) struct Run {
    /// Final state.
    pub state: State,
    /// Iterations done.
    pub iterations: usize,
    /// Why it stopped.
    pub termination: Termination,
}

/// Why a run stops at a point (`finite`: see [`super::state::finite_point`]) with gradient
/// norm `grad_norm` and mean NLL `nll` after `iterations` iterations, or `None` to go on: a
/// non-finite point ([`Termination::Diverged`]), the tolerance met
/// ([`Termination::Converged`], or [`Termination::Diverged`] when the NLL is below
/// [`SEPARATED_NLL`]: the gradient vanished only because the data are separated), else the
/// iteration cap. The one rule of every solver loop (this driver's, which the distributed
/// fit runs too, and the batched refits', on their gradient in standard errors).
pub(crate) fn stop_reason(
    finite: bool,
    grad_norm: f64,
    nll: f64,
    tol: f64,
    iterations: usize,
    max_iter: usize,
) -> Option<Termination> {
    if !finite {
        Some(Termination::Diverged)
    } else if grad_norm <= tol {
        Some(if nll < SEPARATED_NLL {
            Termination::Diverged
        } else {
            Termination::Converged
        })
    } else if iterations >= max_iter {
        Some(Termination::MaxIterations)
    } else {
        None
    }
}

/// When a run stops: the gradient norm of the free coordinates at most `tol`, or `max_iter`
/// iterations done.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Limits {
    /// Gradient-norm tolerance.
    pub(crate) tol: f64,
    /// Iteration cap.
    pub(crate) max_iter: usize,
}

/// Drives `solver` over `objective` from `start` until [`stop_reason`] says so (the
/// tolerance of `limits` met, its iteration cap reached), the solver stalls or diverges, or
/// the caller cancels ([`Error::Cancelled`]); `start_index` is reported to the progress
/// observer. The only outer loop of every Newton and agd run: in memory, distributed, the
/// profile's constrained fits and the bootstrap refits.
pub(crate) fn run_solver<O: ?Sized>(
    solver: &mut dyn Solver<O>,
    objective: &mut O,
    start: State,
    limits: Limits,
    control: &FitControl,
    start_index: usize,
) -> Result<Run> {
    let Limits { tol, max_iter } = limits;
    let free = solver.free();
    let mut state = start;
    let mut iterations = 0;
    let termination = loop {
        let grad_norm = free
            .gather(&state.grad, state.params.theta.len())
            .iter()
            .map(|g| g * g)
            .sum::<f64>()
            .sqrt();
        let finite = state.is_finite();
        if let Some(t) = stop_reason(finite, grad_norm, state.nll, tol, iterations, max_iter) {
            break t;
        }
        let progress = Progress {
            start: start_index,
            iteration: iterations,
            max_iter,
            neg_loglik: state.nll,
            grad_norm,
        };
        if control.should_stop(&progress) {
            return Err(Error::Cancelled);
        }
        match solver.step(objective, &state, tol)? {
            Step::Moved(next) => state = next,
            Step::Stalled => break Termination::Stalled,
        }
        iterations += 1;
    };
    Ok(Run {
        state,
        iterations,
        termination,
    })
}
