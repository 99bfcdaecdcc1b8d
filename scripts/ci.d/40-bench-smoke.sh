#!/usr/bin/env bash
# Benchmark harness smoke run (issue 5): builds benches/paper_scale.rs and runs it in its tiny
# configuration (n = 3000, d1 = 64; about a second), then bench/numpy_baseline.py on the data it
# exports. This keeps the harness and the numpy baseline compiling and working; it checks
# results (the fit converges, pruned and full pBoN choose alike, numpy agrees), never speed,
# so a busy machine cannot fail it. The paper-scale figures are in BENCHMARKS.md.
set -euo pipefail
out=target/bench-smoke
rm -rf "$out"
mkdir -p "$out"
cargo bench --bench paper_scale -- --smoke --json "$out/smoke.json" --export "$out/data"
python3 -c "import numpy, scipy" 2>/dev/null || python3 -m pip install -q numpy scipy
python3 bench/numpy_baseline.py "$out/data" --threads 1 --check
