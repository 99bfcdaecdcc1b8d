# Sourced by scripts/test.sh. Puts cargo's build artifacts in a directory under ~/.cache that
# survives between clones, so a run on a fresh clone of a machine that has run the tests before
# compiles only the workspace's own crates, not its ~300 dependencies (release, the TSan build
# of std, the fuzz targets' ASan build): about 10 of the run's 40 minutes.
#
# The directory is keyed by the toolchains (`rustc -vV` of stable and of nightly, which the TSan
# and fuzz steps use): a new compiler starts a new cache instead of mixing artifacts. Cargo's
# own fingerprints decide what is fresh inside it; the workspace's crates are hashed with the
# clone's path, so two clones never share (or overwrite) each other's library, only the
# registry dependencies. The cache is wiped when it grows past HETREWARD_BUILD_CACHE_GB
# (default 40) GiB, since every new clone path adds its own copy of the workspace's crates.
#
# Opt out with HETREWARD_BUILD_CACHE=0 (artifacts in ./target, as plain cargo does), or choose
# the directory with CARGO_TARGET_DIR. Only cargo's artifacts move: what the steps write
# themselves (reports, the llama.cpp example's build, logs) stays in the clone's ./target.
use_cargo_cache() {
  [ -z "${CARGO_TARGET_DIR:-}" ] || return 0
  [ "${HETREWARD_BUILD_CACHE:-1}" != 0 ] || return 0
  [ -n "${HOME:-}" ] && mkdir -p "$HOME/.cache/hetreward" 2>/dev/null || return 0
  local key dir limit used
  key=$( { rustc -vV; rustup run nightly rustc -vV 2>/dev/null || true; } | sha256sum | cut -c1-16)
  dir="$HOME/.cache/hetreward/cargo-target-$key"
  limit=${HETREWARD_BUILD_CACHE_GB:-40}
  if [ -d "$dir" ]; then
    used=$(du -s --block-size=1G "$dir" 2>/dev/null | cut -f1)
    if [ "${used:-0}" -gt "$limit" ]; then
      echo "build cache $dir holds $used GiB (> $limit): starting it afresh"
      rm -rf "$dir"
    fi
  fi
  mkdir -p "$dir"
  export CARGO_TARGET_DIR="$dir"
  echo "cargo's build artifacts: $CARGO_TARGET_DIR (HETREWARD_BUILD_CACHE=0 for ./target)"
}
