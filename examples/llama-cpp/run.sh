#!/usr/bin/env bash
# Pessimistic Best-of-N inside llama.cpp, in one command (from anywhere):
#
#   bash examples/llama-cpp/run.sh "your prompt" [-n 8] [--max-tokens 96] [--seed 1]
#   bash examples/llama-cpp/run.sh --serve [--port 8080]     # OpenAI-compatible server
#
# Runs setup.sh (seconds when its cache is warm; the first time it downloads the pinned
# packages and builds libllama), then the program with N = 4 answers unless -n is given.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bash "$here/setup.sh" >&2
# shellcheck source=/dev/null
source "$here/../../target/llama-cpp/env.sh"
defaults=(-n 4 --max-tokens 96)
for a in "$@"; do [ "$a" = "--serve" ] && defaults=(--max-tokens 96); done
exec "$HETREWARD_LLAMA_BIN" --generator "$HETREWARD_LLAMA_GENERATOR" --embedder "$HETREWARD_LLAMA_EMBEDDER" \
  --model "$HETREWARD_LLAMA_MODEL" "${defaults[@]}" "$@"
