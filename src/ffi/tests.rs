//! Rust-side tests of the C ABI: the header is fresh, codes and names agree, panics are
//! caught, results equal the Rust API's. The C suite (`c-tests/`) tests it from C.

use super::dataset::*;
use super::fitter::*;
use super::model::*;
use super::status::*;
use crate::covariance::CovarianceKind;
use crate::error::Error;
use crate::fit::{FitControl, FitOptions};
use crate::RewardModel;
use hetreward_status::*;
use std::ffi::{c_int, c_void, CStr};
use std::ptr::{null, null_mut};

/// The committed header must be exactly what cbindgen generates from this module now.
/// `HETREWARD_BLESS=1 cargo test --lib ffi::tests::header_is_fresh` rewrites it.
#[test]
fn header_is_fresh() {
    let generated = include_str!(env!("HETREWARD_GENERATED_HEADER"));
    assert!(
        !generated.is_empty(),
        "cbindgen failed in build.rs (see the build warnings)"
    );
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/include/hetreward.h");
    if std::env::var_os("HETREWARD_BLESS").is_some() {
        std::fs::write(path, generated).expect("write include/hetreward.h");
        return;
    }
    let committed = std::fs::read_to_string(path).unwrap_or_default();
    if committed != generated {
        let line = committed
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| committed.lines().count().min(generated.lines().count()));
        panic!(
            "include/hetreward.h is stale (first difference at line {}: committed {:?}, generated {:?}).\n\
             Regenerate it with: HETREWARD_BLESS=1 cargo test --lib ffi::tests::header_is_fresh",
            line + 1,
            committed.lines().nth(line).unwrap_or("<end of file>"),
            generated.lines().nth(line).unwrap_or("<end of file>"),
        );
    }
}

fn name(status: u32) -> String {
    // SAFETY: static NUL-terminated strings.
    unsafe { CStr::from_ptr(hetreward_status_name(status)) }
        .to_string_lossy()
        .into_owned()
}

#[test]
fn every_error_has_its_own_code_and_name() {
    let errors = [
        Error::NullArgument { arg: "a".into() },
        Error::invalid("a", "b"),
        Error::dims("a", 1, 2),
        Error::NonFinite {
            arg: "a".into(),
            index: 0,
            value: f64::NAN,
        },
        Error::SingularInformation { detail: "x".into() },
        Error::NotConverged { detail: "x".into() },
        Error::Io {
            path: "p".into(),
            detail: "x".into(),
        },
        Error::format("p", "x"),
        Error::Cancelled,
        Error::Internal { detail: "x".into() },
    ];
    let codes: Vec<u32> = errors.iter().map(|e| status_of(e) as u32).collect();
    assert_eq!(codes, (1..=10).collect::<Vec<u32>>());
    let expected = [
        (HETREWARD_OK, "HETREWARD_OK"),
        (HETREWARD_NULL_POINTER, "HETREWARD_NULL_POINTER"),
        (HETREWARD_INVALID_ARGUMENT, "HETREWARD_INVALID_ARGUMENT"),
        (HETREWARD_DIMENSION_MISMATCH, "HETREWARD_DIMENSION_MISMATCH"),
        (HETREWARD_NON_FINITE, "HETREWARD_NON_FINITE"),
        (
            HETREWARD_SINGULAR_INFORMATION,
            "HETREWARD_SINGULAR_INFORMATION",
        ),
        (HETREWARD_NOT_CONVERGED, "HETREWARD_NOT_CONVERGED"),
        (HETREWARD_IO, "HETREWARD_IO"),
        (HETREWARD_BAD_FORMAT, "HETREWARD_BAD_FORMAT"),
        (HETREWARD_CANCELLED, "HETREWARD_CANCELLED"),
        (HETREWARD_INTERNAL, "HETREWARD_INTERNAL"),
    ];
    for (status, text) in expected {
        assert_eq!(name(status as u32), text);
        assert_eq!(format!("{status:?}"), text);
    }
    assert_eq!(name(11), "HETREWARD_UNKNOWN_STATUS");
}

#[test]
fn panics_become_internal_errors() {
    let status = boundary(|| panic!("boom at the boundary"));
    assert_eq!(status, HETREWARD_INTERNAL);
    assert!(
        last_error().contains("boom at the boundary"),
        "{}",
        last_error()
    );
    assert_eq!(boundary(|| Ok(())), HETREWARD_OK);
    assert_eq!(last_error(), "", "a success clears the message");
    assert_eq!(boundary_value(7, || panic!("again")), 7);
}

/// A small heterogeneous data set: d1 = 3, d2 = 1, n = 300 (deterministic).
fn arrays() -> (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>) {
    let data = crate::sim::paper_simulation(300, crate::sim::ActionDesign::Uniform, 5);
    (
        data.z().to_vec(),
        data.psi0().to_vec(),
        data.psi().to_vec(),
        data.y().to_vec(),
    )
}

fn dataset() -> *mut hetreward_dataset {
    let (z, psi0, psi, y) = arrays();
    let d2 = psi.len() / y.len();
    let d1 = z.len() / y.len();
    let mut out = null_mut();
    let s = hetreward_dataset_new(
        y.len(),
        d1,
        d2,
        z.as_ptr(),
        psi0.as_ptr(),
        psi.as_ptr(),
        y.as_ptr(),
        null(),
        &mut out,
    );
    assert_eq!(s, HETREWARD_OK, "{}", last_error());
    out
}

#[test]
fn ffi_results_equal_the_rust_api() {
    let data = dataset();
    let mut fitter = null_mut();
    assert_eq!(hetreward_fitter_new(null(), &mut fitter), HETREWARD_OK);
    let mut model = null_mut();
    assert_eq!(
        hetreward_fitter_fit(fitter, data, &mut model),
        HETREWARD_OK,
        "{}",
        last_error()
    );
    // SAFETY: `data` is a live dataset made above.
    let rust_data = unsafe { dataset_ref(data) }.unwrap();
    let reference = RewardModel::estimate(
        rust_data,
        &FitOptions::default(),
        CovarianceKind::Expected,
        &FitControl::default(),
    )
    .unwrap();
    let d1 = hetreward_model_d1(model);
    let mut theta = vec![0.0; d1];
    assert_eq!(
        hetreward_model_theta(model, theta.as_mut_ptr(), d1),
        HETREWARD_OK
    );
    assert_eq!(theta, reference.theta());
    let phi: Vec<f32> = vec![0.25, 0.5, -0.125, 1.0, 0.0, 0.5];
    let mut out = [hetreward_reward {
        reward: 0.0,
        se: 0.0,
        lower: 0.0,
        upper: 0.0,
    }; 2];
    assert_eq!(
        hetreward_model_score(model, phi.as_ptr(), 2, d1, 0.05, out.as_mut_ptr()),
        HETREWARD_OK
    );
    let expected = reference.score_batch(&phi, 0.05).unwrap();
    for (o, e) in out.iter().zip(&expected) {
        assert_eq!(
            (o.reward, o.se, o.lower, o.upper),
            (e.reward, e.se, e.lower, e.upper)
        );
    }
    // A failed call leaves the output untouched and names the argument.
    let bad: Vec<f32> = vec![0.25, f32::NAN, 0.0];
    let before = out;
    assert_eq!(
        hetreward_model_score(model, bad.as_ptr(), 1, d1, 0.05, out.as_mut_ptr()),
        HETREWARD_NON_FINITE
    );
    assert_eq!(out, before);
    assert!(
        last_error().contains("`phi` at index 1"),
        "{}",
        last_error()
    );
    hetreward_model_free(model);
    hetreward_fitter_free(fitter);
    hetreward_dataset_free(data);
}

#[test]
fn params_are_checked() {
    let mut fitter = null_mut();
    let mut p = hetreward_fit_default_params();
    p.struct_size -= 4; // neither the current size nor an older version's
    assert_eq!(
        hetreward_fitter_new(&p, &mut fitter),
        HETREWARD_INVALID_ARGUMENT
    );
    assert!(last_error().contains("struct_size"));
    let mut p = hetreward_fit_default_params();
    p.eta1 = -1.0;
    assert_eq!(
        hetreward_fitter_new(&p, &mut fitter),
        HETREWARD_INVALID_ARGUMENT
    );
    assert!(last_error().contains("params.eta1"), "{}", last_error());
    let mut p = hetreward_fit_default_params();
    p.covariance = 4;
    assert_eq!(
        hetreward_fitter_new(&p, &mut fitter),
        HETREWARD_INVALID_ARGUMENT
    );
    assert!(fitter.is_null(), "out-param untouched on failure");
    assert_eq!(hetreward_fitter_new(&p, null_mut()), HETREWARD_NULL_POINTER);
}

extern "C" fn stop_at_two(progress: *const hetreward_progress, user_data: *mut c_void) -> c_int {
    // SAFETY: the library passes a valid progress and our counter.
    let (p, calls) = unsafe { (&*progress, &mut *(user_data as *mut usize)) };
    *calls += 1;
    c_int::from(p.iteration >= 2)
}

#[test]
fn progress_callback_can_cancel_and_fitter_is_reusable() {
    let data = dataset();
    let mut calls = 0usize;
    let mut p = hetreward_fit_default_params();
    p.progress = Some(stop_at_two);
    p.progress_user_data = (&mut calls as *mut usize).cast();
    let mut fitter = null_mut();
    assert_eq!(hetreward_fitter_new(&p, &mut fitter), HETREWARD_OK);
    let mut model = null_mut();
    assert_eq!(
        hetreward_fitter_fit(fitter, data, &mut model),
        HETREWARD_CANCELLED
    );
    assert!(model.is_null());
    assert_eq!(calls, 3);
    hetreward_fitter_free(fitter);

    // A cancel request made before a fit applies to it; the fitter then works again.
    let mut fitter = null_mut();
    assert_eq!(hetreward_fitter_new(null(), &mut fitter), HETREWARD_OK);
    hetreward_fitter_cancel(fitter);
    assert_eq!(
        hetreward_fitter_fit(fitter, data, &mut model),
        HETREWARD_CANCELLED
    );
    assert_eq!(hetreward_fitter_fit(fitter, data, &mut model), HETREWARD_OK);
    hetreward_model_free(model);
    hetreward_fitter_free(fitter);
    hetreward_dataset_free(data);
}

/// Output structs with padding are written with every padding byte zero and every field set:
/// two writes of the same value into buffers pre-filled with different garbage give the same
/// bytes, and the value reads back equal (a field forgotten in `write_fields` would read 0).
#[test]
fn padded_outputs_are_written_byte_for_byte() {
    use super::args::{write_zero_padded, ZeroPadded};
    use super::model::{hetreward_comparison, hetreward_fit_report};
    fn check<T: ZeroPadded + PartialEq + std::fmt::Debug + Copy>(value: T) {
        let bytes = |fill: u8| {
            let mut slot = std::mem::MaybeUninit::<T>::uninit();
            // SAFETY: the slot is writable; after write_zero_padded every byte is initialised.
            unsafe {
                std::ptr::write_bytes(
                    slot.as_mut_ptr().cast::<u8>(),
                    fill,
                    std::mem::size_of::<T>(),
                );
                write_zero_padded(slot.as_mut_ptr(), std::slice::from_ref(&value));
                let raw = std::slice::from_raw_parts(
                    slot.as_ptr().cast::<u8>(),
                    std::mem::size_of::<T>(),
                )
                .to_vec();
                assert_eq!(slot.assume_init(), value);
                raw
            }
        };
        assert_eq!(bytes(0x00), bytes(0xFF));
    }
    check(hetreward_comparison {
        diff: 1.5,
        se: 2.5,
        lower: -3.5,
        upper: 4.5,
        p_value: 0.25,
        verdict: 2,
    });
    check(hetreward_fit_report {
        solver: 1,
        covariance: 3,
        termination: 2,
        converged: true,
        iterations: 7,
        total_iterations: 11,
        starts: 3,
        grad_norm: 1e-9,
        neg_loglik: 0.5,
        seconds: 0.125,
        tol: 1e-8,
    });
}
