//! Preconditioned conjugate gradients over a block of `k` right-hand sides: the inner solve of
//! every Newton-CG step — one system (`k = 1`) per step of the in-memory and the distributed
//! fits ([`super::newton_cg`]), the systems of every running refit at once in the batched
//! bootstrap refits (`crate::calibrate::batched`).
//!
//! Column `j` solves `H_j d_j = -g_j` from `d_j = 0`, preconditioned by `M^-1`. The caller's
//! [`Operator`] applies `M^-1` and the curvatures to whole blocks (one GEMM for all the
//! columns, or one pass over the data, or one round of the shards, per column), and every
//! column follows the same rules:
//!
//! * **forcing** (Eisenstat–Walker): the column stops at Euclidean residual
//!   `min(0.5, sqrt(|g|)) |g|` ([`forcing`]: superlinear convergence, cheap early steps);
//! * **landing**: it also stops once its residual — the linear model's gradient after the
//!   step — measured as the caller's stopping rule measures a gradient ([`Metric`]) is
//!   [`LANDING`] of the run's tolerance ([`Landing`]);
//! * at most [`MAX_CG_ITERATIONS`] iterations; a later direction of non-positive curvature
//!   keeps the solution so far (truncated Newton);
//! * **Fisher scoring**: the curvatures are tried in the caller's order
//!   ([`super::objective::Free::curvatures`]: the observed Hessian, then the expected
//!   information): where the first direction meets non-positive curvature, the column restarts
//!   from `d = 0` on the next one; where the last one fails too, its direction is the
//!   preconditioned gradient `-M^-1 g`.
//!
//! The columns run in lockstep: each round applies the curvatures to the columns still running
//! and `M^-1` to those that went on, in column order. A column's arithmetic is its own; the
//! block decides only which product computes its Hessian and preconditioner columns.

use crate::error::Result;
use crate::likelihood::Curvature;
use crate::linalg::dot;
use nalgebra::DMatrix;

/// CG iterations per Newton step at most (every Newton-CG iteration: in memory, distributed
/// and the batched bootstrap refits).
pub(crate) const MAX_CG_ITERATIONS: usize = 250;

/// Eisenstat–Walker forcing: CG stops at relative residual `min(0.5, sqrt(|g|))` for a
/// gradient of norm `grad_norm` (superlinear convergence, cheap early steps).
pub(crate) fn forcing(grad_norm: f64) -> f64 {
    grad_norm.sqrt().min(0.5)
}

/// CG also stops once its residual — the linear model's gradient after the step — is this
/// fraction of the stop tolerance (measured as the stop rule measures the gradient): the
/// step then lands where the run stops, and solving further only sharpens a step the stop
/// rule cannot tell apart. Eisenstat–Walker alone asks the last step for a relative residual
/// of `sqrt(|g|)`, far below that. Half, not all of it: the model's second-order error and
/// the single-precision products must not push the gradient back above the tolerance.
pub(crate) const LANDING: f64 = 0.5;

/// How the caller's stopping rule measures a gradient `g`; the landing rule measures CG's
/// residual the same way.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Metric {
    /// The Euclidean norm `|g|` (`super::run_solver`'s rule).
    Euclidean,
    /// Standard errors, `sqrt(n g^T M^-1 g)` over `n` samples, `M^-1` the CG preconditioner
    /// (the batched refits' rule: to first order no linear functional of the estimate is
    /// further from the optimum than this many of its standard errors).
    StandardErrors {
        /// Samples.
        n: usize,
    },
}

/// The landing rule of a solve for a run stopping at gradient size `tol` in `metric`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Landing {
    /// How the run's stopping rule measures a gradient.
    pub(crate) metric: Metric,
    /// The run's tolerance in that metric.
    pub(crate) tol: f64,
}

impl Landing {
    /// Whether a residual `r` of Euclidean norm `norm`, with `rz = r^T M^-1 r`, has landed: at
    /// most [`LANDING`] `tol` in the metric.
    fn landed(&self, norm: f64, rz: f64) -> bool {
        match self.metric {
            Metric::Euclidean => norm <= LANDING * self.tol,
            Metric::StandardErrors { n } => rz <= (LANDING * self.tol).powi(2) / n as f64,
        }
    }
}

/// The matrices of a block solve, applied to blocks of columns (`m x k'`, one column per
/// system, `m` the free coordinates).
pub(crate) trait Operator {
    /// `M^-1 R`: the preconditioner applied to every column of `r`.
    fn precondition(&mut self, r: &DMatrix<f64>) -> DMatrix<f64>;

    /// `H_j p_j` for every column of `p`: column `c` is system `systems[c]`'s direction, to
    /// be multiplied by its curvature `curvatures[c]`.
    fn products(
        &mut self,
        systems: &[usize],
        curvatures: &[Curvature],
        p: &DMatrix<f64>,
    ) -> Result<DMatrix<f64>>;
}

/// One right-hand side: the system `H d = -g`.
pub(crate) struct System<'a> {
    /// The gradient `g`.
    pub(crate) grad: &'a [f64],
    /// `M^-1 (-g)`, CG's first direction (the caller has it at hand with the gradient).
    pub(crate) first: Vec<f64>,
}

/// A solved system.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Solution {
    /// The Newton direction.
    pub(crate) direction: Vec<f64>,
    /// CG iterations of the solve that gave it (0 for the preconditioned gradient).
    pub(crate) iterations: usize,
    /// Whether the observed curvature failed and a later one (Fisher scoring) was tried.
    pub(crate) fisher: bool,
}

/// One column's CG state.
struct Column {
    x: Vec<f64>,
    r: Vec<f64>,
    p: Vec<f64>,
    rz: f64,
    /// Eisenstat–Walker's Euclidean residual target.
    target: f64,
    /// `|r|` after the last update.
    norm: f64,
    iterations: usize,
    /// Which of the curvatures is running.
    curvature: usize,
    result: Option<(Vec<f64>, usize)>,
}

/// The stacked columns `cols` (`m x k`).
pub(crate) fn stack<'a>(cols: impl ExactSizeIterator<Item = &'a [f64]> + Clone) -> DMatrix<f64> {
    let k = cols.len();
    let m = cols.clone().next().map_or(0, |c| c.len());
    DMatrix::from_iterator(m, k, cols.flat_map(|c| c.iter().copied()))
}

/// Solves every system of `systems` by preconditioned CG in lockstep (see the module docs),
/// trying `curvatures` in order, to the forcing and the `landing` rule.
///
/// Errors: those of the operator's products.
pub(crate) fn solve(
    op: &mut impl Operator,
    systems: Vec<System>,
    curvatures: &[Curvature],
    landing: Landing,
) -> Result<Vec<Solution>> {
    let mut cols: Vec<Column> = systems
        .into_iter()
        .map(|s| {
            let grad_norm = dot(s.grad, s.grad).sqrt();
            let r: Vec<f64> = s.grad.iter().map(|v| -v).collect();
            let rz = dot(&r, &s.first);
            Column {
                x: vec![0.0; r.len()],
                r,
                p: s.first,
                rz,
                target: forcing(grad_norm) * grad_norm,
                norm: f64::INFINITY,
                iterations: 0,
                curvature: 0,
                result: None,
            }
        })
        .collect();
    // Columns whose new residual needs the preconditioner (the first direction, from `x = 0`,
    // is the caller's `M^-1 (-g)`).
    let mut pending: Vec<usize> = Vec::new();
    loop {
        if !pending.is_empty() {
            let z = op.precondition(&stack(pending.iter().map(|&j| &cols[j].r[..])));
            for (c, &j) in pending.iter().enumerate() {
                let col = &mut cols[j];
                let zj = z.column(c);
                let rz_new = dot(&col.r, zj.as_slice());
                if landing.landed(col.norm, rz_new) {
                    col.result = Some((std::mem::take(&mut col.x), col.iterations));
                    continue;
                }
                let beta = rz_new / col.rz;
                for (p, z) in col.p.iter_mut().zip(zj.iter()) {
                    *p = z + beta * *p;
                }
                col.rz = rz_new;
            }
        }
        let running: Vec<usize> = (0..cols.len())
            .filter(|&j| cols[j].result.is_none())
            .collect();
        if running.is_empty() {
            break;
        }
        let kinds: Vec<Curvature> = running
            .iter()
            .map(|&j| curvatures[cols[j].curvature])
            .collect();
        let p = stack(running.iter().map(|&j| &cols[j].p[..]));
        let hp = op.products(&running, &kinds, &p)?;
        pending.clear();
        for (c, &j) in running.iter().enumerate() {
            let col = &mut cols[j];
            let hpj = hp.column(c);
            col.iterations += 1;
            let php = dot(&col.p, hpj.as_slice());
            if !(php > 0.0 && php.is_finite()) {
                if col.iterations > 1 {
                    // Keep the solution so far (truncated Newton).
                    col.result = Some((std::mem::take(&mut col.x), col.iterations));
                } else if col.curvature + 1 < curvatures.len() {
                    // Fisher scoring for this step: CG restarts from `x = 0` along the same
                    // first direction.
                    col.curvature += 1;
                    col.iterations = 0;
                } else {
                    // Even the last curvature is degenerate: the preconditioned gradient.
                    col.result = Some((col.p.clone(), 0));
                }
                continue;
            }
            let a = col.rz / php;
            for ((x, r), (p, h)) in col
                .x
                .iter_mut()
                .zip(col.r.iter_mut())
                .zip(col.p.iter().zip(hpj.iter()))
            {
                *x += a * p;
                *r -= a * h;
            }
            col.norm = dot(&col.r, &col.r).sqrt();
            if col.norm <= col.target || col.iterations >= MAX_CG_ITERATIONS {
                col.result = Some((std::mem::take(&mut col.x), col.iterations));
            } else {
                pending.push(j);
            }
        }
    }
    Ok(cols
        .into_iter()
        .map(|col| {
            let (direction, iterations) = col.result.expect("every column ends with a result");
            Solution {
                direction,
                iterations,
                fisher: col.curvature > 0,
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Dense symmetric matrices per system, the identity or a diagonal preconditioner.
    struct Dense {
        h: Vec<[DMatrix<f64>; 2]>,
        pre: DMatrix<f64>,
        preconditioned: usize,
        multiplied: Vec<usize>,
    }

    impl Operator for Dense {
        fn precondition(&mut self, r: &DMatrix<f64>) -> DMatrix<f64> {
            self.preconditioned += r.ncols();
            &self.pre * r
        }
        fn products(
            &mut self,
            systems: &[usize],
            curvatures: &[Curvature],
            p: &DMatrix<f64>,
        ) -> Result<DMatrix<f64>> {
            self.multiplied.push(systems.len());
            let mut out = DMatrix::zeros(p.nrows(), p.ncols());
            for (c, (&j, &k)) in systems.iter().zip(curvatures).enumerate() {
                let h = &self.h[j][usize::from(k == Curvature::Expected)];
                out.set_column(c, &(h * p.column(c)));
            }
            Ok(out)
        }
    }

    fn spd(m: usize, seed: usize) -> DMatrix<f64> {
        let a = DMatrix::from_fn(m, m, |i, j| {
            (((i * 7 + j * 13 + seed * 5) % 17) as f64) / 17.0
        });
        &a * a.transpose() + DMatrix::identity(m, m)
    }

    fn system(grad: &[f64], pre: &DMatrix<f64>) -> Vec<f64> {
        (pre * -nalgebra::DVector::from_column_slice(grad))
            .as_slice()
            .to_vec()
    }

    const EUCLIDEAN: Landing = Landing {
        metric: Metric::Euclidean,
        tol: 0.0,
    };

    /// Each column of a block is solved as it would be alone: the same direction, bit for bit,
    /// and to the forcing rule's residual.
    #[test]
    fn a_block_solves_each_column_as_alone() {
        let m = 6;
        let h: Vec<[DMatrix<f64>; 2]> = (0..3).map(|s| [spd(m, s), spd(m, s + 10)]).collect();
        let pre = DMatrix::from_diagonal(&h[0][0].diagonal().map(|v| 1.0 / v));
        let grads: Vec<Vec<f64>> = (0..3)
            .map(|s| {
                (0..m)
                    .map(|i| ((i + s) as f64 * 0.7).sin() * 1e-3)
                    .collect()
            })
            .collect();
        let run = |which: &[usize]| {
            // Systems are indexed within the block.
            let mut op = Dense {
                h: which.iter().map(|&j| h[j].clone()).collect(),
                pre: pre.clone(),
                preconditioned: 0,
                multiplied: Vec::new(),
            };
            let systems = which
                .iter()
                .map(|&j| System {
                    grad: &grads[j],
                    first: system(&grads[j], &pre),
                })
                .collect();
            solve(&mut op, systems, &[Curvature::Observed], EUCLIDEAN).unwrap()
        };
        let block = run(&[0, 1, 2]);
        for j in 0..3 {
            let alone = run(&[j]);
            assert_eq!(alone[0], block[j]);
            let d = nalgebra::DVector::from_column_slice(&block[j].direction);
            let g = nalgebra::DVector::from_column_slice(&grads[j]);
            let residual = (&h[j][0] * d + &g).norm();
            assert!(residual <= forcing(g.norm()) * g.norm(), "{residual}");
            assert!(block[j].iterations > 0 && !block[j].fisher);
        }
    }

    /// A negative first curvature restarts on the next curvature (Fisher scoring); when the last
    /// one fails too, the direction is the preconditioned gradient.
    #[test]
    fn fisher_scoring_then_the_preconditioned_gradient() {
        let m = 4;
        let good = spd(m, 1);
        let bad = -DMatrix::<f64>::identity(m, m);
        let grad = vec![1.0, -2.0, 0.5, 0.25];
        let pre = DMatrix::identity(m, m);
        let solve_with = |pair: [DMatrix<f64>; 2], curvatures: &[Curvature]| {
            let mut op = Dense {
                h: vec![pair],
                pre: pre.clone(),
                preconditioned: 0,
                multiplied: Vec::new(),
            };
            let first = system(&grad, &pre);
            let s = System { grad: &grad, first };
            solve(&mut op, vec![s], curvatures, EUCLIDEAN)
                .unwrap()
                .remove(0)
        };
        let both = [Curvature::Observed, Curvature::Expected];
        let fisher = solve_with([bad.clone(), good.clone()], &both);
        assert!(fisher.fisher && fisher.iterations > 0);
        // Solved on the expected information, to the forcing rule's residual.
        let g = nalgebra::DVector::from_vec(grad.clone());
        let residual = (&good * nalgebra::DVector::from_vec(fisher.direction) + &g).norm();
        assert!(residual <= forcing(g.norm()) * g.norm(), "{residual}");
        let neither = solve_with([bad.clone(), bad], &both);
        assert_eq!(neither.direction, system(&grad, &pre));
        assert_eq!((neither.iterations, neither.fisher), (0, true));
        let only = solve_with([good.clone(), good], &[Curvature::Expected]);
        assert!(!only.fisher);
    }

    /// The landing rule stops a solve once the residual, measured in the caller's metric, is
    /// `LANDING tol`: a looser tolerance takes fewer iterations, in either metric.
    #[test]
    fn landing_stops_at_the_tolerance_in_the_callers_metric() {
        let m = 30;
        let h = spd(m, 3);
        let grad: Vec<f64> = (0..m).map(|i| (i as f64 * 0.3).cos() * 1e-6).collect();
        let pre = DMatrix::identity(m, m);
        let iterations = |landing| {
            let mut op = Dense {
                h: vec![[h.clone(), h.clone()]],
                pre: pre.clone(),
                preconditioned: 0,
                multiplied: Vec::new(),
            };
            let s = System {
                grad: &grad,
                first: system(&grad, &pre),
            };
            let sol = solve(&mut op, vec![s], &[Curvature::Observed], landing).unwrap();
            let d = nalgebra::DVector::from_vec(sol[0].direction.clone());
            let r = &h * d + nalgebra::DVector::from_column_slice(&grad);
            (sol[0].iterations, r.norm())
        };
        let g = grad.iter().map(|v| v * v).sum::<f64>().sqrt();
        let (tight, _) = iterations(EUCLIDEAN);
        let (loose, r) = iterations(Landing {
            metric: Metric::Euclidean,
            tol: 0.2 * g,
        });
        assert!(loose < tight, "{loose} vs {tight}");
        assert!(r <= LANDING * 0.2 * g * (1.0 + 1e-12));
        // Standard errors over n = 4 samples with M = I: sqrt(4 |r|^2) = 2 |r|.
        let (se, r) = iterations(Landing {
            metric: Metric::StandardErrors { n: 4 },
            tol: 0.4 * g,
        });
        assert!(se < tight);
        assert!(2.0 * r <= LANDING * 0.4 * g * (1.0 + 1e-12));
    }
}
