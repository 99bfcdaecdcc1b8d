//! Vector kernels (`dot`, `axpy` and their `f32`-row variants) with a runtime-dispatched
//! AVX2 + FMA path on x86-64, and the [`Element`] trait through which the likelihood's row
//! kernels read `f64` or `f32` feature rows. The only `unsafe` of the module is the call of
//! `#[target_feature]` functions after the CPU check, and their intrinsics.

/// `c + a * b`, fused on the FMA path (one rounding), plain otherwise.
#[inline(always)]
pub(super) fn madd<const FMA: bool>(a: f64, b: f64, c: f64) -> f64 {
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
    pub(super) unsafe fn dot(a: &[f64], b: &[f64]) -> f64 {
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
    pub(super) unsafe fn dot_f32(a: &[f64], b: &[f32]) -> f64 {
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
    pub(super) trait Load4: Copy {
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
    pub(super) unsafe fn dot2_body<T: Load4 + Into<f64>>(
        a: &[f64],
        x0: &[T],
        x1: &[T],
    ) -> (f64, f64) {
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
    pub(super) unsafe fn axpy2_body<T: Load4 + Into<f64>>(
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
    pub(super) unsafe fn dot2<T: Load4 + Into<f64>>(a: &[f64], x0: &[T], x1: &[T]) -> (f64, f64) {
        dot2_body(a, x0, x1)
    }

    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn axpy2<T: Load4 + Into<f64>>(
        c0: f64,
        x0: &[T],
        c1: f64,
        x1: &[T],
        y: &mut [f64],
    ) {
        axpy2_body(c0, x0, c1, x1, y)
    }

    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn axpy(alpha: f64, x: &[f64], y: &mut [f64]) {
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
    pub(super) unsafe fn axpy_f32(alpha: f64, x: &[f32], y: &mut [f64]) {
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
pub(crate) fn dot(a: &[f64], b: &[f64]) -> f64 {
    #[cfg(target_arch = "x86_64")]
    if has_fma() {
        // SAFETY: the CPU supports AVX2 and FMA (checked just above).
        return unsafe { x86::dot(a, b) };
    }
    dot_body::<false>(a, b)
}

/// `y += alpha * x` (over the shorter length).
#[inline]
pub(crate) fn axpy(alpha: f64, x: &[f64], y: &mut [f64]) {
    #[cfg(target_arch = "x86_64")]
    if has_fma() {
        // SAFETY: the CPU supports AVX2 and FMA (checked just above).
        return unsafe { x86::axpy(alpha, x, y) };
    }
    axpy_body::<false>(alpha, x, y)
}

/// Dot product of an `f64` slice with an `f32` slice, accumulated in `f64`.
#[inline]
pub(crate) fn dot_f32(a: &[f64], b: &[f32]) -> f64 {
    #[cfg(target_arch = "x86_64")]
    if has_fma() {
        // SAFETY: the CPU supports AVX2 and FMA (checked just above).
        return unsafe { x86::dot_f32(a, b) };
    }
    dot_f32_body::<false>(a, b)
}

/// `y += alpha * x` for an `f32` slice `x` accumulated into `f64`.
#[inline]
pub(crate) fn axpy_f32(alpha: f64, x: &[f32], y: &mut [f64]) {
    #[cfg(target_arch = "x86_64")]
    if has_fma() {
        // SAFETY: the CPU supports AVX2 and FMA (checked just above).
        return unsafe { x86::axpy_f32(alpha, x, y) };
    }
    axpy_f32_body::<false>(alpha, x, y)
}

/// Element types a feature matrix may be stored in (`f64`, `f32`). Row kernels take an `f64`
/// vector and a stored row and accumulate in `f64`.
pub(crate) trait Element: Copy + Send + Sync + 'static {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
