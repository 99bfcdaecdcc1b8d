//! `hetreward_shard_stats`: per-shard sums at given parameters, merged and moved as bytes by
//! an engine (Ray, Dask, Spark) whose driver fits from them (see docs/distributed.md).

use super::args::{checked_len, handle_ref, in_slice, out_ptr, out_slice, write_slice};
use super::dataset::{dataset_ref, hetreward_dataset};
use super::enums::hetreward_shard_sections;
use super::status::{boundary, boundary_value, hetreward_status};
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::fit::MAX_THREADS;
use crate::likelihood::Curvature;
use crate::model::Params;
use crate::parallel::run_in_pool;
use crate::shard::{Request, Section, ShardStats};

/// One shard's sums at given parameters (or the merged sums of several shards).
///
/// Opaque. Created by hetreward_shard_stats_compute() or hetreward_shard_stats_from_bytes();
/// freed by hetreward_shard_stats_free(). hetreward_shard_stats_merge() changes its first
/// argument (exclusive use); every other function takes it const.
#[allow(non_camel_case_types)]
pub struct hetreward_shard_stats {
    pub(super) inner: ShardStats,
}

/// The request that `sections` and the vectors describe.
fn request(
    params: Params,
    sections: u32,
    vectors: Option<&[f64]>,
    count: usize,
) -> Result<Request> {
    let has = |s: Section| sections & s.flag() != 0;
    let all = Section::ALL.iter().fold(0, |all, s| all | s.flag());
    if sections & !all != 0 || sections == 0 {
        return Err(Error::invalid(
            "sections",
            format!("{sections:#x} is not a non-empty OR of HETREWARD_SHARD_* values"),
        ));
    }
    let observed = has(Section::ObservedProducts);
    let expected = has(Section::ExpectedProducts);
    if observed && expected {
        return Err(Error::invalid(
            "sections",
            "products with both curvatures in one call",
        ));
    }
    if (observed || expected) != (count > 0) {
        return Err(Error::invalid(
            "n_vectors",
            format!(
                "{count} vectors, but the sections {} products",
                if count > 0 {
                    "do not ask for"
                } else {
                    "ask for"
                }
            ),
        ));
    }
    let p = params.theta.len() + params.gamma.len();
    let mut r = Request::at(params);
    r.value = has(Section::Value);
    r.curvature = if observed {
        Curvature::Observed
    } else {
        Curvature::Expected
    };
    r.products = vectors
        .unwrap_or(&[])
        .chunks_exact(p)
        .map(<[f64]>::to_vec)
        .collect();
    r.expected = has(Section::Expected);
    r.observed = has(Section::Observed);
    r.meat = has(Section::Meat);
    r.clusters = has(Section::Clusters);
    Ok(r)
}

/// [`ShardStats::compute`] on a pool of `threads` (0: all cores), after checking `threads`
/// against [`MAX_THREADS`]: what both the per-shard call and a driver-loop answer run.
pub(crate) fn compute_on_pool(
    data: &Dataset,
    request: &Request,
    threads: usize,
) -> Result<ShardStats> {
    if threads > MAX_THREADS {
        return Err(Error::invalid(
            "threads",
            format!("{threads} is above the limit of {MAX_THREADS}"),
        ));
    }
    run_in_pool(threads, || ShardStats::compute(data, request))?
}

/// Computes a shard's sums at (theta, gamma).
///
/// * `shard`: the shard's rows, as a dataset;
/// * `theta`: d1 values, `gamma`: d2 values (may be NULL when d2 = 0); d1 and d2 must be the
///   shard's;
/// * `sections`: what to compute, an OR of HETREWARD_SHARD_* values (at most one of the two
///   product kinds);
/// * `vectors`: n_vectors x (d1 + d2) row-major, the vectors to multiply by the curvature when
///   a product section is asked for (n_vectors > 0 exactly then; NULL when n_vectors = 0);
/// * `threads`: worker threads of the call's own pool (0 = all cores; an engine running one
///   task per core passes 1). Results do not depend on it.
///
/// On success `*out_stats` receives new statistics, to be freed with
/// hetreward_shard_stats_free(). Returns HETREWARD_NULL_POINTER, HETREWARD_DIMENSION_MISMATCH
/// (d1 or d2 not the shard's, the vectors' length overflows), HETREWARD_NON_FINITE (theta, gamma or a vector),
/// HETREWARD_INVALID_ARGUMENT (unknown or contradictory sections, vectors without a product
/// section or the reverse, cluster sums on a shard without cluster ids, threads above 1024).
#[no_mangle]
pub extern "C" fn hetreward_shard_stats_compute(
    shard: *const hetreward_dataset,
    theta: *const f64,
    d1: usize,
    gamma: *const f64,
    d2: usize,
    sections: hetreward_shard_sections,
    vectors: *const f64,
    n_vectors: usize,
    threads: usize,
    out_stats: *mut *mut hetreward_shard_stats,
) -> hetreward_status {
    boundary(|| {
        let out = out_ptr(out_stats, "out_stats")?;
        // SAFETY: the header's contract: NULL or a live dataset.
        let data = unsafe { dataset_ref(shard) }?;
        super::args::check_dim("d1", d1, data.d1(), "the shard's d1")?;
        super::args::check_dim("d2", d2, data.d2(), "the shard's d2")?;
        // SAFETY: the header's contract on array lengths.
        let theta = unsafe { in_slice(theta, d1, "theta") }?.to_vec();
        let gamma = unsafe { in_slice(gamma, d2, "gamma") }?.to_vec();
        let len = checked_len("vectors", n_vectors, d1 + d2)?;
        let vectors = unsafe { in_slice(vectors, len, "vectors") }?;
        let r = request(Params { theta, gamma }, sections, Some(vectors), n_vectors)?;
        let inner = compute_on_pool(data, &r, threads)?;
        // SAFETY: checked non-NULL; written only now that everything succeeded.
        unsafe { *out = Box::into_raw(Box::new(hetreward_shard_stats { inner })) };
        Ok(())
    })
}

/// Adds `other` (another shard's answer to the same request) into `stats`: counts and sums add,
/// cluster sums add by id. Merge in a fixed order (shard index) for results that do not depend
/// on scheduling. Returns HETREWARD_NULL_POINTER, HETREWARD_DIMENSION_MISMATCH (different
/// dimensions, sections or number of products); on failure `stats` is unchanged.
#[no_mangle]
pub extern "C" fn hetreward_shard_stats_merge(
    stats: *mut hetreward_shard_stats,
    other: *const hetreward_shard_stats,
) -> hetreward_status {
    boundary(|| {
        // Compared as raw pointers, before any reference to either exists.
        if !stats.is_null() && std::ptr::eq(stats.cast_const(), other) {
            return Err(Error::invalid("other", "is `stats` itself"));
        }
        // SAFETY: the header's contract: NULL or live handles, `stats` used exclusively.
        let other = unsafe { handle_ref(other, "other") }?;
        let stats = unsafe { stats.as_mut() }.ok_or_else(|| Error::NullArgument {
            arg: "stats".to_string(),
        })?;
        stats.inner.merge(&other.inner)
    })
}

/// The number of bytes hetreward_shard_stats_to_bytes() writes, through `out_size`.
/// Returns HETREWARD_NULL_POINTER.
#[no_mangle]
pub extern "C" fn hetreward_shard_stats_byte_size(
    stats: *const hetreward_shard_stats,
    out_size: *mut usize,
) -> hetreward_status {
    boundary(|| {
        let out = out_ptr(out_size, "out_size")?;
        // SAFETY: the header's contract.
        let stats = unsafe { handle_ref(stats, "stats") }?;
        let size = stats.inner.to_bytes().len();
        // SAFETY: checked non-NULL.
        unsafe { *out = size };
        Ok(())
    })
}

/// Writes the statistics as versioned, checksummed little-endian bytes (read back, in any
/// process on any platform, by hetreward_shard_stats_from_bytes()) to `out_bytes`, which has
/// room for `capacity` bytes; the size is hetreward_shard_stats_byte_size()'s. Returns
/// HETREWARD_NULL_POINTER, HETREWARD_DIMENSION_MISMATCH (capacity too small: nothing written).
#[no_mangle]
pub extern "C" fn hetreward_shard_stats_to_bytes(
    stats: *const hetreward_shard_stats,
    out_bytes: *mut u8,
    capacity: usize,
) -> hetreward_status {
    boundary(|| {
        // SAFETY: the header's contract.
        let stats = unsafe { handle_ref(stats, "stats") }?;
        let out = out_slice(out_bytes, capacity, "out_bytes")?;
        if out.is_null() {
            return Err(Error::NullArgument {
                arg: "out_bytes".to_string(),
            });
        }
        let bytes = stats.inner.to_bytes();
        if bytes.len() > capacity {
            return Err(Error::dims(
                "capacity",
                format!("at least {} bytes", bytes.len()),
                capacity,
            ));
        }
        // SAFETY: checked for `capacity >= bytes.len()` writable bytes.
        unsafe { write_slice(out, &bytes) };
        Ok(())
    })
}

/// Reads statistics written by hetreward_shard_stats_to_bytes() (`len` bytes at `bytes`).
/// On success `*out_stats` receives new statistics. Returns HETREWARD_NULL_POINTER,
/// HETREWARD_BAD_FORMAT (too short, bad magic, another version, checksum mismatch, a length
/// that does not match the header; the message says which).
#[no_mangle]
pub extern "C" fn hetreward_shard_stats_from_bytes(
    bytes: *const u8,
    len: usize,
    out_stats: *mut *mut hetreward_shard_stats,
) -> hetreward_status {
    boundary(|| {
        let out = out_ptr(out_stats, "out_stats")?;
        if bytes.is_null() {
            return Err(Error::NullArgument {
                arg: "bytes".to_string(),
            });
        }
        // SAFETY: the header's contract: `len` readable bytes.
        let bytes = unsafe { in_slice(bytes, len, "bytes") }?;
        let inner = ShardStats::from_bytes(bytes)?;
        // SAFETY: checked non-NULL; written only now that everything succeeded.
        unsafe { *out = Box::into_raw(Box::new(hetreward_shard_stats { inner })) };
        Ok(())
    })
}

/// The row count, NLL sum and gradient sum (`grad_len` must be d1 + d2) of statistics computed
/// with HETREWARD_SHARD_VALUE. Returns HETREWARD_NULL_POINTER, HETREWARD_DIMENSION_MISMATCH
/// (grad_len), HETREWARD_INVALID_ARGUMENT (the value was not computed).
#[no_mangle]
pub extern "C" fn hetreward_shard_stats_value(
    stats: *const hetreward_shard_stats,
    out_n: *mut u64,
    out_nll: *mut f64,
    out_grad: *mut f64,
    grad_len: usize,
) -> hetreward_status {
    boundary(|| {
        let out_n = out_ptr(out_n, "out_n")?;
        let out_nll = out_ptr(out_nll, "out_nll")?;
        // SAFETY: the header's contract.
        let stats = unsafe { handle_ref(stats, "stats") }?;
        let p = stats.inner.d1() + stats.inner.d2();
        super::args::check_dim("grad_len", grad_len, p, "d1 + d2")?;
        let out_grad = out_slice(out_grad, grad_len, "out_grad")?;
        let nll = stats.inner.nll_sum()?;
        let grad = stats.inner.grad_sum()?;
        // SAFETY: every pointer checked; written only now that everything succeeded.
        unsafe {
            *out_n = stats.inner.n();
            *out_nll = nll;
            write_slice(out_grad, grad);
        }
        Ok(())
    })
}

/// Frees statistics. NULL is a no-op.
#[no_mangle]
pub extern "C" fn hetreward_shard_stats_free(stats: *mut hetreward_shard_stats) {
    boundary_value((), || {
        if !stats.is_null() {
            // SAFETY: created by Box::into_raw in this module, freed once (header contract).
            drop(unsafe { Box::from_raw(stats) });
        }
    })
}
