# Sourced by CI steps. make_venv DIR: creates a Python venv at DIR; on a fresh Debian machine
# without the venv module, installs python3-venv (scripts/ci.d/00-system-packages.sh) and
# tries again, failing loudly if it still cannot.
make_venv() {
  local dir=$1 log
  log=$(mktemp)
  if ! python3 -m venv "$dir" 2>"$log"; then
    cat "$log" >&2
    echo "python3 -m venv failed; installing python3-venv" >&2
    bash scripts/ci.d/00-system-packages.sh python3-venv
    rm -rf "$dir"
    python3 -m venv "$dir"
  fi
  rm -f "$log"
}
