#!/usr/bin/env bash
# libhetreward inside a real llama.cpp program (examples/llama-cpp):
#   1. setup.sh: the pinned llama.cpp source (llama-cpp-python sdist, sha256-checked), libllama
#      built CPU-only into a cached prefix, the SmolLM2 and MiniLM GGUFs, the reward model fitted
#      on MT-Bench human judgments by examples/real-data (CI subset) with its feature projection,
#      libhetreward installed, the example built with find_package(llama) + find_package(hetreward);
#   2. its ctest with N = 4 and a 24-token cap: libllama's MiniLM embeddings vs the numpy MiniLM
#      (cosine >= 0.9999), libhetreward's picks == the Python binding's picks on the same
#      features, --json with answers cut inside multi-byte characters (max_tokens 1-5) and the
#      UTF-8 repair, random seeds printed and repeatable, temperature 0 (greedy).
# Cache: ${HETREWARD_CACHE:-~/.cache/hetreward}, keyed by version (the reward model by a hash of
# the data and the sources it depends on): a warm rerun takes about a minute or two; a cold one
# builds libllama (10-25 min on 2 busy cores). A missing input fails
# the step; nothing is skipped. The data are the repository's data/real/ (HETREWARD_REAL_DATA
# may name another copy), as in 70-real-data.
set -euo pipefail
cd "$(dirname "$0")/../.."
t0=$(date +%s)
bash examples/llama-cpp/setup.sh
echo "--- ctest (examples/llama-cpp)"
(cd target/llama-cpp/build && ctest --output-on-failure)
echo "llama.cpp example: setup and checks passed in $(( $(date +%s) - t0 )) s"
