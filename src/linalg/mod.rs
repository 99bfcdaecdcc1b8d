//! Dense linear algebra the estimator needs.
//!
//! The kernels are [faer](https://docs.rs/faer)'s — GEMM, the triangular (SYRK-shaped) product
//! of the Gram matrices, Cholesky, triangular solves — called on zero-copy views of the
//! crate's buffers. What is kept here is this domain's:
//!
//! * `gram`, `gram_f32`: the streamed Gram driver — the information matrices are Gram
//!   matrices of per-sample vectors that are never all materialised: rows are produced in
//!   blocks of a height fixed by the row length, and each block is added into the lower
//!   triangle by faer's triangular product (`gram.rs`);
//! * `cholesky`, `spd_inverse`, `spd_inverse_factor`, `try_cholesky`,
//!   `lower_inverse_in_place`: factorisations with the scale-invariant condition check
//!   (`RCOND_MIN`) that turns a singular or ill-conditioned matrix into an error instead of
//!   a NaN, and in-place triangular inverses (`cholesky.rs`);
//! * `matmul`, `matmul_tn` and, for a lower-triangular left factor at half the flops,
//!   `lower_matmul`, `lower_matmul_tn`; `lower_outer` (`L L^T` of a triangular factor, exactly
//!   symmetric);
//! * `PackedLower`: the packed scoring kernel of the reward standard errors, and the
//!   triangular matrix-vector products of Newton-CG's preconditioner (`packed.rs`);
//! * `dot`, `axpy` and the `Element` row kernels with their AVX2 + FMA path (`simd.rs`).
//!
//! **Containers.** Matrices are `nalgebra::DMatrix<f64>` (column-major) everywhere in the
//! crate's API and its statistics modules: nalgebra is the container and the small-matrix
//! toolbox (block views, transposes, the `d2 x d2` solves of the gamma block). Every
//! `O(d^3)` or `O(n d^2)` operation goes through this module to faer, which works on a
//! borrowed view of the same column-major buffer (`MatRef::from_column_major_slice`): no
//! copy, no second container type in the hot path.
//!
//! **Threads.** faer runs on the current rayon pool (`Par::rayon(0)`). Its blocking depends on
//! the matrix shapes, not on the thread count, so results do not depend on the thread count;
//! faer does not document this, so the tests here and the crate's 1/2/5-thread tests guard it.
//! One shape family was caught by them: faer's parallel GEMM on thin outputs (`d1 x k`, small
//! `k`) differed between 1 and 3 threads, so `matmul` and `matmul_tn` run sequential faer
//! GEMMs on fixed column tiles instead.

mod base;
mod cholesky;
mod gram;
mod packed;
mod simd;

pub(crate) use base::Scalar;
use base::{par, view, view_mut};
pub use cholesky::{cholesky, lower_inverse_in_place};
pub(crate) use cholesky::{first_bad_pivot, ridged_cholesky, spd_inverse, spd_inverse_factor};
pub(crate) use cholesky::{ridged_inverse_factor, RIDGE_START};
pub use gram::{gram, gram_f32};
pub(crate) use packed::{lower_matvec, lower_t_matvec, PackedLower};
pub use simd::has_fma;
pub(crate) use simd::{axpy, dot, dot_f32, Element};

use faer::linalg::matmul::triangular::{self, BlockStructure};
use faer::{Accum, MatMut, MatRef, Par};
use nalgebra::DMatrix;

/// Output columns per task of [`matmul`] and [`matmul_tn`].
const MM_COLS: usize = 64;

/// `c = op(a) * b` with `c`'s columns cut into fixed tiles of [`MM_COLS`], one sequential faer
/// product each, in parallel on the current rayon pool; `a_structure` says which part of
/// `op(a)` is read (a triangle: the product skips the zero one, half the flops of a square
/// GEMM). faer's own parallel GEMM is not bit-reproducible across thread counts for every
/// shape (measured: the batched refits' `d1 x k` preconditioner products differed between 1
/// and 3 threads), while a tile's arithmetic depends only on its fixed shape: results are
/// identical whatever the thread count.
fn tiled_matmul(
    c: &mut DMatrix<f64>,
    a: MatRef<'_, f64>,
    a_structure: BlockStructure,
    b: &DMatrix<f64>,
) {
    use rayon::prelude::*;
    let m = c.nrows();
    if m == 0 || c.ncols() == 0 {
        return;
    }
    let b = view(b);
    c.as_mut_slice()
        .par_chunks_mut(m * MM_COLS)
        .enumerate()
        .for_each(|(t, out)| {
            let (j0, cols) = (t * MM_COLS, out.len() / m);
            let out = MatMut::from_column_major_slice_mut(out, m, cols);
            let b = b.subcols(j0, cols);
            if a_structure.is_dense() {
                faer::linalg::matmul::matmul(out, Accum::Replace, a, b, 1.0, Par::Seq);
            } else {
                triangular::matmul(
                    out,
                    BlockStructure::Rectangular,
                    Accum::Replace,
                    a,
                    a_structure,
                    b,
                    BlockStructure::Rectangular,
                    1.0,
                    Par::Seq,
                );
            }
        });
}

/// `a * b` for column-major `DMatrix`es. Panics if the inner dimensions differ.
pub fn matmul(a: &DMatrix<f64>, b: &DMatrix<f64>) -> DMatrix<f64> {
    assert_eq!(a.ncols(), b.nrows(), "matmul: inner dimensions differ");
    let mut c = DMatrix::<f64>::zeros(a.nrows(), b.ncols());
    tiled_matmul(&mut c, view(a), BlockStructure::Rectangular, b);
    c
}

/// `a^T * b` for column-major `DMatrix`es (see [`matmul`]).
pub(crate) fn matmul_tn(a: &DMatrix<f64>, b: &DMatrix<f64>) -> DMatrix<f64> {
    assert_eq!(a.nrows(), b.nrows(), "matmul_tn: inner dimensions differ");
    let mut c = DMatrix::<f64>::zeros(a.ncols(), b.ncols());
    tiled_matmul(&mut c, view(a).transpose(), BlockStructure::Rectangular, b);
    c
}

/// `l * b` for a lower-triangular `l` (only its lower triangle is read): [`matmul`] at half
/// the flops, the same tiles (results do not depend on the thread count).
pub(crate) fn lower_matmul(l: &DMatrix<f64>, b: &DMatrix<f64>) -> DMatrix<f64> {
    assert_eq!(
        l.ncols(),
        b.nrows(),
        "lower_matmul: inner dimensions differ"
    );
    let mut c = DMatrix::<f64>::zeros(l.nrows(), b.ncols());
    tiled_matmul(&mut c, view(l), BlockStructure::TriangularLower, b);
    c
}

/// `l^T * b` for a lower-triangular `l` (only its lower triangle is read): [`matmul_tn`] at
/// half the flops (see [`lower_matmul`]).
pub(crate) fn lower_matmul_tn(l: &DMatrix<f64>, b: &DMatrix<f64>) -> DMatrix<f64> {
    assert_eq!(
        l.nrows(),
        b.nrows(),
        "lower_matmul_tn: inner dimensions differ"
    );
    let mut c = DMatrix::<f64>::zeros(l.ncols(), b.ncols());
    tiled_matmul(
        &mut c,
        view(l).transpose(),
        BlockStructure::TriangularUpper,
        b,
    );
    c
}

/// `l l^T` for a lower-triangular `l` (only its lower triangle is read), exactly symmetric:
/// the lower triangle by faer's triangular product (both factors triangular, about a sixth of
/// the flops of a square GEMM), then mirrored. Its blocking depends on the shape only: results
/// do not depend on the thread count (the tests check it).
pub(crate) fn lower_outer(l: &DMatrix<f64>) -> DMatrix<f64> {
    let n = l.nrows();
    assert_eq!(l.ncols(), n, "lower_outer: the factor is not square");
    let mut out = DMatrix::<f64>::zeros(n, n);
    let lv = view(l);
    triangular::matmul(
        view_mut(&mut out),
        BlockStructure::TriangularLower,
        Accum::Replace,
        lv,
        BlockStructure::TriangularLower,
        lv.transpose(),
        BlockStructure::TriangularUpper,
        1.0,
        par(),
    );
    base::mirror_lower(out.as_mut_slice(), n);
    out
}

/// Row-major `f32` product `a (m x k) * b (k x n)` (used to measure the machine's `sgemm`
/// rate).
pub fn matmul_f32(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f32> {
    assert_eq!(a.len(), m * k, "matmul_f32: a is not m x k");
    assert_eq!(b.len(), k * n, "matmul_f32: b is not k x n");
    let mut c = vec![0.0f32; m * n];
    faer::linalg::matmul::matmul(
        MatMut::from_row_major_slice_mut(&mut c, m, n),
        Accum::Replace,
        MatRef::from_row_major_slice(a, m, k),
        MatRef::from_row_major_slice(b, k, n),
        1.0,
        par(),
    );
    c
}

/// `out = A V` computed by one sequential faer GEMM in precision `T`: `a` holds `rows x cols`
/// row-major, `v` is `cols x k` column-major, `out` `rows x k` row-major. The row blocks of the
/// batched bootstrap refits' `Z V` (each block one task of the caller's fixed split: results do
/// not depend on the thread count).
pub(crate) fn gemm_row_block<T: Scalar>(out: &mut [T], a: &[T], rows: usize, v: &[T], k: usize) {
    let cols = v.len() / k.max(1);
    faer::linalg::matmul::matmul(
        MatMut::from_row_major_slice_mut(out, rows, k),
        Accum::Replace,
        MatRef::from_row_major_slice(a, rows, cols),
        MatRef::from_column_major_slice(v, cols, k),
        T::from_f64(1.0),
        Par::Seq,
    );
}

/// `out += A_blk^T B` computed by one sequential faer GEMM in precision `T`, for `A_blk` the
/// block of rows `r0..r0 + rows` and columns `c0..c0 + cols` of `a`, a row-major matrix with
/// `a_cols` columns (a zero-copy view), `b` `rows x k` row-major and `out` `cols x k`
/// row-major: the column blocks of the batched refits' `Z^T C`.
pub(crate) fn gemm_tn_block_add<T: Scalar>(
    out: &mut [T],
    a: &[T],
    a_cols: usize,
    (r0, rows): (usize, usize),
    (c0, cols): (usize, usize),
    b: &[T],
    k: usize,
) {
    let a_rows = a.len() / a_cols.max(1);
    faer::linalg::matmul::matmul(
        MatMut::from_row_major_slice_mut(out, cols, k),
        Accum::Add,
        MatRef::from_row_major_slice(a, a_rows, a_cols)
            .submatrix(r0, c0, rows, cols)
            .transpose(),
        MatRef::from_row_major_slice(b, rows, k),
        T::from_f64(1.0),
        Par::Seq,
    );
}

/// Candidate rows per task of [`project_rows`].
const PROJECT_ROWS: usize = 64;

/// `out[k * B + b] = rows_k . draws_b` for `m` row-major `f64` rows of length `d` and the
/// first `B` of the draws in `draws_t`, a `d x B_all` row-major matrix (coordinate-major: row
/// `i` holds coordinate `i` of every draw; `out` is `m x B` row-major): every candidate's
/// reward under every bootstrap draw as one blocked GEMM. The models' draws are stored in
/// `f32` and widened exactly, and transposed, once, on first use (`RewardModel`'s draw
/// cache): the products of `f32` candidates are then exact and the sums `f64`, and the GEMM
/// reads the draws where they lie (coordinate-major, they need no packing: a call for a few
/// rows costs one stream of the draws).
///
/// The rows are cut into tiles of at most [`PROJECT_ROWS`], one sequential faer GEMM each, in
/// parallel on the current rayon pool when there is more than one tile: results do not depend
/// on the thread count. Nor do a row's values depend on the rows that share its call (a
/// selection's batches, a single score and a whole batch agree exactly): faer's kernels sum
/// each output over `d` in the same order for any tile height of two or more (a lone row would
/// take its matrix-vector path, so it is padded with a zero row); the tests guard this.
pub(crate) fn project_rows(rows: &[f64], d: usize, draws_t: &[f64], reps: usize) -> Vec<f64> {
    use rayon::prelude::*;
    let m = rows.len() / d.max(1);
    let mut out = vec![0.0f64; m * reps];
    if m == 0 || reps == 0 {
        return out;
    }
    let all = draws_t.len() / d;
    let dt = MatRef::from_row_major_slice(draws_t, d, all).subcols(0, reps);
    let gemm = |out: &mut [f64], a: &[f64], h: usize| {
        faer::linalg::matmul::matmul(
            MatMut::from_row_major_slice_mut(out, h, reps),
            Accum::Replace,
            MatRef::from_row_major_slice(a, h, d),
            dt,
            1.0,
            Par::Seq,
        );
    };
    let tile = |(t, block): (usize, &mut [f64])| {
        let (r0, h) = (t * PROJECT_ROWS, block.len() / reps);
        let a = &rows[r0 * d..(r0 + h) * d];
        if h == 1 {
            let padded = [a, &vec![0.0; d]].concat();
            let mut two = vec![0.0f64; 2 * reps];
            gemm(&mut two, &padded, 2);
            block.copy_from_slice(&two[..reps]);
        } else {
            gemm(block, a, h);
        }
    };
    if m > PROJECT_ROWS && rayon::current_thread_index().is_some() {
        out.par_chunks_mut(PROJECT_ROWS * reps)
            .enumerate()
            .for_each(tile);
    } else {
        out.chunks_mut(PROJECT_ROWS * reps)
            .enumerate()
            .for_each(tile);
    }
    out
}

/// `B x d` row-major `f32` draws as [`project_rows`] reads them: `d x B` row-major `f64`.
pub(crate) fn transposed(draws: &[f32], d: usize) -> Vec<f64> {
    let reps = draws.len() / d.max(1);
    let mut t = vec![0.0f64; reps * d];
    for (b, draw) in draws.chunks_exact(d).enumerate() {
        for (i, &v) in draw.iter().enumerate() {
            t[i * reps + b] = f64::from(v);
        }
    }
    t
}

/// How far a value of [`project_rows`] may be from the exact dot product `row . draw`, given
/// `bound >= ||row|| ||draw||`: `gamma_d bound` with `gamma_d = d u / (1 - d u)`, `u = 2^-53`
/// (the classic bound of a floating-point dot product in any summation order, fused or not),
/// taken as `1.01 d u bound` (`d u < 0.01`). Two calls that split the draws differently may
/// sum in another order: their values of the same row and draw differ by at most twice this.
pub(crate) fn project_rows_error(d: usize, bound: f64) -> f64 {
    debug_assert!((d as f64) * f64::EPSILON < 0.01);
    1.01 * d as f64 * (f64::EPSILON / 2.0) * bound
}

/// Output rows per task of [`gemm_tn_rows`].
const TN_ROWS: usize = 256;

/// `A^T B` (`p x q`, column-major) for `A` (`n x p`) and `B` (`n x q`) given row-major, in
/// precision `T`: the cross blocks `Z^T M` of the information (`n` in the tens of thousands,
/// `q = d2` small). faer's parallel GEMM splits such a narrow product poorly (measured 4x
/// slower than tiles at the paper's shape), so the output is cut into blocks of
/// [`TN_ROWS`] rows, one sequential faer GEMM over the full `n` each, in parallel on the
/// current rayon pool: each output element is computed by one task, independent of the
/// thread count.
pub(crate) fn gemm_tn_rows<T: Scalar>(a: &[T], b: &[T], n: usize, p: usize, q: usize) -> Vec<T> {
    use rayon::prelude::*;
    assert_eq!(a.len(), n * p, "gemm_tn_rows: a is not n x p");
    assert_eq!(b.len(), n * q, "gemm_tn_rows: b is not n x q");
    let mut rows = vec![T::default(); p * q]; // row-major p x q
    if q > 0 {
        let (av, bv) = (
            MatRef::from_row_major_slice(a, n, p),
            MatRef::from_row_major_slice(b, n, q),
        );
        rows.par_chunks_mut(TN_ROWS * q)
            .enumerate()
            .for_each(|(t, out)| {
                let (r0, m) = (t * TN_ROWS, out.len() / q);
                faer::linalg::matmul::matmul(
                    MatMut::from_row_major_slice_mut(out, m, q),
                    Accum::Replace,
                    av.subcols(r0, m).transpose(),
                    bv,
                    T::from_f64(1.0),
                    Par::Seq,
                );
            });
    }
    // Column-major for the caller.
    let mut c = vec![T::default(); p * q];
    for i in 0..p {
        for j in 0..q {
            c[j * p + i] = rows[i * q + j];
        }
    }
    c
}

/// `lower(s) += alpha w w^T` (the SYRK update, `w` is `p x k`): only the lower triangle of
/// `s` (`p x p`) is written; its strict upper triangle is left as it was.
pub(crate) fn lower_rank_update(s: &mut DMatrix<f64>, alpha: f64, w: &DMatrix<f64>) {
    assert_eq!(s.nrows(), w.nrows(), "lower_rank_update: row counts differ");
    let w = view(w);
    triangular::matmul(
        view_mut(s),
        BlockStructure::TriangularLower,
        Accum::Add,
        w,
        BlockStructure::Rectangular,
        w.transpose(),
        BlockStructure::Rectangular,
        alpha,
        par(),
    );
}

/// Replaces `a` by `(a + a^T) / 2`.
pub(crate) fn symmetrize(a: &mut DMatrix<f64>) {
    let p = a.nrows();
    for i in 0..p {
        for j in 0..i {
            let v = 0.5 * (a[(i, j)] + a[(j, i)]);
            a[(i, j)] = v;
            a[(j, i)] = v;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn products_match_nalgebra_and_do_not_depend_on_thread_count() {
        let a = DMatrix::from_fn(300, 170, |i, j| ((i * 7 + j * 3) % 11) as f64 - 5.0);
        let b = DMatrix::from_fn(170, 260, |i, j| ((i * 5 + j * 13) % 7) as f64 * 0.25);
        let want = &a * &b;
        let on = |t: usize| {
            crate::parallel::thread_pool(t)
                .unwrap()
                .install(|| (matmul(&a, &b), matmul_tn(&a.transpose(), &b)))
        };
        let (one, one_tn) = on(1);
        assert_eq!((one.clone(), one_tn.clone()), on(3));
        assert!((&one - &want).abs().max() < 1e-9);
        assert!((&one_tn - &want).abs().max() < 1e-9);
        let af: Vec<f32> = a.transpose().iter().map(|&v| v as f32).collect(); // row-major a
        let bf: Vec<f32> = b.transpose().iter().map(|&v| v as f32).collect();
        let cf = matmul_f32(&af, &bf, 300, 170, 260);
        assert!((f64::from(cf[5 * 260 + 7]) - want[(5, 7)]).abs() < 1e-3);
        // A^T B from row-major A (here: a^T, 170 x 300) and B (170 x 260): = a * b.
        let at_rows: Vec<f64> = a.iter().copied().collect(); // a column-major = a^T row-major
        let b_rows: Vec<f64> = b.transpose().iter().copied().collect();
        let c = gemm_tn_rows(&at_rows, &b_rows, 170, 300, 260);
        assert!((DMatrix::from_vec(300, 260, c) - &want).abs().max() < 1e-9);
        let mut s = DMatrix::<f64>::identity(300, 300);
        lower_rank_update(&mut s, -0.5, &a);
        let full = DMatrix::<f64>::identity(300, 300) - &a * a.transpose() * 0.5;
        for j in 0..300 {
            for i in 0..300 {
                let want = if i >= j {
                    full[(i, j)]
                } else {
                    f64::from(u8::from(i == j))
                };
                assert!((s[(i, j)] - want).abs() < 1e-9, "({i}, {j})");
            }
        }
    }
    /// The triangular products equal the square ones on the lower triangle (the strict upper
    /// triangle of the factor is never read), `lower_outer` is exactly symmetric, and none
    /// depends on the thread count, at a size where faer splits its work.
    #[test]
    fn triangular_products_match_the_square_ones_whatever_the_threads() {
        let (n, k) = (700, 150);
        let full = DMatrix::from_fn(n, n, |i, j| (((i * 31 + j * 17) % 29) as f64 - 14.0) / 9.0);
        let lower = DMatrix::from_fn(n, n, |i, j| if i >= j { full[(i, j)] } else { 0.0 });
        let b = DMatrix::from_fn(n, k, |i, j| ((i * 7 + j * 11) % 13) as f64 * 0.3 - 1.7);
        let on = |t: usize| {
            crate::parallel::thread_pool(t).unwrap().install(|| {
                (
                    lower_matmul(&full, &b),
                    lower_matmul_tn(&full, &b),
                    lower_outer(&full),
                )
            })
        };
        let (lb, ltb, llt) = on(1);
        assert_eq!((lb.clone(), ltb.clone(), llt.clone()), on(2));
        assert_eq!((lb.clone(), ltb.clone(), llt.clone()), on(5));
        let close =
            |a: &DMatrix<f64>, b: &DMatrix<f64>| (a - b).abs().max() <= 1e-12 * b.abs().max();
        assert!(close(&lb, &matmul(&lower, &b)));
        assert!(close(&ltb, &matmul_tn(&lower, &b)));
        assert!(close(&llt, &matmul(&lower, &lower.transpose())));
        assert_eq!(llt, llt.transpose());
    }

    /// The blocked projections equal the row-by-row dot products (to rounding), and a row's
    /// values are bit-identical alone, in any batch at any position, on 1 or 3 threads.
    #[test]
    fn projections_match_dot_products_whatever_the_batch_and_threads() {
        let (d, reps, m) = (700, 45, 150);
        let draws: Vec<f32> = (0..reps * d)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) * 0.013)
            .collect();
        let rows: Vec<f64> = (0..m * d)
            .map(|i| ((i * 13 % 97) as f64 - 48.0).sin() * 3.0)
            .collect();
        let wide = transposed(&draws, d);
        let all = project_rows(&rows, d, &wide, reps);
        for (k, row) in rows.chunks_exact(d).enumerate() {
            for (b, theta) in draws.chunks_exact(d).enumerate() {
                let want = dot_f32(row, theta);
                let scale: f64 = row
                    .iter()
                    .zip(theta)
                    .map(|(x, &y)| (x * f64::from(y)).abs())
                    .sum();
                assert!((all[k * reps + b] - want).abs() <= 1e-14 * scale, "{k} {b}");
            }
            assert_eq!(
                project_rows(row, d, &wide, reps),
                all[k * reps..(k + 1) * reps]
            );
        }
        for skip in [1, 3, 8, 11, 64, 90, 148, 149] {
            let part = project_rows(&rows[skip * d..], d, &wide, reps);
            assert_eq!(part, all[skip * reps..]);
            let end = (skip + 2).min(m);
            let head = project_rows(&rows[..end * d], d, &wide, reps);
            assert_eq!(head, all[..end * reps]);
        }
        let pooled = |t: usize| {
            crate::parallel::thread_pool(t)
                .unwrap()
                .install(|| project_rows(&rows, d, &wide, reps))
        };
        assert_eq!(pooled(1), all);
        assert_eq!(pooled(3), all);
    }
}
