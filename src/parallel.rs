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

/// Chunks of a reduction computed at once, per thread of the pool: their accumulators are
/// reused wave after wave. (One fresh accumulator per chunk, all held until the end, cost
/// `n / CHUNK_ROWS` times `len` values — 83 MB for the heterogeneity diagnostic's cross blocks
/// at the paper's shape — and a copy-on-write page fault with a TLB shootdown per page.)
const WAVE_PER_THREAD: usize = 4;

/// Values of the total per task when the wave's partial sums are added into it.
const ADD_BLOCK: usize = 1 << 14;

/// Sums `len`-vectors over rows `0..n`: each chunk of [`CHUNK_ROWS`] rows is folded by
/// `fold(range, &mut acc)` into a zeroed accumulator, and the accumulators are added in chunk
/// order. Runs on the current rayon pool.
pub(crate) fn chunked_sum<F>(n: usize, len: usize, fold: F) -> Vec<f64>
where
    F: Fn(std::ops::Range<usize>, &mut [f64]) + Sync,
{
    chunked_sum_with_rows(n, len, &mut vec![(); n], |rows, acc, _| fold(rows, acc))
}

/// [`chunked_sum`] that also writes one output per row: chunk `c` folds rows
/// `c * CHUNK_ROWS..` into its zeroed accumulator and writes `rows_out[row]` for its rows
/// (`rows_out.len() == n`). Same fixed chunking and reduction order: thread-count independent.
///
/// The chunks run in waves of [`WAVE_PER_THREAD`] per thread, on reused accumulators, each
/// wave's added into the total in chunk order (in parallel over disjoint slices of the total):
/// every entry of the total is `((0 + a_0) + a_1) + ...` over the chunks in order, whatever
/// the wave size, so the bits do not depend on the thread count either.
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
    let n_chunks = n.div_ceil(CHUNK_ROWS);
    let wave = (WAVE_PER_THREAD * rayon::current_num_threads()).clamp(1, n_chunks.max(1));
    let mut partials = vec![vec![0.0; len]; wave];
    let mut total = vec![0.0; len];
    for (w, out) in rows_out.chunks_mut(wave * CHUNK_ROWS).enumerate() {
        let used = out.len().div_ceil(CHUNK_ROWS);
        partials[..used]
            .par_iter_mut()
            .zip(out.par_chunks_mut(CHUNK_ROWS))
            .enumerate()
            .for_each(|(j, (acc, out))| {
                acc.fill(0.0);
                let start = (w * wave + j) * CHUNK_ROWS;
                fold(start..start + out.len(), acc, out);
            });
        let parts = &partials[..used];
        total
            .par_chunks_mut(ADD_BLOCK)
            .enumerate()
            .for_each(|(b, slice)| {
                let offset = b * ADD_BLOCK;
                for part in parts {
                    for (t, p) in slice.iter_mut().zip(&part[offset..]) {
                        *t += p;
                    }
                }
            });
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The waves change neither the chunking nor the order of the additions: on 1, 2 and 5
    /// threads (waves of 4, 8 and 20 chunks) the sums are bit for bit the chunk-by-chunk sum in
    /// chunk order, for a length that spans several slices of the final addition, a ragged
    /// last chunk, and the per-row outputs.
    #[test]
    fn chunked_sums_are_the_chunk_order_sum_whatever_the_threads() {
        let (n, len) = (45 * CHUNK_ROWS + 17, ADD_BLOCK + 123);
        let value = |i: usize, j: usize| ((i * 7919 + j * 104_729) % 1000) as f64 / 7.0 + 1e-9;
        let fold = |rows: std::ops::Range<usize>, acc: &mut [f64], out: &mut [usize]| {
            for (i, o) in rows.clone().zip(out.iter_mut()) {
                for (j, a) in acc.iter_mut().enumerate().step_by(97) {
                    *a += value(i, j);
                }
                *o = i * 3;
            }
        };
        let mut expected = vec![0.0; len];
        for start in (0..n).step_by(CHUNK_ROWS) {
            let mut acc = vec![0.0; len];
            let rows = start..(start + CHUNK_ROWS).min(n);
            fold(rows.clone(), &mut acc, &mut vec![0; rows.len()]);
            for (t, a) in expected.iter_mut().zip(&acc) {
                *t += a;
            }
        }
        for threads in [1, 2, 5] {
            let mut out = vec![0usize; n];
            let total =
                run_in_pool(threads, || chunked_sum_with_rows(n, len, &mut out, fold)).unwrap();
            assert!(total
                .iter()
                .zip(&expected)
                .all(|(a, b)| a.to_bits() == b.to_bits()));
            assert!(out.iter().enumerate().all(|(i, &o)| o == i * 3));
        }
    }
}
