//! Cluster-aware uncertainty (issue 20): annotators judge many pairs and differ beyond their
//! covariates, so one annotator's judgments are dependent and intervals that assume
//! independent comparisons (Wald, the parametric bootstraps of [`crate::calibrate`])
//! under-cover.
//!
//! Every method here produces one set of *cluster draws* — estimates `b_g` of `(theta, gamma)`,
//! one per cluster or per resample — from which any linear functional `a . b` (a coefficient,
//! a reward, a difference of rewards, a rationality) gets its interval (`interval::interval`, beside the one interval rule):
//!
//! * [`sandwich`](draws::sandwich): `b + H^-1 s_g` with `s_g` the summed scores of cluster `g` and `H` the
//!   observed Hessian (sums over all rows). Their spread `sum_g (v_g - v_bar)^2` is the CR0
//!   cluster-robust variance; times `G/(G-1) (n-1)/(n-p)` it is CR1.
//! * [`one_step_jackknife`]: `b_(g) = b + (H - H_g)^-1 s_g`, one Newton step of the fit without
//!   cluster `g` from the full estimate (the leverage-corrected sandwich, CR3 of Bell &
//!   McCaffrey 2002 / MacKinnon, Nielsen & Webb 2023 in the linear model). `O(n p^2 + G p^3)`,
//!   no refits.
//! * [`jackknife`]: the exact leave-one-cluster-out refits (CV3), warm-started at the full
//!   estimate through the estimator's refit (`crate::calibrate::draws`: the same solver, its
//!   fallback to the estimator's own starts).
//! * [`pairs_bootstrap`](draws::pairs_bootstrap): clusters resampled with replacement, each resample refitted the
//!   same way.
//!
//! [`heterogeneity`] is the diagnostic every fit with cluster ids reports: the design effect
//! (cluster-robust over model-based variance) of each coefficient, with a plain-words warning
//! when intervals that assume independent comparisons would under-cover;
//! [`heterogeneity_of_fit`] computes it from a fitted model's inverse information (what the
//! command-line program does: no second Gram product).
//!
//! The jackknife variance is `(G-1)/G sum_g (v_g - v_bar)^2`; quantiles are Student's t with
//! `G - 1` degrees of freedom (`Df::Fixed`) or an effective number of clusters of the
//! functional (`Df::Effective`).

pub(crate) mod draws;
mod heterogeneity;

pub(crate) use crate::interval::effective_df;
#[cfg(test)]
pub(crate) use draws::sandwich;
pub(crate) use draws::{jackknife, one_step_jackknife};
pub use heterogeneity::{
    heterogeneity, heterogeneity_of_fit, Heterogeneity, DESIGN_EFFECT_WARNING, EXCESS_Z_WARNING,
};

use crate::data::Dataset;
use crate::error::{Error, Result};
use std::collections::BTreeMap;

/// The rows of each cluster of a dataset, clusters in increasing id order.
#[derive(Debug, Clone, PartialEq)]
#[doc(hidden)] // reached through `crate::internals` only
pub struct Clusters {
    ids: Vec<i64>,
    rows: Vec<Vec<usize>>,
}

/// Fewest clusters the cluster methods accept (a variance from fewer is not an estimate).
pub const MIN_CLUSTERS: usize = 3;

impl Clusters {
    /// The clusters of `data`.
    ///
    /// Errors: [`Error::InvalidArgument`] (`cluster`) when the data have no cluster ids or
    /// fewer than [`MIN_CLUSTERS`] distinct ids.
    pub fn of(data: &Dataset) -> Result<Self> {
        let ids = data.cluster().ok_or_else(|| {
            Error::invalid(
                "cluster",
                "cluster-aware intervals need cluster ids in the data",
            )
        })?;
        let mut map: BTreeMap<i64, Vec<usize>> = BTreeMap::new();
        for (i, &c) in ids.iter().enumerate() {
            map.entry(c).or_default().push(i);
        }
        if map.len() < MIN_CLUSTERS {
            return Err(Error::invalid(
                "cluster",
                format!(
                    "{} distinct cluster id(s); cluster-aware intervals need at least {MIN_CLUSTERS}",
                    map.len()
                ),
            ));
        }
        let (ids, rows) = map.into_iter().unzip();
        Ok(Clusters { ids, rows })
    }

    /// Number of clusters `G`.
    pub(crate) fn len(&self) -> usize {
        self.ids.len()
    }

    /// The rows of cluster `g` (by rank), increasing.
    pub(crate) fn rows(&self, g: usize) -> &[usize] {
        &self.rows[g]
    }

    /// Every row except those of cluster `g`, increasing.
    pub(crate) fn rows_without(&self, g: usize) -> Vec<usize> {
        self.rows
            .iter()
            .enumerate()
            .filter(|&(h, _)| h != g)
            .flat_map(|(_, r)| r.iter().copied())
            .collect()
    }
}

/// Estimates of `(theta, gamma)` stacked (theta first), one row of `p = d1 + d2` per cluster or
/// resample, row-major; and how many of the refits behind them did not converge.
#[derive(Debug, Clone, PartialEq)]
#[doc(hidden)] // reached through `crate::internals` only
pub struct ClusterDraws {
    /// `k x p`, row-major.
    pub values: Vec<f64>,
    /// `p = d1 + d2`.
    pub p: usize,
    /// Refits that converged from neither the warm start nor the estimator's own starts (0 for
    /// the refit-free methods).
    pub diverged: usize,
}

impl ClusterDraws {
    /// Number of draws.
    pub(crate) fn len(&self) -> usize {
        self.values.len() / self.p.max(1)
    }

    /// The draws' theta (`k x d1`) and gamma (`k x (p - d1)`) blocks in `f32`, row-major (as
    /// a [`crate::calibrate::Calibration`] stores them).
    pub(crate) fn split_f32(&self, d1: usize) -> (Vec<f32>, Vec<f32>) {
        let mut theta = Vec::with_capacity(self.len() * d1);
        let mut gamma = Vec::with_capacity(self.len() * (self.p - d1));
        for row in self.values.chunks_exact(self.p) {
            theta.extend(row[..d1].iter().map(|&v| v as f32));
            gamma.extend(row[d1..].iter().map(|&v| v as f32));
        }
        (theta, gamma)
    }

    /// `a . b_g` for every draw `g` (`a` of length `p`).
    pub fn projections(&self, a: &[f64]) -> Vec<f64> {
        self.values
            .chunks_exact(self.p)
            .map(|row| crate::linalg::dot(a, row))
            .collect()
    }
}

#[cfg(test)]
mod tests;
