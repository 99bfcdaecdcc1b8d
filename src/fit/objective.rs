//! The problem side of the estimator's iteration (argmin's problem/solver split): an
//! [`Objective`] answers what the Newton solvers ask — the mean NLL at a trial point, the value
//! and gradient at an accepted one, the curvature matrices, Hessian-vector products and
//! Newton-CG's preconditioner — and a [`Free`] mask says which coordinates move.
//!
//! Implemented by the in-memory data ([`InMemory`], here: every pass over a [`Dataset`]), by
//! the distributed driver (`crate::shard::driver`: every answer is one round of the shards)
//! and used with [`Free::AllBut`] by the profile likelihood (`crate::profile`: the
//! constrained problem is the data with one coefficient held). The solvers
//! ([`super::newton::Newton`], [`super::newton_cg::NewtonCg`]) are written once against it,
//! and [`super::run_solver`] is the only outer loop.
//!
//! An objective over a subset of the samples, or with integer sample weights (the cluster
//! jackknife and bootstrap refits of issue 20), is an `InMemory` over the [`Dataset`] of those
//! rows, a row repeated once per unit of weight (the test fixture `testing::select_rows`
//! builds one; a test shows every row twice gives the same estimate), warm-started by
//! `super::refit`: nothing in the solvers changes.

use super::newton_cg::{CgStats, DataPreconditioner, StepPreconditioner};
use super::State;
use crate::data::Dataset;
use crate::error::Result;
use crate::likelihood::{
    add_residual_cross_term, evaluate, expected_information, hessian_vector, mean_nll,
    residual_cross_term, Curvature, Evaluation,
};
use crate::model::Params;
use nalgebra::DMatrix;
use std::sync::Arc;
use std::time::Instant;

/// Which coordinates of the stacked `(theta, gamma)` a solver moves; the others stay where
/// the start put them. Gradients, directions and matrix blocks handed between a solver and
/// its [`Objective`] hold the free coordinates only, in stacked order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Free {
    /// Every coefficient.
    All,
    /// theta only, gamma held (the homogeneous start: a convex problem).
    Theta,
    /// Every coefficient but this one of the stacked vector (a profile likelihood).
    AllBut(usize),
}

impl Free {
    /// The free positions of a stacked vector of `d1` theta and `p - d1` gamma values.
    pub(crate) fn positions(self, d1: usize, p: usize) -> impl Iterator<Item = usize> {
        let end = if self == Free::Theta { d1 } else { p };
        (0..end).filter(move |&j| self != Free::AllBut(j))
    }

    /// The free entries of the stacked `v` (`d1` theta values first).
    pub(crate) fn gather(self, v: &[f64], d1: usize) -> Vec<f64> {
        match self {
            Free::All => v.to_vec(),
            Free::Theta => v[..d1].to_vec(),
            Free::AllBut(_) => self.positions(d1, v.len()).map(|j| v[j]).collect(),
        }
    }

    /// The stacked vector of length `p` with the free entries `v` and zeros elsewhere.
    pub(crate) fn scatter(self, v: &[f64], d1: usize, p: usize) -> Vec<f64> {
        let mut full = vec![0.0; p];
        for (j, x) in self.positions(d1, p).zip(v) {
            full[j] = *x;
        }
        full
    }

    /// The free block (rows and columns) of a stacked `p x p` matrix.
    pub(crate) fn block(self, m: DMatrix<f64>, d1: usize) -> DMatrix<f64> {
        match self {
            Free::All => m,
            Free::Theta => m.view((0, 0), (d1, d1)).into_owned(),
            Free::AllBut(_) => {
                let keep: Vec<usize> = self.positions(d1, m.nrows()).collect();
                m.select_rows(&keep).select_columns(&keep)
            }
        }
    }

    /// The point `start + t direction` (`direction` over the free coordinates): a line-search
    /// trial.
    pub(crate) fn along(self, start: &Params, direction: &[f64], t: f64) -> Params {
        let d1 = start.theta.len();
        let mut x = start.stacked();
        let p = x.len();
        for (j, d) in self.positions(d1, p).zip(direction) {
            x[j] += t * d;
        }
        Params::from_stacked(&x, d1)
    }
}

/// What the Newton solvers ask of the problem (see the module docs). Every call may cost a
/// pass over the data or a round of the shards; a solver asks for each figure once per point.
pub(crate) trait Objective {
    /// What a line-search trial keeps of its evaluation until [`Objective::accept`].
    type Trial;
    /// Newton-CG's preconditioner of one step ([`Objective::precondition`] applies it).
    type Preconditioner;

    /// The mean NLL at a line-search trial point.
    fn trial(&mut self, params: Params) -> Result<(f64, Self::Trial)>;

    /// The accepted trial point as the solver's next state (value and gradient).
    fn accept(&mut self, trial: Self::Trial) -> Result<State>;

    /// The `free` blocks of the expected information and of the observed Hessian at `at`
    /// (dense Newton).
    fn curvature_matrices(
        &mut self,
        at: &State,
        free: Free,
    ) -> Result<(DMatrix<f64>, DMatrix<f64>)>;

    /// Newton-CG's preconditioner for a step from `at` over the `free` coordinates.
    fn preconditioner(&mut self, at: &State, free: Free) -> Result<Self::Preconditioner>;

    /// `M^-1 r` for the preconditioner `pre` (`r` over the free coordinates).
    fn precondition(&mut self, pre: &Self::Preconditioner, r: &[f64]) -> Vec<f64>;

    /// `M v`, the `free` block of the observed Hessian or the expected information at `at`
    /// times `v` (both over the free coordinates). Called after
    /// [`Objective::preconditioner`] at the same point.
    fn hessian_vector(
        &mut self,
        at: &State,
        v: &[f64],
        curvature: Curvature,
        free: Free,
    ) -> Result<Vec<f64>>;
}

/// The data in memory as an [`Objective`]: every answer is a pass over [`Dataset`].
///
/// Built for dense Newton ([`InMemory::dense`]: trial points cost a value-only pass) or for
/// Newton-CG ([`InMemory::cg`]: trial points keep their per-sample terms, from which the next
/// step's Hessian-vector products are formed without reading the data twice, and the data
/// preconditioner, built once per fit, is the context of every run).
#[derive(Debug, Clone)]
pub(crate) struct InMemory<'a> {
    data: &'a Dataset,
    base: Option<Arc<DataPreconditioner>>,
    /// The evaluation (with per-sample terms) at the last accepted point (Newton-CG).
    last: Option<(Params, Evaluation)>,
    /// Passes and seconds (Newton-CG's counters; the solver adds its own).
    pub(crate) stats: CgStats,
}

impl<'a> InMemory<'a> {
    /// For dense Newton (and agd).
    pub(crate) fn dense(data: &'a Dataset) -> Self {
        InMemory {
            data,
            base: None,
            last: None,
            stats: CgStats::default(),
        }
    }

    /// For Newton-CG, preconditioned by `base` (built by the caller, shared by its runs).
    pub(crate) fn cg(data: &'a Dataset, base: Arc<DataPreconditioner>) -> Self {
        InMemory {
            base: Some(base),
            ..Self::dense(data)
        }
    }

    /// The data.
    pub(crate) fn data(&self) -> &'a Dataset {
        self.data
    }

    /// The state at `params`: from the last accepted evaluation when it is at `params` (a run
    /// that starts where the previous one stopped: the per-sample terms do not depend on which
    /// coordinates are free), else one pass.
    pub(crate) fn state(&self, params: Params) -> State {
        match &self.last {
            Some((at, eval)) if *at == params => State {
                params,
                nll: eval.nll,
                grad: eval.grad.clone(),
            },
            _ => State::at(self.data, params),
        }
    }

    /// The evaluation with per-sample terms at `at`: kept from the last accepted point, or one
    /// pass.
    fn terms_at(&mut self, at: &Params) -> &Evaluation {
        if !self.last.as_ref().is_some_and(|(p, _)| p == at) {
            let clock = Instant::now();
            let eval = evaluate(self.data, at);
            self.stats.evaluation_seconds += clock.elapsed().as_secs_f64();
            self.stats.passes += 1;
            self.last = Some((at.clone(), eval));
        }
        &self.last.as_ref().expect("evaluated above").1
    }
}

impl Objective for InMemory<'_> {
    /// The trial point, and its evaluation with per-sample terms (Newton-CG only).
    type Trial = (Params, Option<Evaluation>);
    type Preconditioner = StepPreconditioner;

    fn trial(&mut self, params: Params) -> Result<(f64, Self::Trial)> {
        if self.base.is_none() {
            return Ok((mean_nll(self.data, &params), (params, None)));
        }
        let clock = Instant::now();
        let eval = evaluate(self.data, &params);
        self.stats.evaluation_seconds += clock.elapsed().as_secs_f64();
        self.stats.passes += 1;
        Ok((eval.nll, (params, Some(eval))))
    }

    fn accept(&mut self, (params, eval): Self::Trial) -> Result<State> {
        let Some(eval) = eval else {
            return Ok(State::at(self.data, params));
        };
        let state = State {
            params: params.clone(),
            nll: eval.nll,
            grad: eval.grad.clone(),
        };
        self.last = Some((params, eval));
        Ok(state)
    }

    fn curvature_matrices(
        &mut self,
        at: &State,
        free: Free,
    ) -> Result<(DMatrix<f64>, DMatrix<f64>)> {
        let (d1, d2) = (self.data.d1(), self.data.d2());
        let full = expected_information(self.data, &at.params);
        let observed = (free != Free::Theta && d2 > 0).then(|| {
            let mut h = full.clone();
            add_residual_cross_term(&mut h, &residual_cross_term(self.data, &at.params));
            h
        });
        let info = free.block(full, d1);
        let observed = match observed {
            Some(h) => free.block(h, d1),
            None => info.clone(),
        };
        Ok((info, observed))
    }

    fn preconditioner(&mut self, at: &State, free: Free) -> Result<StepPreconditioner> {
        let base = self.base.clone().expect("Newton-CG objectives have a base");
        let data = self.data;
        self.terms_at(&at.params);
        let eval = &self.last.as_ref().expect("evaluated above").1;
        let clock = Instant::now();
        let (pre, passes) = StepPreconditioner::at(data, base, eval, free == Free::Theta);
        self.stats.passes += passes;
        self.stats.block_seconds += clock.elapsed().as_secs_f64();
        Ok(pre)
    }

    fn precondition(&mut self, pre: &StepPreconditioner, r: &[f64]) -> Vec<f64> {
        let clock = Instant::now();
        let out = pre.apply(r);
        self.stats.apply_seconds += clock.elapsed().as_secs_f64();
        out
    }

    fn hessian_vector(
        &mut self,
        at: &State,
        v: &[f64],
        curvature: Curvature,
        free: Free,
    ) -> Result<Vec<f64>> {
        let data = self.data;
        let (d1, p) = (data.d1(), data.n_params());
        let clock = Instant::now();
        let product = {
            let terms = &self.terms_at(&at.params).terms;
            match free {
                Free::All => hessian_vector(data, terms, v, curvature, false),
                Free::Theta => hessian_vector(data, terms, v, curvature, true),
                Free::AllBut(_) => {
                    let v = free.scatter(v, d1, p);
                    free.gather(&hessian_vector(data, terms, &v, curvature, false), d1)
                }
            }
        };
        self.stats.product_seconds += clock.elapsed().as_secs_f64();
        self.stats.passes += 1;
        Ok(product)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_pick_their_coordinates() {
        let v = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(Free::All.gather(&v, 3), v.to_vec());
        assert_eq!(Free::Theta.gather(&v, 3), vec![1.0, 2.0, 3.0]);
        assert_eq!(Free::AllBut(1).gather(&v, 3), vec![1.0, 3.0, 4.0, 5.0]);
        assert_eq!(
            Free::AllBut(4).scatter(&[1.0, 2.0, 3.0, 4.0], 3, 5),
            vec![1.0, 2.0, 3.0, 4.0, 0.0]
        );
        let m = DMatrix::from_fn(4, 4, |i, j| (10 * i + j) as f64);
        let b = Free::AllBut(2).block(m.clone(), 2);
        assert_eq!(
            b,
            DMatrix::from_row_slice(3, 3, &[0., 1., 3., 10., 11., 13., 30., 31., 33.])
        );
        assert_eq!(Free::Theta.block(m, 2).shape(), (2, 2));
        let start = Params {
            theta: vec![1.0, 1.0],
            gamma: vec![1.0],
        };
        let moved = Free::AllBut(0).along(&start, &[2.0, 4.0], 0.5);
        assert_eq!(moved.stacked(), vec![1.0, 2.0, 3.0]);
        let theta = Free::Theta.along(&start, &[2.0, 4.0], 0.5);
        assert_eq!(theta.stacked(), vec![2.0, 3.0, 1.0]);
    }

    /// Integer sample weights are repeated rows (`crate::testing::select_rows`): every row
    /// twice is the same likelihood, so the same estimate through the same iteration.
    #[test]
    fn a_resample_with_repeated_rows_runs_the_same_iteration() {
        use crate::fit::{fit, FitControl, FitOptions};
        let data = crate::sim::paper_simulation(300, crate::sim::ActionDesign::Uniform, 4);
        let twice: Vec<usize> = (0..data.n()).flat_map(|i| [i, i]).collect();
        let doubled = crate::testing::select_rows(&data, &twice);
        let options = FitOptions::default();
        let a = fit(&data, &options, &FitControl::default()).unwrap();
        let b = fit(&doubled, &options, &FitControl::default()).unwrap();
        assert!(a.report.converged && b.report.converged);
        let gap = a
            .params
            .stacked()
            .iter()
            .zip(b.params.stacked())
            .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
        assert!(gap < 1e-9, "{gap}");
    }
}
