//! Which rows belong to which cluster (annotator): the grouping every cluster method and the
//! heterogeneity diagnostic read.

use crate::data::Dataset;
use crate::error::{Error, Result};

/// The rows of each cluster of a dataset, clusters in increasing id order.
#[derive(Debug, Clone, PartialEq)]
#[doc(hidden)] // reached through `crate::internals` only
pub struct Clusters {
    ids: Vec<i64>,
    rows: Vec<Vec<usize>>,
}

/// Fewest clusters the cluster methods accept (a variance from fewer is not an estimate).
pub const MIN_CLUSTERS: usize = 3;
/// Most clusters the cluster interval methods accept: a model stores one draw of
/// `(theta, gamma)` per cluster (`4 G (d1 + d2)` bytes, 32 MB at `G = 10^6`, `d1 + d2 = 8`),
/// and the one-step jackknife holds one `p x p` Hessian per cluster while it runs. A fit on
/// `10^6` annotators (every comparison its own annotator included) writes a model that loads;
/// above, the fit refuses before computing any draw (`calibrate::check_draw_count`).
pub const MAX_CLUSTERS: usize = 1_000_000;

impl Clusters {
    /// The clusters of `data`.
    ///
    /// Errors: [`Error::InvalidArgument`] (`cluster`) when the data have no cluster ids or
    /// fewer than [`MIN_CLUSTERS`] distinct ids.
    pub fn of(data: &Dataset) -> Result<Self> {
        let (ids, rows) = data.cluster_rows().ok_or_else(|| {
            Error::invalid(
                "cluster",
                "cluster-aware intervals need cluster ids in the data",
            )
        })?;
        if ids.len() < MIN_CLUSTERS {
            return Err(Error::invalid(
                "cluster",
                format!(
                    "{} distinct cluster id(s); cluster-aware intervals need at least {MIN_CLUSTERS}",
                    ids.len()
                ),
            ));
        }
        Ok(Clusters { ids, rows })
    }

    /// Number of clusters `G`.
    pub(crate) fn len(&self) -> usize {
        self.ids.len()
    }

    /// The id of cluster `g` (by rank), as the data give it.
    pub(crate) fn id(&self, g: usize) -> i64 {
        self.ids[g]
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
