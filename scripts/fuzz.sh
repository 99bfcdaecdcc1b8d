#!/usr/bin/env bash
# Runs hetreward's fuzz targets (fuzz/, cargo-fuzz + libFuzzer) for a bounded time.
#
#   scripts/fuzz.sh TARGET SECONDS     # TARGET: model_file, csv, safetensors, or all
#   scripts/fuzz.sh all 600            # a long run: 10 minutes per target
#
# Each target starts from the committed seeds (fuzz/seeds/TARGET, made by fuzz/make_seeds.py)
# plus the inputs earlier runs found (fuzz/corpus/TARGET, not committed), and stops after
# SECONDS. A crash, panic, leak or timeout fails the script and leaves the input in
# fuzz/artifacts/TARGET/; reproduce it with `cargo +nightly fuzz run TARGET THAT_FILE` and turn
# it into a regression test (tests/edge_cases.rs or the reader's unit tests).
#
# libFuzzer needs a nightly toolchain (sanitizer flags): `cargo +nightly` is used when rustup has
# one, otherwise the stable compiler with RUSTC_BOOTSTRAP=1 (and no sanitizer). cargo-fuzz is
# installed from crates.io if missing. Prints the number of executions per target.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { echo "usage: $0 TARGET|all SECONDS" >&2; exit 2; }
[ $# -eq 2 ] || usage
target=$1
seconds=$2
case "$seconds" in ''|*[!0-9]*) usage ;; esac
all_targets=(model_file csv safetensors)
if [ "$target" = all ]; then
  targets=("${all_targets[@]}")
else
  case " ${all_targets[*]} " in *" $target "*) targets=("$target") ;; *) usage ;; esac
fi

if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "--- installing cargo-fuzz"
  cargo install cargo-fuzz --locked --quiet
fi

# Toolchain: nightly if rustup has it, else stable with RUSTC_BOOTSTRAP (no sanitizer then).
toolchain=()
sanitizer=address
if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
  toolchain=(+nightly)
else
  echo "(no nightly toolchain: fuzzing on stable with RUSTC_BOOTSTRAP=1 and no sanitizer)"
  export RUSTC_BOOTSTRAP=1
  sanitizer=none
fi

# One build of every target (in fuzz/target, kept between runs).
echo "--- building the fuzz targets (cargo ${toolchain[*]} fuzz build --sanitizer $sanitizer)"
build_log=$(mktemp)
if ! (cd fuzz && cargo "${toolchain[@]}" fuzz build --sanitizer "$sanitizer") >"$build_log" 2>&1; then
  cat "$build_log" >&2
  exit 1
fi
rm -f "$build_log"

summary=()
for t in "${targets[@]}"; do
  corpus="fuzz/corpus/$t"
  artifacts="fuzz/artifacts/$t"
  mkdir -p "$corpus" "$artifacts"
  log=$(mktemp)
  echo "--- fuzzing $t for $seconds s"
  status=0
  (cd fuzz && cargo "${toolchain[@]}" fuzz run --sanitizer "$sanitizer" "$t" \
      "corpus/$t" "seeds/$t" -- \
      -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
      -artifact_prefix="artifacts/$t/" -print_final_stats=1) >"$log" 2>&1 || status=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 || true)
  if [ "$status" -ne 0 ]; then
    tail -60 "$log" >&2
    echo "FUZZ FAILURE in $t (exit $status); the input is in fuzz/artifacts/$t/" >&2
    rm -f "$log"
    exit 1
  fi
  rm -f "$log"
  summary+=("$t: ${execs:-?} executions in $seconds s, ${cov:-cov: ?}, corpus $(ls "$corpus" | wc -l) inputs, no crash")
done
echo "--- fuzz summary"
printf '  %s\n' "${summary[@]}"
