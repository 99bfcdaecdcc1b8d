#!/usr/bin/env bash
# The C ABI, as a C/C++ user gets it:
#   1. include/hetreward.h is exactly what cbindgen generates from src/ffi/ now;
#   2. scripts/install.sh installs the package into a fresh temporary prefix;
#   3. the C test suite (c-tests/) builds against that prefix with -Wall -Wextra -Wpedantic
#      -Werror and passes, then passes again under valgrind memcheck with no errors and no
#      definite or indirect leaks;
#   4. the C++ consumer (c-tests/consumer/) finds the package with find_package(hetreward
#      CONFIG), builds against the shared and the static target, and runs; a C program built
#      with nothing but pkg-config runs too;
#   5. the docs: every relative link resolves and the README's C example compiles
#      (scripts/check-docs.py).
set -euo pipefail
cd "$(dirname "$0")/../.."
for tool in cmake pkg-config valgrind cc c++; do
  command -v "$tool" >/dev/null || { echo "$tool not found (scripts/ci.d/00-system-packages.sh installs it)" >&2; exit 1; }
done
jobs=$(nproc 2>/dev/null || echo 2)

echo "--- docs: links and the README's C example"
python3 scripts/check-docs.py

echo "--- header freshness (include/hetreward.h vs cbindgen)"
cargo test --release --lib ffi::tests::header_is_fresh

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"

echo "--- install to a fresh prefix"
bash scripts/install.sh --prefix "$prefix"
version=$(sed -n 's/^version *= *"\([0-9.]*\)".*/\1/p;T;q' Cargo.toml)
for f in include/hetreward.h lib/libhetreward.a lib/libhetreward.so "lib/libhetreward.so.$version" \
         lib/cmake/hetreward/hetrewardConfig.cmake lib/cmake/hetreward/hetrewardConfigVersion.cmake \
         lib/pkgconfig/hetreward.pc; do
  [ -e "$prefix/$f" ] || { echo "missing from the install: $f" >&2; exit 1; }
done
cmp include/hetreward.h "$prefix/include/hetreward.h"

echo "--- C test suite"
cmake -S c-tests -B "$work/c-tests" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build "$work/c-tests" -j "$jobs"
(cd "$work/c-tests" && ctest --output-on-failure -j "$jobs")

echo "--- C test suite under valgrind memcheck"
# --freelist-vol: faer's GEMM backend (private-gemm-x86) gives every thread that multiplies a
# scratch buffer of twice the L3 cache (960 MiB on a 480 MiB-L3 Xeon; allocated, not touched).
# test_shard starts ~1,000 short-lived pool threads, and memcheck's default queue of freed blocks
# (20 MB) keeps enough of them to exhaust its address space ("memory allocation of 1006632960
# bytes failed"). A tiny queue recycles freed blocks at once; use-after-free on the C side is
# still caught by the ASan run of scripts/ci.d/50-reliability.sh.
for t in test_api test_errors test_threads test_cancel test_version test_header test_intervals test_shard test_coefficients test_options test_leverage; do
  (cd "$work/c-tests" && valgrind -q --error-exitcode=1 --leak-check=full \
      --errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect \
      --freelist-vol=1000 "./$t")
done

echo "--- C++ consumer via find_package(hetreward CONFIG)"
cmake -S c-tests/consumer -B "$work/consumer" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/consumer" -j "$jobs"
"$work/consumer/consumer_shared"
"$work/consumer/consumer_static"
major=${version%%.*}; rest=${version#*.}; minor=${rest%%.*}
if [ "$major" = 0 ]; then soname="libhetreward.so.0.$minor"; else soname="libhetreward.so.$major"; fi
deps_shared=$(ldd "$work/consumer/consumer_shared")
deps_static=$(ldd "$work/consumer/consumer_static")
case "$deps_shared" in
  *"$soname => $prefix/lib/$soname"*) ;;
  *) echo "consumer_shared does not load $prefix/lib/$soname:" >&2; echo "$deps_shared" >&2; exit 1 ;;
esac
case "$deps_static" in
  *libhetreward*) echo "consumer_static depends on libhetreward.so:" >&2; echo "$deps_static" >&2; exit 1 ;;
esac

echo "--- C consumer via pkg-config"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
[ "$(pkg-config --modversion hetreward)" = "$version" ]
# shellcheck disable=SC2046
cc -std=c99 -Wall -Wextra -Wpedantic -Werror c-tests/consumer/pkgconfig_check.c \
   $(pkg-config --cflags --libs hetreward) -Wl,-rpath,"$prefix/lib" -o "$work/pkgconfig_check"
"$work/pkgconfig_check"
echo "C ABI: header fresh, C suite clean under valgrind, CMake and pkg-config consumers ok"
