//! Argument checks and copies at the C boundary: handle and array pointers (NULL, alignment,
//! size), caller-stated lengths and dimensions, output arrays written only after every check,
//! zero-padded output structs and C paths. Every exported function of [`super`] validates its
//! arguments through these, so each rule (and its error message) is written once.

use crate::error::{Error, Result};
use std::ffi::{c_char, CStr};
use std::path::PathBuf;

/// Borrows the value behind a handle pointer; `arg` names it in the NULL error.
///
/// # Safety
/// `ptr` must be NULL or point to a live `T` that is not mutated during `'a`.
pub(crate) unsafe fn handle_ref<'a, T>(ptr: *const T, arg: &str) -> Result<&'a T> {
    ptr.as_ref().ok_or_else(|| null(arg))
}

/// Checks an out-pointer for a result before anything is computed.
pub(crate) fn out_ptr<T>(ptr: *mut T, arg: &str) -> Result<*mut T> {
    if ptr.is_null() {
        Err(null(arg))
    } else {
        Ok(ptr)
    }
}

/// Borrows `len` elements from `ptr` (NULL allowed when `len == 0`).
///
/// # Safety
/// If `len > 0`, `ptr` must point to `len` readable elements that outlive `'a`.
pub(crate) unsafe fn in_slice<'a, T>(ptr: *const T, len: usize, arg: &str) -> Result<&'a [T]> {
    if len == 0 {
        return Ok(&[]);
    }
    check_ptr(ptr, len, arg)?;
    Ok(std::slice::from_raw_parts(ptr, len))
}

/// Like [`in_slice`], but NULL means "not given" whatever `len` is.
///
/// # Safety
/// As [`in_slice`] when `ptr` is not NULL.
pub(crate) unsafe fn optional_slice<'a, T>(
    ptr: *const T,
    len: usize,
    arg: &str,
) -> Result<Option<&'a [T]>> {
    if ptr.is_null() {
        Ok(None)
    } else {
        in_slice(ptr, len, arg).map(Some)
    }
}

/// Checks an output array of `len` elements before anything is computed (NULL allowed when
/// `len == 0`).
pub(crate) fn out_slice<T>(ptr: *mut T, len: usize, arg: &str) -> Result<*mut T> {
    if len > 0 {
        check_ptr(ptr.cast_const(), len, arg)?;
    }
    Ok(ptr)
}

/// Copies `values` into an output array checked by [`out_slice`] for `values.len()` elements.
///
/// # Safety
/// `ptr` must point to `values.len()` writable elements (or `values` is empty).
pub(crate) unsafe fn write_slice<T: Copy>(ptr: *mut T, values: &[T]) {
    if !values.is_empty() {
        std::ptr::copy_nonoverlapping(values.as_ptr(), ptr, values.len());
    }
}

/// A `#[repr(C)]` output struct with padding bytes, written so that its padding is zero:
/// identical results are then identical bytes for a caller who hashes or `memcmp`s them. A
/// whole-struct copy would carry the padding's unspecified bytes, so the destination is zeroed
/// and every field written through its own pointer.
pub(crate) trait ZeroPadded: Sized {
    /// Writes each field of `self` to the matching field of `*dst` (padding untouched).
    ///
    /// # Safety
    /// `dst` must be valid for writes.
    unsafe fn write_fields(&self, dst: *mut Self);
}

/// Writes `values` to `ptr` with zeroed padding ([`ZeroPadded`]).
///
/// # Safety
/// `ptr` must point to `values.len()` writable elements (or `values` is empty).
pub(crate) unsafe fn write_zero_padded<T: ZeroPadded>(ptr: *mut T, values: &[T]) {
    if values.is_empty() {
        return;
    }
    std::ptr::write_bytes(ptr, 0, values.len());
    for (i, v) in values.iter().enumerate() {
        v.write_fields(ptr.add(i));
    }
}

fn check_ptr<T>(ptr: *const T, len: usize, arg: &str) -> Result<()> {
    if ptr.is_null() {
        return Err(null(arg));
    }
    if !ptr.is_aligned() {
        return Err(Error::invalid(
            arg,
            format!(
                "pointer is not aligned to {} bytes",
                std::mem::align_of::<T>()
            ),
        ));
    }
    if len.saturating_mul(std::mem::size_of::<T>()) > isize::MAX as usize {
        return Err(Error::dims(
            arg,
            "an array that fits in memory",
            format!("{len} elements"),
        ));
    }
    Ok(())
}

/// `a * b` for array lengths, as a dimension error on overflow.
pub(crate) fn checked_len(arg: &str, a: usize, b: usize) -> Result<usize> {
    a.checked_mul(b)
        .ok_or_else(|| Error::dims(arg, "a length that fits in size_t", format!("{a} * {b}")))
}

/// Checks a caller-stated dimension against the one it must equal.
pub(crate) fn check_dim(arg: &str, given: usize, expected: usize, what: &str) -> Result<()> {
    if given == expected {
        Ok(())
    } else {
        Err(Error::dims(arg, format!("{expected} ({what})"), given))
    }
}

/// A file path from a NUL-terminated C string (bytes, as the OS takes them).
///
/// # Safety
/// `path` must be NULL or a valid NUL-terminated string.
pub(crate) unsafe fn c_path(path: *const c_char, arg: &str) -> Result<PathBuf> {
    if path.is_null() {
        return Err(null(arg));
    }
    let bytes = CStr::from_ptr(path).to_bytes();
    if bytes.is_empty() {
        return Err(Error::invalid(arg, "the path is empty"));
    }
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        Ok(PathBuf::from(std::ffi::OsStr::from_bytes(bytes)))
    }
    #[cfg(not(unix))]
    {
        std::str::from_utf8(bytes)
            .map(PathBuf::from)
            .map_err(|_| Error::invalid(arg, "the path is not UTF-8"))
    }
}

fn null(arg: &str) -> Error {
    Error::NullArgument {
        arg: arg.to_string(),
    }
}
