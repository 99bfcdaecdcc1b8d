#!/usr/bin/env bash
# Builds the release library and installs it as a C/C++ package under a prefix:
#
#   scripts/install.sh --prefix DIR
#
#   DIR/lib/libhetreward.so.X.Y.Z, libhetreward.so.SOVERSION -> ..., libhetreward.so -> ...
#   DIR/lib/libhetreward.a
#   DIR/include/hetreward.h
#   DIR/lib/cmake/hetreward/hetrewardConfig.cmake, hetrewardConfigVersion.cmake
#   DIR/lib/pkgconfig/hetreward.pc
#
# Then: find_package(hetreward CONFIG REQUIRED) with CMAKE_PREFIX_PATH=DIR, or
# PKG_CONFIG_PATH=DIR/lib/pkgconfig pkg-config --cflags --libs hetreward.
# Needs cargo, cmake (>= 3.16) and a C compiler. Honours CARGO_TARGET_DIR.
set -euo pipefail

usage() { echo "usage: $0 --prefix DIR" >&2; }
prefix=""
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) [ $# -ge 2 ] || { usage; exit 2; }; prefix="$2"; shift 2 ;;
    --prefix=*) prefix="${1#--prefix=}"; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "unknown argument: $1" >&2; usage; exit 2 ;;
  esac
done
[ -n "$prefix" ] || { usage; exit 2; }
case "$prefix" in /*) ;; *) prefix="$(pwd)/$prefix" ;; esac
command -v cmake >/dev/null || { echo "cmake not found (apt-get install cmake)" >&2; exit 1; }

cd "$(dirname "$0")/.."
root=$(pwd)
target_dir="${CARGO_TARGET_DIR:-$root/target}"
case "$target_dir" in /*) ;; *) target_dir="$root/$target_dir" ;; esac

cargo build --release -p hetreward --lib
lib_dir="$target_dir/release"

# The shared library must carry its SONAME (set by build.rs); the package relies on it.
version=$(sed -n 's/^version *= *"\([0-9.]*\)".*/\1/p;T;q' Cargo.toml)
major=${version%%.*}; rest=${version#*.}; minor=${rest%%.*}
if [ "$major" = 0 ]; then soversion="0.$minor"; else soversion="$major"; fi
soname=$(readelf -d "$lib_dir/libhetreward.so" | sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p')
if [ "$soname" != "libhetreward.so.$soversion" ]; then
  echo "libhetreward.so has SONAME '$soname', expected libhetreward.so.$soversion" >&2
  exit 1
fi

# The system libraries a Rust static library needs: those of the standard library (the crate
# links no native library of its own), asked of rustc on an empty crate.
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
: > "$probe/empty.rs"
native_libs=$(rustc --crate-type staticlib --crate-name empty --print native-static-libs \
                -o "$probe/libempty.a" "$probe/empty.rs" 2>&1 \
              | sed -n 's/.*native-static-libs: //p')
[ -n "$native_libs" ] || { echo "could not get rustc's native-static-libs" >&2; exit 1; }

# The CMake build directory is temporary: CMake ties a build directory to one source directory,
# and cargo's target directory may be shared by several clones (scripts/lib/cargo-cache.sh).
build_dir="$probe/cmake-package"
cmake -S cmake -B "$build_dir" -DCMAKE_INSTALL_PREFIX="$prefix" \
      -DHETREWARD_LIB_DIR="$lib_dir" -DHETREWARD_NATIVE_STATIC_LIBS="$native_libs" >/dev/null
cmake --install "$build_dir" >/dev/null
echo "installed hetreward $version to $prefix"
