#!/usr/bin/env bash
# Rust: formatting, lints, unit and integration tests (release mode: the coverage simulation
# fits thousands of models), doc tests.
set -euo pipefail
cargo fmt --all -- --check
cargo clippy --all-targets --release -- -D warnings
cargo test --release
# Documentation builds without broken links or malformed HTML.
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --quiet
