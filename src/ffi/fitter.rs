//! `hetreward_fitter`: fit options (a params struct with defaults, llama.h style), the progress
//! callback, and cancellation from another thread.

use super::args::{handle_ref, in_slice, out_ptr};
use super::dataset::{dataset_ref, hetreward_dataset};
use super::enums::{
    from_c, hetreward_covariance, hetreward_init, hetreward_intervals, hetreward_solver,
};
use super::model::{hetreward_model, model_into_raw};
use super::status::{boundary, boundary_value, hetreward_status};
use crate::calibrate::{IntervalMethod, IntervalOptions, MAX_REPS, MIN_REPS};
use crate::covariance::CovarianceKind;
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::estimator::{Estimator, EstimatorOptions};
use crate::fit::{FitControl, FitOptions, Init, InitKind, Progress, SolverKind};
use crate::fitted::RewardModel;
use crate::model::Params;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};

/// What a progress callback sees, once before each solver iteration: the state that iteration
/// starts from. Valid only during the callback.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
#[allow(non_camel_case_types)]
pub struct hetreward_progress {
    /// Which start is running, 0-based (start 0 also covers the default homogeneous start).
    pub start: usize,
    /// Iterations done in this start before the one about to run (0: the start point).
    pub iteration: usize,
    /// The iteration cap of this start.
    pub max_iter: usize,
    /// Current mean negative log-likelihood.
    pub neg_loglik: f64,
    /// Current Euclidean norm of the gradient (the fit stops when it is <= tol).
    pub grad_norm: f64,
}

/// Progress callback: called before every solver iteration, with the state the iteration
/// starts from (`iteration` = iterations done so far in this start, 0 for the start point) and
/// the params' `progress_user_data`. Return 0 to continue, nonzero to cancel the fit before
/// that iteration's work (the fit then returns HETREWARD_CANCELLED). It is not called once a
/// start has stopped (converged, iteration cap, stalled, diverged): a start of k iterations
/// makes k calls, and the final state is in the model's report (hetreward_model_report()). Called on one of the library's worker threads, never
/// concurrently with itself for one fit; it must not free the fitter or the dataset.
#[allow(non_camel_case_types)]
pub type hetreward_progress_callback = Option<
    unsafe extern "C" fn(progress: *const hetreward_progress, user_data: *mut c_void) -> c_int,
>;

/// Options of a fit. Get the defaults from hetreward_fit_default_params(), change the fields
/// you care about, pass a pointer to hetreward_fitter_new(). Fields may be appended in later
/// versions (never reordered); `struct_size` tells the library which version the caller has.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
#[allow(non_camel_case_types)]
pub struct hetreward_fit_params {
    /// sizeof(hetreward_fit_params), set by hetreward_fit_default_params(); do not change.
    pub struct_size: usize,
    /// HETREWARD_SOLVER_NEWTON (default) or HETREWARD_SOLVER_AGD.
    pub solver: hetreward_solver,
    /// Covariance kind of the standard errors. Default HETREWARD_COVARIANCE_EXPECTED.
    pub covariance: hetreward_covariance,
    /// agd step size for theta, > 0. Default 0.1 (the paper's). Ignored by Newton.
    pub eta1: f64,
    /// agd step size for gamma, > 0. Default 0.08 (the paper's). Ignored by Newton.
    pub eta2: f64,
    /// Iteration cap per start; 0 = the solver's default (Newton 100, agd 10000). At most
    /// 1,000,000,000 (HETREWARD_INVALID_ARGUMENT above).
    pub max_iter: u64,
    /// Convergence tolerance on the gradient norm of the mean NLL, >= 0. Default 1e-8.
    pub tol: f64,
    /// Seed of the random starts (HETREWARD_INIT_RANDOM and Newton's restarts). Default 0.
    /// The result is deterministic for a seed, whatever `threads` is.
    pub seed: u64,
    /// HETREWARD_INIT_DEFAULT (default), HETREWARD_INIT_RANDOM or HETREWARD_INIT_EXPLICIT.
    pub init: hetreward_init,
    /// Extra seeded U(-1,1) starts of the Newton solver when d2 > 0 (the lowest optimum
    /// wins). Default 2, at most 1000 (HETREWARD_INVALID_ARGUMENT above). Ignored by agd.
    pub restarts: u32,
    /// Explicit start for theta (d1 values) when init = HETREWARD_INIT_EXPLICIT, else ignored.
    /// Copied by hetreward_fitter_new(). Default NULL.
    pub theta0: *const f64,
    /// Number of values in theta0 (must equal the dataset's d1 at fit time). Default 0.
    pub theta0_len: usize,
    /// Explicit start for gamma (d2 values; NULL if d2 = 0) when init =
    /// HETREWARD_INIT_EXPLICIT, else ignored. Copied by hetreward_fitter_new(). Default NULL.
    pub gamma0: *const f64,
    /// Number of values in gamma0 (must equal the dataset's d2 at fit time). Default 0.
    pub gamma0_len: usize,
    /// Worker threads of the fit; 0 = one per core (default), at most 1024
    /// (HETREWARD_INVALID_ARGUMENT above). Results do not depend on it.
    pub threads: u32,
    /// If true, a fit that stops without meeting `tol` fails with HETREWARD_NOT_CONVERGED.
    /// Default false: such a fit still returns a model whose report says converged = false
    /// (agd with a fixed iteration count is the paper's algorithm).
    pub require_converged: bool,
    /// Optional progress callback (NULL = none, the default); see hetreward_progress_callback.
    pub progress: hetreward_progress_callback,
    /// Passed unchanged to `progress`; the caller keeps it valid while the fitter may fit.
    pub progress_user_data: *mut c_void,
    /// How the model's confidence intervals are computed (HETREWARD_INTERVALS_*; appended
    /// in format version 2 of this struct). Default HETREWARD_INTERVALS_WALD, the paper's.
    /// The bootstrap methods refit B resamples after the fit (seeded by `seed`; the result
    /// does not depend on `threads`). See hetreward_model_intervals().
    pub intervals: hetreward_intervals,
    /// Bootstrap refits B; 0 = the method's default (400 for bootstrap, 100 for resized),
    /// else 10..=100000. Ignored by HETREWARD_INTERVALS_WALD.
    pub bootstrap_reps: u32,
}

/// `sizeof(hetreward_fit_params)` of the first version of the struct (before `intervals`):
/// callers compiled against it keep working, with the appended fields at their defaults.
pub const FIT_PARAMS_V1_SIZE: usize = std::mem::offset_of!(hetreward_fit_params, intervals);

/// The caller's params over the defaults: the first `struct_size` bytes are the caller's
/// (an older, smaller struct leaves the appended fields at their defaults).
///
/// Errors: a `struct_size` that is neither the current size nor an older version's.
///
/// # Safety
/// `p` points to a params struct of at least `struct_size` bytes (its first field).
unsafe fn params_over_defaults(p: *const hetreward_fit_params) -> Result<hetreward_fit_params> {
    let mut out = hetreward_fit_default_params();
    let current = std::mem::size_of::<hetreward_fit_params>();
    let size = std::ptr::read_unaligned(p.cast::<usize>());
    if size != current && size != FIT_PARAMS_V1_SIZE {
        return Err(Error::invalid(
            "params.struct_size",
            format!(
                "got {size}, expected {current} (or {FIT_PARAMS_V1_SIZE}, the first version): initialise the params with hetreward_fit_default_params()"
            ),
        ));
    }
    // SAFETY: the caller's struct has `size` readable bytes (header contract); `out` is a
    // valid struct of `current >= size` bytes whose fields are all plain data or pointers.
    std::ptr::copy_nonoverlapping(
        p.cast::<u8>(),
        (&mut out as *mut hetreward_fit_params).cast::<u8>(),
        size,
    );
    out.struct_size = current;
    Ok(out)
}

/// The default fit params (values documented on each field), with `struct_size` set.
/// Thread-safe; cannot fail.
///
/// The struct is returned by value at this library's size, so a program built against an older
/// header must not call this function of a newer library: the minor version is part of the
/// SONAME (libhetreward.so.0.MINOR) while the major version is 0, so such a program keeps
/// loading the library it was built with and must be rebuilt to use this one. A struct from an
/// older header that the caller filled in itself (struct_size = its size) is accepted by
/// hetreward_fitter_new().
#[no_mangle]
pub extern "C" fn hetreward_fit_default_params() -> hetreward_fit_params {
    let o = FitOptions::default();
    hetreward_fit_params {
        struct_size: std::mem::size_of::<hetreward_fit_params>(),
        solver: o.solver.code(),
        covariance: CovarianceKind::default().code(),
        eta1: o.eta1,
        eta2: o.eta2,
        max_iter: 0,
        tol: o.tol,
        seed: o.seed,
        init: o.init.kind().code(),
        restarts: o.restarts as u32,
        theta0: std::ptr::null(),
        theta0_len: 0,
        gamma0: std::ptr::null(),
        gamma0_len: 0,
        threads: 0,
        require_converged: false,
        progress: None,
        progress_user_data: std::ptr::null_mut(),
        intervals: IntervalMethod::default().code(),
        bootstrap_reps: 0,
    }
}

/// The caller's progress callback with its user data.
struct ProgressHook {
    callback: unsafe extern "C" fn(*const hetreward_progress, *mut c_void) -> c_int,
    user_data: *mut c_void,
}

// SAFETY: the header makes the caller responsible for `user_data` being usable from the
// library's worker thread; the hook is called by one thread at a time.
unsafe impl Send for ProgressHook {}
// SAFETY: as above.
unsafe impl Sync for ProgressHook {}

impl ProgressHook {
    /// Calls the C callback; `true` means continue.
    fn call(&self, p: &Progress) -> bool {
        let progress = hetreward_progress {
            start: p.start,
            iteration: p.iteration,
            max_iter: p.max_iter,
            neg_loglik: p.neg_loglik,
            grad_norm: p.grad_norm,
        };
        // SAFETY: a valid callback by the header's contract; `progress` outlives the call.
        unsafe { (self.callback)(&progress, self.user_data) == 0 }
    }
}

/// A configured fitter: the params of hetreward_fitter_new(), and a cancellation flag.
///
/// Opaque. Created by hetreward_fitter_new(), freed by hetreward_fitter_free(). One fit at a
/// time per fitter (hetreward_fitter_fit() needs exclusive use); hetreward_fitter_cancel() may
/// be called from any thread at any time. Fitting does not change the fitter, so it can fit
/// any number of datasets one after the other.
#[allow(non_camel_case_types)]
pub struct hetreward_fitter {
    estimator: Estimator,
    progress: Option<ProgressHook>,
    cancel: AtomicBool,
}

impl hetreward_fitter {
    /// Converts and checks the C params (everything that can be checked without the data).
    ///
    /// # Safety
    /// `theta0` / `gamma0` must point to their stated lengths when init is explicit.
    unsafe fn from_params(p: &hetreward_fit_params) -> Result<Self> {
        let expected = std::mem::size_of::<hetreward_fit_params>();
        if p.struct_size != expected {
            return Err(Error::invalid(
                "params.struct_size",
                format!(
                    "got {}, expected {expected}: initialise the params with hetreward_fit_default_params()",
                    p.struct_size
                ),
            ));
        }
        let solver: SolverKind = from_c("params.solver", p.solver, "HETREWARD_SOLVER_*")?;
        let covariance: CovarianceKind =
            from_c("params.covariance", p.covariance, "HETREWARD_COVARIANCE_*")?;
        let init = match from_c("params.init", p.init, "HETREWARD_INIT_*")? {
            InitKind::Default => Init::Default,
            InitKind::Random => Init::Random,
            InitKind::Explicit => Init::Explicit(Params {
                theta: in_slice(p.theta0, p.theta0_len, "params.theta0")?.to_vec(),
                gamma: in_slice(p.gamma0, p.gamma0_len, "params.gamma0")?.to_vec(),
            }),
        };
        let max_iter = match p.max_iter {
            0 => None,
            k => Some(usize::try_from(k).map_err(|_| {
                Error::invalid("params.max_iter", format!("{k} does not fit in size_t"))
            })?),
        };
        let reps = match p.bootstrap_reps {
            0 => None,
            b => Some(b as usize),
        };
        let estimator = EstimatorOptions {
            fit: FitOptions {
                solver,
                eta1: p.eta1,
                eta2: p.eta2,
                max_iter,
                tol: p.tol,
                seed: p.seed,
                init,
                restarts: p.restarts as usize,
                threads: p.threads as usize,
            },
            covariance,
            intervals: IntervalOptions {
                method: from_c("params.intervals", p.intervals, "HETREWARD_INTERVALS_*")?,
                reps,
            },
            require_converged: p.require_converged,
        }
        // The checks that need no data (the dimensions are checked at fit time), named as
        // fields of the params struct.
        .check()
        .map_err(|e| params_error(e, p.bootstrap_reps))?;
        Ok(hetreward_fitter {
            estimator,
            progress: p.progress.map(|callback| ProgressHook {
                callback,
                user_data: p.progress_user_data,
            }),
            cancel: AtomicBool::new(false),
        })
    }

    /// Fits `data` with these options; the cancel flag is cleared when the fit ends.
    fn fit(&self, data: &Dataset) -> Result<RewardModel> {
        self.run(|estimator, control| estimator.estimate(data, control))
    }

    /// Runs `estimate` with the fitter's estimator, progress callback and cancel flag, then
    /// clears the flag: the frame of every fit a fitter drives (hetreward_fitter_fit(),
    /// hetreward_fit_distributed()).
    pub(super) fn run(
        &self,
        estimate: impl FnOnce(&Estimator, &FitControl) -> Result<RewardModel>,
    ) -> Result<RewardModel> {
        let hook = self.progress.as_ref();
        let observe = |p: &Progress| hook.is_none_or(|h| h.call(p));
        let control = FitControl {
            progress: hook.map(|_| &observe as &(dyn Fn(&Progress) -> bool + Sync)),
            cancel: Some(&self.cancel),
        };
        let result = estimate(&self.estimator, &control);
        self.cancel.store(false, Ordering::SeqCst);
        result
    }
}

/// An error of [`EstimatorOptions::check`] as the C caller knows the fields: the refit count
/// with the C convention (0 = the default), every other option prefixed `params.`.
fn params_error(error: Error, bootstrap_reps: u32) -> Error {
    match error {
        Error::InvalidArgument { arg, .. } if arg == "bootstrap_reps" => Error::invalid(
            "params.bootstrap_reps",
            format!(
                "must be 0 (the default) or lie in [{MIN_REPS}, {MAX_REPS}]; got {bootstrap_reps}"
            ),
        ),
        other => prefix_params(other),
    }
}

/// Names option errors as fields of the params struct (`eta1` -> `params.eta1`).
fn prefix_params(error: Error) -> Error {
    match error {
        Error::InvalidArgument { arg, reason } => Error::InvalidArgument {
            arg: format!("params.{arg}"),
            reason,
        },
        Error::NonFinite { arg, index, value } => Error::NonFinite {
            arg: format!("params.{arg}"),
            index,
            value,
        },
        other => other,
    }
}

/// Creates a fitter from `params` (NULL = the defaults), copying everything it needs
/// (theta0 / gamma0 included; the progress callback and its user_data are kept).
///
/// On success `*out_fitter` receives a new fitter, to be freed with hetreward_fitter_free().
/// `struct_size` may also be that of an older version of the struct (callers compiled against
/// an older header): the fields it lacks take their defaults.
/// Returns HETREWARD_NULL_POINTER (out_fitter, or theta0 with theta0_len > 0 under explicit
/// init), HETREWARD_INVALID_ARGUMENT (wrong struct_size, unknown enum value, eta1/eta2 not
/// positive and finite, tol negative or not finite, bootstrap_reps outside 10..=100000),
/// HETREWARD_NON_FINITE (theta0/gamma0).
/// Thread-safe.
#[no_mangle]
pub extern "C" fn hetreward_fitter_new(
    params: *const hetreward_fit_params,
    out_fitter: *mut *mut hetreward_fitter,
) -> hetreward_status {
    boundary(|| {
        let out = out_ptr(out_fitter, "out_fitter")?;
        let p = if params.is_null() {
            hetreward_fit_default_params()
        } else {
            // SAFETY: a valid params struct of its struct_size bytes (header contract).
            unsafe { params_over_defaults(params)? }
        };
        let p = &p;
        // SAFETY: theta0 / gamma0 point to their lengths (header contract).
        let fitter = unsafe { hetreward_fitter::from_params(p)? };
        // SAFETY: checked non-NULL; written only on success.
        unsafe { *out = Box::into_raw(Box::new(fitter)) };
        Ok(())
    })
}

/// Fits a model to `dataset` (maximum likelihood, then the params' covariance at the
/// estimate). Blocks until done; uses `params.threads` worker threads of a pool of its own.
///
/// On success `*out_model` receives a new model, to be freed with hetreward_model_free(). A
/// fit that stops at the iteration cap without meeting `tol` still succeeds unless
/// `require_converged` was set: check hetreward_model_report(). Returns
/// HETREWARD_NULL_POINTER, HETREWARD_DIMENSION_MISMATCH (theta0/gamma0 lengths differ from
/// d1/d2), HETREWARD_INVALID_ARGUMENT (cluster covariance without cluster ids),
/// HETREWARD_SINGULAR_INFORMATION (the covariance cannot be computed reliably),
/// HETREWARD_NOT_CONVERGED (only with require_converged), HETREWARD_CANCELLED, HETREWARD_INTERNAL
/// (e.g. the worker threads cannot be started).
///
/// Threads: one fit at a time per fitter; the dataset may be shared with other fits.
/// hetreward_fitter_cancel() stops this fit from another thread.
#[no_mangle]
pub extern "C" fn hetreward_fitter_fit(
    fitter: *mut hetreward_fitter,
    dataset: *const hetreward_dataset,
    out_model: *mut *mut hetreward_model,
) -> hetreward_status {
    boundary(|| {
        // Only a shared borrow: hetreward_fitter_cancel() may touch the flag meanwhile.
        // SAFETY: NULL or a live fitter / dataset (header contract).
        let fitter = unsafe { handle_ref(fitter.cast_const(), "fitter")? };
        // SAFETY: as above.
        let data = unsafe { dataset_ref(dataset)? };
        let out = out_ptr(out_model, "out_model")?;
        let model = fitter.fit(data)?;
        // SAFETY: checked non-NULL; written only on success.
        unsafe { *out = model_into_raw(model) };
        Ok(())
    })
}

/// Requests cancellation of the fit running on `fitter`: it stops before its next iteration
/// and returns HETREWARD_CANCELLED (a fit past its last iteration completes normally). A
/// request made while no fit runs applies to the next fit. The request is cleared whenever a
/// fit returns. NULL is a no-op.
///
/// Thread-safe: may be called from any thread, also while hetreward_fitter_fit() runs on
/// another (e.g. a server's shutdown path); the fitter must stay alive during the call.
#[no_mangle]
pub extern "C" fn hetreward_fitter_cancel(fitter: *const hetreward_fitter) {
    boundary_value((), || {
        // SAFETY: NULL or a live fitter (header contract).
        if let Some(f) = unsafe { fitter.as_ref() } {
            f.cancel.store(true, Ordering::SeqCst);
        }
    })
}

/// Frees a fitter. NULL is a no-op. No fit may be running on it.
#[no_mangle]
pub extern "C" fn hetreward_fitter_free(fitter: *mut hetreward_fitter) {
    boundary_value((), || {
        if !fitter.is_null() {
            // SAFETY: created by Box::into_raw in this module, freed once (header contract).
            drop(unsafe { Box::from_raw(fitter) });
        }
    })
}
