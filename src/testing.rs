//! Test fixtures shared by the unit tests of several modules (compiled for tests only).

use crate::data::{Dataset, FeatureMatrix, Features, Rows};
use crate::sim::rng;
use nalgebra::DMatrix;
use rand::Rng;

/// A seeded, well-conditioned `p x p` SPD matrix for the kernels' tests.
pub(crate) fn random_spd(p: usize, seed: u64) -> DMatrix<f64> {
    let mut s = seed;
    let mut next = || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((s >> 11) as f64 / (1u64 << 53) as f64) - 0.5
    };
    let b = DMatrix::from_fn(p, p + 5, |_, _| next());
    &b * b.transpose() / p as f64 + DMatrix::identity(p, p) * 0.01
}

/// The rows `rows` of `data`, in that order, as a new dataset (z in the storage precision of
/// `data`, cluster ids kept). Repeats are allowed: a row listed `k` times weighs `k` times —
/// a subset or an integer-weighted resample, on which the estimator's iteration runs
/// unchanged (`InMemory` over it).
pub(crate) fn select_rows(data: &Dataset, rows: &[usize]) -> Dataset {
    pick_rows(data, rows, Rows::Whole)
}

/// [`select_rows`] as a dataset of kind `kind` (a shard skips the identifiability checks).
fn pick_rows(data: &Dataset, rows: &[usize], kind: Rows) -> Dataset {
    let (d1, d2) = (data.d1(), data.d2());
    let psi0 = rows.iter().map(|&i| data.psi0()[i]).collect();
    let psi = rows
        .iter()
        .flat_map(|&i| data.psi_row(i))
        .copied()
        .collect();
    let y = rows.iter().map(|&i| data.y()[i]).collect();
    let cluster = data.cluster().map(|c| rows.iter().map(|&i| c[i]).collect());
    let pick = |i: usize| i * d1..(i + 1) * d1;
    let z = match data.features() {
        FeatureMatrix::F64(z) => {
            Features::F64(rows.iter().flat_map(|&i| &z[pick(i)]).copied().collect())
        }
        FeatureMatrix::F32(z) => {
            Features::F32(rows.iter().flat_map(|&i| &z[pick(i)]).copied().collect())
        }
    };
    Dataset::build(kind, d1, d2, z, psi0, psi, y, cluster).expect("a valid selection")
}

/// The rows `parts[k]` of `data` as shard `k` ([`select_rows`]; a shard may hold fewer rows
/// than parameters).
pub(crate) fn split_rows(data: &Dataset, parts: &[Vec<usize>]) -> Vec<Dataset> {
    parts
        .iter()
        .map(|rows| pick_rows(data, rows, Rows::Shard))
        .collect()
}

/// Rows `0..n` dealt into `k` contiguous blocks.
pub(crate) fn contiguous(n: usize, k: usize) -> Vec<Vec<usize>> {
    (0..k)
        .map(|s| (s * n / k..(s + 1) * n / k).collect())
        .collect()
}

/// Rows `0..n` dealt into `k` shards at random (seeded), every shard non-empty.
pub(crate) fn shuffled(n: usize, k: usize, seed: u64) -> Vec<Vec<usize>> {
    let mut r = rng(seed);
    let mut parts = vec![Vec::new(); k];
    for i in 0..n {
        parts[r.random_range(0..k)].push(i);
    }
    parts
}

/// `data` with cluster ids `id(i)`.
pub(crate) fn with_clusters(data: &Dataset, id: impl Fn(usize) -> i64) -> Dataset {
    with_cluster_ids(data, Some((0..data.n()).map(id).collect()))
}

/// `data` without its cluster ids.
pub(crate) fn without_clusters(data: &Dataset) -> Dataset {
    with_cluster_ids(data, None)
}

/// `data`'s rows with the cluster ids `ids`.
fn with_cluster_ids(data: &Dataset, ids: Option<Vec<i64>>) -> Dataset {
    Dataset::new(
        data.d1(),
        data.d2(),
        data.z().to_vec(),
        data.psi0().to_vec(),
        data.psi().to_vec(),
        data.y().to_vec(),
        ids,
    )
    .unwrap()
}

/// A model fitted (1 thread, expected covariance) to the paper's §6.1 uniform design with `n`
/// comparisons drawn from `data_seed`, with `method` intervals of `reps` refits seeded `seed`:
/// the shared fixture of the unit tests of the model's consumers.
pub(crate) fn simulated_model(
    n: usize,
    data_seed: u64,
    method: crate::calibrate::IntervalMethod,
    reps: usize,
    seed: u64,
) -> crate::fitted::RewardModel {
    let data = crate::sim::paper_simulation(n, crate::sim::ActionDesign::Uniform, data_seed);
    let options = crate::fit::FitOptions {
        threads: 1,
        seed,
        ..crate::fit::FitOptions::default()
    };
    crate::estimator::EstimatorOptions {
        fit: options,
        covariance: crate::covariance::CovarianceKind::Expected,
        intervals: crate::calibrate::IntervalOptions {
            method,
            reps: Some(reps),
        },
        require_converged: false,
    }
    .check()
    .unwrap()
    .estimate(&data, &crate::fit::FitControl::default())
    .unwrap()
}
