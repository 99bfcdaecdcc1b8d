#!/usr/bin/env bash
# Reliability (issue 7), measured. The bad-input matrices (c-tests/test_bad_input.c,
# cli/tests/bad_input.rs, both checked against docs/errors.md), the numerical edge cases
# (tests/edge_cases.rs), the atomic-save kill test (tests/atomic_save.rs) and the sustained
# concurrency run (c-tests/test_concurrency.c, natively) already run in 10-rust.sh and
# 30-c-abi.sh. This step adds, against a fresh install of the library:
#
#   1. the whole C suite under AddressSanitizer + UndefinedBehaviorSanitizer (with
#      LeakSanitizer: the Rust library allocates through malloc, so its leaks are seen too);
#   2. the concurrent C tests (threads, cancel, concurrency) under ThreadSanitizer, linked with
#      a copy of the library *and Rust's standard library* built with -Zsanitizer=thread
#      (nightly, -Zbuild-std; in the cargo target directory's tsan/);
#   3. the two new C tests under valgrind memcheck (30-c-abi.sh covers the others);
#   4. canaries: a deliberate race and a deliberate leak that TSan and LSan must report, so
#      that "clean" is known to mean something;
#   5. a fuzz smoke run of every target (scripts/fuzz.sh all 20; long runs: scripts/fuzz.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
for tool in cmake valgrind cc rustup cargo; do
  command -v "$tool" >/dev/null || { echo "$tool not found" >&2; exit 1; }
done
jobs=$(nproc 2>/dev/null || echo 2)
fuzz_seconds=${HETREWARD_FUZZ_SECONDS:-20}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"
t_start=$(date +%s)
section_start=$t_start
lap() { local now; now=$(date +%s); echo "($1: $(( now - section_start )) s)"; section_start=$now; }

echo "--- install to a fresh prefix"
bash scripts/install.sh --prefix "$prefix" >/dev/null
cflags=(-std=c99 -D_POSIX_C_SOURCE=200809L -g -O1 -fno-omit-frame-pointer
        -Wall -Wextra -Wpedantic -Werror -Iinclude -Ic-tests)
shared=(-L"$prefix/lib" -lhetreward -Wl,-rpath,"$prefix/lib" -lpthread -lm)

# ---- 1. AddressSanitizer + UBSan -------------------------------------------------------------
echo "--- C suite under AddressSanitizer + UndefinedBehaviorSanitizer (+ LeakSanitizer)"
san="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
cmake -S c-tests -B "$work/asan" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Debug \
      -DCMAKE_C_FLAGS="$san" -DCMAKE_CXX_FLAGS="$san" -DCMAKE_EXE_LINKER_FLAGS="$san" >/dev/null
cmake --build "$work/asan" -j "$jobs" >/dev/null
export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:detect_stack_use_after_return=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
(cd "$work/asan" && ctest --output-on-failure -j "$jobs")
asan_tests=$(cd "$work/asan" && ctest -N | sed -n 's/^Total Tests: //p')

cc "${cflags[@]}" $san c-tests/sanitizer_canary.c "${shared[@]}" -o "$work/canary_asan"
if "$work/canary_asan" leak >"$work/leak.log" 2>&1; then
  echo "LeakSanitizer did not report the canary's leaked dataset" >&2; exit 1
fi
grep -q "detected memory leaks" "$work/leak.log" && grep -q "hetreward::ffi::dataset" "$work/leak.log" \
  || { cat "$work/leak.log" >&2; echo "unexpected canary output" >&2; exit 1; }
echo "LeakSanitizer canary: the deliberately leaked dataset was reported (allocated in Rust)"
unset ASAN_OPTIONS UBSAN_OPTIONS
lap "install + ASan"

# ---- 2. ThreadSanitizer ----------------------------------------------------------------------
echo "--- concurrent C tests under ThreadSanitizer (library and Rust std instrumented)"
rustup toolchain list | grep -q '^nightly' || { echo "TSan needs a nightly toolchain (rustup toolchain install nightly)" >&2; exit 1; }
if ! rustup component list --toolchain nightly --installed | grep -q '^rust-src'; then
  rustup component add rust-src --toolchain nightly
fi
host=$(rustc -vV | sed -n 's/^host: //p')
tsan_dir="${CARGO_TARGET_DIR:-target}/tsan"
RUSTFLAGS="-Zsanitizer=thread" cargo +nightly build -q -Zbuild-std --target "$host" -p hetreward --lib \
  --release --target-dir "$tsan_dir"
lap "TSan build of the library and std"
tsan_lib="$tsan_dir/$host/release/libhetreward.a"
probe="$work/probe"; mkdir -p "$probe"; : > "$probe/empty.rs"
read -r -a native <<<"$(rustc --crate-type staticlib --crate-name empty --print native-static-libs \
    -o "$probe/libempty.a" "$probe/empty.rs" 2>&1 | sed -n 's/.*native-static-libs: //p')"
tsan_build() { # source output
  cc "${cflags[@]}" -fsanitize=thread "$1" c-tests/tsan_shim.c "$tsan_lib" "${native[@]}" -o "$2"
}
tsan_run() { # binary args...: TSan's runtime needs the old address layout on some kernels
  local log="$work/tsan.log"
  if TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" "$@" >"$log" 2>&1; then
    cat "$log"; return 0
  fi
  if grep -q "unexpected memory mapping" "$log"; then
    TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" setarch "$(uname -m)" -R "$@"
    return $?
  fi
  cat "$log" >&2
  return 1
}
for t in threads cancel concurrency; do
  tsan_build "c-tests/test_$t.c" "$work/tsan_$t"
done
tsan_run "$work/tsan_threads"
tsan_run "$work/tsan_cancel"
tsan_run "$work/tsan_concurrency" 1000 20000 | tee "$work/tsan_concurrency.log"
tsan_build c-tests/sanitizer_canary.c "$work/canary_tsan"
TSAN_OPTIONS="halt_on_error=1" "$work/canary_tsan" race >"$work/race.log" 2>&1 || true
grep -q "ThreadSanitizer: data race" "$work/race.log" \
  || { cat "$work/race.log" >&2; echo "ThreadSanitizer did not report the canary's race" >&2; exit 1; }
echo "ThreadSanitizer canary: the deliberate free-while-scoring race was reported"
lap "TSan"

# ---- 3. valgrind memcheck for the new C tests -------------------------------------------------
echo "--- test_bad_input and test_concurrency under valgrind memcheck"
cmake -S c-tests -B "$work/plain" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build "$work/plain" -j "$jobs" --target test_bad_input test_concurrency >/dev/null
memcheck=(valgrind -q --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite,indirect
          --show-leak-kinds=definite,indirect)
(cd "$work/plain" && "${memcheck[@]}" ./test_bad_input)
(cd "$work/plain" && "${memcheck[@]}" ./test_concurrency 100 5000)
lap "memcheck"

# ---- 4. fuzzing --------------------------------------------------------------------------------
echo "--- fuzz smoke run: $fuzz_seconds s per target"
bash scripts/fuzz.sh all "$fuzz_seconds"
lap "fuzzing"

echo "Reliability: C suite ($asan_tests tests) clean under ASan+UBSan+LSan; threads, cancel and" \
     "concurrency clean under TSan; new C tests clean under memcheck; canaries caught; fuzz" \
     "smoke clean ($(( $(date +%s) - t_start )) s)"
