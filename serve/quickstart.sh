#!/usr/bin/env bash
# The gateway's quick start from a fresh clone: two llama-servers and `hetreward serve` in front.
#
#   bash serve/quickstart.sh          # start all three; Ctrl-C stops them
#   bash serve/quickstart.sh --try    # start, send one best_of = 4 request with the openai client,
#                                     # print the pBoN choice and the audited candidates, stop
#
# 1. examples/llama-cpp/setup.sh (cached by version under ${HETREWARD_CACHE:-~/.cache/hetreward}):
#    llama-server built from the pinned llama.cpp source, the SmolLM2 and MiniLM GGUFs, the
#    reward model fitted on the vendored MT-Bench judgments with its feature projection, and a
#    venv with the official openai client. A fresh machine builds llama.cpp first (10-25 min).
# 2. llama-server generating with SmolLM2 (8 slots: `n` up to 8) on GEN_PORT (default 8081);
#    llama-server serving MiniLM embeddings (mean pooling) on EMB_PORT (8082).
# 3. `hetreward serve` (cargo build --release) on GATEWAY_PORT (8090).
# Every process is stopped when this script exits; logs go to target/serve-quickstart/.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
try=0
case "${1:-}" in
  --try) try=1 ;;
  "") ;;
  *) echo "usage: $0 [--try]" >&2; exit 2 ;;
esac
gen_port=${GEN_PORT:-8081}
emb_port=${EMB_PORT:-8082}
gw_port=${GATEWAY_PORT:-8090}
logs="$root/target/serve-quickstart"

bash examples/llama-cpp/setup.sh
# shellcheck source=/dev/null
source target/llama-cpp/env.sh
cargo build --release -p hetreward-cli
gateway="${CARGO_TARGET_DIR:-$root/target}/release/hetreward"
mkdir -p "$logs"

# A port already in use would let a readiness check answer from another server: refuse it.
for port in "$gen_port" "$emb_port" "$gw_port"; do
  if ! "$HETREWARD_LLAMA_PYTHON" -c "import socket, sys; socket.create_server(('127.0.0.1', int(sys.argv[1]))).close()" "$port" 2>/dev/null; then
    echo "port $port on 127.0.0.1 is in use; choose others with GEN_PORT, EMB_PORT, GATEWAY_PORT" >&2
    exit 1
  fi
done

pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT INT TERM

# Waits until URL answers 200, or fails naming the server and its log.
wait_ready() {
  local name=$1 url=$2 log=$3
  for _ in $(seq 1 300); do
    if "$HETREWARD_LLAMA_PYTHON" -c "import sys, urllib.request as u; u.urlopen(sys.argv[1], timeout=1)" "$url" 2>/dev/null; then
      return 0
    fi
    sleep 0.2
  done
  echo "$name did not become ready at $url within 60 s; its log ($log):" >&2
  tail -n 20 "$log" >&2
  exit 1
}

"$HETREWARD_LLAMA_SERVER" -m "$HETREWARD_LLAMA_GENERATOR" --host 127.0.0.1 --port "$gen_port" \
  --parallel 8 --no-repack -c 4096 >"$logs/generator.log" 2>&1 &
pids+=($!)
"$HETREWARD_LLAMA_SERVER" -m "$HETREWARD_LLAMA_EMBEDDER" --host 127.0.0.1 --port "$emb_port" \
  --embeddings --pooling mean >"$logs/embedder.log" 2>&1 &
pids+=($!)
wait_ready "llama-server (generation)" "http://127.0.0.1:$gen_port/health" "$logs/generator.log"
wait_ready "llama-server (embeddings)" "http://127.0.0.1:$emb_port/health" "$logs/embedder.log"

"$gateway" serve --model "$HETREWARD_LLAMA_MODEL" --upstream "http://127.0.0.1:$gen_port" \
  --embeddings "http://127.0.0.1:$emb_port" --listen "127.0.0.1:$gw_port" >"$logs/gateway.log" 2>&1 &
pids+=($!)
wait_ready "hetreward serve" "http://127.0.0.1:$gw_port/health" "$logs/gateway.log"
echo "gateway ready: http://127.0.0.1:$gw_port/v1 (generation :$gen_port, embeddings :$emb_port; logs in $logs)"

if [ "$try" -eq 1 ]; then
  "$HETREWARD_LLAMA_PYTHON" - "http://127.0.0.1:$gw_port/v1" <<'EOF'
import sys
import openai

client = openai.OpenAI(base_url=sys.argv[1], api_key="unused")
r = client.chat.completions.create(
    model="any", messages=[{"role": "user", "content": "Name a prime number and say why."}],
    n=1, max_tokens=24, extra_body={"best_of": 4})  # chat has no best_of parameter in the client
choice = r.choices[0]
ext = r.model_extra["hetreward"]
print(f"chosen: {choice.message.content!r}")
print(f"  reward {choice.reward:.4f}  se {choice.se:.4f}  "
      f"{100 * (1 - ext['alpha']):.0f}% interval [{choice.lower:.4f}, {choice.upper:.4f}]")
print(f"policy {ext['policy']}, interval method {ext['interval_method']}; candidates:")
for c in ext["candidates"]:
    mark = "*" if c["index"] == ext["chosen"][0] else " "
    print(f" {mark} [{c['index']}] lower {c['lower']:.4f} reward {c['reward']:.4f}  {c['text'][:60]!r}")
best = max(ext["candidates"], key=lambda c: c["lower"])
assert best["index"] == ext["chosen"][0], "the choice is not the argmax of the lower bound"
EOF
  exit 0
fi
echo "Ctrl-C stops the gateway and both llama-servers."
wait
