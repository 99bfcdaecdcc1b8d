//! Which coefficients rest on one annotator: the detector the cluster jackknives
//! run before their draws, so that a coefficient the data without one cluster cannot estimate
//! is named with the annotator that carries it instead of failing at an anonymous pivot or
//! being hidden by a refit's fallback.
//!
//! Two ways leaving cluster `g` out defeats a leave-one-out estimate:
//!
//! * **structural** ([`carried_by_one`]): a coefficient's covariate (a column of `z` for
//!   `theta_j`, of `psi` for `gamma_k`) is non-zero in cluster `g`'s rows only. Without `g`
//!   the likelihood does not depend on the coefficient: no refit estimates it, and the
//!   jackknife has no honest draw for it. Its interval, and that of every functional that
//!   puts weight on it, is unbounded (the model records the coefficient with its carrier);
//!   the leave-`g`-out estimate of the other coefficients does not depend on it, so the
//!   jackknives take it with the carried coefficients held at the estimate
//!   ([`Carried::held_by`]).
//! * **numerical** ([`Obstacle::Pivot`]): the observed Hessian without `g` (what the
//!   one-step jackknife inverts) is not positive definite, first at the pivot of one
//!   coefficient, though the coefficient stays identified (other clusters carry its
//!   covariate). The observed Hessian of this model is not the expected information and can
//!   be indefinite away from the refit's optimum; the exact refits (`cluster-jackknife`) still
//!   estimate it, so `auto` falls back to them.

use super::clusters::Clusters;
use crate::data::{Dataset, FeatureMatrix};

/// A coefficient whose covariate is non-zero in one cluster's rows only: without that
/// cluster the data cannot estimate it, and its cluster interval is unbounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Carried {
    /// Stacked index (theta first: `theta[j]` is `j`, `gamma[k]` is `d1 + k`).
    pub coefficient: usize,
    /// The id of the cluster (annotator) that carries it, as the data give it.
    pub cluster: i64,
}

impl Carried {
    /// The coefficient and its carrier in plain words.
    pub fn describe(&self, d1: usize) -> String {
        let name = coefficient_name(self.coefficient, d1);
        format!(
            "{name} is carried by annotator {cluster} alone (its covariate is zero in every \
             other annotator's rows): without annotator {cluster} the data cannot estimate \
             {name}, so its interval, and that of every reward or rationality that puts weight \
             on it, is unbounded",
            cluster = self.cluster
        )
    }

    /// The stacked indices of the coefficients in `carried` that cluster id `cluster` carries,
    /// increasing (what its leave-one-out estimate holds at the full estimate).
    pub(crate) fn held_by(carried: &[Carried], cluster: i64) -> Vec<usize> {
        carried
            .iter()
            .filter(|c| c.cluster == cluster)
            .map(|c| c.coefficient)
            .collect()
    }
}

/// Why the one-step leave-one-cluster-out estimate fails.
#[derive(Debug, Clone, PartialEq)]
#[doc(hidden)] // reached through `crate::internals` only
pub enum Obstacle {
    /// The observed Hessian without cluster `cluster` is not positive definite, first at the
    /// pivot of `coefficient` (`None`: it factors but is ill-conditioned or not finite).
    Pivot {
        /// Stacked index of the first failing pivot, if the factorisation failed at one.
        coefficient: Option<usize>,
        /// The cluster id, as the data give it.
        cluster: i64,
    },
}

/// The name of stacked coefficient `j` as the coefficient table prints it (`theta[j]`,
/// `gamma[k]`).
pub(crate) fn coefficient_name(j: usize, d1: usize) -> String {
    if j < d1 {
        format!("theta[{j}]")
    } else {
        format!("gamma[{}]", j - d1)
    }
}

impl Obstacle {
    /// The obstacle in plain words, naming the coefficient and the annotator.
    pub(crate) fn describe(&self, d1: usize) -> String {
        match *self {
            Obstacle::Pivot {
                coefficient,
                cluster,
            } => format!(
                "without annotator {cluster} the observed Hessian is not positive definite{}, \
                 so the one-step jackknife cannot take that annotator's leave-one-out estimate",
                coefficient
                    .map(|j| format!(" at {}", coefficient_name(j, d1)))
                    .unwrap_or_default()
            ),
        }
    }
}

/// Every coefficient the data without one cluster cannot estimate, with that cluster, in
/// coefficient order:
///
/// * a coefficient whose covariate is non-zero in one cluster's rows only (`O(n (d1 + d2))`;
///   a covariate zero everywhere is no cluster's: the fit's own information check refuses it);
/// * every coefficient not listed already, when without some cluster the rationality's
///   covariates cannot tell its level from the rewards' scale ([`scale_carriers`]: e.g. five
///   experts and one non-expert — without the non-expert the expert flag's column is
///   `psi0`'s, and `sigma theta` is unchanged by scaling theta and the rationality inversely).
///   The first such cluster (by id) is named.
pub(crate) fn carried_by_one(data: &Dataset, clusters: &Clusters) -> Vec<Carried> {
    let mut carried = zero_elsewhere(data, clusters);
    if let Some(&g) = scale_carriers(data, clusters).first() {
        let p = data.d1() + data.d2();
        let listed: Vec<usize> = carried.iter().map(|c| c.coefficient).collect();
        carried.extend((0..p).filter(|j| !listed.contains(j)).map(|j| Carried {
            coefficient: j,
            cluster: clusters.id(g),
        }));
        carried.sort_by_key(|c| c.coefficient);
    }
    carried
}

/// Below this ratio of the smallest to the largest eigenvalue, the rationality's design
/// without a cluster is taken as singular (exact collinearity gives ~1e-16).
const SINGULAR_RATIO: f64 = 1e-10;

/// The clusters (ranks, increasing) without which `[psi0 | psi]` — the rationality's design,
/// `d2 + 1` columns — has a null direction in which `psi0` takes part: the other clusters'
/// rationality covariates reproduce its constant level, so the leave-one-out likelihood
/// cannot tell the rationality's level from the rewards' scale and no coefficient has a
/// leave-one-out estimate. `O(n d2^2 + G d2^3)`: the design's Gram matrix minus each
/// cluster's.
pub(crate) fn scale_carriers(data: &Dataset, clusters: &Clusters) -> Vec<usize> {
    use nalgebra::DMatrix;
    let q = data.d2() + 1;
    let design = |i: usize| std::iter::once(data.psi0()[i]).chain(data.psi_row(i).iter().copied());
    let gram_of = |rows: &[usize]| {
        let mut m = DMatrix::<f64>::zeros(q, q);
        for &i in rows {
            let r: Vec<f64> = design(i).collect();
            for a in 0..q {
                for b in 0..q {
                    m[(a, b)] += r[a] * r[b];
                }
            }
        }
        m
    };
    let blocks: Vec<DMatrix<f64>> = (0..clusters.len())
        .map(|g| gram_of(clusters.rows(g)))
        .collect();
    let total = blocks.iter().fold(DMatrix::zeros(q, q), |acc, b| acc + b);
    (0..clusters.len())
        .filter(|&g| {
            let without = &total - &blocks[g];
            let eig = nalgebra::SymmetricEigen::new(without);
            let largest = eig.eigenvalues.iter().fold(0.0f64, |m, &v| m.max(v.abs()));
            (0..q).any(|k| {
                eig.eigenvalues[k] <= SINGULAR_RATIO * largest
                    && eig.eigenvectors[(0, k)].abs() > 1e-6
            })
        })
        .collect()
}

/// Every coefficient whose covariate is non-zero in one cluster's rows only, with that
/// cluster, in coefficient order.
fn zero_elsewhere(data: &Dataset, clusters: &Clusters) -> Vec<Carried> {
    let (d1, d2) = (data.d1(), data.d2());
    let z = |i: usize, j: usize| match data.features() {
        FeatureMatrix::F64(v) => v[i * d1 + j] != 0.0,
        FeatureMatrix::F32(v) => v[i * d1 + j] != 0.0,
    };
    let nonzero = |i: usize, j: usize| {
        if j < d1 {
            z(i, j)
        } else {
            data.psi_row(i)[j - d1] != 0.0
        }
    };
    (0..d1 + d2)
        .filter_map(|j| {
            let mut carriers =
                (0..clusters.len()).filter(|&g| clusters.rows(g).iter().any(|&i| nonzero(i, j)));
            match (carriers.next(), carriers.next()) {
                (Some(g), None) => Some(Carried {
                    coefficient: j,
                    cluster: clusters.id(g),
                }),
                _ => None,
            }
        })
        .collect()
}

/// The coefficients of [`carried_by_one`] in plain words, one sentence per annotator (empty
/// input: `None`): [`Carried::describe`] for an annotator that carries one coefficient; for
/// one that carries several, their names (the first eight, then how many more) and why.
pub(crate) fn describe_all(carried: &[Carried], d1: usize) -> Option<String> {
    let mut annotators: Vec<i64> = Vec::new();
    for c in carried {
        if !annotators.contains(&c.cluster) {
            annotators.push(c.cluster);
        }
    }
    let sentence = |cluster: i64| {
        let mine: Vec<&Carried> = carried.iter().filter(|c| c.cluster == cluster).collect();
        if let [one] = mine[..] {
            return one.describe(d1);
        }
        const SHOWN: usize = 8;
        let mut names: Vec<String> = mine
            .iter()
            .take(SHOWN)
            .map(|c| coefficient_name(c.coefficient, d1))
            .collect();
        if mine.len() > SHOWN {
            names.push(format!("and {} more", mine.len() - SHOWN));
        }
        format!(
            "{} rest on annotator {cluster} alone (their covariates are zero in every other \
             annotator's rows, or the other annotators' rationality covariates cannot tell the \
             rationality's level from the rewards' scale): without annotator {cluster} the data \
             cannot estimate them, so their intervals, and those of every reward or rationality \
             that puts weight on them, are unbounded",
            names.join(", ")
        )
    };
    (!carried.is_empty()).then(|| {
        annotators
            .into_iter()
            .map(sentence)
            .collect::<Vec<_>>()
            .join("; ")
    })
}
