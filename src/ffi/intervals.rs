//! Interval methods in the C ABI: the HETREWARD_INTERVALS_* codes of the fit params,
//! the getter of a model's method and diagnostics, its warning, and the paper's Wald view of
//! any model.

use super::args::{check_dim, in_slice, out_ptr};
use super::enums::hetreward_intervals;
use super::model::{hetreward_model, hetreward_reward, model_into_raw, model_ref};
use super::status::{boundary, hetreward_status};
use std::ffi::c_char;

/// A model's interval method, its figures and the fit's interval diagnostics, filled by
/// hetreward_model_intervals().
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
#[allow(non_camel_case_types)]
pub struct hetreward_interval_info {
    /// The method the model's intervals use (HETREWARD_INTERVALS_WALD, _BOOTSTRAP, _RESIZED,
    /// _CLUSTER_JACKKNIFE or _CLUSTER_ONESTEP; never _AUTO).
    pub method: hetreward_intervals,
    /// The method asked for at fit time (HETREWARD_INTERVALS_AUTO when auto picked `method`).
    pub requested: hetreward_intervals,
    /// Bootstrap refits B (0 for Wald; the number of clusters G for the cluster methods).
    pub reps: usize,
    /// Refits that converged from neither the warm start nor the estimator's own starts (kept at
    /// their last iterate).
    pub diverged: usize,
    /// Seed of the bootstrap's label draws.
    pub seed: u64,
    /// Shrink s of the resized bootstrap (1 otherwise).
    pub shrink: f64,
    /// Inflation estimate alpha_hat of the resized bootstrap (1 otherwise).
    pub alpha_hat: f64,
    /// Mean ratio of the bootstrap SD (over alpha_hat) to the Wald SE over training rows:
    /// reward / alpha_hat +- q c_hat se_wald serves at Wald's cost (1 for Wald).
    pub c_hat: f64,
    /// d1 / n.
    pub d1_over_n: f64,
    /// Whether the fit reached a finite optimum (false: the likelihood runs off to
    /// |gamma| -> infinity, the data are separated, or the solver stopped early).
    pub mle_finite: bool,
    /// max_k |gamma_hat_k| (0 when d2 = 0).
    pub max_abs_gamma: f64,
    /// Share of bootstrap refits that did not converge (0 for Wald).
    pub diverged_share: f64,
    /// Whether there is a warning (hetreward_model_interval_warning()), e.g. Wald intervals
    /// where Wald is known to under-cover.
    pub has_warning: bool,
}

/// Fills `*out_info` with the model's interval method, its figures and the fit's interval
/// diagnostics. Returns HETREWARD_NULL_POINTER. Thread-safe.
#[no_mangle]
pub extern "C" fn hetreward_model_intervals(
    model: *const hetreward_model,
    out_info: *mut hetreward_interval_info,
) -> hetreward_status {
    boundary(|| {
        // SAFETY: NULL or a live model (header contract).
        let m = unsafe { model_ref(model)? };
        let out = out_ptr(out_info, "out_info")?;
        let c = m.calibration();
        let d = m.diagnostics();
        let info = hetreward_interval_info {
            method: c.method().code(),
            requested: c.requested().code(),
            reps: c.reps(),
            diverged: c.diverged(),
            seed: c.seed(),
            shrink: c.shrink(),
            alpha_hat: c.alpha_hat(),
            c_hat: c.c_hat(),
            d1_over_n: d.d1_over_n,
            mle_finite: d.mle_finite,
            max_abs_gamma: d.max_abs_gamma,
            diverged_share: d.diverged_share,
            has_warning: d.warning.is_some(),
        };
        // SAFETY: checked non-NULL.
        unsafe { *out = info };
        Ok(())
    })
}

/// Copies the model's interval warning (plain words; empty when there is none) into `buf` as
/// a NUL-terminated string, truncated to `buf_len - 1` bytes, and writes its full length
/// (without the NUL) to `*out_len`: call with `buf_len = 0` (`buf` may then be NULL) to learn
/// the size. Returns HETREWARD_NULL_POINTER (out_len, or buf with buf_len > 0). Thread-safe.
#[no_mangle]
pub extern "C" fn hetreward_model_interval_warning(
    model: *const hetreward_model,
    buf: *mut c_char,
    buf_len: usize,
    out_len: *mut usize,
) -> hetreward_status {
    boundary(|| {
        // SAFETY: NULL or a live model (header contract).
        let m = unsafe { model_ref(model)? };
        let out_len = out_ptr(out_len, "out_len")?;
        if buf_len > 0 {
            out_ptr(buf, "buf")?;
        }
        let text = m.diagnostics().warning.unwrap_or_default();
        let bytes = text.as_bytes();
        // SAFETY: `buf` holds `buf_len` bytes (header contract); `out_len` checked non-NULL.
        unsafe {
            if buf_len > 0 {
                let k = bytes.len().min(buf_len - 1);
                std::ptr::copy_nonoverlapping(bytes.as_ptr(), buf.cast::<u8>(), k);
                *buf.add(k) = 0;
            }
            *out_len = bytes.len();
        }
        Ok(())
    })
}

/// Creates a copy of `model` whose intervals are the paper's Wald intervals, whatever method
/// the model carries: how the paper's figures stay reachable (score, compare, select and
/// rationality with the copy give them). On success `*out_model` receives a new model, to be
/// freed with hetreward_model_free(). Returns HETREWARD_NULL_POINTER. Thread-safe.
#[no_mangle]
pub extern "C" fn hetreward_model_wald(
    model: *const hetreward_model,
    out_model: *mut *mut hetreward_model,
) -> hetreward_status {
    boundary(|| {
        // SAFETY: NULL or a live model (header contract).
        let m = unsafe { model_ref(model)? };
        let out = out_ptr(out_model, "out_model")?;
        let wald = m.wald();
        // SAFETY: checked non-NULL; written only on success.
        unsafe { *out = model_into_raw(wald) };
        Ok(())
    })
}

/// Rationality of an annotator profile, sigma_hat = psi0 + gamma_hat . psi, with its
/// (1 - alpha) interval under the model's interval method: Wald `sigma_hat +- q se`; for a
/// bootstrap model the percentile interval of the stored refits' rationalities
/// `psi0 + gamma*_b . psi` (exact, not `+- q se`); for a resized model `sigma_hat - bias . psi
/// +- q SD*`. `psi` has `d2` values (NULL allowed when d2 = 0); `d2` must equal the model's d2;
/// `alpha` in (0, 1).
///
/// Writes `*out` (`reward` holds sigma; `se` the matching spread, as
/// hetreward_model_rationality() reports). Returns HETREWARD_NULL_POINTER,
/// HETREWARD_DIMENSION_MISMATCH, HETREWARD_NON_FINITE, HETREWARD_INVALID_ARGUMENT (alpha).
/// Thread-safe.
#[no_mangle]
pub extern "C" fn hetreward_model_rationality_interval(
    model: *const hetreward_model,
    psi0: f64,
    psi: *const f64,
    d2: usize,
    alpha: f64,
    out: *mut hetreward_reward,
) -> hetreward_status {
    boundary(|| {
        // SAFETY: NULL or a live model (header contract).
        let model = unsafe { model_ref(model)? };
        check_dim("d2", d2, model.d2(), "the model's d2")?;
        // SAFETY: `psi` holds d2 doubles (header contract).
        let psi = unsafe { in_slice(psi, d2, "psi")? };
        let out = out_ptr(out, "out")?;
        let interval = model.rationality_interval(psi0, psi, alpha)?;
        // SAFETY: checked non-NULL.
        unsafe { *out = interval.into() };
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::super::dataset::{hetreward_dataset_free, hetreward_dataset_new};
    use super::super::enums::*;
    use super::super::fitter::*;
    use super::super::model::{hetreward_model_free, hetreward_model_score, hetreward_reward};
    use super::super::status::hetreward_last_error_message;
    use super::*;
    use crate::ffi::status::hetreward_status::*;
    use crate::sim::{paper_simulation, ActionDesign};
    use std::ffi::{c_void, CStr};
    use std::ptr::null_mut;

    /// `hetreward_fit_params` as the first version of the header declared it (before the
    /// interval fields were appended).
    #[repr(C)]
    struct FitParamsV1 {
        struct_size: usize,
        solver: u32,
        covariance: u32,
        eta1: f64,
        eta2: f64,
        max_iter: u64,
        tol: f64,
        seed: u64,
        init: u32,
        restarts: u32,
        theta0: *const f64,
        theta0_len: usize,
        gamma0: *const f64,
        gamma0_len: usize,
        threads: u32,
        require_converged: bool,
        progress: hetreward_progress_callback,
        progress_user_data: *mut c_void,
    }

    fn last_error() -> String {
        // SAFETY: the library returns a valid C string.
        unsafe { CStr::from_ptr(hetreward_last_error_message()) }
            .to_string_lossy()
            .into_owned()
    }

    fn dataset() -> *mut crate::ffi::dataset::hetreward_dataset {
        let d = paper_simulation(200, ActionDesign::Uniform, 8);
        let mut out = null_mut();
        let s = hetreward_dataset_new(
            d.n(),
            d.d1(),
            d.d2(),
            d.z().as_ptr(),
            d.psi0().as_ptr(),
            d.psi().as_ptr(),
            d.y().as_ptr(),
            std::ptr::null(),
            &mut out,
        );
        assert_eq!(s, HETREWARD_OK, "{}", last_error());
        out
    }

    fn fit(p: *const hetreward_fit_params) -> *mut hetreward_model {
        let data = dataset();
        let (mut fitter, mut model) = (null_mut(), null_mut());
        assert_eq!(
            hetreward_fitter_new(p, &mut fitter),
            HETREWARD_OK,
            "{}",
            last_error()
        );
        assert_eq!(
            hetreward_fitter_fit(fitter, data, &mut model),
            HETREWARD_OK,
            "{}",
            last_error()
        );
        hetreward_fitter_free(fitter);
        hetreward_dataset_free(data);
        model
    }

    fn info(model: *const hetreward_model) -> hetreward_interval_info {
        let mut out = std::mem::MaybeUninit::uninit();
        assert_eq!(
            hetreward_model_intervals(model, out.as_mut_ptr()),
            HETREWARD_OK
        );
        // SAFETY: written on success.
        unsafe { out.assume_init() }
    }

    #[test]
    fn a_struct_from_the_previous_version_still_works() {
        assert_eq!(std::mem::size_of::<FitParamsV1>(), FIT_PARAMS_V1_SIZE);
        let d = hetreward_fit_default_params();
        let old = FitParamsV1 {
            struct_size: std::mem::size_of::<FitParamsV1>(),
            solver: d.solver,
            covariance: d.covariance,
            eta1: d.eta1,
            eta2: d.eta2,
            max_iter: d.max_iter,
            tol: d.tol,
            seed: 3,
            init: d.init,
            restarts: d.restarts,
            theta0: d.theta0,
            theta0_len: 0,
            gamma0: d.gamma0,
            gamma0_len: 0,
            threads: 1,
            require_converged: true,
            progress: None,
            progress_user_data: null_mut(),
        };
        // The old struct is smaller: the library must not read past it (Miri/ASan would see).
        let model = fit((&old as *const FitParamsV1).cast());
        let i = info(model);
        assert_eq!(i.method, HETREWARD_INTERVALS_WALD);
        assert_eq!(i.requested, HETREWARD_INTERVALS_WALD);
        assert_eq!(i.reps, 0);
        assert!(i.has_warning); // n = 200, Wald: the small-sample warning
        hetreward_model_free(model);
    }

    #[test]
    fn bootstrap_models_report_their_method_and_the_wald_copy_the_papers_figures() {
        let mut p = hetreward_fit_default_params();
        p.intervals = HETREWARD_INTERVALS_AUTO;
        p.bootstrap_reps = 30;
        p.seed = 4;
        let model = fit(&p);
        let i = info(model);
        assert_eq!(
            (i.method, i.requested),
            (HETREWARD_INTERVALS_BOOTSTRAP, HETREWARD_INTERVALS_AUTO)
        );
        assert_eq!((i.reps, i.seed), (30, 4));
        assert!((i.d1_over_n - 3.0 / 200.0).abs() < 1e-15);
        assert_eq!(i.alpha_hat, 1.0);
        // The warning: size query, then a truncated copy.
        let mut len = 99;
        assert_eq!(
            hetreward_model_interval_warning(model, null_mut(), 0, &mut len),
            HETREWARD_OK
        );
        assert_eq!(len == 0, !i.has_warning);
        let mut buf = [1 as c_char; 8];
        assert_eq!(
            hetreward_model_interval_warning(model, buf.as_mut_ptr(), 8, &mut len),
            HETREWARD_OK
        );
        assert_eq!(buf[len.min(7)], 0);
        // Wald copy: symmetric intervals; the original's percentile ones differ.
        let mut wald = null_mut();
        assert_eq!(hetreward_model_wald(model, &mut wald), HETREWARD_OK);
        assert_eq!(info(wald).method, HETREWARD_INTERVALS_WALD);
        let phi = [0.0625f32, 0.125, 0.125];
        let zero = hetreward_reward {
            reward: 0.0,
            se: 0.0,
            lower: 0.0,
            upper: 0.0,
        };
        let (mut a, mut b) = ([zero], [zero]);
        assert_eq!(
            hetreward_model_score(model, phi.as_ptr(), 1, 3, 0.05, a.as_mut_ptr()),
            HETREWARD_OK
        );
        assert_eq!(
            hetreward_model_score(wald, phi.as_ptr(), 1, 3, 0.05, b.as_mut_ptr()),
            HETREWARD_OK
        );
        assert_eq!(a[0].reward, b[0].reward);
        assert_ne!(a[0].lower, b[0].lower);
        let w = b[0];
        assert!(((w.upper - w.reward) - (w.reward - w.lower)).abs() < 1e-12);
        hetreward_model_free(wald);
        hetreward_model_free(model);
        let mut out = null_mut();
        assert_eq!(
            hetreward_model_wald(std::ptr::null(), &mut out),
            HETREWARD_NULL_POINTER
        );
        assert!(out.is_null());
    }

    #[test]
    fn interval_params_are_checked() {
        let mut fitter = null_mut();
        for (intervals, reps, needle) in [
            (6, 0, "params.intervals"),
            (HETREWARD_INTERVALS_BOOTSTRAP, 9, "params.bootstrap_reps"),
            (
                HETREWARD_INTERVALS_RESIZED,
                100_001,
                "params.bootstrap_reps",
            ),
        ] {
            let mut p = hetreward_fit_default_params();
            p.intervals = intervals;
            p.bootstrap_reps = reps;
            assert_eq!(
                hetreward_fitter_new(&p, &mut fitter),
                HETREWARD_INVALID_ARGUMENT
            );
            assert!(last_error().contains(needle), "{}", last_error());
            assert!(fitter.is_null());
        }
        let mut p = hetreward_fit_default_params();
        p.bootstrap_reps = 100_000;
        assert_eq!(hetreward_fitter_new(&p, &mut fitter), HETREWARD_OK);
        hetreward_fitter_free(fitter);
        let mut info = std::mem::MaybeUninit::uninit();
        assert_eq!(
            hetreward_model_intervals(std::ptr::null(), info.as_mut_ptr()),
            HETREWARD_NULL_POINTER
        );
    }

    /// Issue 22, item 2: a resized-bootstrap model file with a valid checksum and a finite gamma
    /// bias of +-1e308 loads, and the rationality interval it would give is infinite: the C API
    /// answers INVALID_ARGUMENT naming `psi`, never HETREWARD_OK with inf / NaN.
    #[test]
    fn a_crafted_gamma_bias_is_an_error_naming_psi_never_an_infinite_interval() {
        use super::super::model::hetreward_model_load_buffer;
        use crate::calibrate::IntervalMethod;
        let model = crate::testing::simulated_model(300, 5, IntervalMethod::Resized, 20, 1);
        let bytes = crate::io::model_file::to_bytes(&model);
        let (d1, d2) = (model.d1(), model.d2());
        // docs/model-format.md: 20-byte header; the interval section (50 bytes before the
        // bias) follows theta, gamma, the packed factor of Cov(theta) and Cov(gamma).
        let bias_at = 20 + 76 + 8 * (d1 * (d1 + 3) / 2 + d2 * (d2 + 1)) + 50;
        let stored = f64::from_le_bytes(bytes[bias_at..bias_at + 8].try_into().unwrap());
        assert_eq!(stored, model.calibration().gamma_bias()[0]);
        let psi = vec![1.0; d2];
        for bias in [1e308f64, -1e308] {
            let mut crafted = bytes.clone();
            for k in 0..d2 {
                crafted[bias_at + 8 * k..bias_at + 8 * (k + 1)]
                    .copy_from_slice(&bias.to_le_bytes());
            }
            let end = crafted.len() - 4;
            let crc = crc32fast::hash(&crafted[20..end]);
            crafted[end..].copy_from_slice(&crc.to_le_bytes());
            let mut loaded = null_mut();
            let s = hetreward_model_load_buffer(crafted.as_ptr(), crafted.len(), &mut loaded);
            assert_eq!(s, HETREWARD_OK, "{}", last_error());
            let mut out = hetreward_reward {
                reward: 7.0,
                se: 7.0,
                lower: 7.0,
                upper: 7.0,
            };
            let s =
                hetreward_model_rationality_interval(loaded, 1.0, psi.as_ptr(), d2, 0.05, &mut out);
            assert_eq!(s, HETREWARD_INVALID_ARGUMENT, "bias {bias}: {out:?}");
            let message = last_error();
            assert!(
                message.contains("`psi`") && message.contains("overflows"),
                "{message}"
            );
            // Nothing was written.
            assert_eq!((out.reward, out.lower), (7.0, 7.0));
            hetreward_model_free(loaded);
        }
    }
}
