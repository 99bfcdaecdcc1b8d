#!/usr/bin/env bash
# Installs the system packages the test steps need, if they are missing.
set -euo pipefail
need=()
# r-base-core with sandwich and clubSandwich: the outside reference of the cluster variances
# (tests/r_reference.rs fails without them).
for pkg in "$@" cmake pkg-config golang-go valgrind python3-pip \
  r-base-core r-cran-sandwich r-cran-clubsandwich; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "installing: ${need[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
command -v cargo >/dev/null || { echo "cargo not found: install Rust (rustup)" >&2; exit 1; }
