//! The scoring kernel: squared norms `|x^T L|^2` of many vectors `x` against one
//! lower-triangular `L` ([`PackedLower`], the reward standard errors of a fitted model), and
//! the parallel triangular matrix-vector products of Newton-CG's preconditioner
//! ([`lower_matvec`], [`lower_t_matvec`]).

use super::simd::{axpy, dot, has_fma, madd};
use nalgebra::DMatrix;
use rayon::prelude::*;

/// Rows per task of the parallel triangular matrix-vector products.
const MATVEC_ROWS: usize = 128;

/// `y = X v` for a lower-triangular `X` (`DMatrix`, column-major, `n x n`). Parallel over
/// fixed blocks of output rows on the current rayon pool (thread-count independent).
pub(crate) fn lower_matvec(x: &DMatrix<f64>, v: &[f64]) -> Vec<f64> {
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
pub(crate) fn lower_t_matvec(x: &DMatrix<f64>, v: &[f64]) -> Vec<f64> {
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
pub(crate) struct PackedLower {
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
    /// 1.89, above the crate's MSRV: compiled whenever the compiler has them (`build.rs` sets
    /// `hetreward_avx512`), chosen at run time.
    #[cfg(hetreward_avx512)]
    #[allow(clippy::incompatible_msrv)]
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn avx512(panel: &[f64], xt: &[f64], stride: usize, acc: &mut [f64]) {
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
    pub(super) unsafe fn avx2(panel: &[f64], xt: &[f64], stride: usize, acc: &mut [f64]) {
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
        #[cfg(hetreward_avx512)]
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
/// 4-lane kernels skip sub-groups that are all padding, so a group of at most 8 active lanes
/// (a pruned selection's small batches, one anchor) runs them even where AVX-512 is there.
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
    let level = if level == 2 && quads <= 2 { 1 } else { level };
    match level {
        #[cfg(all(target_arch = "x86_64", hetreward_avx512))]
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
    #[cfg(test)]
    pub(crate) fn new(l: &DMatrix<f64>) -> Self {
        Self::from_lower(l.clone())
    }

    /// Packs the lower triangle of `l` in place, reusing its buffer (shrunk to the ~`n^2 / 2`
    /// packed values): no second copy of the matrix is ever held.
    pub(crate) fn from_lower(l: DMatrix<f64>) -> Self {
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
    pub(crate) fn to_dense(&self) -> DMatrix<f64> {
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

    /// `|x_k^T L|^2` for each row `x_k` of the row-major `m x n` matrix `x` (values converted
    /// to `f64` by `get`). Single-threaded. Each row's result depends only on that row (not
    /// on `m`, on the other rows, or on which kernel the CPU runs, beyond FMA or not), so
    /// batches of any size give identical values.
    ///
    /// Cost: `m n^2 / 2` multiply-adds; `L` is streamed once per 32 rows, each 8-column panel
    /// in blocks that stay in L1 while every group of 16 rows passes over them.
    pub(crate) fn squared_norms<T: Copy>(&self, x: &[T], get: impl Fn(T) -> f64) -> Vec<f64> {
        let n = self.n;
        if n == 0 {
            return vec![0.0; x.len()];
        }
        // Chunks of rows whose transpose stays in L2 while L streams past.
        x.chunks(CHUNK_LANES * n)
            .flat_map(|c| self.norms_and_products(c, &get, 0).0)
            .collect()
    }

    /// The products `x_k^T L` themselves (row-major `m x n`) for the rows `x_k` of `x`: the
    /// sums [`PackedLower::squared_norms`] squares. Single-threaded.
    pub(crate) fn products(&self, x: &[f64]) -> Vec<f64> {
        let n = self.n.max(1);
        x.chunks(CHUNK_LANES * n)
            .flat_map(|c| self.norms_and_products(c, &|v| v, c.len() / n).1)
            .collect()
    }

    /// In one pass over `L` (at most [`CHUNK_LANES`] rows): the squared norms `|x_k^T L|^2` of
    /// the rows of `x` but the last `extra` (exactly [`PackedLower::squared_norms`]'s values:
    /// lanes are independent), and the products `x_k^T L` of those last `extra` rows
    /// (row-major). A selection takes an anchor's product along with a batch's SEs.
    pub(crate) fn norms_and_products<T: Copy>(
        &self,
        x: &[T],
        get: &impl Fn(T) -> f64,
        extra: usize,
    ) -> (Vec<f64>, Vec<f64>) {
        let n = self.n;
        let m = x.len() / n;
        debug_assert!(m <= CHUNK_LANES && extra <= m);
        let normed = m - extra;
        let mut ss = vec![0.0f64; m.div_ceil(GROUP) * GROUP];
        let mut prods = vec![0.0f64; extra * n];
        self.sweep(x, get, |c0, acc| {
            for (g, a) in acc.chunks_exact(PANEL * GROUP).enumerate() {
                for c in 0..PANEL {
                    for k in 0..GROUP {
                        let v = a[c * GROUP + k];
                        ss[g * GROUP + k] += v * v;
                    }
                }
            }
            for k in normed..m {
                let (g, lane) = (k / GROUP, k % GROUP);
                for c in 0..PANEL.min(n - c0) {
                    prods[(k - normed) * n + c0 + c] = acc[g * PANEL * GROUP + c * GROUP + lane];
                }
            }
        });
        ss.truncate(normed);
        (ss, prods)
    }

    /// One pass of the panel kernel over `L` for the rows of `x` (at most [`CHUNK_LANES`]):
    /// after each 8-column panel starting at column `c0`, `visit(c0, acc)` sees the panel's
    /// sums, lane `k`'s column `c0 + c` at `acc[(k / 16) * 128 + c * 16 + k % 16]`.
    fn sweep<T: Copy>(
        &self,
        x: &[T],
        get: &impl Fn(T) -> f64,
        mut visit: impl FnMut(usize, &[f64]),
    ) {
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
            visit(c0, &acc);
        }
    }

    /// `L u` (length `n`). Each entry is a sum over the packed panels in order, each panel's
    /// eight products summed as a fixed tree: the same bits on every CPU path.
    pub(crate) fn matvec(&self, u: &[f64]) -> Vec<f64> {
        let n = self.n;
        let mut y = vec![0.0f64; n];
        let level = panel_level();
        for (q, &start) in self.starts.iter().enumerate() {
            let c0 = q * PANEL;
            let mut u8 = [0.0f64; PANEL];
            for (c, v) in u8.iter_mut().enumerate().take(n - c0) {
                *v = u[c0 + c];
            }
            let panel = &self.data[start..start + (n - c0) * PANEL];
            panel_matvec(level, panel, &u8, &mut y[c0..]);
        }
        y
    }
}

/// `y[r] += panel[r] . u8` for every row `r` of one packed panel: eight products summed as
/// the tree `((p0 + p1) + (p2 + p3)) + ((p4 + p5) + (p6 + p7))`, then added to `y[r]`.
#[inline(always)]
fn panel_matvec_body(panel: &[f64], u8: &[f64; PANEL], y: &mut [f64]) {
    for (row, yr) in panel.chunks_exact(PANEL).zip(y.iter_mut()) {
        let p: [f64; PANEL] = std::array::from_fn(|c| row[c] * u8[c]);
        *yr += ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]));
    }
}

#[cfg(target_arch = "x86_64")]
mod x86_matvec {
    //! [`super::panel_matvec_body`] with explicit intrinsics (the generic code does not
    //! vectorise across rows): 8 (AVX-512) or 4 (AVX2) rows at a time, each row's eight
    //! products summed by shuffles in the generic body's tree order, so the bits are the same;
    //! the remaining rows by the generic body.
    use super::PANEL;
    use std::arch::x86_64::*;

    #[cfg(hetreward_avx512)]
    #[allow(clippy::incompatible_msrv)]
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn avx512(panel: &[f64], u8: &[f64; PANEL], y: &mut [f64]) {
        let rows = (panel.len() / PANEL).min(y.len());
        let full = rows / 8 * 8;
        let u = _mm512_loadu_pd(u8.as_ptr());
        let (pp, py) = (panel.as_ptr(), y.as_mut_ptr());
        let mut r = 0;
        while r < full {
            macro_rules! p {
                ($i:expr) => {
                    _mm512_mul_pd(_mm512_loadu_pd(pp.add((r + $i) * PANEL)), u)
                };
            }
            // Pairs: 128-bit lane j holds rows (2i, 2i + 1)'s products 2j + (2j + 1).
            macro_rules! pair {
                ($x:expr, $z:expr) => {{
                    let (x, z) = ($x, $z);
                    _mm512_add_pd(_mm512_unpacklo_pd(x, z), _mm512_unpackhi_pd(x, z))
                }};
            }
            // 128-bit lanes (0 + 1) and (2 + 3) of x, then of z.
            macro_rules! quad {
                ($x:expr, $z:expr) => {{
                    let (x, z) = ($x, $z);
                    _mm512_add_pd(
                        _mm512_shuffle_f64x2::<0b10_00_10_00>(x, z),
                        _mm512_shuffle_f64x2::<0b11_01_11_01>(x, z),
                    )
                }};
            }
            let b0 = quad!(pair!(p!(0), p!(1)), pair!(p!(2), p!(3)));
            let b1 = quad!(pair!(p!(4), p!(5)), pair!(p!(6), p!(7)));
            // Products 0..4 plus 4..8 of each row, rows in order.
            let s = quad!(b0, b1);
            _mm512_storeu_pd(py.add(r), _mm512_add_pd(_mm512_loadu_pd(py.add(r)), s));
            r += 8;
        }
        super::panel_matvec_body(&panel[full * PANEL..], u8, &mut y[full..]);
    }

    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn avx2(panel: &[f64], u8: &[f64; PANEL], y: &mut [f64]) {
        let rows = (panel.len() / PANEL).min(y.len());
        let full = rows / 4 * 4;
        let (ulo, uhi) = (
            _mm256_loadu_pd(u8.as_ptr()),
            _mm256_loadu_pd(u8.as_ptr().add(4)),
        );
        let (pp, py) = (panel.as_ptr(), y.as_mut_ptr());
        let mut r = 0;
        while r < full {
            macro_rules! lo {
                ($i:expr) => {
                    _mm256_mul_pd(_mm256_loadu_pd(pp.add((r + $i) * PANEL)), ulo)
                };
            }
            macro_rules! hi {
                ($i:expr) => {
                    _mm256_mul_pd(_mm256_loadu_pd(pp.add((r + $i) * PANEL + 4)), uhi)
                };
            }
            macro_rules! pair {
                ($x:expr, $z:expr) => {{
                    let (x, z) = ($x, $z);
                    _mm256_add_pd(_mm256_unpacklo_pd(x, z), _mm256_unpackhi_pd(x, z))
                }};
            }
            // (0 + 1) and (2 + 3) of rows (0, 1) then (2, 3), in row order.
            macro_rules! half {
                ($x:expr, $z:expr) => {{
                    let (x, z) = ($x, $z);
                    _mm256_add_pd(
                        _mm256_permute2f128_pd::<0x20>(x, z),
                        _mm256_permute2f128_pd::<0x31>(x, z),
                    )
                }};
            }
            let s_lo = half!(pair!(lo!(0), lo!(1)), pair!(lo!(2), lo!(3)));
            let s_hi = half!(pair!(hi!(0), hi!(1)), pair!(hi!(2), hi!(3)));
            let s = _mm256_add_pd(s_lo, s_hi);
            _mm256_storeu_pd(py.add(r), _mm256_add_pd(_mm256_loadu_pd(py.add(r)), s));
            r += 4;
        }
        super::panel_matvec_body(&panel[full * PANEL..], u8, &mut y[full..]);
    }
}

/// Runs [`panel_matvec_body`] on the widest path `level` ([`panel_level`]) allows.
fn panel_matvec(level: u8, panel: &[f64], u8: &[f64; PANEL], y: &mut [f64]) {
    match level {
        #[cfg(all(target_arch = "x86_64", hetreward_avx512))]
        // SAFETY: AVX-512F was detected at run time.
        2 => unsafe { x86_matvec::avx512(panel, u8, y) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: AVX2 was detected at run time (with FMA, which this body does not use).
        1 => unsafe { x86_matvec::avx2(panel, u8, y) },
        _ => panel_matvec_body(panel, u8, y),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::random_spd;

    #[test]
    fn packed_lower_norms_match_naive_and_do_not_depend_on_the_batch() {
        for &n in &[1usize, 5, 37, 600] {
            let l = crate::linalg::cholesky(&random_spd(n, 11 + n as u64), "A").unwrap();
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

    /// `products` returns the sums `squared_norms` squares (the same bits), and `matvec` is
    /// `L u`, on sizes with partial panels and more rows than one sweep takes.
    #[test]
    fn products_and_matvec_match_nalgebra() {
        for &n in &[1usize, 5, 37, 300] {
            let l = crate::linalg::cholesky(&random_spd(n, 3 + n as u64), "A").unwrap();
            let packed = PackedLower::new(&l);
            let m = 40;
            let x: Vec<f64> = (0..m * n).map(|i| (i as f64 * 0.37).sin()).collect();
            let prods = packed.products(&x);
            let ss = packed.squared_norms(&x, |v| v);
            for (k, row) in x.chunks_exact(n).enumerate() {
                let want = DMatrix::from_row_slice(1, n, row) * &l;
                let got = &prods[k * n..(k + 1) * n];
                for (j, g) in got.iter().enumerate() {
                    assert!(
                        (g - want[j]).abs() <= 1e-12 * want.norm().max(1.0),
                        "n {n} {k} {j}"
                    );
                }
                // The same sums, squared in the same order, give the kernel's bits.
                let mut acc = 0.0f64;
                for v in got {
                    acc += v * v;
                }
                assert_eq!(acc.to_bits(), ss[k].to_bits(), "n {n} row {k}");
            }
            let u: Vec<f64> = (0..n).map(|i| (i as f64 * 0.71).cos()).collect();
            let lu = &l * nalgebra::DVector::from_column_slice(&u);
            let got = packed.matvec(&u);
            for i in 0..n {
                assert!(
                    (got[i] - lu[i]).abs() <= 1e-12 * lu.norm().max(1.0),
                    "n {n} {i}"
                );
            }
            // Every path the CPU offers gives the same bits.
            for level in 0..=panel_level() {
                let mut y = vec![0.0; n];
                for (q, &start) in packed.starts.iter().enumerate() {
                    let c0 = q * PANEL;
                    let mut u8 = [0.0; PANEL];
                    let width = PANEL.min(n - c0);
                    u8[..width].copy_from_slice(&u[c0..c0 + width]);
                    let panel = &packed.data[start..start + (n - c0) * PANEL];
                    panel_matvec(level, panel, &u8, &mut y[c0..]);
                }
                assert_eq!(y, got, "level {level}");
            }
        }
    }

    #[test]
    fn triangular_matvecs_match_nalgebra() {
        let n = 300; // several row blocks
        let l = crate::linalg::cholesky(&random_spd(n, 5), "A").unwrap();
        let v: Vec<f64> = (0..n).map(|i| (i as f64).cos()).collect();
        let dv = nalgebra::DVector::from_column_slice(&v);
        let (lv, ltv) = (&l * &dv, l.transpose() * &dv);
        for i in 0..n {
            assert!((lower_matvec(&l, &v)[i] - lv[i]).abs() < 1e-12);
            assert!((lower_t_matvec(&l, &v)[i] - ltv[i]).abs() < 1e-12);
        }
    }
}
