//! `hetreward_model`: an immutable fitted model — estimates, SEs, report, scoring,
//! comparisons, BoN / pBoN selection, rationality, saving and loading.

use super::args::{
    c_path, check_dim, checked_len, handle_ref, in_slice, optional_slice, out_ptr, out_slice,
    write_slice, write_zero_padded, ZeroPadded,
};
use super::enums::{
    from_c, hetreward_covariance, hetreward_diff_method, hetreward_policy, hetreward_solver,
    hetreward_termination, hetreward_verdict,
};
use super::status::{boundary, boundary_value, hetreward_status};
use crate::error::{check_alpha, Error, Result};
use crate::fitted::{RewardInterval, RewardModel};
use crate::io::model_file;
use crate::select::{self, DiffMethod, Policy};
use std::ffi::c_char;

/// A fitted reward model: theta, gamma, their covariance and the fit report.
///
/// Opaque. Created by hetreward_fitter_fit(), hetreward_model_load() or
/// hetreward_model_load_buffer(); freed by hetreward_model_free(). Immutable: every function
/// takes a `const hetreward_model *`, and any number of threads may use one model at once
/// (e.g. every request thread of a server scoring with one loaded model).
#[allow(non_camel_case_types)]
pub struct hetreward_model {
    inner: RewardModel,
}

/// Boxes a model for C.
pub(crate) fn model_into_raw(inner: RewardModel) -> *mut hetreward_model {
    Box::into_raw(Box::new(hetreward_model { inner }))
}

/// Borrows the model behind a handle.
///
/// # Safety
/// `ptr` must be NULL or a live model.
pub(crate) unsafe fn model_ref<'a>(ptr: *const hetreward_model) -> Result<&'a RewardModel> {
    handle_ref(ptr, "model").map(|m| &m.inner)
}

/// How a model was fitted (docs/contract.md §2), filled by hetreward_model_report().
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
#[allow(non_camel_case_types)]
pub struct hetreward_fit_report {
    /// HETREWARD_SOLVER_NEWTON or HETREWARD_SOLVER_AGD.
    pub solver: hetreward_solver,
    /// The covariance kind of the model's standard errors (HETREWARD_COVARIANCE_*).
    pub covariance: hetreward_covariance,
    /// Why the winning start stopped (HETREWARD_TERMINATION_*).
    pub termination: hetreward_termination,
    /// Whether the winning start met the tolerance.
    pub converged: bool,
    /// Iterations of the winning start.
    pub iterations: usize,
    /// Iterations over all starts, including the homogeneous fit that makes the default start.
    pub total_iterations: usize,
    /// Number of starts tried.
    pub starts: usize,
    /// Final Euclidean gradient norm of the mean NLL.
    pub grad_norm: f64,
    /// Final mean negative log-likelihood.
    pub neg_loglik: f64,
    /// Wall-clock seconds of the fit.
    pub seconds: f64,
    /// The tolerance asked for.
    pub tol: f64,
}

impl ZeroPadded for hetreward_fit_report {
    unsafe fn write_fields(&self, dst: *mut Self) {
        use std::ptr::addr_of_mut;
        addr_of_mut!((*dst).solver).write(self.solver);
        addr_of_mut!((*dst).covariance).write(self.covariance);
        addr_of_mut!((*dst).termination).write(self.termination);
        addr_of_mut!((*dst).converged).write(self.converged);
        addr_of_mut!((*dst).iterations).write(self.iterations);
        addr_of_mut!((*dst).total_iterations).write(self.total_iterations);
        addr_of_mut!((*dst).starts).write(self.starts);
        addr_of_mut!((*dst).grad_norm).write(self.grad_norm);
        addr_of_mut!((*dst).neg_loglik).write(self.neg_loglik);
        addr_of_mut!((*dst).seconds).write(self.seconds);
        addr_of_mut!((*dst).tol).write(self.tol);
    }
}

/// A reward with its standard error and (1 - alpha) confidence interval.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
#[allow(non_camel_case_types)]
pub struct hetreward_reward {
    /// r = theta . phi.
    pub reward: f64,
    /// se(phi) = sqrt(phi^T S_theta^2 phi / n).
    pub se: f64,
    /// reward - q_{1-alpha/2} se (the pessimistic reward of pBoN).
    pub lower: f64,
    /// reward + q_{1-alpha/2} se.
    pub upper: f64,
}

impl From<RewardInterval> for hetreward_reward {
    fn from(r: RewardInterval) -> Self {
        hetreward_reward {
            reward: r.reward,
            se: r.se,
            lower: r.lower,
            upper: r.upper,
        }
    }
}

/// A reward difference D = r(a0) - r(a1) with its SE, CI, p-value and verdict.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
#[allow(non_camel_case_types)]
pub struct hetreward_comparison {
    /// r(a0) - r(a1).
    pub diff: f64,
    /// SE of the difference under the chosen method.
    pub se: f64,
    /// Lower end of the (1 - alpha) CI.
    pub lower: f64,
    /// Upper end of the CI.
    pub upper: f64,
    /// Two-sided p-value of D = 0.
    pub p_value: f64,
    /// HETREWARD_VERDICT_TIE, _WIN or _LOSS.
    pub verdict: hetreward_verdict,
}

impl ZeroPadded for hetreward_comparison {
    unsafe fn write_fields(&self, dst: *mut Self) {
        use std::ptr::addr_of_mut;
        addr_of_mut!((*dst).diff).write(self.diff);
        addr_of_mut!((*dst).se).write(self.se);
        addr_of_mut!((*dst).lower).write(self.lower);
        addr_of_mut!((*dst).upper).write(self.upper);
        addr_of_mut!((*dst).p_value).write(self.p_value);
        addr_of_mut!((*dst).verdict).write(self.verdict);
    }
}

/// One candidate's figures in a selection.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
#[allow(non_camel_case_types)]
pub struct hetreward_candidate {
    /// Reward, SE and CI of the candidate.
    pub reward: hetreward_reward,
    /// The caller's penalty (0 if none was given).
    pub penalty: f64,
    /// The policy's objective: reward - penalty (BoN) or lower - penalty (pBoN).
    pub score: f64,
}

/// Training sample size n of a model; 0 if `model` is NULL. Thread-safe.
#[no_mangle]
pub extern "C" fn hetreward_model_n(model: *const hetreward_model) -> usize {
    // SAFETY: NULL or a live model (header contract).
    boundary_value(0, || unsafe { model.as_ref() }.map_or(0, |m| m.inner.n()))
}

/// Reward-feature dimension d1 (length of theta and of every phi); 0 if `model` is NULL.
/// Thread-safe.
#[no_mangle]
pub extern "C" fn hetreward_model_d1(model: *const hetreward_model) -> usize {
    // SAFETY: NULL or a live model (header contract).
    boundary_value(0, || unsafe { model.as_ref() }.map_or(0, |m| m.inner.d1()))
}

/// Annotator-covariate dimension d2 (length of gamma, may be 0); 0 if `model` is NULL.
/// Thread-safe.
#[no_mangle]
pub extern "C" fn hetreward_model_d2(model: *const hetreward_model) -> usize {
    // SAFETY: NULL or a live model (header contract).
    boundary_value(0, || unsafe { model.as_ref() }.map_or(0, |m| m.inner.d2()))
}

/// Copies one of the model's vectors into a caller array of exactly its length.
fn copy_vector(
    model: *const hetreward_model,
    out: *mut f64,
    len: usize,
    which: fn(&RewardModel) -> &[f64],
    what: &str,
) -> hetreward_status {
    boundary(|| {
        // SAFETY: NULL or a live model (header contract).
        let m = unsafe { model_ref(model)? };
        let values = which(m);
        check_dim("len", len, values.len(), what)?;
        let out = out_slice(out, len, "out_values")?;
        // SAFETY: `out` holds `len` = values.len() elements (header contract).
        unsafe { write_slice(out, values) };
        Ok(())
    })
}

/// Copies theta_hat (d1 values) into `out_values`; `len` must equal d1.
/// Returns HETREWARD_NULL_POINTER or HETREWARD_DIMENSION_MISMATCH. Thread-safe.
#[no_mangle]
pub extern "C" fn hetreward_model_theta(
    model: *const hetreward_model,
    out_values: *mut f64,
    len: usize,
) -> hetreward_status {
    copy_vector(model, out_values, len, RewardModel::theta, "the model's d1")
}

/// Copies gamma_hat (d2 values) into `out_values` (NULL allowed when d2 = 0); `len` must
/// equal d2. Returns HETREWARD_NULL_POINTER or HETREWARD_DIMENSION_MISMATCH. Thread-safe.
#[no_mangle]
pub extern "C" fn hetreward_model_gamma(
    model: *const hetreward_model,
    out_values: *mut f64,
    len: usize,
) -> hetreward_status {
    copy_vector(model, out_values, len, RewardModel::gamma, "the model's d2")
}

/// Copies the standard errors of theta_hat, sqrt((S_theta^2)_jj / n) (d1 values); `len` must
/// equal d1. Returns HETREWARD_NULL_POINTER or HETREWARD_DIMENSION_MISMATCH. Thread-safe.
#[no_mangle]
pub extern "C" fn hetreward_model_theta_se(
    model: *const hetreward_model,
    out_values: *mut f64,
    len: usize,
) -> hetreward_status {
    copy_vector(
        model,
        out_values,
        len,
        RewardModel::theta_se,
        "the model's d1",
    )
}

/// Copies the standard errors of gamma_hat, sqrt((S_gamma^2)_kk / n) (d2 values; NULL allowed
/// when d2 = 0); `len` must equal d2. Returns HETREWARD_NULL_POINTER or
/// HETREWARD_DIMENSION_MISMATCH. Thread-safe.
#[no_mangle]
pub extern "C" fn hetreward_model_gamma_se(
    model: *const hetreward_model,
    out_values: *mut f64,
    len: usize,
) -> hetreward_status {
    copy_vector(
        model,
        out_values,
        len,
        RewardModel::gamma_se,
        "the model's d2",
    )
}

/// Fills `*out_report` with how the model was fitted. Returns HETREWARD_NULL_POINTER.
/// Thread-safe.
#[no_mangle]
pub extern "C" fn hetreward_model_report(
    model: *const hetreward_model,
    out_report: *mut hetreward_fit_report,
) -> hetreward_status {
    boundary(|| {
        // SAFETY: NULL or a live model (header contract).
        let m = unsafe { model_ref(model)? };
        let out = out_ptr(out_report, "out_report")?;
        let r = m.report();
        let report = hetreward_fit_report {
            solver: r.solver.code(),
            covariance: m.covariance().code(),
            termination: r.termination.code(),
            converged: r.converged,
            iterations: r.iterations,
            total_iterations: r.total_iterations,
            starts: r.starts,
            grad_norm: r.grad_norm,
            neg_loglik: r.neg_loglik,
            seconds: r.seconds,
            tol: r.tol,
        };
        // SAFETY: checked non-NULL.
        unsafe { write_zero_padded(out, std::slice::from_ref(&report)) };
        Ok(())
    })
}

/// Scores `m` answers: `phi` is m x d1 row-major `float` (one embedding per row; NULL allowed
/// when m = 0), `d1` must equal the model's d1, `alpha` in (0, 1) sets the (1 - alpha) CIs.
/// Writes m results to `out_rewards` (caller-allocated, m elements).
///
/// Returns HETREWARD_NULL_POINTER, HETREWARD_DIMENSION_MISMATCH (d1 differs from the model's,
/// m * d1 overflows), HETREWARD_NON_FINITE (the message gives the flat index: row = index / d1),
/// HETREWARD_INVALID_ARGUMENT (alpha). Thread-safe: any number of threads may score with one
/// model at once; results do not depend on threading.
#[no_mangle]
pub extern "C" fn hetreward_model_score(
    model: *const hetreward_model,
    phi: *const f32,
    m: usize,
    d1: usize,
    alpha: f64,
    out_rewards: *mut hetreward_reward,
) -> hetreward_status {
    boundary(|| {
        // SAFETY: NULL or a live model (header contract).
        let model = unsafe { model_ref(model)? };
        check_dim("d1", d1, model.d1(), "the model's d1")?;
        // SAFETY: `phi` holds m * d1 floats (header contract).
        let phi = unsafe { in_slice(phi, checked_len("phi", m, d1)?, "phi")? };
        let out = out_slice(out_rewards, m, "out_rewards")?;
        let rewards: Vec<hetreward_reward> = model
            .score_batch(phi, alpha)?
            .into_iter()
            .map(hetreward_reward::from)
            .collect();
        // SAFETY: `out` holds m elements (header contract).
        unsafe { write_slice(out, &rewards) };
        Ok(())
    })
}

/// Compares m pairs of answers: row i of `phi0` (answer a0) with row i of `phi1` (answer a1),
/// both m x d1 row-major `float`; D = r(a0) - r(a1) with its SE under `method`
/// (HETREWARD_DIFF_*), (1 - alpha) CI, two-sided p-value and verdict (win = a0 significantly
/// better). Writes m results to `out_comparisons` (caller-allocated).
///
/// Returns HETREWARD_NULL_POINTER, HETREWARD_DIMENSION_MISMATCH, HETREWARD_NON_FINITE,
/// HETREWARD_INVALID_ARGUMENT (alpha, unknown method). Thread-safe.
#[no_mangle]
pub extern "C" fn hetreward_model_compare(
    model: *const hetreward_model,
    phi0: *const f32,
    phi1: *const f32,
    m: usize,
    d1: usize,
    alpha: f64,
    method: hetreward_diff_method,
    out_comparisons: *mut hetreward_comparison,
) -> hetreward_status {
    boundary(|| {
        // SAFETY: NULL or a live model (header contract).
        let model = unsafe { model_ref(model)? };
        check_dim("d1", d1, model.d1(), "the model's d1")?;
        let len = checked_len("phi0", m, d1)?;
        // SAFETY: `phi0`, `phi1` hold m * d1 floats (header contract).
        let (phi0, phi1) = unsafe { (in_slice(phi0, len, "phi0")?, in_slice(phi1, len, "phi1")?) };
        let method: DiffMethod = from_c("method", method, "HETREWARD_DIFF_*")?;
        check_alpha(alpha)?;
        let out = out_slice(out_comparisons, m, "out_comparisons")?;
        let rows0 = model.rows_f64("phi0", phi0)?;
        let rows1 = model.rows_f64("phi1", phi1)?;
        let comparisons: Vec<hetreward_comparison> = rows0
            .chunks_exact(d1)
            .zip(rows1.chunks_exact(d1))
            .enumerate()
            .map(|(i, (a, b))| {
                let c = select::compare_checked(model, a, b, alpha, method, i)?;
                Ok(hetreward_comparison {
                    diff: c.diff,
                    se: c.se,
                    lower: c.lower,
                    upper: c.upper,
                    p_value: c.p_value,
                    verdict: c.verdict.code(),
                })
            })
            .collect::<Result<_>>()?;
        // SAFETY: `out` holds m elements (header contract).
        unsafe { write_zero_padded(out, &comparisons) };
        Ok(())
    })
}

/// Picks the best of `n_candidates` answers to one prompt (docs/contract.md §4): `phi` is
/// n_candidates x d1 row-major `float`; `penalty` is optional (NULL = none) with one finite
/// value per candidate (e.g. beta * KL); `policy` is HETREWARD_POLICY_BON (argmax reward -
/// penalty) or HETREWARD_POLICY_PBON (argmax lower - penalty, lower = reward - q_{1-alpha/2}
/// se). Ties go to the lowest index.
///
/// Writes the 0-based index of the chosen candidate to `*out_index`, and, if
/// `out_candidates` is not NULL, every candidate's figures to it (n_candidates elements,
/// caller-allocated). With `out_candidates` NULL, pBoN computes only the intervals that can
/// change the choice (candidates in decreasing order of an upper bound of their score until
/// none left can win: reward - penalty, or for a percentile-bootstrap model a bound from the
/// first of its draws; all of them for the cluster methods): the same index, several times
/// faster when SEs are small next to the spread of the rewards. Returns HETREWARD_NULL_POINTER, HETREWARD_DIMENSION_MISMATCH (no
/// candidates, d1 differs from the model's), HETREWARD_NON_FINITE (features or penalties),
/// HETREWARD_INVALID_ARGUMENT (alpha, unknown policy). Thread-safe.
#[no_mangle]
pub extern "C" fn hetreward_model_select(
    model: *const hetreward_model,
    phi: *const f32,
    n_candidates: usize,
    d1: usize,
    penalty: *const f64,
    alpha: f64,
    policy: hetreward_policy,
    out_index: *mut usize,
    out_candidates: *mut hetreward_candidate,
) -> hetreward_status {
    boundary(|| {
        // SAFETY: NULL or a live model (header contract).
        let model = unsafe { model_ref(model)? };
        check_dim("d1", d1, model.d1(), "the model's d1")?;
        if n_candidates == 0 {
            return Err(Error::dims("n_candidates", "at least one candidate", 0));
        }
        // SAFETY: `phi` holds n_candidates * d1 floats, `penalty` n_candidates doubles.
        let (phi, penalty) = unsafe {
            (
                in_slice(phi, checked_len("phi", n_candidates, d1)?, "phi")?,
                optional_slice(penalty, n_candidates, "penalty")?,
            )
        };
        let policy: Policy = from_c("policy", policy, "HETREWARD_POLICY_*")?;
        let out_index = out_ptr(out_index, "out_index")?;
        if out_candidates.is_null() {
            // Only the choice is asked for: the pruned search (same index, same errors).
            let best = select::select_best(model, phi, penalty, alpha, policy)?;
            // SAFETY: checked non-NULL.
            unsafe { *out_index = best.index };
            return Ok(());
        }
        let selection = select::select(model, phi, penalty, alpha, policy)?;
        let out = out_slice(out_candidates, n_candidates, "out_candidates")?;
        let candidates: Vec<hetreward_candidate> = selection
            .candidates
            .iter()
            .map(|c| hetreward_candidate {
                reward: c.interval.into(),
                penalty: c.penalty,
                score: c.score,
            })
            .collect();
        // SAFETY: checked non-NULL; `out_candidates` holds n_candidates elements.
        unsafe {
            write_slice(out, &candidates);
            *out_index = selection.index;
        }
        Ok(())
    })
}

/// Rationality of an annotator profile, sigma_hat = psi0 + gamma_hat . psi, and its standard
/// error sqrt(psi^T Cov(gamma_hat) psi) (psi0 is known, so it carries no variance). `psi` has
/// `d2` values (NULL allowed when d2 = 0); `d2` must equal the model's d2.
///
/// Writes `*out_sigma` and `*out_se`. Returns HETREWARD_NULL_POINTER,
/// HETREWARD_DIMENSION_MISMATCH, HETREWARD_NON_FINITE. Thread-safe.
#[no_mangle]
pub extern "C" fn hetreward_model_rationality(
    model: *const hetreward_model,
    psi0: f64,
    psi: *const f64,
    d2: usize,
    out_sigma: *mut f64,
    out_se: *mut f64,
) -> hetreward_status {
    boundary(|| {
        // SAFETY: NULL or a live model (header contract).
        let model = unsafe { model_ref(model)? };
        check_dim("d2", d2, model.d2(), "the model's d2")?;
        // SAFETY: `psi` holds d2 doubles (header contract).
        let psi = unsafe { in_slice(psi, d2, "psi")? };
        let out_sigma = out_ptr(out_sigma, "out_sigma")?;
        let out_se = out_ptr(out_se, "out_se")?;
        let (sigma, se) = model.rationality(psi0, psi)?;
        // SAFETY: both checked non-NULL.
        unsafe {
            *out_sigma = sigma;
            *out_se = se;
        }
        Ok(())
    })
}

/// Writes the model to a file (the versioned, checksummed model format, docs/contract.md §6),
/// atomically: a temporary file next to `path`, created exclusively (a planted file or link of
/// that name is never followed), is written, synced and renamed over `path`, so a crash never
/// leaves a half-written model under `path`. An existing `path` must be a regular file: it is
/// never replaced through a symbolic link, a folder, a device, a FIFO or a socket.
///
/// Returns HETREWARD_NULL_POINTER, HETREWARD_INVALID_ARGUMENT (empty path, or `path` names
/// something other than a regular file), HETREWARD_IO (missing folder, read-only target,
/// permissions, full disk).
/// Thread-safe with respect to the model; saves to one path from several threads at once need
/// external synchronisation.
#[no_mangle]
pub extern "C" fn hetreward_model_save(
    model: *const hetreward_model,
    path: *const c_char,
) -> hetreward_status {
    boundary(|| {
        // SAFETY: NULL or a live model; `path` NULL or NUL-terminated (header contract).
        let (model, path) = unsafe { (model_ref(model)?, c_path(path, "path")?) };
        model_file::save(model, &path)
    })
}

/// Reads a model file written by hetreward_model_save() (or `hetreward fit --out`).
///
/// On success `*out_model` receives a new model, to be freed with hetreward_model_free().
/// Returns HETREWARD_NULL_POINTER, HETREWARD_INVALID_ARGUMENT (empty path), HETREWARD_IO,
/// HETREWARD_BAD_FORMAT (not a model file, wrong version, truncated, checksum mismatch).
/// Thread-safe.
#[no_mangle]
pub extern "C" fn hetreward_model_load(
    path: *const c_char,
    out_model: *mut *mut hetreward_model,
) -> hetreward_status {
    boundary(|| {
        let out = out_ptr(out_model, "out_model")?;
        // SAFETY: `path` NULL or NUL-terminated (header contract).
        let path = unsafe { c_path(path, "path")? };
        let model = model_file::load(&path)?;
        // SAFETY: checked non-NULL; written only on success.
        unsafe { *out = model_into_raw(model) };
        Ok(())
    })
}

/// Serialises the model into a caller buffer, in the model file format.
///
/// With `buf` NULL, only writes the number of bytes needed to `*out_len` (`buf_len` is then
/// ignored). Otherwise writes the model to `buf` if `buf_len` is at least that size, and its
/// size to `*out_len`. The size of a model never changes, so one query is enough.
/// Returns HETREWARD_NULL_POINTER (model, out_len), HETREWARD_DIMENSION_MISMATCH (buffer too
/// small; the message gives the size needed). Thread-safe.
#[no_mangle]
pub extern "C" fn hetreward_model_save_buffer(
    model: *const hetreward_model,
    buf: *mut u8,
    buf_len: usize,
    out_len: *mut usize,
) -> hetreward_status {
    boundary(|| {
        // SAFETY: NULL or a live model (header contract).
        let model = unsafe { model_ref(model)? };
        let out_len = out_ptr(out_len, "out_len")?;
        let bytes = model_file::to_bytes(model);
        if !buf.is_null() {
            if buf_len < bytes.len() {
                return Err(Error::dims(
                    "buf_len",
                    format!("at least {} bytes", bytes.len()),
                    buf_len,
                ));
            }
            let out = out_slice(buf, bytes.len(), "buf")?;
            // SAFETY: `buf` holds buf_len >= bytes.len() bytes (header contract).
            unsafe { write_slice(out, &bytes) };
        }
        // SAFETY: checked non-NULL.
        unsafe { *out_len = bytes.len() };
        Ok(())
    })
}

/// Reads a model from `len` bytes written by hetreward_model_save_buffer() (or the contents
/// of a model file). The bytes are only read during the call.
///
/// On success `*out_model` receives a new model, to be freed with hetreward_model_free().
/// Returns HETREWARD_NULL_POINTER, HETREWARD_BAD_FORMAT (not a model, wrong version,
/// truncated, checksum mismatch). Thread-safe.
#[no_mangle]
pub extern "C" fn hetreward_model_load_buffer(
    buf: *const u8,
    len: usize,
    out_model: *mut *mut hetreward_model,
) -> hetreward_status {
    boundary(|| {
        let out = out_ptr(out_model, "out_model")?;
        if buf.is_null() {
            return Err(Error::NullArgument { arg: "buf".into() });
        }
        // SAFETY: `buf` holds `len` bytes (header contract).
        let bytes = unsafe { in_slice(buf, len, "buf")? };
        let model = model_file::from_bytes(bytes, "<buffer>")?;
        // SAFETY: checked non-NULL; written only on success.
        unsafe { *out = model_into_raw(model) };
        Ok(())
    })
}

/// Frees a model. NULL is a no-op. No other thread may be using the model.
#[no_mangle]
pub extern "C" fn hetreward_model_free(model: *mut hetreward_model) {
    boundary_value((), || {
        if !model.is_null() {
            // SAFETY: created by model_into_raw, freed once (header contract).
            drop(unsafe { Box::from_raw(model) });
        }
    })
}
