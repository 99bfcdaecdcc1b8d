//! Dense linear algebra the estimator needs: a deterministic parallel Gram product (the
//! information matrices are weighted Gram matrices of per-sample vectors) and Cholesky-based
//! inversion that reports singular or ill-conditioned matrices instead of returning NaN.
//!
//! Matrices are `nalgebra::DMatrix<f64>` at the API; the Gram kernel works on row-major buffers
//! and calls `matrixmultiply::dgemm` per output tile.

use crate::error::{Error, Result};
use nalgebra::DMatrix;
use rayon::prelude::*;

/// Rows of the per-sample matrix materialised at once by [`gram`].
const GRAM_BLOCK_ROWS: usize = 256;
/// Output tile width of [`gram`]: tiles are computed in parallel, each by one task.
const GRAM_TILE: usize = 128;

/// Smallest acceptable reciprocal condition estimate before a matrix is called ill-conditioned.
pub const RCOND_MIN: f64 = 1e-13;

/// Raw pointer to the output matrix, shared by tasks that write disjoint tiles.
#[derive(Clone, Copy)]
struct OutPtr(*mut f64);
// SAFETY: every task writes a distinct (tile_i, tile_j) block of the output, never the same
// element as another task, and the buffer outlives the parallel scope.
unsafe impl Send for OutPtr {}
unsafe impl Sync for OutPtr {}

impl OutPtr {
    /// The pointer (a method, so closures capture the whole `Sync` wrapper, not the field).
    fn get(self) -> *mut f64 {
        self.0
    }
}

/// `sum_i a_i a_i^T / scale` for rows `a_i` (length `p`) produced by `fill_row(i, &mut a_i)`,
/// `i in 0..n`. Returns a symmetric `p x p` matrix.
///
/// Rows are materialised in blocks of 256 and multiplied with `matrixmultiply::dgemm`; output
/// tiles run in parallel on the current rayon pool. Each output element is accumulated by one
/// task in row-block order, so the result does not depend on the thread count.
pub fn gram<F>(n: usize, p: usize, scale: f64, fill_row: F) -> DMatrix<f64>
where
    F: Fn(usize, &mut [f64]) + Sync,
{
    let mut out = vec![0.0f64; p * p];
    let tiles: Vec<(usize, usize)> = {
        let starts: Vec<usize> = (0..p).step_by(GRAM_TILE).collect();
        let mut t = Vec::new();
        for (a, &i) in starts.iter().enumerate() {
            for &j in &starts[a..] {
                t.push((i, j));
            }
        }
        t
    };
    let mut block = vec![0.0f64; GRAM_BLOCK_ROWS * p];
    let out_ptr = OutPtr(out.as_mut_ptr());
    for start in (0..n).step_by(GRAM_BLOCK_ROWS) {
        let rows = GRAM_BLOCK_ROWS.min(n - start);
        block[..rows * p]
            .par_chunks_mut(p)
            .enumerate()
            .for_each(|(r, row)| fill_row(start + r, row));
        let a = &block[..rows * p];
        tiles.par_iter().for_each(|&(ti, tj)| {
            let m = GRAM_TILE.min(p - ti);
            let k = GRAM_TILE.min(p - tj);
            // SAFETY: A^T[ti..ti+m, :] and A[:, tj..tj+k] lie inside `a` (rows x p, row-major);
            // the output tile [ti..ti+m, tj..tj+k] lies inside `out` (p x p) and is written by
            // this task only.
            unsafe {
                matrixmultiply::dgemm(
                    m,
                    rows,
                    k,
                    1.0,
                    a.as_ptr().add(ti),
                    1,
                    p as isize,
                    a.as_ptr().add(tj),
                    p as isize,
                    1,
                    1.0,
                    out_ptr.get().add(ti * p + tj),
                    p as isize,
                    1,
                );
            }
        });
    }
    let mut m = DMatrix::from_row_slice(p, p, &out);
    for i in 0..p {
        for j in 0..i {
            // Only tiles with tj >= ti were computed: copy the upper triangle down.
            if (j / GRAM_TILE) < (i / GRAM_TILE) {
                m[(i, j)] = m[(j, i)];
            }
        }
    }
    // Diagonal tiles were computed in full; symmetrise them exactly.
    for i in 0..p {
        for j in 0..i {
            let v = 0.5 * (m[(i, j)] + m[(j, i)]);
            m[(i, j)] = v;
            m[(j, i)] = v;
        }
    }
    m /= scale;
    m
}

/// Lower Cholesky factor `L` (`a = L L^T`) of a symmetric positive-definite matrix, with a
/// reciprocal-condition check. `what` names the matrix in the error message.
///
/// Errors with [`Error::SingularInformation`] when the factorisation fails (not positive
/// definite) or the estimate `(min L_jj / max L_jj)^2` is below [`RCOND_MIN`].
pub fn cholesky(a: &DMatrix<f64>, what: &str) -> Result<DMatrix<f64>> {
    if a.iter().any(|v| !v.is_finite()) {
        return Err(Error::SingularInformation {
            detail: format!("{what} has non-finite entries"),
        });
    }
    let chol = nalgebra::Cholesky::new(a.clone()).ok_or_else(|| Error::SingularInformation {
        detail: format!("{what} is not positive definite"),
    })?;
    let l = chol.unpack();
    let diag = l.diagonal();
    let (lo, hi) = diag.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &v| {
        (lo.min(v), hi.max(v))
    });
    let rcond = (lo / hi).powi(2);
    if rcond.is_nan() || rcond < RCOND_MIN {
        return Err(Error::SingularInformation {
            detail: format!(
                "{what} is ill-conditioned (reciprocal condition estimate {rcond:.3e} < {RCOND_MIN:.0e})"
            ),
        });
    }
    Ok(l)
}

/// Inverse of a symmetric positive-definite matrix via its Cholesky factor (checked as
/// [`cholesky`]). The result is exactly symmetric.
pub fn spd_inverse(a: &DMatrix<f64>, what: &str) -> Result<DMatrix<f64>> {
    let l = cholesky(a, what)?;
    let chol = nalgebra::Cholesky::pack_dirty(l);
    let mut inv = chol.inverse();
    symmetrize(&mut inv);
    Ok(inv)
}

/// Replaces `a` by `(a + a^T) / 2`.
pub fn symmetrize(a: &mut DMatrix<f64>) {
    let p = a.nrows();
    for i in 0..p {
        for j in 0..i {
            let v = 0.5 * (a[(i, j)] + a[(j, i)]);
            a[(i, j)] = v;
            a[(j, i)] = v;
        }
    }
}

/// Inverse of a general square matrix (LU with partial pivoting); used for the non-symmetric
/// factors of sandwich covariances. Errors when the matrix is singular.
pub fn inverse(a: &DMatrix<f64>, what: &str) -> Result<DMatrix<f64>> {
    a.clone()
        .try_inverse()
        .filter(|m| m.iter().all(|v| v.is_finite()))
        .ok_or_else(|| Error::SingularInformation {
            detail: format!("{what} is singular"),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gram_matches_naive_and_is_thread_independent() {
        let (n, p) = (700, 300); // several row blocks and tiles, ragged edges
        let row = |i: usize, out: &mut [f64]| {
            for (j, v) in out.iter_mut().enumerate() {
                *v = ((i * 31 + j * 17) % 23) as f64 / 7.0 - 1.5;
            }
        };
        let mut naive = DMatrix::<f64>::zeros(p, p);
        let mut a = vec![0.0; p];
        for i in 0..n {
            row(i, &mut a);
            for r in 0..p {
                for c in 0..p {
                    naive[(r, c)] += a[r] * a[c];
                }
            }
        }
        naive /= n as f64;
        let one = crate::parallel::thread_pool(1)
            .unwrap()
            .install(|| gram(n, p, n as f64, row));
        let two = crate::parallel::thread_pool(3)
            .unwrap()
            .install(|| gram(n, p, n as f64, row));
        assert_eq!(one, two, "gram depends on the thread count");
        assert!((one - naive).abs().max() < 1e-10);
    }

    #[test]
    fn singular_matrix_is_reported() {
        let a = DMatrix::from_row_slice(2, 2, &[1.0, 1.0, 1.0, 1.0]);
        assert!(matches!(
            spd_inverse(&a, "I"),
            Err(Error::SingularInformation { .. })
        ));
        let b = DMatrix::from_row_slice(2, 2, &[1.0, 0.0, 0.0, 1e-15]);
        assert!(matches!(
            cholesky(&b, "I"),
            Err(Error::SingularInformation { .. })
        ));
        let c = DMatrix::from_row_slice(2, 2, &[2.0, 1.0, 1.0, 2.0]);
        let inv = spd_inverse(&c, "I").unwrap();
        assert!((&c * inv - DMatrix::identity(2, 2)).abs().max() < 1e-14);
    }
}
