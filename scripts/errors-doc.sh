#!/usr/bin/env bash
# Regenerates the two generated tables of docs/errors.md from the tests that check them:
# the C API table (c-tests/test_bad_input.c) and the CLI table (cli/tests/bad_input.rs). CI fails
# when either table differs from what its test renders; run this after changing an error
# message or a case, and review the diff.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bash scripts/install.sh --prefix "$work/prefix" >/dev/null
cmake -S c-tests -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/build" --target test_bad_input >/dev/null
(cd "$work/build" && HETREWARD_BLESS=1 ./test_bad_input)
HETREWARD_BLESS=1 cargo test --release --quiet --test bad_input
git --no-pager diff --stat -- docs/errors.md 2>/dev/null || true
