#!/usr/bin/env bash
# hetreward: run every test suite. This is the README's test command and what CI runs.
#
# Each step is a script in scripts/ci.d/, run in name order; any failure stops the run with a
# non-zero exit (a skipped suite is a failed suite). Steps install what they need themselves
# (apt packages, Python packages), so this works on a fresh machine. Cargo's build artifacts
# are kept between runs under ~/.cache/hetreward (scripts/lib/cargo-cache.sh: keyed by the
# toolchains, HETREWARD_BUILD_CACHE=0 to build in ./target instead).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
# shellcheck source=lib/cargo-cache.sh
source scripts/lib/cargo-cache.sh
use_cargo_cache
mkdir -p target # the steps' own outputs (reports, logs, the llama.cpp example) stay here
started=$(date +%s)
for step in scripts/ci.d/*.sh; do
  echo "=== $(basename "$step") ==="
  t0=$(date +%s)
  if ! bash "$step"; then
    echo "FAILED: $step" >&2
    exit 1
  fi
  echo "=== $(basename "$step") passed in $(( $(date +%s) - t0 )) s ==="
done
echo "All test steps passed in $(( $(date +%s) - started )) s."
