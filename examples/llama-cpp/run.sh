#!/usr/bin/env bash
# Pessimistic Best-of-N inside llama.cpp, in one command (from anywhere):
#
#   bash examples/llama-cpp/run.sh "your prompt" [-n 8] [--max-tokens 96] [--seed 1] [--temperature 0]
#
# Runs setup.sh (seconds when its cache is warm; the first time it downloads the pinned
# packages and builds libllama), then the program with N = 4 answers unless -n is given.
# An OpenAI-compatible server with pBoN is the gateway, `hetreward serve` (docs/serve.md).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bash "$here/setup.sh" >&2
# shellcheck source=/dev/null
source "$here/../../target/llama-cpp/env.sh"
exec "$HETREWARD_LLAMA_BIN" --generator "$HETREWARD_LLAMA_GENERATOR" --embedder "$HETREWARD_LLAMA_EMBEDDER" \
  --model "$HETREWARD_LLAMA_MODEL" -n 4 --max-tokens 96 "$@"
