//! Dense linear algebra the estimator needs, built on `matrixmultiply`'s cache-blocked GEMM:
//!
//! * vector kernels ([`dot`], [`axpy`]) with a runtime-dispatched AVX2+FMA path on x86-64;
//! * a deterministic parallel weighted Gram product ([`gram`], [`gram_f32`]) — the information
//!   matrices are Gram matrices of per-sample vectors;
//! * a blocked Cholesky factorisation, a blocked triangular inverse and the products built on
//!   them ([`cholesky`], [`spd_inverse`], [`spd_inverse_factor`]), all reporting singular or
//!   ill-conditioned matrices instead of returning NaN;
//! * triangular solves for vectors ([`solve_lower`], [`solve_lower_transposed`]).
//!
//! Matrices are `nalgebra::DMatrix<f64>` at the API (column-major). Internally the blocked
//! routines work on column-major buffers with a leading dimension and call `matrixmultiply`
//! once per output tile; tiles run in parallel on the current rayon pool. Every output element
//! is computed by exactly one task, with a summation order fixed by the (thread-independent)
//! tiling, so results do not depend on the thread count.

use crate::error::{Error, Result};
use nalgebra::DMatrix;
use rayon::prelude::*;

/// Smallest acceptable reciprocal condition estimate before a matrix is called ill-conditioned.
pub const RCOND_MIN: f64 = 1e-13;

/// Bytes of the row block materialised at once by [`gram`] (the block height is derived from
/// it and the row length only, never from the thread count).
const GRAM_BLOCK_BYTES: usize = 8 << 20;
/// Output tile edge of [`gram`] and of the parallel GEMM: each tile is one task.
const TILE: usize = 256;
/// Block width of the blocked Cholesky factorisation.
const CHOL_BLOCK: usize = 256;
/// Size below which the triangular inverse is done column by column.
const TRI_BLOCK: usize = 128;

// ------------------------------------------------------------------------------------------
// Vector kernels
// ------------------------------------------------------------------------------------------

/// `c + a * b`, fused on the FMA path (one rounding), plain otherwise.
#[inline(always)]
fn madd<const FMA: bool>(a: f64, b: f64, c: f64) -> f64 {
    if FMA {
        a.mul_add(b, c)
    } else {
        a * b + c
    }
}

#[inline(always)]
fn dot_body<const FMA: bool>(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    // Eight independent accumulators in a fixed order: vectorisable and deterministic.
    let mut acc = [0.0f64; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for l in 0..8 {
            acc[l] = madd::<FMA>(x[l], y[l], acc[l]);
        }
    }
    let mut s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    for (x, y) in ra.iter().zip(rb) {
        s = madd::<FMA>(*x, *y, s);
    }
    s
}

#[inline(always)]
fn axpy_body<const FMA: bool>(alpha: f64, x: &[f64], y: &mut [f64]) {
    for (yi, xi) in y.iter_mut().zip(x) {
        *yi = madd::<FMA>(alpha, *xi, *yi);
    }
}

#[inline(always)]
fn dot_f32_body<const FMA: bool>(a: &[f64], b: &[f32]) -> f64 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0.0f64; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for l in 0..8 {
            acc[l] = madd::<FMA>(x[l], f64::from(y[l]), acc[l]);
        }
    }
    let mut s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    for (x, y) in ra.iter().zip(rb) {
        s = madd::<FMA>(*x, f64::from(*y), s);
    }
    s
}

#[inline(always)]
fn axpy_f32_body<const FMA: bool>(alpha: f64, x: &[f32], y: &mut [f64]) {
    for (yi, xi) in y.iter_mut().zip(x) {
        *yi = madd::<FMA>(alpha, f64::from(*xi), *yi);
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    //! AVX2 + FMA kernels, called only after run-time detection. Four 256-bit accumulators
    //! over 16 elements per step, combined in a fixed order, then the tail in order: the result
    //! depends only on the inputs.
    use std::arch::x86_64::*;

    #[inline(always)]
    unsafe fn hsum(a: __m256d, b: __m256d, c: __m256d, d: __m256d) -> f64 {
        let s = _mm256_add_pd(_mm256_add_pd(a, b), _mm256_add_pd(c, d));
        let lo = _mm256_castpd256_pd128(s);
        let hi = _mm256_extractf128_pd(s, 1);
        let t = _mm_add_pd(lo, hi);
        _mm_cvtsd_f64(_mm_add_sd(t, _mm_unpackhi_pd(t, t)))
    }

    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn dot(a: &[f64], b: &[f64]) -> f64 {
        let n = a.len().min(b.len());
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        let (mut s0, mut s1, mut s2, mut s3) = (
            _mm256_setzero_pd(),
            _mm256_setzero_pd(),
            _mm256_setzero_pd(),
            _mm256_setzero_pd(),
        );
        let mut i = 0;
        while i + 16 <= n {
            s0 = _mm256_fmadd_pd(_mm256_loadu_pd(pa.add(i)), _mm256_loadu_pd(pb.add(i)), s0);
            s1 = _mm256_fmadd_pd(
                _mm256_loadu_pd(pa.add(i + 4)),
                _mm256_loadu_pd(pb.add(i + 4)),
                s1,
            );
            s2 = _mm256_fmadd_pd(
                _mm256_loadu_pd(pa.add(i + 8)),
                _mm256_loadu_pd(pb.add(i + 8)),
                s2,
            );
            s3 = _mm256_fmadd_pd(
                _mm256_loadu_pd(pa.add(i + 12)),
                _mm256_loadu_pd(pb.add(i + 12)),
                s3,
            );
            i += 16;
        }
        let mut s = hsum(s0, s1, s2, s3);
        while i < n {
            s = a[i].mul_add(b[i], s);
            i += 1;
        }
        s
    }

    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn dot_f32(a: &[f64], b: &[f32]) -> f64 {
        let n = a.len().min(b.len());
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        let (mut s0, mut s1, mut s2, mut s3) = (
            _mm256_setzero_pd(),
            _mm256_setzero_pd(),
            _mm256_setzero_pd(),
            _mm256_setzero_pd(),
        );
        let mut i = 0;
        while i + 16 <= n {
            let b0 = _mm256_loadu_ps(pb.add(i));
            let b1 = _mm256_loadu_ps(pb.add(i + 8));
            s0 = _mm256_fmadd_pd(
                _mm256_loadu_pd(pa.add(i)),
                _mm256_cvtps_pd(_mm256_castps256_ps128(b0)),
                s0,
            );
            s1 = _mm256_fmadd_pd(
                _mm256_loadu_pd(pa.add(i + 4)),
                _mm256_cvtps_pd(_mm256_extractf128_ps(b0, 1)),
                s1,
            );
            s2 = _mm256_fmadd_pd(
                _mm256_loadu_pd(pa.add(i + 8)),
                _mm256_cvtps_pd(_mm256_castps256_ps128(b1)),
                s2,
            );
            s3 = _mm256_fmadd_pd(
                _mm256_loadu_pd(pa.add(i + 12)),
                _mm256_cvtps_pd(_mm256_extractf128_ps(b1, 1)),
                s3,
            );
            i += 16;
        }
        let mut s = hsum(s0, s1, s2, s3);
        while i < n {
            s = a[i].mul_add(f64::from(b[i]), s);
            i += 1;
        }
        s
    }

    /// Loads 4 consecutive row values as f64 (rows stored as f64 or f32).
    pub trait Load4: Copy {
        unsafe fn load4(p: *const Self) -> __m256d;
    }
    impl Load4 for f64 {
        #[inline(always)]
        unsafe fn load4(p: *const f64) -> __m256d {
            _mm256_loadu_pd(p)
        }
    }
    impl Load4 for f32 {
        #[inline(always)]
        unsafe fn load4(p: *const f32) -> __m256d {
            _mm256_cvtps_pd(_mm_loadu_ps(p))
        }
    }

    /// `(a . x0, a . x1)`, each with exactly the operations of `dot` / `dot_f32` (four
    /// accumulators over 16-element steps, then the tail): bit-identical to two single calls.
    #[inline(always)]
    pub unsafe fn dot2_body<T: Load4 + Into<f64>>(a: &[f64], x0: &[T], x1: &[T]) -> (f64, f64) {
        let n = a.len().min(x0.len()).min(x1.len());
        let (pa, p0, p1) = (a.as_ptr(), x0.as_ptr(), x1.as_ptr());
        let z = _mm256_setzero_pd();
        let (mut s0, mut s1, mut s2, mut s3) = (z, z, z, z);
        let (mut t0, mut t1, mut t2, mut t3) = (z, z, z, z);
        let mut i = 0;
        while i + 16 <= n {
            let a0 = _mm256_loadu_pd(pa.add(i));
            let a1 = _mm256_loadu_pd(pa.add(i + 4));
            let a2 = _mm256_loadu_pd(pa.add(i + 8));
            let a3 = _mm256_loadu_pd(pa.add(i + 12));
            s0 = _mm256_fmadd_pd(a0, T::load4(p0.add(i)), s0);
            s1 = _mm256_fmadd_pd(a1, T::load4(p0.add(i + 4)), s1);
            s2 = _mm256_fmadd_pd(a2, T::load4(p0.add(i + 8)), s2);
            s3 = _mm256_fmadd_pd(a3, T::load4(p0.add(i + 12)), s3);
            t0 = _mm256_fmadd_pd(a0, T::load4(p1.add(i)), t0);
            t1 = _mm256_fmadd_pd(a1, T::load4(p1.add(i + 4)), t1);
            t2 = _mm256_fmadd_pd(a2, T::load4(p1.add(i + 8)), t2);
            t3 = _mm256_fmadd_pd(a3, T::load4(p1.add(i + 12)), t3);
            i += 16;
        }
        let (mut u, mut v) = (hsum(s0, s1, s2, s3), hsum(t0, t1, t2, t3));
        while i < n {
            u = a[i].mul_add(x0[i].into(), u);
            v = a[i].mul_add(x1[i].into(), v);
            i += 1;
        }
        (u, v)
    }

    /// `y += c0 x0` then `y += c1 x1`, element by element: bit-identical to two `axpy` calls.
    #[inline(always)]
    pub unsafe fn axpy2_body<T: Load4 + Into<f64>>(
        c0: f64,
        x0: &[T],
        c1: f64,
        x1: &[T],
        y: &mut [f64],
    ) {
        let n = y.len().min(x0.len()).min(x1.len());
        let (p0, p1, py) = (x0.as_ptr(), x1.as_ptr(), y.as_mut_ptr());
        let (v0, v1) = (_mm256_set1_pd(c0), _mm256_set1_pd(c1));
        let mut i = 0;
        while i + 8 <= n {
            let y0 = _mm256_fmadd_pd(v0, T::load4(p0.add(i)), _mm256_loadu_pd(py.add(i)));
            let y1 = _mm256_fmadd_pd(v0, T::load4(p0.add(i + 4)), _mm256_loadu_pd(py.add(i + 4)));
            _mm256_storeu_pd(py.add(i), _mm256_fmadd_pd(v1, T::load4(p1.add(i)), y0));
            _mm256_storeu_pd(
                py.add(i + 4),
                _mm256_fmadd_pd(v1, T::load4(p1.add(i + 4)), y1),
            );
            i += 8;
        }
        while i < n {
            let t = c0.mul_add(x0[i].into(), y[i]);
            y[i] = c1.mul_add(x1[i].into(), t);
            i += 1;
        }
    }

    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn dot2<T: Load4 + Into<f64>>(a: &[f64], x0: &[T], x1: &[T]) -> (f64, f64) {
        dot2_body(a, x0, x1)
    }

    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn axpy2<T: Load4 + Into<f64>>(c0: f64, x0: &[T], c1: f64, x1: &[T], y: &mut [f64]) {
        axpy2_body(c0, x0, c1, x1, y)
    }

    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn axpy(alpha: f64, x: &[f64], y: &mut [f64]) {
        let n = x.len().min(y.len());
        let (px, py) = (x.as_ptr(), y.as_mut_ptr());
        let va = _mm256_set1_pd(alpha);
        let mut i = 0;
        while i + 8 <= n {
            let y0 = _mm256_fmadd_pd(va, _mm256_loadu_pd(px.add(i)), _mm256_loadu_pd(py.add(i)));
            let y1 = _mm256_fmadd_pd(
                va,
                _mm256_loadu_pd(px.add(i + 4)),
                _mm256_loadu_pd(py.add(i + 4)),
            );
            _mm256_storeu_pd(py.add(i), y0);
            _mm256_storeu_pd(py.add(i + 4), y1);
            i += 8;
        }
        while i < n {
            y[i] = alpha.mul_add(x[i], y[i]);
            i += 1;
        }
    }

    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn axpy_f32(alpha: f64, x: &[f32], y: &mut [f64]) {
        let n = x.len().min(y.len());
        let (px, py) = (x.as_ptr(), y.as_mut_ptr());
        let va = _mm256_set1_pd(alpha);
        let mut i = 0;
        while i + 8 <= n {
            let xv = _mm256_loadu_ps(px.add(i));
            let y0 = _mm256_fmadd_pd(
                va,
                _mm256_cvtps_pd(_mm256_castps256_ps128(xv)),
                _mm256_loadu_pd(py.add(i)),
            );
            let y1 = _mm256_fmadd_pd(
                va,
                _mm256_cvtps_pd(_mm256_extractf128_ps(xv, 1)),
                _mm256_loadu_pd(py.add(i + 4)),
            );
            _mm256_storeu_pd(py.add(i), y0);
            _mm256_storeu_pd(py.add(i + 4), y1);
            i += 8;
        }
        while i < n {
            y[i] = alpha.mul_add(f64::from(x[i]), y[i]);
            i += 1;
        }
    }
}

/// True when the AVX2 + FMA kernels can run on this CPU (detected once, cached by std).
#[inline]
pub fn has_fma() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Dot product of two slices (over the shorter length). Fixed summation order: the result
/// depends only on the inputs and on whether the CPU has FMA (detected at run time).
#[inline]
pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    #[cfg(target_arch = "x86_64")]
    if has_fma() {
        // SAFETY: the CPU supports AVX2 and FMA (checked just above).
        return unsafe { x86::dot(a, b) };
    }
    dot_body::<false>(a, b)
}

/// `y += alpha * x` (over the shorter length).
#[inline]
pub fn axpy(alpha: f64, x: &[f64], y: &mut [f64]) {
    #[cfg(target_arch = "x86_64")]
    if has_fma() {
        // SAFETY: the CPU supports AVX2 and FMA (checked just above).
        return unsafe { x86::axpy(alpha, x, y) };
    }
    axpy_body::<false>(alpha, x, y)
}

/// Dot product of an `f64` slice with an `f32` slice, accumulated in `f64`.
#[inline]
pub fn dot_f32(a: &[f64], b: &[f32]) -> f64 {
    #[cfg(target_arch = "x86_64")]
    if has_fma() {
        // SAFETY: the CPU supports AVX2 and FMA (checked just above).
        return unsafe { x86::dot_f32(a, b) };
    }
    dot_f32_body::<false>(a, b)
}

/// `y += alpha * x` for an `f32` slice `x` accumulated into `f64`.
#[inline]
pub fn axpy_f32(alpha: f64, x: &[f32], y: &mut [f64]) {
    #[cfg(target_arch = "x86_64")]
    if has_fma() {
        // SAFETY: the CPU supports AVX2 and FMA (checked just above).
        return unsafe { x86::axpy_f32(alpha, x, y) };
    }
    axpy_f32_body::<false>(alpha, x, y)
}

/// Element types a feature matrix may be stored in (`f64`, `f32`). Row kernels take an `f64`
/// vector and a stored row and accumulate in `f64`.
pub trait Element: Copy + Send + Sync + 'static {
    /// `a . row` in `f64`.
    fn dot_row(a: &[f64], row: &[Self]) -> f64;
    /// `y += alpha * row` in `f64`.
    fn axpy_row(alpha: f64, row: &[Self], y: &mut [f64]);
    /// The value in `f64` (exact).
    fn widen(self) -> f64;
    /// `(a . x0, a . x1)` for two rows: bit-identical to two [`Element::dot_row`] calls,
    /// with `a` read once.
    fn dot_row2(a: &[f64], x0: &[Self], x1: &[Self]) -> (f64, f64);
    /// `y += c0 x0; y += c1 x1`: bit-identical to two [`Element::axpy_row`] calls, with `y`
    /// read and written once.
    fn axpy_row2(c0: f64, x0: &[Self], c1: f64, x1: &[Self], y: &mut [f64]);
}

impl Element for f64 {
    #[inline]
    fn dot_row(a: &[f64], row: &[f64]) -> f64 {
        dot(a, row)
    }
    #[inline]
    fn axpy_row(alpha: f64, row: &[f64], y: &mut [f64]) {
        axpy(alpha, row, y)
    }
    #[inline]
    fn widen(self) -> f64 {
        self
    }
    #[inline]
    fn dot_row2(a: &[f64], x0: &[f64], x1: &[f64]) -> (f64, f64) {
        #[cfg(target_arch = "x86_64")]
        if has_fma() {
            // SAFETY: the CPU supports AVX2 and FMA (checked just above).
            return unsafe { x86::dot2(a, x0, x1) };
        }
        (dot(a, x0), dot(a, x1))
    }
    #[inline]
    fn axpy_row2(c0: f64, x0: &[f64], c1: f64, x1: &[f64], y: &mut [f64]) {
        #[cfg(target_arch = "x86_64")]
        if has_fma() {
            // SAFETY: the CPU supports AVX2 and FMA (checked just above).
            return unsafe { x86::axpy2(c0, x0, c1, x1, y) };
        }
        axpy(c0, x0, y);
        axpy(c1, x1, y);
    }
}

impl Element for f32 {
    #[inline]
    fn dot_row(a: &[f64], row: &[f32]) -> f64 {
        dot_f32(a, row)
    }
    #[inline]
    fn axpy_row(alpha: f64, row: &[f32], y: &mut [f64]) {
        axpy_f32(alpha, row, y)
    }
    #[inline]
    fn widen(self) -> f64 {
        f64::from(self)
    }
    #[inline]
    fn dot_row2(a: &[f64], x0: &[f32], x1: &[f32]) -> (f64, f64) {
        #[cfg(target_arch = "x86_64")]
        if has_fma() {
            // SAFETY: the CPU supports AVX2 and FMA (checked just above).
            return unsafe { x86::dot2(a, x0, x1) };
        }
        (dot_f32(a, x0), dot_f32(a, x1))
    }
    #[inline]
    fn axpy_row2(c0: f64, x0: &[f32], c1: f64, x1: &[f32], y: &mut [f64]) {
        #[cfg(target_arch = "x86_64")]
        if has_fma() {
            // SAFETY: the CPU supports AVX2 and FMA (checked just above).
            return unsafe { x86::axpy2(c0, x0, c1, x1, y) };
        }
        axpy_f32(c0, x0, y);
        axpy_f32(c1, x1, y);
    }
}

// ------------------------------------------------------------------------------------------
// GEMM on strided views
// ------------------------------------------------------------------------------------------

/// A strided read-only matrix: element `(i, j)` at `ptr + i * rs + j * cs`.
#[derive(Clone, Copy)]
pub(crate) struct View<T> {
    pub ptr: *const T,
    pub rs: isize,
    pub cs: isize,
}

/// A strided writable matrix: element `(i, j)` at `ptr + i * rs + j * cs`.
#[derive(Clone, Copy)]
pub(crate) struct ViewMut<T> {
    pub ptr: *mut T,
    pub rs: isize,
    pub cs: isize,
}

// SAFETY: views are plain pointers; every parallel user below writes disjoint tiles of a
// `ViewMut` and only reads through `View`s whose buffers outlive the parallel scope.
unsafe impl<T> Send for View<T> {}
unsafe impl<T> Sync for View<T> {}
unsafe impl<T> Send for ViewMut<T> {}
unsafe impl<T> Sync for ViewMut<T> {}

impl<T> View<T> {
    /// The view of the sub-matrix starting at `(i, j)`.
    ///
    /// # Safety
    /// `(i, j)` must lie inside the viewed buffer.
    pub unsafe fn at(self, i: usize, j: usize) -> Self {
        View {
            ptr: self.ptr.offset(i as isize * self.rs + j as isize * self.cs),
            ..self
        }
    }
    /// The transposed view.
    pub fn t(self) -> Self {
        View {
            ptr: self.ptr,
            rs: self.cs,
            cs: self.rs,
        }
    }
}

impl<T> ViewMut<T> {
    /// The view of the sub-matrix starting at `(i, j)`.
    ///
    /// # Safety
    /// `(i, j)` must lie inside the viewed buffer.
    pub unsafe fn at(self, i: usize, j: usize) -> Self {
        ViewMut {
            ptr: self.ptr.offset(i as isize * self.rs + j as isize * self.cs),
            ..self
        }
    }
    /// The same matrix, read-only.
    pub fn view(self) -> View<T> {
        View {
            ptr: self.ptr,
            rs: self.rs,
            cs: self.cs,
        }
    }
}

/// Column-major view of a buffer with leading dimension `ld`.
pub(crate) fn col_major<T>(ptr: *const T, ld: usize) -> View<T> {
    View {
        ptr,
        rs: 1,
        cs: ld as isize,
    }
}

/// Column-major writable view of a buffer with leading dimension `ld`.
pub(crate) fn col_major_mut<T>(ptr: *mut T, ld: usize) -> ViewMut<T> {
    ViewMut {
        ptr,
        rs: 1,
        cs: ld as isize,
    }
}

/// Scalars `matrixmultiply` has a GEMM for.
pub(crate) trait Scalar: Copy + Send + Sync + Default + 'static {
    /// `C = alpha A B + beta C` (`m x k` times `k x n`).
    ///
    /// # Safety
    /// The views must cover `m x k`, `k x n` and `m x n` valid elements; `c` must not alias
    /// `a` or `b`.
    #[allow(clippy::too_many_arguments)]
    unsafe fn gemm(
        m: usize,
        k: usize,
        n: usize,
        alpha: Self,
        a: View<Self>,
        b: View<Self>,
        beta: Self,
        c: ViewMut<Self>,
    );
    /// Conversion from `f64`.
    fn from_f64(v: f64) -> Self;
    /// Conversion to `f64`.
    fn to_f64(self) -> f64;
}

impl Scalar for f64 {
    unsafe fn gemm(
        m: usize,
        k: usize,
        n: usize,
        alpha: f64,
        a: View<f64>,
        b: View<f64>,
        beta: f64,
        c: ViewMut<f64>,
    ) {
        matrixmultiply::dgemm(
            m, k, n, alpha, a.ptr, a.rs, a.cs, b.ptr, b.rs, b.cs, beta, c.ptr, c.rs, c.cs,
        );
    }
    fn from_f64(v: f64) -> Self {
        v
    }
    fn to_f64(self) -> f64 {
        self
    }
}

impl Scalar for f32 {
    unsafe fn gemm(
        m: usize,
        k: usize,
        n: usize,
        alpha: f32,
        a: View<f32>,
        b: View<f32>,
        beta: f32,
        c: ViewMut<f32>,
    ) {
        matrixmultiply::sgemm(
            m, k, n, alpha, a.ptr, a.rs, a.cs, b.ptr, b.rs, b.cs, beta, c.ptr, c.rs, c.cs,
        );
    }
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
}

/// `C = alpha A B + beta C` split into `TILE x TILE` output tiles computed in parallel on the
/// current rayon pool (each tile by one task over the full `k`: thread-count independent).
///
/// # Safety
/// As [`Scalar::gemm`].
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn par_gemm<T: Scalar>(
    m: usize,
    k: usize,
    n: usize,
    alpha: T,
    a: View<T>,
    b: View<T>,
    beta: T,
    c: ViewMut<T>,
) {
    if m == 0 || n == 0 {
        return;
    }
    let (mt, nt) = (m.div_ceil(TILE), n.div_ceil(TILE));
    if mt * nt == 1 {
        T::gemm(m, k, n, alpha, a, b, beta, c);
        return;
    }
    (0..mt * nt).into_par_iter().for_each(|t| {
        let (i, j) = ((t / nt) * TILE, (t % nt) * TILE);
        let (mm, nn) = (TILE.min(m - i), TILE.min(n - j));
        // SAFETY: the tile lies inside the caller's views; tiles are disjoint in `c`.
        unsafe { T::gemm(mm, k, nn, alpha, a.at(i, 0), b.at(0, j), beta, c.at(i, j)) };
    });
}

// ------------------------------------------------------------------------------------------
// Gram products
// ------------------------------------------------------------------------------------------

/// Rows materialised per block for row length `p`: depends on `p` only.
fn gram_block_rows<T>(p: usize) -> usize {
    (GRAM_BLOCK_BYTES / (std::mem::size_of::<T>() * p.max(1))).clamp(64, 4096)
}

/// Largest diagonal block of [`gram`]'s recursive split (computed in full, both halves).
/// 256 measured faster than 160 (fewer small GEMMs) at d1 = 2048.
const GRAM_LEAF: usize = 256;
/// Largest edge of one GEMM task of [`gram`] (bigger blocks are split, for parallelism).
const GRAM_TASK: usize = 512;

/// The GEMM tasks `(i, j, m, k)` — output rows `i..i+m`, columns `j..j+k` — that cover the
/// upper triangle of a `p x p` Gram product, as in a recursive SYRK: the range is halved until
/// the diagonal blocks are at most [`GRAM_LEAF`] wide (computed in full), and each half-split
/// adds one off-diagonal block (cut into tasks of at most [`GRAM_TASK`] a side). Also returns
/// the diagonal leaves' starts. Depends on `p` only. Largest tasks first.
/// One GEMM task of a Gram product: output rows `i..i+m`, columns `j..j+k`.
type GramTask = (usize, usize, usize, usize);

fn gram_tasks(p: usize) -> (Vec<GramTask>, Vec<usize>) {
    fn split(i0: usize, len: usize, tasks: &mut Vec<GramTask>, leaves: &mut Vec<usize>) {
        if len <= GRAM_LEAF {
            leaves.push(i0);
            tasks.push((i0, i0, len, len));
            return;
        }
        let h = (len / 2).div_ceil(8) * 8;
        split(i0, h, tasks, leaves);
        split(i0 + h, len - h, tasks, leaves);
        let (rows, cols) = (h, len - h);
        let (rt, ct) = (rows.div_ceil(GRAM_TASK), cols.div_ceil(GRAM_TASK));
        for a in 0..rt {
            for b in 0..ct {
                let (r0, c0) = (a * rows / rt, b * cols / ct);
                let (r1, c1) = ((a + 1) * rows / rt, (b + 1) * cols / ct);
                tasks.push((i0 + r0, i0 + h + c0, r1 - r0, c1 - c0));
            }
        }
    }
    let (mut tasks, mut leaves) = (Vec::new(), Vec::new());
    if p > 0 {
        split(0, p, &mut tasks, &mut leaves);
    }
    tasks.sort_by_key(|&(i, j, m, k)| (std::cmp::Reverse(m * k), i, j));
    leaves.sort_unstable();
    (tasks, leaves)
}

/// `sum_i a_i a_i^T` in precision `T` for rows produced by `fill_row`, upper triangle (and
/// full diagonal leaves) only, accumulated into the zeroed row-major `p x p` buffer `out`;
/// returns the leaves' starts.
fn gram_upper<T: Scalar, F>(n: usize, p: usize, out: &mut [T], fill_row: F) -> Vec<usize>
where
    F: Fn(usize, &mut [T]) + Sync,
{
    assert_eq!(out.len(), p * p, "gram output is p x p");
    let (tasks, leaves) = gram_tasks(p);
    if p == 0 {
        return leaves;
    }
    let kb = gram_block_rows::<T>(p);
    let mut block = vec![T::default(); kb.min(n) * p];
    let c = ViewMut {
        ptr: out.as_mut_ptr(),
        rs: p as isize,
        cs: 1,
    };
    for start in (0..n).step_by(kb) {
        let rows = kb.min(n - start);
        block[..rows * p]
            .par_chunks_mut(p)
            .enumerate()
            .for_each(|(r, row)| fill_row(start + r, row));
        // A = block^T (p x rows), B = block (rows x p); both read from the row-major block.
        let at = View {
            ptr: block.as_ptr(),
            rs: 1,
            cs: p as isize,
        };
        let b = at.t();
        tasks.par_iter().for_each(|&(i, j, m, k)| {
            // SAFETY: A^T[i..i+m, :] and A[:, j..j+k] lie inside the block (rows x p,
            // row-major); the output block lies inside `out` (p x p) and is written by this
            // task only (the tasks are disjoint).
            unsafe {
                T::gemm(
                    m,
                    rows,
                    k,
                    T::from_f64(1.0),
                    at.at(i, 0),
                    b.at(0, j),
                    T::from_f64(1.0),
                    c.at(i, j),
                )
            };
        });
    }
    leaves
}

/// Completes an upper-triangle Gram buffer (row-major `p x p`) in place: elements outside the
/// diagonal leaves are copied from above the diagonal, those inside a leaf (computed twice)
/// are averaged with their transpose (exact symmetry); everything is divided by `scale`.
fn finish_gram_in_place<T: Scalar>(out: &mut [T], p: usize, leaves: &[usize], scale: f64) {
    let mut leaf_of = vec![0usize; p];
    for (l, w) in leaves.windows(2).enumerate() {
        leaf_of[w[0]..w[1]].fill(l);
    }
    if let Some(&last) = leaves.last() {
        leaf_of[last..].fill(leaves.len() - 1);
    }
    for i in 0..p {
        for j in i..p {
            let v = if leaf_of[i] == leaf_of[j] {
                0.5 * (out[i * p + j].to_f64() + out[j * p + i].to_f64())
            } else {
                out[i * p + j].to_f64()
            } / scale;
            out[i * p + j] = T::from_f64(v);
            out[j * p + i] = T::from_f64(v);
        }
    }
}

/// `sum_i a_i a_i^T / scale` for rows `a_i` (length `p`) produced by `fill_row(i, &mut a_i)`,
/// `i in 0..n`. Returns a symmetric `p x p` matrix.
///
/// Rows are materialised in blocks (height fixed by `p`) and multiplied with
/// `matrixmultiply::dgemm` over the upper triangle split as a recursive SYRK (diagonal leaves
/// of at most 256, off-diagonal blocks cut into tasks of at most 512 a side: ~6% more flops
/// than the triangle at p = 2086); tasks run in parallel on the current rayon pool. Each output
/// element is accumulated by one task in row-block order, so the result does not depend on
/// the thread count.
pub fn gram<F>(n: usize, p: usize, scale: f64, fill_row: F) -> DMatrix<f64>
where
    F: Fn(usize, &mut [f64]) + Sync,
{
    let mut out = vec![0.0f64; p * p];
    let leaves = gram_upper::<f64, F>(n, p, &mut out, fill_row);
    finish_gram_in_place(&mut out, p, &leaves, scale);
    // Symmetric: the row-major buffer is also the column-major matrix.
    DMatrix::from_vec(p, p, out)
}

/// [`gram`] in single precision (`f32` rows, `f32` GEMM, about 2.3x faster): for
/// preconditioners and other places where ~1e-5 relative accuracy is enough.
pub fn gram_f32<F>(n: usize, p: usize, scale: f64, fill_row: F) -> DMatrix<f64>
where
    F: Fn(usize, &mut [f32]) + Sync,
{
    // The f32 products are accumulated in the first half of the f64 result's buffer, then
    // widened in place from the end: no second p x p buffer.
    let mut out = vec![0.0f64; p * p];
    {
        // SAFETY: the buffer holds p^2 f64 = 2 p^2 f32 (alignment 8 >= 4), zero bits are 0.0f32,
        // and `narrow` is the only view of it until it is dropped at the end of this block.
        let narrow: &mut [f32] =
            unsafe { std::slice::from_raw_parts_mut(out.as_mut_ptr().cast::<f32>(), p * p) };
        let leaves = gram_upper::<f32, F>(n, p, narrow, fill_row);
        finish_gram_in_place(narrow, p, &leaves, scale);
    }
    let base = out.as_mut_ptr();
    for i in (0..p * p).rev() {
        // SAFETY: f32 element i (bytes 4i..4i+4) is read before f64 element i (bytes 8i..8i+8)
        // is written; the latter overlaps only f32 elements 2i and 2i + 1, which are >= i and so
        // already widened (descending order) — or i itself when i = 0, read just before.
        unsafe {
            let v = f64::from(*base.cast::<f32>().add(i));
            *base.add(i) = v;
        }
    }
    DMatrix::from_vec(p, p, out)
}

// ------------------------------------------------------------------------------------------
// Cholesky, triangular inverse, SPD inverse
// ------------------------------------------------------------------------------------------

/// Unblocked right-looking Cholesky of the `kb x kb` block at `(k0, k0)` of a column-major
/// buffer (lower triangle read and written). Errors with the offending global index.
fn potf2(a: &mut [f64], ld: usize, k0: usize, kb: usize) -> std::result::Result<(), usize> {
    for j in 0..kb {
        let cj = (k0 + j) * ld + k0;
        let d = a[cj + j];
        // `!(d > 0)` also catches NaN.
        if d.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) || !d.is_finite() {
            return Err(k0 + j);
        }
        let l = d.sqrt();
        a[cj + j] = l;
        let inv = 1.0 / l;
        for v in &mut a[cj + j + 1..cj + kb] {
            *v *= inv;
        }
        for c in j + 1..kb {
            let cc = (k0 + c) * ld + k0;
            let f = -a[cj + c];
            let (left, right) = a.split_at_mut(cc);
            axpy(f, &left[cj + c..cj + kb], &mut right[c..kb]);
        }
    }
    Ok(())
}

/// Unblocked in-place inverse of the lower-triangular `n x n` block at `(k0, k0)`.
/// The strict upper triangle of the block must be zero (it stays zero).
fn trti2(a: &mut [f64], ld: usize, k0: usize, n: usize, tmp: &mut Vec<f64>) {
    for j in (0..n).rev() {
        let cj = (k0 + j) * ld + k0;
        let ajj = 1.0 / a[cj + j];
        a[cj + j] = ajj;
        let m = n - j - 1;
        if m == 0 {
            continue;
        }
        // column j below the diagonal <- -ajj * X22 * L[j+1.., j], X22 = already inverted.
        tmp.clear();
        tmp.resize(m, 0.0);
        for c in 0..m {
            let lc = a[cj + j + 1 + c];
            if lc != 0.0 {
                let cc = (k0 + j + 1 + c) * ld + k0 + j + 1;
                axpy(lc, &a[cc + c..cc + m], &mut tmp[c..m]);
            }
        }
        for (dst, t) in a[cj + j + 1..cj + n].iter_mut().zip(tmp.iter()) {
            *dst = -ajj * t;
        }
    }
}

/// Blocked (recursive) in-place inverse of the lower-triangular `n x n` block at `(k0, k0)`,
/// strict upper triangle zero.
fn trtri(a: &mut [f64], ld: usize, k0: usize, n: usize, tmp: &mut Vec<f64>) {
    if n <= TRI_BLOCK {
        trti2(a, ld, k0, n, tmp);
        return;
    }
    let h = (n / 2).div_ceil(64) * 64;
    trtri(a, ld, k0, h, tmp);
    trtri(a, ld, k0 + h, n - h, tmp);
    let r = n - h;
    // T = L21 * X11  (r x h), then X21 = -X22 * T written over L21.
    let mut t = vec![0.0; r * h];
    let basem = col_major_mut(a.as_mut_ptr(), ld);
    let base = basem.view();
    // SAFETY: all blocks lie inside the n x n block at (k0, k0) of `a`; `t` is a separate
    // buffer; the final GEMM writes L21's block, which it does not read (it reads X22 and T).
    unsafe {
        par_gemm(
            r,
            h,
            h,
            1.0,
            base.at(k0 + h, k0),
            base.at(k0, k0),
            0.0,
            col_major_mut(t.as_mut_ptr(), r),
        );
        par_gemm(
            r,
            r,
            h,
            -1.0,
            base.at(k0 + h, k0 + h),
            col_major(t.as_ptr(), r),
            0.0,
            basem.at(k0 + h, k0),
        );
    }
}

/// Blocked in-place lower Cholesky factorisation of the `n x n` column-major buffer `a`
/// (leading dimension `ld`); only the lower triangle is read. On success the strict upper
/// triangle is zeroed. Errors with the first index whose pivot is not positive.
fn potrf(a: &mut [f64], n: usize, ld: usize) -> std::result::Result<(), usize> {
    let mut inv11 = vec![0.0; CHOL_BLOCK * CHOL_BLOCK];
    let mut panel: Vec<f64> = Vec::new();
    let mut tmp = Vec::new();
    let mut k0 = 0;
    while k0 < n {
        let kb = CHOL_BLOCK.min(n - k0);
        potf2(a, ld, k0, kb)?;
        let rest = n - k0 - kb;
        if rest > 0 {
            // inv11 = L11^-1 (kb x kb, lower, ld = kb).
            inv11[..kb * kb].fill(0.0);
            for j in 0..kb {
                for i in j..kb {
                    inv11[j * kb + i] = a[(k0 + j) * ld + k0 + i];
                }
            }
            trti2(&mut inv11, kb, 0, kb, &mut tmp);
            // Panel: A21 <- A21 L11^-T.
            panel.clear();
            panel.resize(rest * kb, 0.0);
            for j in 0..kb {
                let src = (k0 + j) * ld + k0 + kb;
                panel[j * rest..(j + 1) * rest].copy_from_slice(&a[src..src + rest]);
            }
            let am = col_major_mut(a.as_mut_ptr(), ld);
            // SAFETY: the panel copy and inv11 are separate buffers; the output is A21.
            unsafe {
                par_gemm(
                    rest,
                    kb,
                    kb,
                    1.0,
                    col_major(panel.as_ptr(), rest),
                    col_major(inv11.as_ptr(), kb).t(),
                    0.0,
                    am.at(k0 + kb, k0),
                );
            }
            // Trailing update on lower tiles: A22 -= A21 A21^T.
            let s = k0 + kb;
            let starts: Vec<usize> = (0..rest).step_by(TILE).collect();
            let mut tiles = Vec::new();
            for (ai, &i) in starts.iter().enumerate() {
                for &j in &starts[..=ai] {
                    tiles.push((i, j));
                }
            }
            let a21 = am.view();
            tiles.par_iter().for_each(|&(ti, tj)| {
                let (mm, nn) = (TILE.min(rest - ti), TILE.min(rest - tj));
                // SAFETY: reads A21 (columns k0..k0+kb), writes the disjoint tile
                // (s+ti, s+tj) of A22 (columns >= s): no overlap between reads and writes.
                unsafe {
                    f64::gemm(
                        mm,
                        kb,
                        nn,
                        -1.0,
                        a21.at(s + ti, k0),
                        a21.at(s + tj, k0).t(),
                        1.0,
                        am.at(s + ti, s + tj),
                    )
                };
            });
        }
        k0 += kb;
    }
    for j in 1..n {
        a[j * ld..j * ld + j].fill(0.0);
    }
    Ok(())
}

/// Lower Cholesky factor of a symmetric matrix without the condition check, `None` if it is
/// not numerically positive definite (for preconditioners, where any SPD factor will do).
pub fn try_cholesky(a: DMatrix<f64>) -> Option<DMatrix<f64>> {
    let n = a.nrows();
    let mut a = a;
    if a.iter().any(|v| !v.is_finite()) {
        return None;
    }
    potrf(a.as_mut_slice(), n, n).ok()?;
    Some(a)
}

/// Reciprocal condition estimate of the matrix whose diagonal was `diag` and whose Cholesky
/// factor now sits in the lower triangle of `a`: `(min_j r_j / max_j r_j)^2` with
/// `r_j = L_jj / sqrt(a_jj)`, the diagonal of the factor of the Jacobi-equilibrated matrix
/// `D^-1/2 A D^-1/2`. Unlike `L_jj` alone it does not change with the units of the features
/// (a feature in millimetres instead of kilometres), only with genuine near-collinearity.
fn rcond_of_factor(a: &[f64], diag: &[f64], ld: usize) -> f64 {
    let (lo, hi) = diag
        .iter()
        .enumerate()
        .map(|(j, d)| a[j * ld + j] / d.sqrt())
        .fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    (lo / hi).powi(2)
}

/// Factors in place, with the finiteness, positive-definiteness and condition checks of
/// [`cholesky`].
fn checked_potrf(a: &mut [f64], n: usize, ld: usize, what: &str) -> Result<()> {
    let diag: Vec<f64> = (0..n).map(|j| a[j * ld + j]).collect();
    potrf(a, n, ld).map_err(|j| Error::SingularInformation {
        detail: format!("{what} is not positive definite (pivot {j})"),
    })?;
    let rcond = rcond_of_factor(a, &diag, ld);
    if rcond.is_nan() || rcond < RCOND_MIN {
        return Err(Error::SingularInformation {
            detail: format!(
                "{what} is ill-conditioned (reciprocal condition estimate {rcond:.3e} < {RCOND_MIN:.0e})"
            ),
        });
    }
    Ok(())
}

fn check_all_finite(a: &DMatrix<f64>, what: &str) -> Result<()> {
    if a.iter().any(|v| !v.is_finite()) {
        return Err(Error::SingularInformation {
            detail: format!("{what} has non-finite entries"),
        });
    }
    Ok(())
}

/// Lower Cholesky factor `L` (`a = L L^T`) of a symmetric positive-definite matrix, with a
/// reciprocal-condition check. `what` names the matrix in the error message. Only the lower
/// triangle of `a` is read. Blocked (GEMM-based) and parallel on the current rayon pool;
/// the result does not depend on the thread count.
///
/// Errors with [`Error::SingularInformation`] when `a` has non-finite entries, the
/// factorisation fails (not positive definite) or the estimate `(min L_jj / max L_jj)^2` is
/// below [`RCOND_MIN`].
pub fn cholesky(a: &DMatrix<f64>, what: &str) -> Result<DMatrix<f64>> {
    check_all_finite(a, what)?;
    let n = a.nrows();
    let mut l = a.clone();
    checked_potrf(l.as_mut_slice(), n, n, what)?;
    Ok(l)
}

/// In-place inverse of a lower-triangular matrix (column-major, leading dimension `ld`,
/// strict upper triangle zero).
fn tri_inverse_in_place(a: &mut [f64], n: usize, ld: usize) {
    let mut tmp = Vec::new();
    trtri(a, ld, 0, n, &mut tmp);
}

/// Inverse of a symmetric positive-definite matrix via its Cholesky factor (checked as
/// [`cholesky`]): `a^-1 = L^-T L^-1`. The result is exactly symmetric.
pub fn spd_inverse(a: &DMatrix<f64>, what: &str) -> Result<DMatrix<f64>> {
    let x = cholesky(a, what)?;
    let n = x.nrows();
    let mut x = x;
    tri_inverse_in_place(x.as_mut_slice(), n, n);
    let mut inv = DMatrix::<f64>::zeros(n, n);
    let xv = col_major(x.as_slice().as_ptr(), n);
    // SAFETY: x and inv are separate n x n buffers.
    unsafe {
        par_gemm(
            n,
            n,
            n,
            1.0,
            xv.t(),
            xv,
            0.0,
            col_major_mut(inv.as_mut_slice().as_mut_ptr(), n),
        );
    }
    symmetrize(&mut inv);
    Ok(inv)
}

/// Maps the lower triangle of an `n x n` column-major buffer through `(i, j) -> (n-1-j,
/// n-1-i)` (the transpose across the anti-diagonal), in place.
fn anti_transpose_lower(a: &mut [f64], n: usize, ld: usize) {
    for j in 0..n {
        for i in j..n {
            let (i2, j2) = (n - 1 - j, n - 1 - i);
            // Visit each pair once: (i, j) before its image in column-major order.
            if (j, i) < (j2, i2) {
                a.swap(j * ld + i, j2 * ld + i2);
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
pub fn spd_inverse_factor(a: DMatrix<f64>, what: &str) -> Result<DMatrix<f64>> {
    check_all_finite(&a, what)?;
    let n = a.nrows();
    let mut a = a;
    let s = a.as_mut_slice();
    anti_transpose_lower(s, n, n);
    checked_potrf(s, n, n, what)?;
    tri_inverse_in_place(s, n, n);
    // X = R^-1 is lower; J X^T J is its anti-transpose.
    anti_transpose_lower(s, n, n);
    Ok(a)
}

/// Solves `L x = b` in place (`L` lower triangular, column-major `n x n`, leading dimension
/// `ld`); `x` holds `b` on entry.
pub fn solve_lower(l: &[f64], n: usize, ld: usize, x: &mut [f64]) {
    for j in 0..n {
        let c = j * ld;
        x[j] /= l[c + j];
        let xj = x[j];
        if xj != 0.0 {
            let (_, rest) = x.split_at_mut(j + 1);
            axpy(-xj, &l[c + j + 1..c + n], &mut rest[..n - j - 1]);
        }
    }
}

/// Solves `L^T x = b` in place (`L` as in [`solve_lower`]).
pub fn solve_lower_transposed(l: &[f64], n: usize, ld: usize, x: &mut [f64]) {
    for j in (0..n).rev() {
        let c = j * ld;
        let s = dot(&l[c + j + 1..c + n], &x[j + 1..n]);
        x[j] = (x[j] - s) / l[c + j];
    }
}

/// Rows per task of the parallel triangular matrix-vector products.
const MATVEC_ROWS: usize = 128;

/// `y = X v` for a lower-triangular `X` (`DMatrix`, column-major, `n x n`). Parallel over
/// fixed blocks of output rows on the current rayon pool (thread-count independent).
pub fn lower_matvec(x: &DMatrix<f64>, v: &[f64]) -> Vec<f64> {
    let n = x.nrows();
    let xs = x.as_slice();
    let mut y = vec![0.0; n];
    y.par_chunks_mut(MATVEC_ROWS)
        .enumerate()
        .for_each(|(b, out)| {
            let r0 = b * MATVEC_ROWS;
            let r1 = r0 + out.len();
            for (j, &vj) in v.iter().enumerate().take(r1) {
                if vj != 0.0 {
                    let start = r0.max(j);
                    axpy(vj, &xs[j * n + start..j * n + r1], &mut out[start - r0..]);
                }
            }
        });
    y
}

/// `y = X^T v` for a lower-triangular `X` (see [`lower_matvec`]).
pub fn lower_t_matvec(x: &DMatrix<f64>, v: &[f64]) -> Vec<f64> {
    let n = x.nrows();
    let xs = x.as_slice();
    let mut y = vec![0.0; n];
    y.par_chunks_mut(MATVEC_ROWS)
        .enumerate()
        .for_each(|(b, out)| {
            for (k, o) in out.iter_mut().enumerate() {
                let j = b * MATVEC_ROWS + k;
                *o = dot(&xs[j * n + j..(j + 1) * n], &v[j..]);
            }
        });
    y
}

/// In-place inverse of a lower-triangular matrix with zero strict upper triangle (blocked,
/// parallel, thread-count independent). No checks: the diagonal must be non-zero.
pub fn lower_inverse_in_place(l: &mut DMatrix<f64>) {
    let n = l.nrows();
    tri_inverse_in_place(l.as_mut_slice(), n, n);
}

// ------------------------------------------------------------------------------------------
// Scoring kernel: squared norms of x^T L for many x, L lower triangular
// ------------------------------------------------------------------------------------------

/// Columns per panel of a [`PackedLower`].
const PANEL: usize = 8;
/// Lanes (answers) per group of the transposed input; the kernels take 16 (AVX-512) or 4
/// lanes at a time.
const GROUP: usize = 16;
/// Rows of a panel processed per cache block.
const PANEL_ROWS: usize = 256;
/// Answers per sweep over `L`: their transpose (`n x 32` doubles, 512 KB at n = 2048) stays
/// in L2 while `L` streams past (measured: 32 beats 16, 48, 64 and 128 at n = 2048).
const CHUNK_LANES: usize = 32;

/// A lower-triangular `n x n` matrix packed for [`PackedLower::squared_norms`]: column panels
/// of 8 columns, panel `q` holding rows `8q..n` of columns `8q..8q+8` row by row (8 values per
/// row, zero above the diagonal), so the kernel streams each panel once, contiguously.
/// About `n^2 / 2` values.
#[derive(Debug, Clone, PartialEq)]
pub struct PackedLower {
    n: usize,
    data: Vec<f64>,
    /// Start of each panel in `data`.
    starts: Vec<usize>,
}

/// `acc[c][k] += sum_r panel[r][c] * xt[r][k]` for `L` lanes: every lane's sums run over `r`
/// in order, one multiply-add at a time, so a lane's result does not depend on `L`.
#[inline(always)]
fn panel_kernel<const FMA: bool, const L: usize>(
    panel: &[f64],
    xt: &[f64],
    stride: usize,
    acc: &mut [f64],
) {
    let mut a = [[0.0f64; L]; PANEL];
    for c in 0..PANEL {
        a[c].copy_from_slice(&acc[c * GROUP..c * GROUP + L]);
    }
    for (r, l) in panel.chunks_exact(PANEL).enumerate() {
        let x = &xt[r * stride..r * stride + L];
        for c in 0..PANEL {
            for k in 0..L {
                a[c][k] = madd::<FMA>(l[c], x[k], a[c][k]);
            }
        }
    }
    for c in 0..PANEL {
        acc[c * GROUP..c * GROUP + L].copy_from_slice(&a[c]);
    }
}

#[cfg(target_arch = "x86_64")]
mod x86_panel {
    //! The panel kernel with explicit intrinsics (the generic version does not vectorise
    //! well): the accumulators live in registers, one fused multiply-add per lane and row.
    use super::{GROUP, PANEL};
    use std::arch::x86_64::*;

    /// 16 lanes, 8 columns: 16 zmm accumulators. AVX-512 intrinsics are stable since Rust
    /// 1.89, above the crate's MSRV: compiled only with the `avx512` cargo feature.
    #[cfg(feature = "avx512")]
    #[allow(clippy::incompatible_msrv)]
    #[target_feature(enable = "avx512f")]
    pub unsafe fn avx512(panel: &[f64], xt: &[f64], stride: usize, acc: &mut [f64]) {
        let rows = panel.len() / PANEL;
        debug_assert!(xt.len() >= (rows.max(1) - 1) * stride + GROUP);
        let (pa, pl, px) = (acc.as_mut_ptr(), panel.as_ptr(), xt.as_ptr());
        let mut a = [_mm512_setzero_pd(); 2 * PANEL];
        for c in 0..PANEL {
            a[2 * c] = _mm512_loadu_pd(pa.add(c * GROUP));
            a[2 * c + 1] = _mm512_loadu_pd(pa.add(c * GROUP + 8));
        }
        for r in 0..rows {
            let x0 = _mm512_loadu_pd(px.add(r * stride));
            let x1 = _mm512_loadu_pd(px.add(r * stride + 8));
            let l = pl.add(r * PANEL);
            for c in 0..PANEL {
                let v = _mm512_set1_pd(*l.add(c));
                a[2 * c] = _mm512_fmadd_pd(v, x0, a[2 * c]);
                a[2 * c + 1] = _mm512_fmadd_pd(v, x1, a[2 * c + 1]);
            }
        }
        for c in 0..PANEL {
            _mm512_storeu_pd(pa.add(c * GROUP), a[2 * c]);
            _mm512_storeu_pd(pa.add(c * GROUP + 8), a[2 * c + 1]);
        }
    }

    /// 4 lanes, 8 columns: 8 ymm accumulators.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn avx2(panel: &[f64], xt: &[f64], stride: usize, acc: &mut [f64]) {
        let rows = panel.len() / PANEL;
        debug_assert!(xt.len() >= (rows.max(1) - 1) * stride + 4);
        let (pa, pl, px) = (acc.as_mut_ptr(), panel.as_ptr(), xt.as_ptr());
        let mut a = [_mm256_setzero_pd(); PANEL];
        for (c, ac) in a.iter_mut().enumerate() {
            *ac = _mm256_loadu_pd(pa.add(c * GROUP));
        }
        for r in 0..rows {
            let x = _mm256_loadu_pd(px.add(r * stride));
            let l = pl.add(r * PANEL);
            for (c, ac) in a.iter_mut().enumerate() {
                *ac = _mm256_fmadd_pd(_mm256_set1_pd(*l.add(c)), x, *ac);
            }
        }
        for (c, ac) in a.iter().enumerate() {
            _mm256_storeu_pd(pa.add(c * GROUP), *ac);
        }
    }
}

/// Which panel kernel this CPU runs (0 generic, 1 AVX2+FMA, 2 AVX-512): all compute every
/// lane with the same sequence of operations; the FMA paths round once per multiply-add.
fn panel_level() -> u8 {
    #[cfg(target_arch = "x86_64")]
    {
        #[cfg(feature = "avx512")]
        if std::arch::is_x86_feature_detected!("avx512f") && has_fma() {
            return 2;
        }
        if has_fma() {
            return 1;
        }
    }
    0
}

/// Runs the panel kernel over the first `active` (at most 16) lanes of one group; the
/// 4-lane kernels skip sub-groups that are all padding.
#[inline]
fn panel_group(
    level: u8,
    panel: &[f64],
    xt: &[f64],
    stride: usize,
    acc: &mut [f64],
    active: usize,
) {
    let quads = active.div_ceil(4).min(GROUP / 4);
    match level {
        #[cfg(all(target_arch = "x86_64", feature = "avx512"))]
        // SAFETY: AVX-512F and FMA were detected at run time.
        2 => unsafe { x86_panel::avx512(panel, xt, stride, acc) },
        #[cfg(target_arch = "x86_64")]
        1 => {
            for q in 0..quads {
                // SAFETY: AVX2 and FMA were detected at run time.
                unsafe { x86_panel::avx2(panel, &xt[4 * q..], stride, &mut acc[4 * q..]) }
            }
        }
        _ => {
            for q in 0..quads {
                panel_kernel::<false, 4>(panel, &xt[4 * q..], stride, &mut acc[4 * q..]);
            }
        }
    }
}

impl PackedLower {
    /// Packs the lower triangle of `l` (`n x n`, column-major; the upper triangle is ignored)
    /// into a new buffer.
    pub fn new(l: &DMatrix<f64>) -> Self {
        Self::from_lower(l.clone())
    }

    /// Packs the lower triangle of `l` in place, reusing its buffer (shrunk to the ~`n^2 / 2`
    /// packed values): no second copy of the matrix is ever held.
    pub fn from_lower(l: DMatrix<f64>) -> Self {
        let n = l.nrows();
        assert_eq!(l.ncols(), n, "PackedLower: the matrix is not square");
        let mut v: Vec<f64> = l.data.into();
        // ~n^2 / 2 + 4n values: more than n^2 only for n < 8 or so.
        let packed_len: usize = (0..n).step_by(PANEL).map(|c0| (n - c0) * PANEL).sum();
        if v.len() < packed_len {
            v.resize(packed_len, 0.0);
        }
        let mut panel = vec![0.0f64; PANEL * n];
        let mut starts = Vec::with_capacity(n.div_ceil(PANEL));
        let mut dst = 0;
        for c0 in (0..n).step_by(PANEL) {
            starts.push(dst);
            let rows = n - c0;
            // The panel's columns (rows c0..n) first, zero above the diagonal and past n ...
            for c in 0..PANEL {
                let col = &mut panel[c * rows..(c + 1) * rows];
                if c0 + c < n {
                    col.copy_from_slice(&v[(c0 + c) * n + c0..(c0 + c + 1) * n]);
                    col[..c].fill(0.0);
                } else {
                    col.fill(0.0);
                }
            }
            // ... then written row by row. The packed panel ends at or before column c0 + 8's
            // first element, so it overwrites only consumed columns and this panel's own.
            for r in 0..rows {
                for c in 0..PANEL {
                    v[dst + r * PANEL + c] = panel[c * rows + r];
                }
            }
            dst += rows * PANEL;
        }
        v.truncate(dst);
        v.shrink_to_fit();
        PackedLower { n, data: v, starts }
    }

    /// The packed matrix as a dense lower-triangular `DMatrix` (zero upper triangle).
    pub fn to_dense(&self) -> DMatrix<f64> {
        let n = self.n;
        let mut m = DMatrix::<f64>::zeros(n, n);
        for (q, &start) in self.starts.iter().enumerate() {
            let c0 = q * PANEL;
            for r in c0..n {
                for c in c0..(c0 + PANEL).min(r + 1).min(n) {
                    m[(r, c)] = self.data[start + (r - c0) * PANEL + (c - c0)];
                }
            }
        }
        m
    }

    /// The dimension `n`.
    pub fn n(&self) -> usize {
        self.n
    }

    /// `|x_k^T L|^2` for each row `x_k` of the row-major `m x n` matrix `x` (values converted
    /// to `f64` by `get`). Single-threaded. Each row's result depends only on that row (not
    /// on `m`, on the other rows, or on which kernel the CPU runs, beyond FMA or not), so
    /// batches of any size give identical values.
    ///
    /// Cost: `m n^2 / 2` multiply-adds; `L` is streamed once per 32 rows, each 8-column panel
    /// in blocks that stay in L1 while every group of 16 rows passes over them.
    pub fn squared_norms<T: Copy>(&self, x: &[T], get: impl Fn(T) -> f64) -> Vec<f64> {
        let n = self.n;
        if n == 0 {
            return vec![0.0; x.len()];
        }
        // Chunks of rows whose transpose stays in L2 while L streams past.
        x.chunks(CHUNK_LANES * n)
            .flat_map(|c| self.squared_norms_chunk(c, &get))
            .collect()
    }

    fn squared_norms_chunk<T: Copy>(&self, x: &[T], get: &impl Fn(T) -> f64) -> Vec<f64> {
        let n = self.n;
        let m = x.len() / n;
        let stride = m.div_ceil(GROUP) * GROUP;
        let groups = stride / GROUP;
        // x transposed (n x stride), zero-padded lanes.
        let mut xt = vec![0.0f64; n * stride];
        for (k, row) in x.chunks_exact(n).enumerate() {
            for (j, &v) in row.iter().enumerate() {
                xt[j * stride + k] = get(v);
            }
        }
        let level = panel_level();
        let mut ss = vec![0.0f64; stride];
        let mut acc = vec![0.0f64; groups * PANEL * GROUP];
        for (q, &start) in self.starts.iter().enumerate() {
            let c0 = q * PANEL;
            let rows = n - c0;
            let panel = &self.data[start..start + rows * PANEL];
            acc.fill(0.0);
            for r0 in (0..rows).step_by(PANEL_ROWS) {
                let r1 = (r0 + PANEL_ROWS).min(rows);
                let p = &panel[r0 * PANEL..r1 * PANEL];
                for (g, a) in acc.chunks_exact_mut(PANEL * GROUP).enumerate() {
                    let active = (m - g * GROUP).min(GROUP);
                    let xs = &xt[(c0 + r0) * stride + g * GROUP..];
                    panel_group(level, p, xs, stride, a, active);
                }
            }
            for (g, a) in acc.chunks_exact(PANEL * GROUP).enumerate() {
                for c in 0..PANEL {
                    for k in 0..GROUP {
                        let v = a[c * GROUP + k];
                        ss[g * GROUP + k] += v * v;
                    }
                }
            }
        }
        ss.truncate(m);
        ss
    }
}

/// Row-major `f32` product `a (m x k) * b (k x n)` through the tiled parallel single-precision
/// GEMM on the current rayon pool (used to measure the machine's `sgemm` rate).
pub fn matmul_f32(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f32> {
    assert_eq!(a.len(), m * k, "matmul_f32: a is not m x k");
    assert_eq!(b.len(), k * n, "matmul_f32: b is not k x n");
    let mut c = vec![0.0f32; m * n];
    let row_major = |ptr: *const f32, cols: usize| View {
        ptr,
        rs: cols as isize,
        cs: 1,
    };
    // SAFETY: three separate buffers of the asserted shapes.
    unsafe {
        par_gemm(
            m,
            k,
            n,
            1.0,
            row_major(a.as_ptr(), k),
            row_major(b.as_ptr(), n),
            0.0,
            ViewMut {
                ptr: c.as_mut_ptr(),
                rs: n as isize,
                cs: 1,
            },
        );
    }
    c
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

/// Inverse of a general square matrix (LU with partial pivoting). Errors when the matrix is
/// singular.
pub fn inverse(a: &DMatrix<f64>, what: &str) -> Result<DMatrix<f64>> {
    a.clone()
        .try_inverse()
        .filter(|m| m.iter().all(|v| v.is_finite()))
        .ok_or_else(|| Error::SingularInformation {
            detail: format!("{what} is singular"),
        })
}

/// `a * b` for column-major `DMatrix`es through the parallel tiled GEMM (thread-count
/// independent). Panics if the inner dimensions differ.
pub fn matmul(a: &DMatrix<f64>, b: &DMatrix<f64>) -> DMatrix<f64> {
    assert_eq!(a.ncols(), b.nrows(), "matmul: inner dimensions differ");
    let (m, k, n) = (a.nrows(), a.ncols(), b.ncols());
    let mut c = DMatrix::<f64>::zeros(m, n);
    // SAFETY: three separate buffers of the stated shapes.
    unsafe {
        par_gemm(
            m,
            k,
            n,
            1.0,
            col_major(a.as_slice().as_ptr(), m),
            col_major(b.as_slice().as_ptr(), k),
            0.0,
            col_major_mut(c.as_mut_slice().as_mut_ptr(), m),
        );
    }
    c
}

/// `a^T * b` for column-major `DMatrix`es (see [`matmul`]).
pub fn matmul_tn(a: &DMatrix<f64>, b: &DMatrix<f64>) -> DMatrix<f64> {
    assert_eq!(a.nrows(), b.nrows(), "matmul_tn: inner dimensions differ");
    let (m, k, n) = (a.ncols(), a.nrows(), b.ncols());
    let mut c = DMatrix::<f64>::zeros(m, n);
    // SAFETY: three separate buffers of the stated shapes.
    unsafe {
        par_gemm(
            m,
            k,
            n,
            1.0,
            col_major(a.as_slice().as_ptr(), k).t(),
            col_major(b.as_slice().as_ptr(), k),
            0.0,
            col_major_mut(c.as_mut_slice().as_mut_ptr(), m),
        );
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    fn random_spd(p: usize, seed: u64) -> DMatrix<f64> {
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
        assert_eq!(one, one.transpose());
        assert!((&one - &naive).abs().max() < 1e-10);
        let single = gram_f32(n, p, n as f64, |i, out: &mut [f32]| {
            let mut r = vec![0.0; p];
            row(i, &mut r);
            for (o, v) in out.iter_mut().zip(r) {
                *o = v as f32;
            }
        });
        assert!((single - naive).abs().max() < 1e-4);
    }

    #[test]
    fn gram_tasks_cover_the_upper_triangle_once() {
        for p in [1usize, 159, 161, 700, 2086] {
            let (tasks, leaves) = gram_tasks(p);
            let mut count = vec![0u8; p * p];
            for (i, j, m, k) in tasks {
                for r in i..i + m {
                    for c in j..j + k {
                        count[r * p + c] += 1;
                    }
                }
            }
            for r in 0..p {
                for c in r..p {
                    assert_eq!(count[r * p + c], 1, "p {p}: ({r}, {c})");
                }
            }
            let computed: usize = count.iter().map(|&c| c as usize).sum();
            let triangle = p * (p + 1) / 2;
            // Waste: the lower halves of the diagonal leaves only.
            assert!(
                computed <= triangle + p * GRAM_LEAF / 2,
                "p {p}: {computed}"
            );
            assert_eq!(leaves[0], 0);
        }
    }

    #[test]
    fn blocked_cholesky_inverse_and_factor_of_inverse() {
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
            let mut x: Vec<f64> = (0..p).map(|i| (i as f64).sin()).collect();
            let b = x.clone();
            solve_lower(l.as_slice(), p, p, &mut x);
            solve_lower_transposed(l.as_slice(), p, p, &mut x);
            let ax = &a * DMatrix::from_column_slice(p, 1, &x);
            for (u, v) in ax.iter().zip(&b) {
                assert!((u - v).abs() < 1e-9);
            }
        }
    }

    #[test]
    fn blocked_routines_do_not_depend_on_thread_count() {
        let a = random_spd(700, 3);
        let one = crate::parallel::thread_pool(1)
            .unwrap()
            .install(|| spd_inverse_factor(a.clone(), "A").unwrap());
        let three = crate::parallel::thread_pool(3)
            .unwrap()
            .install(|| spd_inverse_factor(a.clone(), "A").unwrap());
        assert_eq!(one, three);
    }

    #[test]
    fn packed_lower_norms_match_naive_and_do_not_depend_on_the_batch() {
        for &n in &[1usize, 5, 37, 600] {
            let l = cholesky(&random_spd(n, 11 + n as u64), "A").unwrap();
            let packed = PackedLower::new(&l);
            assert_eq!(packed.to_dense(), l);
            assert_eq!(PackedLower::from_lower(l.clone()), packed);
            let m = 21;
            let x: Vec<f64> = (0..m * n)
                .map(|i| ((i * 37) % 17) as f64 / 8.0 - 1.0)
                .collect();
            let got = packed.squared_norms(&x, |v| v);
            for (k, row) in x.chunks_exact(n).enumerate() {
                let v = DMatrix::from_row_slice(1, n, row) * &l;
                let want = v.norm_squared();
                assert!(
                    (got[k] - want).abs() <= 1e-12 * want.max(1.0),
                    "n {n} row {k}"
                );
                // Alone or in a batch: identical bits.
                assert_eq!(packed.squared_norms(row, |v| v)[0], got[k]);
            }
        }
    }

    #[test]
    fn kernels_match_naive() {
        let a: Vec<f64> = (0..37).map(|i| i as f64 * 0.5 - 2.0).collect();
        let b: Vec<f64> = (0..37).map(|i| (i * i) as f64 * 0.1).collect();
        let naive: f64 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        assert!((dot(&a, &b) - naive).abs() < 1e-10);
        let bf: Vec<f32> = b.iter().map(|&v| v as f32).collect();
        assert!((dot_f32(&a, &bf) - naive).abs() < 1e-4);
        let mut y = b.clone();
        axpy(2.0, &a, &mut y);
        for i in 0..37 {
            assert!((y[i] - (b[i] + 2.0 * a[i])).abs() < 1e-12);
        }
        let mut y = b.clone();
        axpy_f32(2.0, &bf, &mut y);
        assert!((y[3] - 3.0 * b[3]).abs() < 1e-5);
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
        let c = DMatrix::from_row_slice(2, 2, &[2.0, 1.0, 1.0, 2.0]);
        let inv = spd_inverse(&c, "I").unwrap();
        assert!((&c * inv - DMatrix::identity(2, 2)).abs().max() < 1e-14);
    }
}
