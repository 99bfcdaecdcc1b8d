//! The data in memory as the solvers' [`Objective`]: every answer is a pass over the
//! [`Dataset`] (the in-memory fit, its refits and the profile's constrained fits), with
//! Newton-CG's step preconditioner and the theta block it rebuilds when a run asks (see
//! [`super::newton_cg`]).

use super::newton_cg::{rebuild_pays, CgStats, DataPreconditioner, ThetaBlock};
use super::objective::{Free, Objective};
use super::state::State;
use crate::data::Dataset;
use crate::error::Result;
use crate::likelihood::{
    add_residual_cross_term, cross_information_over, evaluate, expected_information,
    gamma_information, hessian_vector_over, mean_nll, residual_cross_term, Curvature, Evaluation,
};
use crate::linalg::{lower_matvec, lower_t_matvec, matmul, matmul_tn, ridged_cholesky};
use crate::model::Params;
use nalgebra::{DMatrix, DVector};
use std::sync::Arc;
use std::time::Instant;

/// The data in memory as an [`Objective`]: every answer is a pass over [`Dataset`].
///
/// Built for dense Newton ([`InMemory::dense`]: trial points cost a value-only pass) or for
/// Newton-CG ([`InMemory::cg`]: trial points keep their per-sample terms, from which the next
/// step's Hessian-vector products are formed without reading the data twice, and the data
/// preconditioner, built once per fit, is the context of every run). A Newton-CG objective
/// holds the theta block in use and counts the products on it: each run starts on the data
/// preconditioner's block and asks for a rebuild at the current point in its local phase,
/// which the objective makes when the products on the block pay for it ([`rebuild_pays`]; see
/// [`super::newton_cg`]).
#[derive(Debug, Clone)]
pub(crate) struct InMemory<'a> {
    data: &'a Dataset,
    base: Option<Arc<DataPreconditioner>>,
    /// The theta block in use: the data preconditioner's, or the last one rebuilt.
    theta: Option<Arc<ThetaBlock>>,
    /// Hessian-vector products on `theta` since it was taken.
    on_block: usize,
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
            theta: None,
            on_block: 0,
            last: None,
            stats: CgStats::default(),
        }
    }

    /// For Newton-CG, preconditioned by `base` (built by the caller, shared by its runs).
    pub(crate) fn cg(data: &'a Dataset, base: Arc<DataPreconditioner>) -> Self {
        InMemory {
            theta: Some(base.theta.clone()),
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

    /// The step preconditioner at `at`, on the theta block in use.
    fn preconditioner(&mut self, at: &State, free: Free) -> Result<StepPreconditioner> {
        let base = self.base.clone().expect("Newton-CG objectives have a base");
        let data = self.data;
        self.terms_at(&at.params);
        let eval = &self.last.as_ref().expect("evaluated above").1;
        let theta = self
            .theta
            .clone()
            .expect("Newton-CG objectives have a theta block");
        let clock = Instant::now();
        let (pre, passes) = StepPreconditioner::at(data, &base, theta, eval, free == Free::Theta);
        self.stats.passes += passes;
        self.stats.block_seconds += clock.elapsed().as_secs_f64();
        Ok(pre)
    }

    /// The theta block at `at`'s weights ([`ThetaBlock::at`]) when the products on the block
    /// in use and `ahead` pay for it ([`rebuild_pays`]): one pass (the evaluation is kept from
    /// the last accepted point) and one build.
    fn rebuild_theta_block(&mut self, at: &State, ahead: usize) -> Result<()> {
        let base = self.base.clone().expect("Newton-CG objectives have a base");
        let data = self.data;
        if !rebuild_pays(self.on_block, ahead, data.d1()) {
            return Ok(());
        }
        self.terms_at(&at.params);
        let eval = &self.last.as_ref().expect("evaluated above").1;
        let clock = Instant::now();
        let theta = ThetaBlock::at(data, base.features(data), &eval.terms);
        self.theta = Some(Arc::new(theta));
        self.on_block = 0;
        self.stats.preconditioner_builds += 1;
        self.stats.preconditioner_seconds += clock.elapsed().as_secs_f64();
        self.stats.passes += 1;
        Ok(())
    }

    /// Back to the data preconditioner's block; the products on it count on when it is the
    /// block in use already.
    fn restore_theta_block(&mut self) {
        let Some(base) = &self.base else { return };
        if !self
            .theta
            .as_ref()
            .is_some_and(|t| Arc::ptr_eq(t, &base.theta))
        {
            self.theta = Some(base.theta.clone());
            self.on_block = 0;
        }
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
        let base = self.base.clone().expect("Newton-CG objectives have a base");
        let z = base.features(data);
        let clock = Instant::now();
        let product = {
            let terms = &self.terms_at(&at.params).terms;
            let product = |v: &[f64], theta_only| {
                hessian_vector_over(data, z, terms, v, curvature, theta_only)
            };
            match free {
                Free::All => product(v, false),
                Free::Theta => product(v, true),
                Free::AllBut(_) => free.gather(&product(&free.scatter(v, d1, p), false), d1),
            }
        };
        self.stats.product_seconds += clock.elapsed().as_secs_f64();
        self.on_block += 1;
        self.stats.passes += 1;
        Ok(product)
    }
}

/// The preconditioner of one Newton step: `[[alpha P, B], [B^T, D]]` with `P` the theta block
/// in use, `alpha` matching the trace of the current `I_tt`, and the exact current cross and
/// gamma blocks `B = I_tg`, `D = I_gg` (cheap: `d2` is small), applied through the Schur
/// complement `S = D - B^T (alpha P)^-1 B` (`d2 x d2`). Theta-only runs use `P` alone.
#[derive(Debug, Clone)]
pub(crate) struct StepPreconditioner {
    theta: Arc<ThetaBlock>,
    alpha: f64,
    /// `W = X B` (`d1 x d2`).
    w: DMatrix<f64>,
    /// Cholesky factor of `S`.
    s_factor: DMatrix<f64>,
}

impl StepPreconditioner {
    /// The step preconditioner on the theta block `theta` at the evaluated point `eval`, and
    /// the passes over the data it took (the cross block: one, unless `theta_only` or
    /// `d2 = 0`).
    pub(crate) fn at(
        data: &Dataset,
        base: &DataPreconditioner,
        theta: Arc<ThetaBlock>,
        eval: &Evaluation,
        theta_only: bool,
    ) -> (Self, usize) {
        let d2 = data.d2();
        if theta_only || d2 == 0 {
            let pre = StepPreconditioner {
                theta,
                alpha: 1.0,
                w: DMatrix::zeros(data.d1(), 0),
                s_factor: DMatrix::zeros(0, 0),
            };
            return (pre, 0);
        }
        // Scale P to the current theta block: trace(I_tt) = (1/n) sum w sigma^2 |z|^2.
        let current: f64 = eval
            .terms
            .iter()
            .zip(&base.row_norms)
            .map(|(st, r)| st.weight * st.sigma * st.sigma * r)
            .sum::<f64>()
            / data.n() as f64;
        let alpha = if current > 0.0 && theta.trace > 0.0 {
            current / theta.trace
        } else {
            1.0
        };
        let b = cross_information_over(data, base.features(data), &eval.terms);
        let w = matmul(&theta.inverse_factor, &b);
        let d = gamma_information(data, &eval.terms);
        let s = d - matmul_tn(&w, &w) / alpha;
        let s_factor = ridged_cholesky(s);
        let pre = StepPreconditioner {
            theta,
            alpha,
            w,
            s_factor,
        };
        (pre, 1)
    }

    /// `M^-1 r`.
    pub(crate) fn apply(&self, r: &[f64]) -> Vec<f64> {
        let x = &self.theta.inverse_factor;
        let d1 = x.nrows();
        if r.len() == d1 {
            return lower_t_matvec(x, &lower_matvec(x, r));
        }
        let (rt, rg) = r.split_at(d1);
        let mut q = lower_matvec(x, rt);
        // u = S^-1 (r_g - W^T q / alpha)
        let wq = self.w.tr_mul(&DVector::from_column_slice(&q));
        let c = DVector::from_iterator(
            rg.len(),
            rg.iter().zip(wq.iter()).map(|(a, b)| a - b / self.alpha),
        );
        let u = nalgebra::Cholesky::pack_dirty(self.s_factor.clone()).solve(&c);
        let wu = &self.w * &u;
        for (qi, wi) in q.iter_mut().zip(wu.iter()) {
            *qi -= wi;
        }
        let mut out = lower_t_matvec(x, &q);
        for v in &mut out {
            *v /= self.alpha;
        }
        out.extend(u.iter());
        out
    }
}

#[cfg(test)]
mod tests {
    /// Newton-CG's products read the preconditioner's single-precision copy of an `f64` z:
    /// within f32 rounding of the double-precision product, and not equal to it.
    #[test]
    fn products_read_a_single_precision_copy_of_f64_z() {
        use crate::data::FeatureMatrix;
        use crate::fit::newton_cg::DataPreconditioner;
        use crate::likelihood::{evaluate, hessian_vector, hessian_vector_over, Curvature};
        let data = crate::sim::paper_simulation(300, crate::sim::ActionDesign::Uniform, 4);
        let base = DataPreconditioner::new(&data);
        let z = base.features(&data);
        assert!(matches!(z, FeatureMatrix::F32(_)));
        let mut params = crate::Params::zeros(data.d1(), data.d2());
        params.theta[0] = 0.5;
        params.gamma[0] = -0.3;
        let terms = evaluate(&data, &params).terms;
        let v: Vec<f64> = (0..data.n_params()).map(|j| 1.0 - 0.1 * j as f64).collect();
        for curvature in [Curvature::Observed, Curvature::Expected] {
            let exact = hessian_vector(&data, &terms, &v, curvature, false);
            let single = hessian_vector_over(&data, z, &terms, &v, curvature, false);
            let scale = exact.iter().fold(0.0f64, |m, x| m.max(x.abs()));
            let gap = exact
                .iter()
                .zip(&single)
                .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
            assert!(gap > 0.0 && gap < 1e-6 * scale, "{gap} of {scale}");
        }
    }

    /// A theta block rebuilt at a point is `(1/n) sum c_i z_i z_i^T` for the weights
    /// `c_i = w_i sigma_i^2` there, floored at `WEIGHT_FLOOR` times their mean, to single
    /// precision: `X^T X P = I`, the trace that of `P`.
    #[test]
    fn a_rebuilt_theta_block_is_the_floored_information_at_the_point() {
        use crate::data::FeatureMatrix;
        use crate::fit::newton_cg::{ThetaBlock, WEIGHT_FLOOR};
        use crate::likelihood::evaluate;
        use nalgebra::{DMatrix, DVector};
        let data = crate::sim::paper_simulation(2000, crate::sim::ActionDesign::Uniform, 4);
        let (n, d1) = (data.n(), data.d1());
        let mut params = crate::Params::zeros(d1, data.d2());
        for (j, t) in params.theta.iter_mut().enumerate() {
            *t = 2.0 * ((j as f64) * 0.7).sin();
        }
        params.gamma[0] = 0.4;
        let terms = evaluate(&data, &params).terms;
        let c: Vec<f64> = terms
            .iter()
            .map(|st| st.weight * st.sigma * st.sigma)
            .collect();
        let floor = WEIGHT_FLOOR * c.iter().sum::<f64>() / n as f64;
        // The point saturates some rows: the floor is in play.
        assert!(c.iter().any(|&v| v < floor));
        let FeatureMatrix::F64(z) = data.features() else {
            panic!("the simulation stores z in f64")
        };
        let mut p = DMatrix::<f64>::zeros(d1, d1);
        for (i, ci) in c.iter().enumerate() {
            let zi = DVector::from_column_slice(&z[i * d1..(i + 1) * d1]);
            p += &zi * zi.transpose() * (ci.max(floor) / n as f64);
        }
        let block = ThetaBlock::at(&data, data.features(), &terms);
        let x = &block.inverse_factor;
        let gap = (x.transpose() * x * &p - DMatrix::identity(d1, d1))
            .abs()
            .max();
        assert!(gap < 1e-3, "{gap}");
        assert!((block.trace - p.trace()).abs() < 1e-5 * p.trace());
    }

    /// The in-memory objective with its theta block fixed at the data preconditioner's: the
    /// trait's default rebuild and restore.
    struct FixedBlock<'a>(super::InMemory<'a>);

    impl crate::fit::objective::Objective for FixedBlock<'_> {
        type Trial = <super::InMemory<'static> as crate::fit::objective::Objective>::Trial;
        type Preconditioner = super::StepPreconditioner;

        fn trial(&mut self, params: crate::Params) -> crate::Result<(f64, Self::Trial)> {
            self.0.trial(params)
        }
        fn accept(&mut self, trial: Self::Trial) -> crate::Result<super::State> {
            self.0.accept(trial)
        }
        fn curvature_matrices(
            &mut self,
            at: &super::State,
            free: super::Free,
        ) -> crate::Result<(nalgebra::DMatrix<f64>, nalgebra::DMatrix<f64>)> {
            self.0.curvature_matrices(at, free)
        }
        fn preconditioner(
            &mut self,
            at: &super::State,
            free: super::Free,
        ) -> crate::Result<super::StepPreconditioner> {
            self.0.preconditioner(at, free)
        }
        fn precondition(&mut self, pre: &super::StepPreconditioner, r: &[f64]) -> Vec<f64> {
            self.0.precondition(pre, r)
        }
        fn hessian_vector(
            &mut self,
            at: &super::State,
            v: &[f64],
            curvature: crate::likelihood::Curvature,
            free: super::Free,
        ) -> crate::Result<Vec<f64>> {
            self.0.hessian_vector(at, v, curvature, free)
        }
    }

    /// Rebuilding the theta block costs no Newton steps from random starts where a build costs
    /// two products (d1 = 64): each run takes at most the steps of the same run on the fixed
    /// data block (13 and 12 steps, four rebuilds each), to the same optimum. With the budget
    /// alone (a rebuild at almost every step) the first start did not converge in 100 steps
    /// against 13 on the fixed block.
    #[test]
    fn rebuilding_the_theta_block_costs_no_newton_steps_from_random_starts() {
        use crate::fit::iteration::{run_solver, Limits, Termination};
        use crate::fit::newton_cg::{DataPreconditioner, NewtonCg};
        use crate::fit::{random_params, FitControl};
        let theta: Vec<f64> = (0..64).map(|j| ((j as f64) * 0.61).sin() * 0.25).collect();
        let data = crate::sim::one_hot_groups(6000, &theta, &[0.6, -0.4, 0.9, -0.3, 0.5], 17);
        let base = std::sync::Arc::new(DataPreconditioner::new(&data));
        let limits = Limits {
            tol: 1e-8,
            max_iter: 100,
        };
        let mut rng = crate::rng::rng(9);
        for _ in 0..2 {
            let start = random_params(&data, &mut rng);
            let control = FitControl::default();
            let mut solver = NewtonCg::new(super::Free::All);
            let mut objective = super::InMemory::cg(&data, base.clone());
            let state = objective.state(start.clone());
            let rebuilt = run_solver(&mut solver, &mut objective, state, limits, &control, 0);
            let rebuilt = rebuilt.unwrap();
            let mut fixed_solver = NewtonCg::new(super::Free::All);
            let mut fixed = FixedBlock(super::InMemory::cg(&data, base.clone()));
            let state = fixed.0.state(start);
            let kept = run_solver(&mut fixed_solver, &mut fixed, state, limits, &control, 0);
            let kept = kept.unwrap();
            assert_eq!(rebuilt.termination, Termination::Converged);
            assert_eq!(kept.termination, Termination::Converged);
            assert!(
                rebuilt.iterations <= kept.iterations,
                "{} > {} Newton steps",
                rebuilt.iterations,
                kept.iterations
            );
            assert!(objective.stats.preconditioner_builds > 0);
            assert_eq!(fixed.0.stats.preconditioner_builds, 0);
            let gap = rebuilt
                .state
                .params
                .stacked()
                .iter()
                .zip(kept.state.params.stacked())
                .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
            assert!(gap < 1e-6, "{gap}");
        }
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
