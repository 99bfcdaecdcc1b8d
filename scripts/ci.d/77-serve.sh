#!/usr/bin/env bash
# `hetreward serve` (issue 30), proven against llama.cpp's own llama-server, not a mock:
#   0. serve/quickstart.sh --try: the README's quick start, one request through openai;
#   1. examples/llama-cpp/setup.sh (cached, as 75-llama-cpp, run by the quick start): llama-server built CPU-only from the
#      pinned llama.cpp source (the llama-cpp-python sdist, sha256-checked), the SmolLM2 and MiniLM
#      GGUFs, the MT-Bench reward model with its projection, libhetreward for the Python binding,
#      and the venv (official openai client, pytest);
#   2. the gateway: cargo build --release -p hetreward-cli (target/release/hetreward);
#   3. pytest serve/tests/e2e: one llama-server generating (SmolLM2, --parallel 8, `n`), one
#      serving MiniLM embeddings (mean pooling), the gateway in front, all on loopback ports:
#      completions and chat with best_of and n (the figures equal the Python binding's select on
#      the embedding server's vectors), rerank in llama.cpp's test style (Jina and Cohere shapes),
#      bad requests (4xx, keeps serving), /health /v1/models /metrics, a load run (16 clients,
#      200 requests, 0 failures, p50/p99 and the gateway's own share) and faults (kill -9 and
#      restart of the generator, SIGSTOP of the embedder, model reload under load, a client
#      disconnect, SIGTERM drain, 429 beyond --max-in-flight), each bounded in time.
# Why a step of its own: it is the only place the gateway meets a real engine under load and
# faults. A skipped test fails the step (a missing input is an error in the tests, never a skip).
# Figures: target/serve-e2e/results.json (load.json), logs in target/serve-e2e/logs/.
# Cache: ${HETREWARD_CACHE:-~/.cache/hetreward}; warm, setup takes well under a minute or two and
# the tests about 2-3 min; cold, llama-server adds ~5 min to setup.sh's build.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
t0=$(date +%s)
# The README's quick start, as a new user runs it: setup.sh (cached), the CLI built, both
# llama-servers and the gateway started, one best_of request through the openai client (the
# pick checked against the candidates' lower bounds), everything stopped. Free ports, so a
# server left on the defaults cannot answer for ours.
read -r GEN_PORT EMB_PORT GATEWAY_PORT < <(python3 -c "
import socket
socks = [socket.create_server(('127.0.0.1', 0)) for _ in range(3)]
print(*[s.getsockname()[1] for s in socks])")
export GEN_PORT EMB_PORT GATEWAY_PORT
echo "--- serve/quickstart.sh --try (ports $GEN_PORT $EMB_PORT $GATEWAY_PORT)"
bash serve/quickstart.sh --try
# shellcheck source=/dev/null
source target/llama-cpp/env.sh
for v in HETREWARD_LLAMA_PYTHON HETREWARD_LLAMA_SERVER HETREWARD_LLAMA_GENERATOR HETREWARD_LLAMA_EMBEDDER HETREWARD_LLAMA_MODEL HETREWARD_LIB; do
  [ -e "${!v:-}" ] || { echo "$v=${!v:-} missing after setup.sh; failing" >&2; exit 1; }
done
echo "--- gateway: cargo build --release -p hetreward-cli"
nice -n 10 cargo build --release -p hetreward-cli
export HETREWARD_SERVE_BIN="${CARGO_TARGET_DIR:-$root/target}/release/hetreward"
"$HETREWARD_SERVE_BIN" serve --help >/dev/null || { echo "$HETREWARD_SERVE_BIN has no serve subcommand" >&2; exit 1; }
echo "--- pytest serve/tests/e2e"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
(cd serve/tests/e2e && PYTHONDONTWRITEBYTECODE=1 timeout 900 "$HETREWARD_LLAMA_PYTHON" -m pytest -p no:cacheprovider \
   --rootdir=. -rsxX -v --strict-markers .) 2>&1 | tee "$log" || status=$?
[ "$status" -eq 0 ] || { echo "serve e2e tests failed (exit $status); logs in target/serve-e2e/logs" >&2; exit 1; }
if tail -n 3 "$log" | grep -Eq '[0-9]+ (skipped|xfailed|xpassed|deselected)'; then
  echo "serve e2e: a test was skipped or xfailed; nothing here may be skipped; failing" >&2
  exit 1
fi
grep -Eq '^=+ [0-9]+ passed' "$log" || { echo "serve e2e: no passing test line; failing" >&2; exit 1; }
echo "serve e2e (llama-server + hetreward serve): setup and tests passed in $(( $(date +%s) - t0 )) s"
