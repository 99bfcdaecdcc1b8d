//! `hetreward_dataset`: a validated training set built from caller arrays or a file.

use super::args::{c_path, checked_len, handle_ref, in_slice, optional_slice, out_ptr};
use super::status::{boundary, boundary_value, hetreward_status};
use crate::data::{Dataset, Rows};
use crate::error::Result;
use std::ffi::c_char;

/// A validated training set (docs/contract.md §1): n pairwise comparisons with features z (n x d1),
/// psi0 (n), covariates psi (n x d2), labels y (n) and optional cluster ids (n).
///
/// Opaque. Created by hetreward_dataset_new(), hetreward_dataset_new_f32(),
/// hetreward_dataset_from_pairs(), hetreward_dataset_from_pairs_f32() or
/// hetreward_dataset_load(); freed by hetreward_dataset_free(). Immutable: any number of threads
/// may use one `const hetreward_dataset *` at once (e.g. several fits of the same data).
#[allow(non_camel_case_types)]
pub struct hetreward_dataset {
    pub(crate) inner: Dataset,
}

/// Reads `len` values of `f32` or `f64` into `f64`.
///
/// # Safety
/// As [`in_slice`].
unsafe fn read_f64<T: Copy + Into<f64>>(ptr: *const T, len: usize, arg: &str) -> Result<Vec<f64>> {
    let values = in_slice(ptr, len, arg)?;
    let mut out = crate::error::try_with_capacity(arg, len)?;
    out.extend(values.iter().map(|&v| v.into()));
    Ok(out)
}

/// The arrays of a training set, as the caller passed them.
struct Arrays<T> {
    n: usize,
    d1: usize,
    d2: usize,
    psi0: *const T,
    psi: *const T,
    y: *const T,
    cluster: *const i64,
}

impl<T: Copy + Into<f64>> Arrays<T> {
    /// Builds the dataset from `z` (n x d1) or from `phi0`/`phi1` (z = phi1 - phi0).
    ///
    /// # Safety
    /// Every pointer must be NULL or point to as many elements as documented in the header.
    unsafe fn build(&self, features: Features<T>, rows: Rows) -> Result<Dataset> {
        let (n, d1, d2) = (self.n, self.d1, self.d2);
        let nd1 = checked_len("z", n, d1)?;
        let nd2 = checked_len("psi", n, d2)?;
        let psi0 = read_f64(self.psi0, n, "psi0")?;
        let psi = read_f64(self.psi, nd2, "psi")?;
        let y = read_f64(self.y, n, "y")?;
        let cluster = optional_slice(self.cluster, n, "cluster")?.map(<[i64]>::to_vec);
        match features {
            Features::Z(z) => {
                let z = read_f64(z, nd1, "z")?;
                Dataset::with_rows(rows, d1, d2, z, psi0, psi, y, cluster)
            }
            Features::Pairs(phi0, phi1) => {
                let phi0 = read_f64(phi0, nd1, "phi0")?;
                let phi1 = read_f64(phi1, nd1, "phi1")?;
                Dataset::from_pairs(d1, d2, &phi0, &phi1, psi0, psi, y, cluster)
            }
        }
    }
}

enum Features<T> {
    Z(*const T),
    Pairs(*const T, *const T),
}

/// Validates and stores the dataset through `out`.
fn finish(
    out_dataset: *mut *mut hetreward_dataset,
    build: impl FnOnce() -> Result<Dataset>,
) -> hetreward_status {
    boundary(|| {
        let out = out_ptr(out_dataset, "out_dataset")?;
        let inner = build()?;
        // SAFETY: checked non-NULL; written only now that everything succeeded.
        unsafe { *out = Box::into_raw(Box::new(hetreward_dataset { inner })) };
        Ok(())
    })
}

/// Builds a dataset from row-major `double` arrays, copying and validating them.
///
/// * `n` samples, `d1` >= 1 reward features, `d2` >= 0 annotator covariates;
/// * `z`: n x d1, row i = phi(s_i, a1_i) - phi(s_i, a0_i);
/// * `psi0`: n, the fixed part of each annotator's rationality (not all zero);
/// * `psi`: n x d2 (may be NULL when d2 = 0);
/// * `y`: n labels, each exactly 0 or 1 (1 = the annotator preferred a1);
/// * `cluster`: optional (NULL = none), n annotator ids for the cluster-robust covariance.
///
/// On success `*out_dataset` receives a new dataset, to be freed with hetreward_dataset_free().
/// Returns HETREWARD_NULL_POINTER (a required array or out_dataset is NULL),
/// HETREWARD_DIMENSION_MISMATCH (n or d1 is 0, n * d1 overflows), HETREWARD_NON_FINITE (NaN or
/// infinity; the message names the array and flat index), HETREWARD_INVALID_ARGUMENT (a label
/// not 0/1, psi0 all zero, n <= d1 + d2). The arrays are only read during the call.
#[no_mangle]
pub extern "C" fn hetreward_dataset_new(
    n: usize,
    d1: usize,
    d2: usize,
    z: *const f64,
    psi0: *const f64,
    psi: *const f64,
    y: *const f64,
    cluster: *const i64,
    out_dataset: *mut *mut hetreward_dataset,
) -> hetreward_status {
    let arrays = Arrays {
        n,
        d1,
        d2,
        psi0,
        psi,
        y,
        cluster,
    };
    // SAFETY: the header's contract on the array lengths.
    finish(out_dataset, || unsafe {
        arrays.build(Features::Z(z), Rows::Whole)
    })
}

/// hetreward_dataset_new() with `float` arrays (z, psi0, psi, y; cluster ids stay int64_t).
/// Values are widened to double exactly. Same arguments, ownership and status codes.
#[no_mangle]
pub extern "C" fn hetreward_dataset_new_f32(
    n: usize,
    d1: usize,
    d2: usize,
    z: *const f32,
    psi0: *const f32,
    psi: *const f32,
    y: *const f32,
    cluster: *const i64,
    out_dataset: *mut *mut hetreward_dataset,
) -> hetreward_status {
    let arrays = Arrays {
        n,
        d1,
        d2,
        psi0,
        psi,
        y,
        cluster,
    };
    // SAFETY: the header's contract on the array lengths.
    finish(out_dataset, || unsafe {
        arrays.build(Features::Z(z), Rows::Whole)
    })
}

/// Builds a dataset from the two answers' feature vectors instead of their difference:
/// `phi0`, `phi1` are n x d1 row-major `double` arrays and z = phi1 - phi0 row by row (y = 1
/// means the annotator preferred the answer of phi1). Other arguments, ownership and status
/// codes as hetreward_dataset_new().
#[no_mangle]
pub extern "C" fn hetreward_dataset_from_pairs(
    n: usize,
    d1: usize,
    d2: usize,
    phi0: *const f64,
    phi1: *const f64,
    psi0: *const f64,
    psi: *const f64,
    y: *const f64,
    cluster: *const i64,
    out_dataset: *mut *mut hetreward_dataset,
) -> hetreward_status {
    let arrays = Arrays {
        n,
        d1,
        d2,
        psi0,
        psi,
        y,
        cluster,
    };
    // SAFETY: the header's contract on the array lengths.
    finish(out_dataset, || unsafe {
        arrays.build(Features::Pairs(phi0, phi1), Rows::Whole)
    })
}

/// hetreward_dataset_from_pairs() with `float` arrays (phi0, phi1, psi0, psi, y; cluster ids
/// stay int64_t). Same arguments, ownership and status codes.
#[no_mangle]
pub extern "C" fn hetreward_dataset_from_pairs_f32(
    n: usize,
    d1: usize,
    d2: usize,
    phi0: *const f32,
    phi1: *const f32,
    psi0: *const f32,
    psi: *const f32,
    y: *const f32,
    cluster: *const i64,
    out_dataset: *mut *mut hetreward_dataset,
) -> hetreward_status {
    let arrays = Arrays {
        n,
        d1,
        d2,
        psi0,
        psi,
        y,
        cluster,
    };
    // SAFETY: the header's contract on the array lengths.
    finish(out_dataset, || unsafe {
        arrays.build(Features::Pairs(phi0, phi1), Rows::Whole)
    })
}

/// Reads a training set from a file, by extension (docs/contract.md §6): `.csv` with a header (optional
/// `cluster`, then `y`, `psi0`, `z1..z{d1}`, `psi1..psi{d2}`) or `.safetensors` (tensors `z`
/// of shape (n, d1) or `phi0` and `phi1`, `psi0` (n), `psi` (n, d2), `y` (n), optional
/// `cluster` (n)).
///
/// `path`: NUL-terminated, not NULL. On success `*out_dataset` receives a new dataset, to be
/// freed with hetreward_dataset_free(). Returns HETREWARD_NULL_POINTER, HETREWARD_IO (cannot
/// read), HETREWARD_BAD_FORMAT (unknown extension, missing column or tensor, bad shape or
/// value), HETREWARD_INVALID_ARGUMENT (empty path).
#[no_mangle]
pub extern "C" fn hetreward_dataset_load(
    path: *const c_char,
    out_dataset: *mut *mut hetreward_dataset,
) -> hetreward_status {
    finish(out_dataset, || {
        // SAFETY: `path` is NULL or NUL-terminated (header contract).
        let path = unsafe { c_path(path, "path")? };
        crate::io::training::read_training(&path)
    })
}

/// hetreward_dataset_new() for one shard of a distributed fit (hetreward_fit_distributed()):
/// the same checks except identifiability (n > d1 + d2, psi0 not zero nor in the span of psi),
/// which is the merged shards' — hetreward_fit_distributed() checks the total row count, and
/// a psi0 that does not identify the scale makes the merged information singular
/// (HETREWARD_SINGULAR_INFORMATION). Fit such a dataset only as a shard. Same arguments,
/// ownership and other status codes.
#[no_mangle]
pub extern "C" fn hetreward_dataset_new_shard(
    n: usize,
    d1: usize,
    d2: usize,
    z: *const f64,
    psi0: *const f64,
    psi: *const f64,
    y: *const f64,
    cluster: *const i64,
    out_dataset: *mut *mut hetreward_dataset,
) -> hetreward_status {
    let arrays = Arrays {
        n,
        d1,
        d2,
        psi0,
        psi,
        y,
        cluster,
    };
    // SAFETY: the header's contract on the array lengths.
    finish(out_dataset, || unsafe {
        arrays.build(Features::Z(z), Rows::Shard)
    })
}

/// hetreward_dataset_new_shard() with `float` arrays (as hetreward_dataset_new_f32()).
#[no_mangle]
pub extern "C" fn hetreward_dataset_new_shard_f32(
    n: usize,
    d1: usize,
    d2: usize,
    z: *const f32,
    psi0: *const f32,
    psi: *const f32,
    y: *const f32,
    cluster: *const i64,
    out_dataset: *mut *mut hetreward_dataset,
) -> hetreward_status {
    let arrays = Arrays {
        n,
        d1,
        d2,
        psi0,
        psi,
        y,
        cluster,
    };
    // SAFETY: the header's contract on the array lengths.
    finish(out_dataset, || unsafe {
        arrays.build(Features::Z(z), Rows::Shard)
    })
}

/// hetreward_dataset_load() for one shard of a distributed fit: identifiability is left to
/// the merged shards, as in hetreward_dataset_new_shard(). Same arguments and status codes.
#[no_mangle]
pub extern "C" fn hetreward_dataset_load_shard(
    path: *const c_char,
    out_dataset: *mut *mut hetreward_dataset,
) -> hetreward_status {
    finish(out_dataset, || {
        // SAFETY: `path` is NULL or NUL-terminated (header contract).
        let path = unsafe { c_path(path, "path")? };
        crate::io::training::read_rows(&path, Rows::Shard)
    })
}

/// Number of samples n of a dataset; 0 if `dataset` is NULL. Thread-safe.
#[no_mangle]
pub extern "C" fn hetreward_dataset_n(dataset: *const hetreward_dataset) -> usize {
    // SAFETY: NULL or a live dataset (header contract).
    boundary_value(0, || unsafe { dataset.as_ref() }.map_or(0, |d| d.inner.n()))
}

/// Reward-feature dimension d1 of a dataset; 0 if `dataset` is NULL. Thread-safe.
#[no_mangle]
pub extern "C" fn hetreward_dataset_d1(dataset: *const hetreward_dataset) -> usize {
    // SAFETY: NULL or a live dataset (header contract).
    boundary_value(0, || {
        unsafe { dataset.as_ref() }.map_or(0, |d| d.inner.d1())
    })
}

/// Annotator-covariate dimension d2 of a dataset (may be 0); 0 if `dataset` is NULL.
/// Thread-safe.
#[no_mangle]
pub extern "C" fn hetreward_dataset_d2(dataset: *const hetreward_dataset) -> usize {
    // SAFETY: NULL or a live dataset (header contract).
    boundary_value(0, || {
        unsafe { dataset.as_ref() }.map_or(0, |d| d.inner.d2())
    })
}

/// Frees a dataset. NULL is a no-op. The dataset must not be in use by another thread (e.g. a
/// running fit); models fitted from it stay valid (they do not refer to it).
#[no_mangle]
pub extern "C" fn hetreward_dataset_free(dataset: *mut hetreward_dataset) {
    boundary_value((), || {
        if !dataset.is_null() {
            // SAFETY: created by Box::into_raw in this module, freed once (header contract).
            drop(unsafe { Box::from_raw(dataset) });
        }
    })
}

/// Borrows the dataset behind a handle.
///
/// # Safety
/// `ptr` must be NULL or a live dataset.
pub(crate) unsafe fn dataset_ref<'a>(ptr: *const hetreward_dataset) -> Result<&'a Dataset> {
    handle_ref(ptr, "dataset").map(|d| &d.inner)
}
