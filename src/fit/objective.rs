//! The problem side of the estimator's iteration (argmin's problem/solver split): an
//! [`Objective`] answers what the Newton solvers ask — the mean NLL at a trial point, the value
//! and gradient at an accepted one, the curvature matrices, Hessian-vector products and
//! Newton-CG's preconditioner — and a [`Free`] mask says which coordinates move.
//!
//! Implemented by the in-memory data (`super::in_memory::InMemory`: every pass over a dataset), by
//! the distributed driver (`crate::shard::driver`: every answer is one round of the shards)
//! and used with [`Free::AllBut`] by the profile likelihood (`crate::profile`: the
//! constrained problem is the data with one coefficient held). The solvers
//! ([`super::newton::Newton`], [`super::newton_cg::NewtonCg`]) are written once against it,
//! and [`super::run_solver`] is the only outer loop.
//!
//! An objective over a subset of the samples, or with integer sample weights (the cluster
//! jackknife and bootstrap refits), is an `InMemory` over the dataset of those
//! rows, a row repeated once per unit of weight (the test fixture `testing::select_rows`
//! builds one; a test shows every row twice gives the same estimate), warm-started by
//! `super::refit`: nothing in the solvers changes.

use super::state::State;
use crate::error::Result;
use crate::likelihood::Curvature;
use crate::model::Params;
use nalgebra::DMatrix;

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

    /// The Fisher-scoring rule of every Newton step over these coordinates: the curvatures to
    /// try, in order. The observed Hessian first (Newton); where it gives no descent direction
    /// (dense: it does not factorise or points uphill; CG: the first direction meets
    /// non-positive curvature), the expected information — a Gram matrix, positive
    /// semi-definite (Fisher scoring). On theta alone they are one matrix: the expected
    /// information only.
    pub(crate) fn curvatures(self) -> &'static [Curvature] {
        match self {
            Free::Theta => &[Curvature::Expected],
            Free::All | Free::AllBut(_) => &[Curvature::Observed, Curvature::Expected],
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

    /// Newton-CG, before a step in a run's local phase (see [`super::newton_cg`]): rebuild the
    /// theta block of the step preconditioners at `at` if the Hessian-vector products on the
    /// block in use, with `ahead` more for the step about to be solved, reach the cost of a
    /// build. Objectives whose theta block is fixed keep it (the default).
    fn rebuild_theta_block(&mut self, _at: &State, _ahead: usize) -> Result<()> {
        Ok(())
    }

    /// Newton-CG, before a run's first step: the run starts on the data preconditioner's theta
    /// block (the default: the only one there is).
    fn restore_theta_block(&mut self) {}

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
}
