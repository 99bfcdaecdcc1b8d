//! The C ABI (`include/hetreward.h`): opaque handles, status codes, the last-error message.
//!
//! This module only validates, converts, calls the library and reports; it computes nothing
//! itself. Its conventions (stated once in the header's preamble, `cbindgen.toml`):
//!
//! * every fallible function returns a [`hetreward_status`] and sets a thread-local message;
//!   every exported body runs inside a panic boundary ([`status`]);
//! * out-parameters are written only on success, after every check and computation;
//! * handles are Rust structs without `#[repr(C)]` (cbindgen emits only a forward declaration),
//!   boxed and owned by the caller until the matching `hetreward_*_free`;
//! * datasets and models are immutable once built, so `const` handles may be shared by threads.
//!
//! The header is generated from this module by `build.rs` with cbindgen; the test
//! `tests::header_is_fresh` fails when the committed `include/hetreward.h` differs from it.
//!
//! The exported functions are safe `extern "C"` functions that dereference the caller's
//! pointers (as rustls-ffi does): they are meant to be called from C, under the header's
//! contract, not from Rust.
#![allow(clippy::not_unsafe_ptr_arg_deref, clippy::too_many_arguments)]
// The C ABI is `pub` in this private module on purpose: cbindgen emits only `pub` items into
// the header, and `#[no_mangle]` exports the functions whatever their Rust visibility.
#![allow(unreachable_pub)]

// `status` first, then the option enums: cbindgen emits items in the order it parses modules.
pub mod status;

pub mod enums;

pub mod coefficients;
pub mod dataset;
pub mod fitter;
pub mod heterogeneity;
pub mod intervals;
pub mod model;
pub mod shard;
pub mod shard_driver;

mod args;

#[cfg(test)]
mod tests;
