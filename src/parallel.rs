//! Deterministic data parallelism.
//!
//! Passes over samples split the rows into fixed-size chunks (independent of the thread count),
//! reduce each chunk on whichever thread rayon picks, and add the chunk results in chunk order.
//! The floating-point result is therefore identical for 1, 2 or 64 threads.
//!
//! The library never touches rayon's global pool: callers run work inside a local pool built by
//! `thread_pool` (0 threads = all cores).

use crate::error::{Error, Result};
use rayon::prelude::*;

/// Rows per chunk of a reduction. Fixed so that results do not depend on the thread count.
pub(crate) const CHUNK_ROWS: usize = 512;

/// Builds a local rayon pool with `threads` workers (0 = one per available core).
pub(crate) fn thread_pool(threads: usize) -> Result<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("hetreward-{i}"))
        .build()
        .map_err(|e| Error::Internal {
            detail: format!("cannot start a pool of {threads} threads: {e}"),
        })
}

/// Runs `work` on a fresh local pool of `threads` workers (0 = all cores).
///
/// When called from inside another rayon pool (a caller parallelising over many fits), the
/// call is made from a plain scoped thread: a rayon worker blocked in a cross-pool `install`
/// keeps stealing its own pool's jobs, which would nest fits on one stack until it overflows.
pub fn run_in_pool<T: Send>(threads: usize, work: impl FnOnce() -> T + Send) -> Result<T> {
    let pool = thread_pool(threads)?;
    if rayon::current_thread_index().is_none() {
        return Ok(pool.install(work));
    }
    std::thread::scope(|scope| {
        scope
            .spawn(|| pool.install(work))
            .join()
            .map_err(|_| Error::Internal {
                detail: "a fit thread panicked".into(),
            })
    })
}

/// Sums `len`-vectors over rows `0..n`: each chunk of [`CHUNK_ROWS`] rows is folded by
/// `fold(range, &mut acc)` into a zeroed accumulator, and the accumulators are added in chunk
/// order. Runs on the current rayon pool.
pub(crate) fn chunked_sum<F>(n: usize, len: usize, fold: F) -> Vec<f64>
where
    F: Fn(std::ops::Range<usize>, &mut [f64]) + Sync,
{
    let n_chunks = n.div_ceil(CHUNK_ROWS);
    let partials: Vec<Vec<f64>> = (0..n_chunks)
        .into_par_iter()
        .map(|c| {
            let mut acc = vec![0.0; len];
            fold(c * CHUNK_ROWS..((c + 1) * CHUNK_ROWS).min(n), &mut acc);
            acc
        })
        .collect();
    let mut total = vec![0.0; len];
    for part in &partials {
        for (t, p) in total.iter_mut().zip(part) {
            *t += p;
        }
    }
    total
}

/// [`chunked_sum`] that also writes one output per row: chunk `c` folds rows
/// `c * CHUNK_ROWS..` into its zeroed accumulator and writes `rows_out[row]` for its rows
/// (`rows_out.len() == n`). Same fixed chunking and reduction order: thread-count independent.
pub(crate) fn chunked_sum_with_rows<R, F>(
    n: usize,
    len: usize,
    rows_out: &mut [R],
    fold: F,
) -> Vec<f64>
where
    R: Send,
    F: Fn(std::ops::Range<usize>, &mut [f64], &mut [R]) + Sync,
{
    assert_eq!(rows_out.len(), n, "one output per row");
    let partials: Vec<Vec<f64>> = rows_out
        .par_chunks_mut(CHUNK_ROWS)
        .enumerate()
        .map(|(c, out)| {
            let mut acc = vec![0.0; len];
            let start = c * CHUNK_ROWS;
            fold(start..start + out.len(), &mut acc, out);
            acc
        })
        .collect();
    let mut total = vec![0.0; len];
    for part in &partials {
        for (t, p) in total.iter_mut().zip(part) {
            *t += p;
        }
    }
    total
}
