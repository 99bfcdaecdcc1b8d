//! The one error type of the library.
//!
//! Every message names the offending argument and, where there is one, the index, so that a
//! caller can act on it without reading the source. The FFI layer maps each variant to a status
//! code in exactly one place.

use std::fmt;

/// Result alias used throughout the crate.
pub type Result<T> = std::result::Result<T, Error>;

/// Everything that can go wrong in hetreward.
#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    /// A required argument was missing (a null pointer at the C boundary).
    NullArgument {
        /// Name of the argument.
        arg: String,
    },
    /// An argument has a value outside its domain (e.g. `alpha` not in (0,1), a label not in {0,1}).
    InvalidArgument {
        /// Name of the argument.
        arg: String,
        /// What is wrong with it, including the offending index if any.
        reason: String,
    },
    /// Array lengths or dimensions do not agree (or are zero where they must not be).
    DimensionMismatch {
        /// Name of the argument.
        arg: String,
        /// What was expected.
        expected: String,
        /// What was given.
        got: String,
    },
    /// A NaN or infinite value where a finite number is required.
    NonFinite {
        /// Name of the argument.
        arg: String,
        /// Flat index of the first offending value.
        index: usize,
        /// The offending value.
        value: f64,
    },
    /// The information (or covariance) matrix is singular or too ill-conditioned to invert.
    SingularInformation {
        /// Which matrix, and what was found.
        detail: String,
    },
    /// The solver did not meet its tolerance (only an error where convergence is required).
    NotConverged {
        /// Iterations, gradient norm and tolerance.
        detail: String,
    },
    /// The fit was cancelled by the caller (callback or cancel flag).
    Cancelled,
    /// Reading or writing a file failed.
    Io {
        /// Path of the file.
        path: String,
        /// The operating system's message.
        detail: String,
    },
    /// A file was read but its content is not in the expected format.
    Format {
        /// Path (or `"<buffer>"`) of the input.
        path: String,
        /// What is wrong: tensor or column, row, version, checksum...
        detail: String,
    },
    /// A bug: an invariant of the library did not hold (never the caller's fault).
    Internal {
        /// What happened.
        detail: String,
    },
}

impl Error {
    /// Shorthand for [`Error::InvalidArgument`].
    pub fn invalid(arg: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::InvalidArgument {
            arg: arg.into(),
            reason: reason.into(),
        }
    }

    /// Shorthand for [`Error::DimensionMismatch`].
    pub fn dims(
        arg: impl Into<String>,
        expected: impl fmt::Display,
        got: impl fmt::Display,
    ) -> Self {
        Error::DimensionMismatch {
            arg: arg.into(),
            expected: expected.to_string(),
            got: got.to_string(),
        }
    }

    /// Shorthand for [`Error::Format`].
    pub fn format(path: impl Into<String>, detail: impl Into<String>) -> Self {
        Error::Format {
            path: path.into(),
            detail: detail.into(),
        }
    }

    /// Shorthand for [`Error::Io`] from a `std::io::Error`.
    pub fn io(path: impl Into<String>, err: &std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            detail: err.to_string(),
        }
    }

    /// True when the error is the caller's input (bad argument, data or file), false when it is
    /// a failure of the computation or the library (singular information, non-convergence,
    /// cancellation, internal). The CLI exits 2 for the former and 1 for the latter.
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            Error::NullArgument { .. }
                | Error::InvalidArgument { .. }
                | Error::DimensionMismatch { .. }
                | Error::NonFinite { .. }
                | Error::Io { .. }
                | Error::Format { .. }
        )
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NullArgument { arg } => write!(f, "argument `{arg}` is null"),
            Error::InvalidArgument { arg, reason } => write!(f, "invalid `{arg}`: {reason}"),
            Error::DimensionMismatch { arg, expected, got } => {
                write!(
                    f,
                    "dimension mismatch in `{arg}`: expected {expected}, got {got}"
                )
            }
            Error::NonFinite { arg, index, value } => {
                write!(f, "non-finite value {value} in `{arg}` at index {index}")
            }
            Error::SingularInformation { detail } => write!(f, "singular information: {detail}"),
            Error::NotConverged { detail } => write!(f, "not converged: {detail}"),
            Error::Cancelled => write!(f, "cancelled by the caller"),
            Error::Io { path, detail } => write!(f, "I/O error on {path}: {detail}"),
            Error::Format { path, detail } => write!(f, "bad file format in {path}: {detail}"),
            Error::Internal { detail } => write!(f, "internal error: {detail}"),
        }
    }
}

impl std::error::Error for Error {}

/// Checks that every value of `values` is finite; the error names `arg` and the flat index.
pub(crate) fn check_finite(arg: &str, values: &[f64]) -> Result<()> {
    match values.iter().position(|v| !v.is_finite()) {
        None => Ok(()),
        Some(index) => Err(Error::NonFinite {
            arg: arg.to_string(),
            index,
            value: values[index],
        }),
    }
}

/// An empty vector with room for `len` values, or an [`Error::InvalidArgument`] naming `arg`
/// when that much memory cannot be had: sizes that come from a caller (array lengths, counts in
/// a file) must never abort the host through a failed allocation.
pub(crate) fn try_with_capacity<T>(arg: &str, len: usize) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| {
        Error::invalid(
            arg,
            format!(
                "{len} values ({} bytes) cannot be allocated",
                len.saturating_mul(std::mem::size_of::<T>())
            ),
        )
    })?;
    Ok(v)
}

/// Checks that `alpha` is a usable significance level, strictly inside (0, 1).
pub fn check_alpha(alpha: f64) -> Result<()> {
    if alpha.is_finite() && alpha > 0.0 && alpha < 1.0 {
        Ok(())
    } else {
        Err(Error::invalid(
            "alpha",
            format!("must be in (0, 1), got {alpha}"),
        ))
    }
}
