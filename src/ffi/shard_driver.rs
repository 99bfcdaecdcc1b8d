//! `hetreward_fit_distributed`: the driver-side fit over shards that live elsewhere (an
//! engine's workers). The library runs the solver; every sum over samples is asked of the
//! caller's oracle callback as request bytes, which the caller's workers answer with
//! hetreward_shard_stats_compute_request() and the caller merges in shard order.

use super::args::{handle_ref, in_slice, out_ptr};
use super::dataset::{dataset_ref, hetreward_dataset};
use super::fitter::hetreward_fitter;
use super::model::{hetreward_model, model_into_raw};
use super::shard::hetreward_shard_stats;
use super::status::{
    boundary, hetreward_last_error_message, hetreward_status, hetreward_status_name, set_last_error,
};
use crate::calibrate::IntervalMethod;
use crate::error::{Error, Result};
use crate::shard::driver::{Oracle, Rounds};
use crate::shard::{merge_summaries, Request, ShardStats, ShardSummary};
use std::cell::RefCell;
use std::ffi::{c_int, c_void, CStr};

/// The first pass over a shard (hetreward_shard_summary_of()): what must agree across shards
/// before they are fitted together. Treat as a value to pass back to
/// hetreward_fit_distributed(); `schema` checks the other fields.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(non_camel_case_types)]
pub struct hetreward_shard_summary {
    /// Rows (comparisons) in the shard.
    pub n: u64,
    /// Reward dimension d1.
    pub d1: u64,
    /// Covariate dimension d2.
    pub d2: u64,
    /// Whether the shard has cluster (annotator) ids.
    pub clustered: bool,
    /// CRC-32 of the schema (format version, d1, d2, clustered).
    pub schema: u32,
}

impl From<ShardSummary> for hetreward_shard_summary {
    fn from(s: ShardSummary) -> Self {
        hetreward_shard_summary {
            n: s.n,
            d1: s.d1,
            d2: s.d2,
            clustered: s.clustered,
            schema: s.schema,
        }
    }
}

impl From<hetreward_shard_summary> for ShardSummary {
    fn from(s: hetreward_shard_summary) -> Self {
        ShardSummary {
            n: s.n,
            d1: s.d1,
            d2: s.d2,
            clustered: s.clustered,
            schema: s.schema,
        }
    }
}

/// Rounds a distributed fit asked of its oracle, by kind (the summaries are not a round).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[allow(non_camel_case_types)]
pub struct hetreward_distributed_rounds {
    /// Every oracle call.
    pub total: u64,
    /// Points evaluated (value and gradient; with the curvature matrices when d1 + d2 <= 256).
    pub points: u64,
    /// Hessian-vector product rounds (conjugate gradients, d1 + d2 > 256).
    pub products: u64,
    /// Preconditioner rounds (the packed expected information, conjugate gradients).
    pub preconditioner: u64,
    /// The covariance round (1).
    pub covariance: u64,
}

impl From<Rounds> for hetreward_distributed_rounds {
    fn from(r: Rounds) -> Self {
        hetreward_distributed_rounds {
            total: r.total as u64,
            points: r.points as u64,
            products: r.products as u64,
            preconditioner: r.preconditioner as u64,
            covariance: r.covariance as u64,
        }
    }
}

/// The oracle of hetreward_fit_distributed(): answers one round.
///
/// `request` holds `request_len` bytes (valid during the call only) to hand unchanged to every
/// shard's hetreward_shard_stats_compute_request(). The callback merges every shard's answer
/// **in shard order** (hetreward_shard_stats_merge(), after hetreward_shard_stats_from_bytes()
/// where they travelled as bytes) and stores the merged statistics in `*out_answer`.
///
/// Whatever the callback stores in `*out_answer` (initially NULL) belongs to the library from
/// then on, whatever it returns: the library frees it. Return 0 to continue; any other value
/// stops the fit, which then fails with HETREWARD_CANCELLED and a message naming the value and
/// the round. Called on the thread that called hetreward_fit_distributed(), one round at a
/// time; it must not unwind (C++ exceptions, Rust panics) into the library.
#[allow(non_camel_case_types)]
pub type hetreward_shard_oracle = Option<
    unsafe extern "C" fn(
        request: *const u8,
        request_len: usize,
        out_answer: *mut *mut hetreward_shard_stats,
        user_data: *mut c_void,
    ) -> c_int,
>;

/// The summary of a shard, for hetreward_fit_distributed(): its row count, dimensions,
/// whether it has cluster ids and a checksum of that schema. Written to `*out_summary`.
/// Returns HETREWARD_NULL_POINTER.
#[no_mangle]
pub extern "C" fn hetreward_shard_summary_of(
    shard: *const hetreward_dataset,
    out_summary: *mut hetreward_shard_summary,
) -> hetreward_status {
    boundary(|| {
        let out = out_ptr(out_summary, "out_summary")?;
        // SAFETY: the header's contract: NULL or a live dataset.
        let data = unsafe { dataset_ref(shard) }?;
        let summary = hetreward_shard_summary::from(ShardSummary::of(data));
        // SAFETY: checked non-NULL. The struct's padding is not part of its value.
        unsafe { out.write(summary) };
        Ok(())
    })
}

/// Computes a shard's answer to a request of hetreward_fit_distributed()'s oracle
/// (`request_len` bytes at `request`, as given to the oracle), with `threads` worker threads
/// (0 = all cores; an engine running one task per core passes 1; results do not depend on it).
/// On success `*out_stats` receives new statistics, to be freed with
/// hetreward_shard_stats_free() (or handed back to the library by the oracle).
///
/// Returns HETREWARD_NULL_POINTER, HETREWARD_BAD_FORMAT (not a request, damaged, another
/// version: the message says which), HETREWARD_DIMENSION_MISMATCH (the request's d1 or d2 is
/// not the shard's), HETREWARD_NON_FINITE, HETREWARD_INVALID_ARGUMENT (cluster sums on a shard
/// without cluster ids, threads above 1024).
#[no_mangle]
pub extern "C" fn hetreward_shard_stats_compute_request(
    shard: *const hetreward_dataset,
    request: *const u8,
    request_len: usize,
    threads: usize,
    out_stats: *mut *mut hetreward_shard_stats,
) -> hetreward_status {
    boundary(|| {
        let out = out_ptr(out_stats, "out_stats")?;
        // SAFETY: the header's contract: NULL or a live dataset.
        let data = unsafe { dataset_ref(shard) }?;
        if request.is_null() {
            return Err(Error::NullArgument {
                arg: "request".to_string(),
            });
        }
        // SAFETY: the header's contract: `request_len` readable bytes.
        let bytes = unsafe { in_slice(request, request_len, "request") }?;
        let request = Request::from_bytes(bytes)?;
        super::args::check_dim(
            "request d1",
            request.params.theta.len(),
            data.d1(),
            "the shard's d1",
        )?;
        super::args::check_dim(
            "request d2",
            request.params.gamma.len(),
            data.d2(),
            "the shard's d2",
        )?;
        let inner = super::shard::compute_on_pool(data, &request, threads)?;
        // SAFETY: checked non-NULL; written only now that everything succeeded.
        unsafe { *out = Box::into_raw(Box::new(hetreward_shard_stats { inner })) };
        Ok(())
    })
}

/// An [`Oracle`] that asks the caller's callback; records why it stopped the fit.
struct CallbackOracle<'a> {
    summaries: Vec<ShardSummary>,
    callback: unsafe extern "C" fn(
        *const u8,
        usize,
        *mut *mut hetreward_shard_stats,
        *mut c_void,
    ) -> c_int,
    user_data: *mut c_void,
    round: usize,
    stopped: &'a RefCell<Option<String>>,
}

impl Oracle for CallbackOracle<'_> {
    fn summary(&mut self) -> Result<ShardSummary> {
        merge_summaries(&self.summaries)
    }

    fn compute(&mut self, request: &Request) -> Result<ShardStats> {
        self.round += 1;
        let bytes = request.to_bytes();
        let mut answer: *mut hetreward_shard_stats = std::ptr::null_mut();
        set_last_error("");
        // SAFETY: the header's contract on the callback; `bytes` outlives the call.
        let code =
            unsafe { (self.callback)(bytes.as_ptr(), bytes.len(), &mut answer, self.user_data) };
        // SAFETY: the callback hands over a handle from this library (header contract); owned
        // from here on whatever `code` is.
        let answer = (!answer.is_null()).then(|| unsafe { Box::from_raw(answer) });
        if code != 0 {
            // SAFETY: both are NUL-terminated strings of the library, valid until the next call.
            let (name, theirs) = unsafe {
                (
                    CStr::from_ptr(hetreward_status_name(code as u32)).to_string_lossy(),
                    CStr::from_ptr(hetreward_last_error_message()).to_string_lossy(),
                )
            };
            let mut detail = format!(
                "the oracle returned {code} ({name}) in round {}",
                self.round
            );
            if !theirs.is_empty() {
                detail.push_str(&format!(" (last error on this thread: {theirs})"));
            }
            *self.stopped.borrow_mut() = Some(detail);
            return Err(Error::Cancelled);
        }
        match answer {
            Some(a) => Ok(a.inner),
            None => Err(Error::invalid(
                "oracle",
                format!(
                    "returned 0 in round {} without storing an answer",
                    self.round
                ),
            )),
        }
    }
}

/// Fits the model over shards held by the caller's workers, with `fitter`'s settings
/// (hetreward_fitter_new(): tolerance, iteration cap, covariance kind, require_converged, the
/// progress callback; hetreward_fitter_cancel() stops it): the same estimator, diagnostics and
/// covariance as hetreward_fitter_fit() on the concatenated shards, to rounding.
///
/// * `summaries`: `n_shards` shard summaries (hetreward_shard_summary_of() on each shard, in
///   shard order); a shard whose dimensions or cluster flag differ from shard 0's fails here,
///   before any round;
/// * `oracle`, `oracle_user_data`: answers every round (see hetreward_shard_oracle);
/// * `*out_model` receives the model on success (hetreward_model_free());
/// * `out_rounds`: NULL, or where to write the rounds the fit asked for (written on success).
///
/// The distributed fit runs the Newton solver from the default or an explicit start, with
/// Wald intervals (params.restarts and params.threads are not used: the workers own the
/// passes). The fit asks 1 round per point tried and, above 256 parameters, 1 per conjugate
/// gradient iteration, plus 1 for the covariance, which fetches only the matrices of the
/// fitter's covariance kind (docs/distributed.md).
///
/// Returns HETREWARD_NULL_POINTER (fitter, summaries, oracle, out_model),
/// HETREWARD_INVALID_ARGUMENT (n_shards = 0, a damaged summary, the agd solver, a random start,
/// intervals other than Wald, the cluster covariance without cluster ids, an oracle that
/// returned 0 without an answer), HETREWARD_DIMENSION_MISMATCH (shards that disagree, an answer
/// that does not answer its request or covers another number of rows),
/// HETREWARD_CANCELLED (the oracle returned non-zero — the message names the value and the
/// round —, the progress callback or hetreward_fitter_cancel()), and the statuses of
/// hetreward_fitter_fit() (HETREWARD_SINGULAR_INFORMATION, HETREWARD_NOT_CONVERGED).
/// On failure nothing is written and no handle given back by the oracle leaks.
#[no_mangle]
pub extern "C" fn hetreward_fit_distributed(
    fitter: *const hetreward_fitter,
    summaries: *const hetreward_shard_summary,
    n_shards: usize,
    oracle: hetreward_shard_oracle,
    oracle_user_data: *mut c_void,
    out_model: *mut *mut hetreward_model,
    out_rounds: *mut hetreward_distributed_rounds,
) -> hetreward_status {
    let stopped = RefCell::new(None);
    let status = boundary(|| {
        // SAFETY: the header's contract: NULL or a live fitter.
        let fitter = unsafe { handle_ref(fitter, "fitter") }?;
        let out = out_ptr(out_model, "out_model")?;
        if summaries.is_null() {
            return Err(Error::NullArgument {
                arg: "summaries".to_string(),
            });
        }
        // SAFETY: the header's contract: `n_shards` summaries.
        let summaries = unsafe { in_slice(summaries, n_shards, "summaries") }?;
        let callback = oracle.ok_or_else(|| Error::NullArgument {
            arg: "oracle".to_string(),
        })?;
        let mut oracle = CallbackOracle {
            summaries: summaries.iter().map(|&s| s.into()).collect(),
            callback,
            user_data: oracle_user_data,
            round: 0,
            stopped: &stopped,
        };
        let mut rounds = Rounds::default();
        let model = fitter.run(|estimator, control| {
            if estimator.options().intervals.method != IntervalMethod::Wald {
                return Err(Error::invalid(
                    "params.intervals",
                    "the distributed fit gives Wald intervals only (calibrated intervals refit the data many times)",
                ));
            }
            let (model, asked) = estimator.estimate_distributed(&mut oracle, control)?;
            rounds = asked;
            Ok(model)
        })?;
        // SAFETY: checked non-NULL; written only on success.
        unsafe {
            if let Some(r) = out_rounds.as_mut() {
                *r = rounds.into();
            }
            *out = model_into_raw(model);
        }
        Ok(())
    });
    if let Some(detail) = stopped.into_inner() {
        if status == hetreward_status::HETREWARD_CANCELLED {
            set_last_error(&format!("cancelled by the caller: {detail}"));
        }
    }
    status
}
