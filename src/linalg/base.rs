//! What every kernel of `linalg` shares: the scalar types it runs in, faer's views of nalgebra
//! matrices, its parallelism setting and the lower-to-full mirror of a symmetric result.

use faer::{MatMut, MatRef, Par};
use nalgebra::DMatrix;

/// Scalars the kernels run in (`f64`, and `f32` for the single-precision preconditioner).
pub(crate) trait Scalar:
    Copy + Send + Sync + Default + 'static + faer::traits::ComplexField
{
    /// Conversion from `f64` (rounded for `f32`).
    fn from_f64(v: f64) -> Self;
    /// Conversion to `f64` (exact).
    fn to_f64(self) -> f64;
}

impl Scalar for f64 {
    fn from_f64(v: f64) -> Self {
        v
    }
    fn to_f64(self) -> f64 {
        self
    }
}

impl Scalar for f32 {
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
}

/// faer's parallelism: the current rayon pool, all its threads.
pub(super) fn par() -> Par {
    Par::rayon(0)
}

/// The faer view of a `DMatrix` (column-major, no copy).
pub(super) fn view(m: &DMatrix<f64>) -> MatRef<'_, f64> {
    MatRef::from_column_major_slice(m.as_slice(), m.nrows(), m.ncols())
}

/// The writable faer view of a `DMatrix` (column-major, no copy).
pub(super) fn view_mut(m: &mut DMatrix<f64>) -> MatMut<'_, f64> {
    let (r, c) = m.shape();
    MatMut::from_column_major_slice_mut(m.as_mut_slice(), r, c)
}

/// Copies the lower triangle of a square column-major buffer over its upper triangle.
pub(super) fn mirror_lower<T: Copy>(a: &mut [T], p: usize) {
    for j in 0..p {
        for i in j + 1..p {
            a[i * p + j] = a[j * p + i];
        }
    }
}
