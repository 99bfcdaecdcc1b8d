//! Cholesky factorisations and triangular inverses (faer's, in place on the `DMatrix` buffer),
//! with the checks that make a singular or ill-conditioned matrix an
//! [`Error::SingularInformation`] instead of a NaN: finiteness, positive pivots, and a
//! reciprocal-condition estimate that does not change with the units of the features.

use super::base::{mirror_lower, par, view, view_mut};
use crate::error::{Error, Result};
use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::llt::factor::{cholesky_in_place, cholesky_in_place_scratch};
use faer::linalg::matmul::triangular::{self, BlockStructure};
use faer::linalg::triangular_solve::{
    solve_lower_triangular_in_place, solve_upper_triangular_in_place,
};
use faer::reborrow::{Reborrow, ReborrowMut};
use faer::{Accum, MatMut};
use nalgebra::DMatrix;

/// Smallest acceptable reciprocal condition estimate before a matrix is called ill-conditioned.
pub(crate) const RCOND_MIN: f64 = 1e-13;

/// Size up to which a triangular inverse is faer's out-of-place one on a copy of the block;
/// larger ones are split in place (see [`invert_lower_in_place`]).
const TRI_LEAF: usize = 128;

/// In-place lower Cholesky factorisation of the square `a` (only the lower triangle is read);
/// on success the strict upper triangle is zeroed. Errors with the index of the first pivot
/// that is not positive.
fn potrf(a: &mut DMatrix<f64>) -> std::result::Result<(), usize> {
    let n = a.nrows();
    let par = par();
    let mut mem = MemBuffer::new(cholesky_in_place_scratch::<f64>(n, par, Default::default()));
    cholesky_in_place(
        view_mut(a),
        Default::default(),
        par,
        MemStack::new(&mut mem),
        Default::default(),
    )
    .map_err(|faer::linalg::cholesky::llt::factor::LltError::NonPositivePivot { index }| index)?;
    let s = a.as_mut_slice();
    for j in 1..n {
        s[j * n..j * n + j].fill(0.0);
    }
    Ok(())
}

/// In-place inverse of the lower triangle of `a` (strict upper triangle zero, left zero).
/// Recursive and allocation-free above [`TRI_LEAF`]: with `L = [[L11, 0], [L21, L22]]`,
/// `L^-1 = [[L11^-1, 0], [-L22^-1 L21 L11^-1, L22^-1]]`, so `L21` is overwritten by two
/// in-place triangular solves before `L11` and `L22` are inverted in place.
fn invert_lower_in_place(a: MatMut<'_, f64>) {
    let n = a.nrows();
    if n <= TRI_LEAF {
        let copy = a.rb().to_owned();
        faer::linalg::triangular_inverse::invert_lower_triangular(a, copy.as_ref(), par());
        return;
    }
    let h = n / 2;
    let (l11, _, mut l21, l22) = a.split_at_mut(h, h);
    // L21 <- L22^-1 L21, then L21 <- -L21 L11^-1 (as L11^-T L21^T, an upper solve).
    solve_lower_triangular_in_place(l22.rb(), l21.rb_mut(), par());
    solve_upper_triangular_in_place(l11.rb().transpose(), l21.rb_mut().transpose_mut(), par());
    for j in 0..h {
        for v in l21.rb_mut().col_mut(j).iter_mut() {
            *v = -*v;
        }
    }
    invert_lower_in_place(l11);
    invert_lower_in_place(l22);
}

/// The index of the first pivot of `a`'s Cholesky factorisation that is not positive, `None`
/// when `a` factors (the condition is not checked): which row of a singular information
/// matrix to name in a message.
pub(crate) fn first_bad_pivot(a: &DMatrix<f64>) -> Option<usize> {
    let mut a = a.clone();
    potrf(&mut a).err()
}

/// Lower Cholesky factor of a symmetric matrix without the condition check, `None` if it is
/// not numerically positive definite (for preconditioners, where any SPD factor will do).
pub(crate) fn try_cholesky(a: DMatrix<f64>) -> Option<DMatrix<f64>> {
    let mut a = a;
    if a.iter().any(|v| !v.is_finite()) {
        return None;
    }
    potrf(&mut a).ok()?;
    Some(a)
}

/// Reciprocal condition estimate of the matrix whose diagonal was `diag` and whose Cholesky
/// factor now sits in the lower triangle of `a`: `(min_j r_j / max_j r_j)^2` with
/// `r_j = L_jj / sqrt(a_jj)`, the diagonal of the factor of the Jacobi-equilibrated matrix
/// `D^-1/2 A D^-1/2`. Unlike `L_jj` alone it does not change with the units of the features
/// (a feature in millimetres instead of kilometres), only with genuine near-collinearity.
fn rcond_of_factor(a: &DMatrix<f64>, diag: &[f64]) -> f64 {
    let (lo, hi) = diag
        .iter()
        .enumerate()
        .map(|(j, d)| a[(j, j)] / d.sqrt())
        .fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    (lo / hi).powi(2)
}

/// Factors in place, with the finiteness, positive-definiteness and condition checks of
/// [`cholesky`].
fn checked_potrf(a: &mut DMatrix<f64>, what: &str) -> Result<()> {
    if a.iter().any(|v| !v.is_finite()) {
        return Err(Error::SingularInformation {
            detail: format!("{what} has non-finite entries"),
        });
    }
    let diag: Vec<f64> = a.diagonal().iter().copied().collect();
    potrf(a).map_err(|j| Error::SingularInformation {
        detail: format!("{what} is not positive definite (pivot {j})"),
    })?;
    let rcond = rcond_of_factor(a, &diag);
    if rcond.is_nan() || rcond < RCOND_MIN {
        return Err(Error::SingularInformation {
            detail: format!(
                "{what} is ill-conditioned (reciprocal condition estimate {rcond:.3e} < {RCOND_MIN:.0e})"
            ),
        });
    }
    Ok(())
}

/// Lower Cholesky factor `L` (`a = L L^T`) of a symmetric positive-definite matrix, with a
/// reciprocal-condition check. `what` names the matrix in the error message. Only the lower
/// triangle of `a` is read. faer's blocked factorisation on the current rayon pool.
///
/// Errors with [`Error::SingularInformation`] when `a` has non-finite entries, the
/// factorisation fails (not positive definite) or the estimate `(min r_j / max r_j)^2` of
/// the equilibrated factor is below `RCOND_MIN`.
pub fn cholesky(a: &DMatrix<f64>, what: &str) -> Result<DMatrix<f64>> {
    let mut l = a.clone();
    checked_potrf(&mut l, what)?;
    Ok(l)
}

/// In-place inverse of a lower-triangular matrix with zero strict upper triangle (blocked,
/// parallel, no extra `n x n` buffer). No checks: the diagonal must be non-zero.
pub fn lower_inverse_in_place(l: &mut DMatrix<f64>) {
    invert_lower_in_place(view_mut(l));
}

/// Inverse of a symmetric positive-definite matrix via its Cholesky factor (checked as
/// [`cholesky`]): `a^-1 = L^-T L^-1`, the lower triangle by faer's triangular product, then
/// mirrored: the result is exactly symmetric.
pub(crate) fn spd_inverse(a: &DMatrix<f64>, what: &str) -> Result<DMatrix<f64>> {
    let mut x = cholesky(a, what)?;
    lower_inverse_in_place(&mut x);
    let n = x.nrows();
    let mut inv = DMatrix::<f64>::zeros(n, n);
    let xv = view(&x);
    triangular::matmul(
        view_mut(&mut inv),
        BlockStructure::TriangularLower,
        Accum::Replace,
        xv.transpose(),
        BlockStructure::TriangularUpper,
        xv,
        BlockStructure::TriangularLower,
        1.0,
        par(),
    );
    mirror_lower(inv.as_mut_slice(), n);
    Ok(inv)
}

/// Side of the square tiles [`anti_transpose_lower`] moves at a time.
const ANTI_TILE: usize = 64;

/// Maps the lower triangle of an `n x n` matrix through `(i, j) -> (n-1-j, n-1-i)` (the
/// transpose across the anti-diagonal), in place. The triangle is walked in square tiles of
/// [`ANTI_TILE`]: a tile's image is another tile, and both stay in cache while their values
/// are swapped (element by element, the image of a column is a row, a stride of `n`).
fn anti_transpose_lower(a: &mut DMatrix<f64>) {
    let n = a.nrows();
    let s = a.as_mut_slice();
    for j0 in (0..n).step_by(ANTI_TILE) {
        for i0 in (j0..n).step_by(ANTI_TILE) {
            for j in j0..(j0 + ANTI_TILE).min(n) {
                for i in i0.max(j)..(i0 + ANTI_TILE).min(n) {
                    let (i2, j2) = (n - 1 - j, n - 1 - i);
                    // Swap each pair once: from the element before its image in column-major
                    // order.
                    if (j, i) < (j2, i2) {
                        s.swap(j * n + i, j2 * n + i2);
                    }
                }
            }
        }
    }
}

/// The lower Cholesky factor `L` of the *inverse* of a symmetric positive-definite matrix:
/// `L L^T = a^-1`, `L` lower triangular with positive diagonal (so it is the Cholesky factor
/// of `a^-1`, computed without forming `a^-1`). Only the lower triangle of `a` is read.
///
/// With `J` the reversal permutation, `J a J = R R^T` gives `a^-1 = (J R^-T J)(J R^-T J)^T`
/// and `J R^-T J` is lower triangular: one Cholesky factorisation and one triangular inverse,
/// about `2 d^3 / 3` flops, all in place.
///
/// Errors as [`cholesky`] (the condition check applies to `a`'s reversed factor).
pub(crate) fn spd_inverse_factor(a: DMatrix<f64>, what: &str) -> Result<DMatrix<f64>> {
    let mut a = a;
    anti_transpose_lower(&mut a);
    checked_potrf(&mut a, what)?;
    lower_inverse_in_place(&mut a);
    // X = R^-1 is lower; J X^T J is its anti-transpose.
    anti_transpose_lower(&mut a);
    Ok(a)
}

/// The first ridge of every damped factorisation (Levenberg damping of the Newton step,
/// the ridged preconditioner factors), relative to the matrix's mean diagonal.
pub(crate) const RIDGE_START: f64 = 1e-10;

/// Cholesky factor of a small symmetric matrix that may be only semi-definite (the `d2 x d2`
/// Schur complements of the Newton-CG preconditioners): a ridge of `1e-10` times the mean
/// diagonal is added and grown 100x until it factorises; past `1e6` times the mean diagonal,
/// `sqrt(mean diagonal) I`. A preconditioner only sets CG's speed, never the answer.
pub(crate) fn ridged_cholesky(s: DMatrix<f64>) -> DMatrix<f64> {
    let d = s.nrows();
    let mean_diag = (s.trace() / d as f64).abs().max(f64::MIN_POSITIVE);
    let mut ridge = 0.0;
    loop {
        let mut a = s.clone();
        for j in 0..d {
            a[(j, j)] += ridge;
        }
        if let Some(l) = try_cholesky(a) {
            return l;
        }
        ridge = if ridge == 0.0 {
            RIDGE_START * mean_diag
        } else {
            ridge * 100.0
        };
        if ridge > 1e6 * mean_diag {
            return DMatrix::identity(d, d) * mean_diag.sqrt();
        }
    }
}

/// `X = L^-1` for the lower Cholesky factor `L` of the symmetric positive semi-definite `P`
/// that `make` builds (Newton-CG's preconditioners), with `tr P`: a ridge of `1e-10` times the
/// mean diagonal is added and grown 100x until `P` factorises; past the mean diagonal itself,
/// the inverse square roots of the (ridged) diagonal. `P` is factored in place and rebuilt for
/// each ridge rather than copied (it can be the largest matrix of a fit). A preconditioner
/// only sets CG's speed, never the answer.
pub(crate) fn ridged_inverse_factor(make: &dyn Fn() -> DMatrix<f64>) -> (DMatrix<f64>, f64) {
    let mut ridge_scale = RIDGE_START;
    let (mut factor, trace) = loop {
        let mut a = make();
        let m = a.nrows();
        let mean_diag = (a.trace() / m as f64).max(f64::MIN_POSITIVE);
        let trace = a.trace();
        for j in 0..m {
            a[(j, j)] += ridge_scale * mean_diag;
        }
        let diag = a.diagonal();
        if let Some(l) = try_cholesky(a) {
            break (l, trace);
        }
        if ridge_scale >= 1.0 {
            // Not even a heavily damped matrix factorises: fall back to the diagonal.
            let d = diag.map(|v| v.max(mean_diag * 1e-8).sqrt());
            break (DMatrix::from_diagonal(&d), trace);
        }
        ridge_scale *= 100.0;
    };
    lower_inverse_in_place(&mut factor);
    (factor, trace)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::random_spd;

    /// The tiled anti-transpose moves every lower-triangle value to its mirror image across
    /// the anti-diagonal and leaves the strict upper triangle alone, at sizes below, at and
    /// across the tile's edge.
    #[test]
    fn anti_transpose_maps_the_lower_triangle_across_the_anti_diagonal() {
        for n in [0, 1, 2, 63, 64, 65, 150] {
            let a = DMatrix::from_fn(n, n, |i, j| (i * 1000 + j) as f64);
            let mut b = a.clone();
            anti_transpose_lower(&mut b);
            for j in 0..n {
                for i in 0..n {
                    let want = if i >= j {
                        a[(n - 1 - j, n - 1 - i)]
                    } else {
                        a[(i, j)]
                    };
                    assert_eq!(b[(i, j)], want, "n {n} ({i}, {j})");
                }
            }
        }
    }

    #[test]
    fn ridged_inverse_factor_grows_the_ridge_and_falls_back_to_the_diagonal() {
        // Positive definite: X^T X = P^-1 up to the 1e-10 ridge.
        let p = random_spd(6, 3);
        let (x, trace) = ridged_inverse_factor(&|| p.clone());
        assert_eq!(trace, p.trace());
        let err = (x.transpose() * &x * &p - DMatrix::identity(6, 6))
            .abs()
            .max();
        assert!(err < 1e-8, "{err}");
        // Rank one: factorises once ridged, and the factor is finite.
        let v = DMatrix::from_fn(5, 1, |i, _| i as f64 + 1.0);
        let rank_one = &v * v.transpose();
        let (x, _) = ridged_inverse_factor(&|| rank_one.clone());
        assert!(x.iter().all(|e| e.is_finite()) && x[(0, 0)] > 0.0);
        // Not even positive semi-definite: the diagonal fallback, builds counted.
        let builds = std::cell::Cell::new(0);
        let negative = || {
            builds.set(builds.get() + 1);
            DMatrix::from_diagonal_element(3, 3, -1.0)
        };
        let (x, _) = ridged_inverse_factor(&negative);
        assert!(builds.get() > 5);
        assert!(x[(1, 0)] == 0.0 && x.iter().all(|e| e.is_finite()));
    }

    #[test]
    fn cholesky_inverse_and_factor_of_inverse() {
        for &p in &[1usize, 7, 130, 300, 600] {
            let a = random_spd(p, p as u64);
            let l = cholesky(&a, "A").unwrap();
            for j in 1..p {
                for i in 0..j {
                    assert_eq!(l[(i, j)], 0.0);
                }
            }
            let scale = a.abs().max();
            assert!(
                (&l * l.transpose() - &a).abs().max() < 1e-12 * scale,
                "p = {p}"
            );
            let reference = nalgebra::Cholesky::new(a.clone()).unwrap().unpack();
            assert!((&l - &reference).abs().max() < 1e-10);
            let mut x = l.clone();
            lower_inverse_in_place(&mut x);
            for j in 1..p {
                for i in 0..j {
                    assert_eq!(x[(i, j)], 0.0);
                }
            }
            assert!(
                (&x * &l - DMatrix::identity(p, p)).abs().max() < 1e-9,
                "p = {p}"
            );
            let inv = spd_inverse(&a, "A").unwrap();
            assert_eq!(inv, inv.transpose());
            assert!(
                (&a * &inv - DMatrix::identity(p, p)).abs().max() < 1e-9,
                "p = {p}"
            );
            let f = spd_inverse_factor(a.clone(), "A").unwrap();
            for j in 1..p {
                for i in 0..j {
                    assert_eq!(f[(i, j)], 0.0);
                }
                assert!(f[(j, j)] > 0.0);
            }
            assert!((&f * f.transpose() - &inv).abs().max() < 1e-9 * inv.abs().max());
        }
    }

    #[test]
    fn routines_do_not_depend_on_thread_count() {
        let a = random_spd(700, 3);
        let on = |t: usize| {
            crate::parallel::thread_pool(t).unwrap().install(|| {
                (
                    spd_inverse_factor(a.clone(), "A").unwrap(),
                    spd_inverse(&a, "A").unwrap(),
                )
            })
        };
        let one = on(1);
        assert_eq!(one, on(2));
        assert_eq!(one, on(5));
    }

    #[test]
    fn singular_matrix_is_reported() {
        let a = DMatrix::from_row_slice(2, 2, &[1.0, 1.0, 1.0, 1.0]);
        assert!(matches!(
            spd_inverse(&a, "I"),
            Err(Error::SingularInformation { .. })
        ));
        // Nearly collinear columns (correlation 1 - 5e-15) are ill-conditioned...
        let b = DMatrix::from_row_slice(2, 2, &[1.0, 1.0, 1.0, 1.0 + 1e-14]);
        assert!(matches!(
            cholesky(&b, "I"),
            Err(Error::SingularInformation { .. })
        ));
        // ...but a badly scaled diagonal is only a change of units: accepted.
        let units = DMatrix::from_row_slice(2, 2, &[1.0, 0.0, 0.0, 1e-15]);
        assert!(cholesky(&units, "I").is_ok());
        assert!(matches!(
            spd_inverse_factor(b, "I"),
            Err(Error::SingularInformation { .. })
        ));
        let nan = DMatrix::from_row_slice(2, 2, &[1.0, f64::NAN, f64::NAN, 1.0]);
        assert!(matches!(
            cholesky(&nan, "I"),
            Err(Error::SingularInformation { .. })
        ));
        assert!(try_cholesky(nan).is_none());
        let c = DMatrix::from_row_slice(2, 2, &[2.0, 1.0, 1.0, 2.0]);
        let inv = spd_inverse(&c, "I").unwrap();
        assert!((&c * inv - DMatrix::identity(2, 2)).abs().max() < 1e-14);
    }
}
