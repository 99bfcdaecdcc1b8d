//! Status codes, the thread-local last-error message, the panic boundary and the version.
//!
//! Every exported function runs its body through `boundary` (fallible functions) or
//! `boundary_value` (accessors and `free`s): a Rust panic never unwinds into C (rustls-ffi's
//! `ffi_panic_boundary!`), it becomes [`hetreward_status::HETREWARD_INTERNAL`]. The mapping from
//! [`Error`] to status codes is `status_of`, the only place where it is made.

use crate::error::{Error, Result};
use std::cell::RefCell;
use std::ffi::{c_char, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Outcome of a fallible call. `HETREWARD_OK` is 0; the other values are stable and never
/// renumbered (new codes are only ever appended). The detail is in
/// hetreward_last_error_message().
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(non_camel_case_types)]
pub enum hetreward_status {
    /// Success.
    HETREWARD_OK = 0,
    /// A required pointer argument was NULL.
    HETREWARD_NULL_POINTER = 1,
    /// An argument is outside its domain: alpha not in (0, 1), a label not 0/1, psi0
    /// identically zero, too few samples for the parameters, an unknown enum value, a wrong
    /// struct_size, a covariance kind the data cannot support.
    HETREWARD_INVALID_ARGUMENT = 2,
    /// Array dimensions are zero where they must not be, disagree with each other or with the
    /// model, a product of dimensions overflows, or an output buffer is too small.
    HETREWARD_DIMENSION_MISMATCH = 3,
    /// A NaN or infinite value in an input array (the message gives the flat index).
    HETREWARD_NON_FINITE = 4,
    /// The information (or covariance) matrix is singular or too ill-conditioned to invert.
    HETREWARD_SINGULAR_INFORMATION = 5,
    /// The fit did not meet its tolerance and the params asked for require_converged.
    HETREWARD_NOT_CONVERGED = 6,
    /// Reading or writing a file failed (the message has the path and the system's reason).
    HETREWARD_IO = 7,
    /// A file or buffer is not in the expected format: unknown extension, bad magic,
    /// wrong version, truncated, checksum mismatch, missing tensor or column.
    HETREWARD_BAD_FORMAT = 8,
    /// The fit was cancelled by hetreward_fitter_cancel() or by the progress callback.
    HETREWARD_CANCELLED = 9,
    /// A bug in hetreward (an invariant failed or a panic was caught); never the caller's fault.
    HETREWARD_INTERNAL = 10,
}

use hetreward_status::*;

/// The status code of an error: the one place where errors become codes.
pub(crate) fn status_of(error: &Error) -> hetreward_status {
    match error {
        Error::NullArgument { .. } => HETREWARD_NULL_POINTER,
        Error::InvalidArgument { .. } => HETREWARD_INVALID_ARGUMENT,
        Error::DimensionMismatch { .. } => HETREWARD_DIMENSION_MISMATCH,
        Error::NonFinite { .. } => HETREWARD_NON_FINITE,
        Error::SingularInformation { .. } => HETREWARD_SINGULAR_INFORMATION,
        Error::NotConverged { .. } => HETREWARD_NOT_CONVERGED,
        Error::Cancelled => HETREWARD_CANCELLED,
        Error::Io { .. } => HETREWARD_IO,
        Error::Format { .. } => HETREWARD_BAD_FORMAT,
        Error::Internal { .. } => HETREWARD_INTERNAL,
    }
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

pub(crate) fn set_last_error(message: &str) {
    let message = CString::new(message.replace('\0', "\\0")).unwrap_or_default();
    // During thread teardown the slot may be gone; there is then nobody left to read it.
    let _ = LAST_ERROR.try_with(|slot| *slot.borrow_mut() = message);
}

/// Runs the body of a fallible exported function: clears the last error, catches panics, and
/// turns an `Err` into its status code with its message stored as the last error.
pub(crate) fn boundary(body: impl FnOnce() -> Result<()>) -> hetreward_status {
    set_last_error("");
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => HETREWARD_OK,
        Ok(Err(error)) => {
            set_last_error(&error.to_string());
            status_of(&error)
        }
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown payload".to_string());
            set_last_error(&format!(
                "internal error: a panic was caught at the C boundary: {what}"
            ));
            HETREWARD_INTERNAL
        }
    }
}

/// Runs the body of an infallible exported function (accessor, `free`), returning `fallback`
/// if it panics. The last error is left alone.
pub(crate) fn boundary_value<T>(fallback: T, body: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(fallback)
}

/// The message of the last fallible hetreward call made on this thread: "" if it succeeded,
/// otherwise what went wrong, naming the argument and, where there is one, the index.
///
/// Never NULL. The string belongs to the library and stays valid until the next fallible
/// hetreward call on the same thread; copy it to keep it. Thread-safe (one message per thread).
#[no_mangle]
pub extern "C" fn hetreward_last_error_message() -> *const c_char {
    boundary_value(c"".as_ptr(), || {
        LAST_ERROR
            .try_with(|slot| slot.borrow().as_ptr())
            .unwrap_or(c"".as_ptr())
    })
}

/// The name of a status code as a static string ("HETREWARD_OK", "HETREWARD_NULL_POINTER",
/// ...), or "HETREWARD_UNKNOWN_STATUS" for a value that is not a status. Never NULL; the string
/// is static (never freed). Thread-safe.
#[no_mangle]
pub extern "C" fn hetreward_status_name(status: u32) -> *const c_char {
    let name: &'static CStr = match status {
        0 => c"HETREWARD_OK",
        1 => c"HETREWARD_NULL_POINTER",
        2 => c"HETREWARD_INVALID_ARGUMENT",
        3 => c"HETREWARD_DIMENSION_MISMATCH",
        4 => c"HETREWARD_NON_FINITE",
        5 => c"HETREWARD_SINGULAR_INFORMATION",
        6 => c"HETREWARD_NOT_CONVERGED",
        7 => c"HETREWARD_IO",
        8 => c"HETREWARD_BAD_FORMAT",
        9 => c"HETREWARD_CANCELLED",
        10 => c"HETREWARD_INTERNAL",
        _ => c"HETREWARD_UNKNOWN_STATUS",
    };
    name.as_ptr()
}

/// The library's version, "MAJOR.MINOR.PATCH" (equal to HETREWARD_VERSION of the header it was
/// built with). Never NULL; the string is static. Thread-safe.
#[no_mangle]
pub extern "C" fn hetreward_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// Reads the last error message of this thread (for the Rust tests).
#[cfg(test)]
pub(crate) fn last_error() -> String {
    let ptr = hetreward_last_error_message();
    // SAFETY: the pointer comes from the thread-local CString and is valid until the next call.
    unsafe { CStr::from_ptr(ptr) }
        .to_string_lossy()
        .into_owned()
}
