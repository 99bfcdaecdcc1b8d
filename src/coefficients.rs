//! The coefficient table: estimate, SE, z, p-value and `(1 - alpha)` CI of every `theta_j` and
//! `gamma_k`, under the model's interval method — the one place these figures are computed
//! (the C API, the bindings, the JSON report and the CLI read them from here).
//!
//! Per method (the model's [`crate::calibrate::Calibration`]):
//!
//! * Wald: the estimate, its SE ([`RewardModel::theta_se`], [`RewardModel::gamma_se`]),
//!   `z = estimate / se`, the normal two-sided p-value of `z` and `estimate +- q se`.
//! * Bootstrap (percentile): the estimate, the SD of the refits' values, the percentile
//!   interval and the bootstrap p-value `2 min(#{v_b <= 0}, #{v_b >= 0}) / B`; `z` is the ratio
//!   `estimate / SD` (for reading only: the p-value does not come from it).
//! * Resized bootstrap: theta de-inflated (`theta_hat / alpha_hat`, SD over `alpha_hat`),
//!   gamma bias-corrected (`gamma_hat - bias`), `+- q SD`, and the normal p-value of `z`.
//!
//! A coefficient's figures are those of the same functional anywhere else in the crate: the
//! interval of `theta_j` is the reward interval of the unit vector `e_j`
//! ([`RewardModel::reward_interval`]), that of `gamma_k` the rationality interval of `psi =
//! e_k, psi0 = 0`, except that Wald's gamma SE is `sqrt(Cov(gamma_hat)_kk)`. The paper's Wald
//! table of a model fitted with a bootstrap method is `coefficients(&model.wald(), alpha)`.
//!
//! [`CoefficientTable::display`] renders the table as text, compact by default when d1 is
//! large (gamma in full, theta summarised).

use crate::calibrate::IntervalMethod;
use crate::error::{check_alpha, Result};
use crate::fitted::{RewardInterval, RewardModel};
use crate::interval::{check_result, Functional, Target};
use std::fmt;

/// Which parameter vector a coefficient belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Block {
    /// A reward coefficient `theta_j` (`r = theta . phi`).
    Theta,
    /// A rationality coefficient `gamma_k` (`sigma = psi0 + gamma . psi`).
    Gamma,
}

impl Block {
    /// Stable name ("theta", "gamma").
    pub fn name(self) -> &'static str {
        match self {
            Block::Theta => "theta",
            Block::Gamma => "gamma",
        }
    }

    /// The stacked index (theta first: `theta[j]` is `j`, `gamma[k]` is `d1 + k`) of this
    /// block's coefficient `index`, in a model with `d1` reward features.
    pub(crate) fn stacked(self, index: usize, d1: usize) -> usize {
        match self {
            Block::Theta => index,
            Block::Gamma => d1 + index,
        }
    }

    /// The block and index of the stacked coefficient `stacked` ([`Block::stacked`]'s inverse).
    pub(crate) fn of_stacked(stacked: usize, d1: usize) -> (Block, usize) {
        match stacked.checked_sub(d1) {
            Some(k) => (Block::Gamma, k),
            None => (Block::Theta, stacked),
        }
    }
}

/// A coefficient whose interval is unbounded because one annotator carries it alone (its
/// covariate is zero in every other annotator's rows, so the data without that annotator
/// cannot estimate it): what a cluster interval method reports instead of a finite interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unbounded {
    /// Which vector.
    pub block: Block,
    /// 0-based index in that vector.
    pub index: usize,
    /// The id of the annotator (cluster) that carries it, as the data give it.
    pub annotator: i64,
}

/// The model's [`Unbounded`] coefficients, theta before gamma and in index order; empty but
/// for a cluster interval method on data where one annotator carries a coefficient. Their
/// rows in [`coefficients`] have an infinite SE and bounds.
pub(crate) fn unbounded_coefficients(model: &RewardModel) -> Vec<Unbounded> {
    model
        .calibration()
        .unbounded()
        .iter()
        .map(|c| {
            let (block, index) = Block::of_stacked(c.coefficient, model.d1());
            Unbounded {
                block,
                index,
                annotator: c.cluster,
            }
        })
        .collect()
}

/// One row of the table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Coefficient {
    /// Which vector.
    pub block: Block,
    /// 0-based index in that vector.
    pub index: usize,
    /// The estimate on the reported scale (de-inflated / bias-corrected by the resized
    /// bootstrap).
    pub estimate: f64,
    /// Its standard error (Wald) or the refits' SD on the reported scale (bootstrap methods);
    /// `+inf` when the interval is unbounded (one annotator carries the coefficient alone).
    pub se: f64,
    /// `estimate / se` (0 when both are 0; +-infinity when only se is 0).
    pub z: f64,
    /// Two-sided p-value of "coefficient = 0" under the method.
    pub p_value: f64,
    /// Lower end of the `(1 - alpha)` CI.
    pub lower: f64,
    /// Upper end of the CI.
    pub upper: f64,
}

impl Coefficient {
    /// The row's `estimate`, `se`, `lower`, `upper` as a [`RewardInterval`] (`reward` holds
    /// the estimate).
    pub fn interval(&self) -> RewardInterval {
        RewardInterval {
            reward: self.estimate,
            se: self.se,
            lower: self.lower,
            upper: self.upper,
        }
    }

    /// `theta[j]` or `gamma[k]`.
    pub fn name(&self) -> String {
        format!("{}[{}]", self.block.name(), self.index)
    }
}

/// Every coefficient of a model at one level: theta rows (in order), then gamma rows.
#[derive(Debug, Clone, PartialEq)]
pub struct CoefficientTable {
    alpha: f64,
    method: IntervalMethod,
    d1: usize,
    rows: Vec<Coefficient>,
}

impl CoefficientTable {
    /// The level the CIs were computed at.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }
    /// The interval method the figures come from (the model's; never `Auto`).
    pub fn method(&self) -> IntervalMethod {
        self.method
    }
    /// Every row: the d1 theta rows, then the d2 gamma rows.
    pub fn rows(&self) -> &[Coefficient] {
        &self.rows
    }
    /// The theta rows (d1).
    pub fn theta(&self) -> &[Coefficient] {
        &self.rows[..self.d1]
    }
    /// The gamma rows (d2).
    pub fn gamma(&self) -> &[Coefficient] {
        &self.rows[self.d1..]
    }
    /// The rows of `block`.
    pub fn block(&self, block: Block) -> &[Coefficient] {
        match block {
            Block::Theta => self.theta(),
            Block::Gamma => self.gamma(),
        }
    }

    /// The table as text: a header line, then one row per coefficient (`theta[j]`,
    /// `gamma[k]`) with estimate, SE, z, p-value and CI. With `all_rows` false and more than
    /// `COMPACT_THETA_ROWS` theta rows, theta is summarised (how many, how many significant
    /// at `alpha`, the range of the SEs) with its `COMPACT_THETA_SHOWN` largest-`|z|` rows;
    /// gamma rows are always listed in full. Every line ends with a newline.
    pub fn display(&self, all_rows: bool) -> TableDisplay<'_> {
        TableDisplay {
            table: self,
            all_rows,
        }
    }
}

/// More theta rows than this are summarised by [`CoefficientTable::display`] unless every row
/// is asked for.
pub(crate) const COMPACT_THETA_ROWS: usize = 50;
/// How many theta rows (the largest `|z|`) a compact table lists.
pub(crate) const COMPACT_THETA_SHOWN: usize = 10;

/// The coefficient table of `model` at level `alpha` under its interval method.
///
/// Errors: `alpha` outside (0, 1).
pub(crate) fn coefficients(model: &RewardModel, alpha: f64) -> Result<CoefficientTable> {
    check_alpha(alpha)?;
    let rows = (0..model.d1())
        .map(|j| coefficient(model, Block::Theta, j, alpha))
        .chain((0..model.d2()).map(|k| coefficient(model, Block::Gamma, k, alpha)))
        .collect::<Result<_>>()?;
    Ok(CoefficientTable {
        alpha,
        method: model.calibration().method(),
        d1: model.d1(),
        rows,
    })
}

/// One row of [`coefficients`], checked: a row with a non-finite figure (a model whose stored
/// figures are extreme, e.g. a calibration bias near the largest double) is
/// [`crate::Error::InvalidArgument`] naming `model` and the row, never handed out. `index` below
/// the block's length, `alpha` in (0, 1).
pub(crate) fn coefficient(
    model: &RewardModel,
    block: Block,
    index: usize,
    alpha: f64,
) -> Result<Coefficient> {
    let c = coefficient_unchecked(model, block, index, alpha);
    check_result(
        "model",
        || {
            format!(
                "{}: the estimate, its standard error or a confidence bound under the model's \
                 interval method overflows a double (its stored estimate, covariance or \
                 calibration figures are extreme)",
                c.name()
            )
        },
        &[
            c.interval().checked_figures(unbounded(model, block, index)),
            vec![c.z, c.p_value],
        ]
        .concat(),
    )?;
    Ok(c)
}

/// One row of [`coefficients`] (unchecked: `index` below the block's length, `alpha` in
/// (0, 1)). Wald costs O(1); the bootstrap methods O(B log B) (one column of the draws).
pub(crate) fn coefficient_unchecked(
    model: &RewardModel,
    block: Block,
    index: usize,
    alpha: f64,
) -> Coefficient {
    let cal = model.calibration();
    // The draws of the coordinate: exactly `theta*_b . e_j` (resp. `0 + gamma*_b . e_k`), the
    // projections the reward (rationality) interval of the unit vector would use.
    let (estimate, se, draws, width, target) = match block {
        Block::Theta => (
            model.theta()[index],
            model.theta_se()[index],
            cal.theta_draws(),
            model.d1(),
            Target::Theta,
        ),
        Block::Gamma => (
            model.gamma()[index],
            model.gamma_se()[index],
            cal.gamma_draws(),
            model.d2(),
            Target::Gamma {
                // Empty for Wald, whose rule reads no bias.
                bias: cal.gamma_bias().get(index).copied().unwrap_or(0.0),
            },
        ),
    };
    let e = cal.rule().estimate(
        Functional {
            estimate,
            target,
            unbounded: unbounded(model, block, index),
            wald_se: || se,
            draws: || {
                draws
                    .chunks_exact(width)
                    .map(|row| f64::from(row[index]))
                    .collect()
            },
        },
        alpha,
    );
    let ci = e.interval;
    Coefficient {
        block,
        index,
        estimate: ci.reward,
        se: ci.se,
        z: ratio(ci.reward, ci.se),
        p_value: e.p_value,
        lower: ci.lower,
        upper: ci.upper,
    }
}

/// True when the coefficient's interval is unbounded: one annotator carries it alone
/// ([`crate::calibrate::Calibration::unbounded`]).
fn unbounded(model: &RewardModel, block: Block, index: usize) -> bool {
    let stacked = block.stacked(index, model.d1());
    model
        .calibration()
        .unbounded()
        .iter()
        .any(|c| c.coefficient == stacked)
}

/// `a / b`, with `0 / 0 = 0` (a coefficient pinned at 0 with no spread is not significant).
fn ratio(a: f64, b: f64) -> f64 {
    if a == 0.0 && b == 0.0 {
        0.0
    } else {
        a / b
    }
}

/// A [`CoefficientTable`] rendered as text ([`CoefficientTable::display`]).
pub struct TableDisplay<'a> {
    table: &'a CoefficientTable,
    all_rows: bool,
}

impl fmt::Display for TableDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = self.table;
        let level = 100.0 * (1.0 - t.alpha);
        writeln!(
            f,
            "{:<12} {:>12} {:>12} {:>9} {:>10} {:>12} {:>12}",
            "parameter",
            "estimate",
            "se",
            "z",
            "p_value",
            format!("ci{level:.0}_lower"),
            format!("ci{level:.0}_upper"),
        )?;
        let theta = t.theta();
        if self.all_rows || theta.len() <= COMPACT_THETA_ROWS {
            for c in theta {
                write_row(f, c)?;
            }
        } else {
            write_theta_summary(f, theta, t.alpha)?;
        }
        for c in t.gamma() {
            write_row(f, c)?;
        }
        Ok(())
    }
}

fn write_row(f: &mut fmt::Formatter<'_>, c: &Coefficient) -> fmt::Result {
    if c.interval().is_unbounded() {
        // One annotator carries the coefficient alone: no finite interval.
        return writeln!(
            f,
            "{:<12} {:>12.6} {:>12} {:>9.3} {:>10.3e} {:>12} {:>12}",
            c.name(),
            c.estimate,
            "unbounded",
            c.z,
            c.p_value,
            "-inf",
            "inf"
        );
    }
    writeln!(
        f,
        "{:<12} {:>12.6} {:>12.6} {:>9.3} {:>10.3e} {:>12.6} {:>12.6}",
        c.name(),
        c.estimate,
        c.se,
        c.z,
        c.p_value,
        c.lower,
        c.upper
    )
}

/// The compact form of many theta rows: counts, SE range, the largest-`|z|` rows.
fn write_theta_summary(
    f: &mut fmt::Formatter<'_>,
    theta: &[Coefficient],
    alpha: f64,
) -> fmt::Result {
    let significant = theta.iter().filter(|c| c.p_value < alpha).count();
    let (se_min, se_max) = theta.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), c| {
        (lo.min(c.se), hi.max(c.se))
    });
    writeln!(
        f,
        "theta: {} coefficients, {significant} with p < {alpha}; se from {se_min:.3e} to \
         {se_max:.3e}; the {COMPACT_THETA_SHOWN} largest |z|:",
        theta.len()
    )?;
    let mut order: Vec<&Coefficient> = theta.iter().collect();
    // Largest |z| first, ties (and NaN) by index: the same rows on every run.
    order.sort_by(|a, b| b.z.abs().total_cmp(&a.z.abs()).then(a.index.cmp(&b.index)));
    for c in order.into_iter().take(COMPACT_THETA_SHOWN) {
        write_row(f, c)?;
    }
    writeln!(
        f,
        "... {} more theta rows (ask for all rows to list them)",
        theta.len() - COMPACT_THETA_SHOWN
    )
}

/// The coefficient rows as methods of the model (here, so that `fitted` does not import its
/// consumer).
impl RewardModel {
    /// `(1 - alpha)` interval of `theta_j` under the model's interval method (`j < d1`): the
    /// row of the coefficient table.
    pub fn theta_interval(&self, j: usize, alpha: f64) -> RewardInterval {
        coefficient_unchecked(self, Block::Theta, j, alpha).interval()
    }

    /// `(1 - alpha)` interval of `gamma_k` under the model's interval method (`k < d2`): the
    /// row of the coefficient table.
    pub fn gamma_interval(&self, k: usize, alpha: f64) -> RewardInterval {
        coefficient_unchecked(self, Block::Gamma, k, alpha).interval()
    }

    /// The coefficient table (estimate, SE, z, p-value, CI of every theta_j and gamma_k) at
    /// level `alpha` under the model's interval method (the free function `coefficients` of this module).
    pub fn coefficients(&self, alpha: f64) -> Result<CoefficientTable> {
        coefficients(self, alpha)
    }
}

#[cfg(test)]
mod tests;
