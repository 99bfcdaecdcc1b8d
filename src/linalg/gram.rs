//! The streamed Gram driver: `sum_i a_i a_i^T / scale` for per-sample vectors `a_i` that are
//! produced on the fly (an information matrix's rows are weighted, extended feature rows) and
//! never all held in memory.

use super::base::{mirror_lower, par, Scalar};
use faer::linalg::matmul::triangular::{self, BlockStructure};
use faer::reborrow::ReborrowMut;
use faer::{Accum, MatMut, MatRef};
use nalgebra::DMatrix;
use rayon::prelude::*;

/// Bytes of the row block materialised at once (the block height is derived from it and the
/// row length only, never from the thread count).
const GRAM_BLOCK_BYTES: usize = 8 << 20;

/// Rows materialised per block for row length `p`: depends on `p` only.
fn gram_block_rows<T>(p: usize) -> usize {
    (GRAM_BLOCK_BYTES / (std::mem::size_of::<T>() * p.max(1))).clamp(64, 4096)
}

/// Rows per task when a block is filled: each task fills its rows into a row-major scratch
/// tile (`FILL_TILE x p`, cache-resident) and copies the tile into the column-major block, so
/// every column receives `FILL_TILE` consecutive entries.
const FILL_TILE: usize = 32;

/// Fills rows `start..start + block.nrows()` into the column-major `block` by `fill_row`, in
/// parallel over tiles of [`FILL_TILE`] rows.
fn fill_columns<T: Scalar, F>(start: usize, block: MatMut<'_, T>, fill_row: &F)
where
    F: Fn(usize, &mut [T]) + Sync,
{
    let p = block.ncols();
    block
        .par_row_chunks_mut(FILL_TILE)
        .enumerate()
        .for_each_init(
            || vec![T::default(); FILL_TILE * p],
            |tile, (t, mut rows)| {
                let first = start + t * FILL_TILE;
                let height = rows.nrows();
                for (r, row) in tile.chunks_mut(p).take(height).enumerate() {
                    fill_row(first + r, row);
                }
                for j in 0..p {
                    let column = rows.rb_mut().col_mut(j).try_as_col_major_mut();
                    let column = column
                        .expect("a column of a column-major block")
                        .as_slice_mut();
                    for (r, v) in column.iter_mut().enumerate() {
                        *v = tile[r * p + j];
                    }
                }
            },
        );
}

/// `sum_i a_i a_i^T` in precision `T`, lower triangle only, as a column-major `p x p` buffer
/// (strict upper triangle zero): rows are filled in parallel into a column-major block, and
/// each block is added by faer's triangular product `lower(C) += A^T A`.
///
/// The column-major block pays for its scattered writes: faer's product runs ~1.7x faster when
/// its right operand is column-major than on a row-major block (`benches/faer_weigh.rs`, "syrk/gram"
/// against the bare call on a row-major matrix; BENCHMARKS.md, issue 23).
fn gram_lower<T: Scalar, F>(n: usize, p: usize, fill_row: F) -> Vec<T>
where
    F: Fn(usize, &mut [T]) + Sync,
{
    let mut out = vec![T::default(); p * p];
    if p == 0 || n == 0 {
        return out;
    }
    let kb = gram_block_rows::<T>(p);
    let mut columns = vec![T::default(); kb.min(n) * p];
    for start in (0..n).step_by(kb) {
        let rows = kb.min(n - start);
        let block = &mut columns[..rows * p];
        fill_columns(
            start,
            MatMut::from_column_major_slice_mut(block, rows, p),
            &fill_row,
        );
        let a = MatRef::from_column_major_slice(block, rows, p);
        triangular::matmul(
            MatMut::from_column_major_slice_mut(&mut out, p, p),
            BlockStructure::TriangularLower,
            Accum::Add,
            a.transpose(),
            BlockStructure::Rectangular,
            a,
            BlockStructure::Rectangular,
            T::from_f64(1.0),
            par(),
        );
    }
    out
}

/// `sum_i a_i a_i^T / scale` for rows `a_i` (length `p`) produced by `fill_row(i, &mut a_i)`,
/// `i in 0..n`. Returns an exactly symmetric `p x p` matrix.
///
/// Rows are materialised in blocks (height fixed by `p`, filled in parallel) and each block is
/// added into the lower triangle by faer's triangular matrix product (a SYRK: half the flops
/// of a full GEMM); the upper triangle is then mirrored. Each block's product and the block
/// order are fixed by the shapes, so the result does not depend on the thread count.
pub fn gram<F>(n: usize, p: usize, scale: f64, fill_row: F) -> DMatrix<f64>
where
    F: Fn(usize, &mut [f64]) + Sync,
{
    let mut out = gram_lower::<f64, F>(n, p, fill_row);
    for v in &mut out {
        *v /= scale;
    }
    mirror_lower(&mut out, p);
    DMatrix::from_vec(p, p, out)
}

/// [`gram`] in single precision (`f32` rows, `f32` products, about twice as fast), rounded
/// to `f32` after the division by `scale`: for preconditioners and other places where ~1e-5
/// relative accuracy is enough.
pub fn gram_f32<F>(n: usize, p: usize, scale: f64, fill_row: F) -> DMatrix<f64>
where
    F: Fn(usize, &mut [f32]) + Sync,
{
    let lower = gram_lower::<f32, F>(n, p, fill_row);
    let narrow = |v: f32| f64::from((f64::from(v) / scale) as f32);
    DMatrix::from_fn(p, p, |i, j| narrow(lower[i.min(j) * p + i.max(j)]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gram_matches_naive_and_is_thread_independent() {
        let (n, p) = (9000, 300); // several row blocks, ragged edges
        let row = |i: usize, out: &mut [f64]| {
            for (j, v) in out.iter_mut().enumerate() {
                *v = ((i * 31 + j * 17) % 23) as f64 / 7.0 - 1.5;
            }
        };
        let mut naive = DMatrix::<f64>::zeros(p, p);
        let mut a = vec![0.0; p];
        for i in 0..n {
            row(i, &mut a);
            let v = nalgebra::DVector::from_column_slice(&a);
            naive += &v * v.transpose();
        }
        naive /= n as f64;
        let on = |t: usize| {
            crate::parallel::thread_pool(t)
                .unwrap()
                .install(|| gram(n, p, n as f64, row))
        };
        let one = on(1);
        assert_eq!(one, on(2), "gram depends on the thread count");
        assert_eq!(one, on(5), "gram depends on the thread count");
        assert_eq!(one, one.transpose());
        assert!((&one - &naive).abs().max() < 1e-10);
        let single = |t: usize| {
            crate::parallel::thread_pool(t).unwrap().install(|| {
                gram_f32(n, p, n as f64, |i, out: &mut [f32]| {
                    let mut r = vec![0.0; p];
                    row(i, &mut r);
                    for (o, v) in out.iter_mut().zip(r) {
                        *o = v as f32;
                    }
                })
            })
        };
        let s1 = single(1);
        assert_eq!(s1, single(3));
        assert_eq!(s1, s1.transpose());
        assert!((s1 - naive).abs().max() < 1e-4);
        assert_eq!(gram(0, 3, 1.0, row), DMatrix::zeros(3, 3));
    }
}
