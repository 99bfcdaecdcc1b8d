#!/usr/bin/env bash
# hetreward.distributed on real engines, loopback only:
#   1. a fresh venv gets the package from source with its engine extras
#      (`pip install ./bindings/python[ray,dask,spark,parquet,test]`, the library built by
#      cargo through setuptools-rust as in 60-bindings.sh) and safetensors; Java 17+ for Spark
#      (openjdk-17-jre-headless through 00-system-packages.sh when missing);
#   2. bindings/python/tests/test_distributed.py (the driver loop from Python, no engine) and
#      bindings/python/tests_distributed/ (Ray with actors on a 2-CPU local cluster, Dask
#      LocalCluster with 2 worker processes, Spark local[2]): 8-shard fits of the paper's
#      §6.1 data and of n = 20,000, d1 = 64, d2 = 5 equal to the one-process fit within 1e-10
#      for all four covariance kinds, shard order / partitioning within 1e-12, one Spark fit;
#      and the fault table (test_distributed_faults.py, ~1 minute): killed and frozen
#      (SIGSTOP) workers, a shard file changed mid-fit, cancellation during a running round,
#      resume after a stopped driver, on every engine, each test under a hard timeout;
#   3. any skipped test fails the step, and so does anything that cannot install or run.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/lib/venv.sh
source scripts/lib/venv.sh
for tool in python3 cargo; do
  command -v "$tool" >/dev/null || { echo "$tool not found (scripts/ci.d/00-system-packages.sh installs it)" >&2; exit 1; }
done
java_major() { java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n 1; }
if ! command -v java >/dev/null || [ "$(java_major)" -lt 17 ]; then
  bash scripts/ci.d/00-system-packages.sh openjdk-17-jre-headless
fi
[ "$(java_major)" -ge 17 ] || { echo "Spark needs Java 17+, found: $(java -version 2>&1 | head -n 1)" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
t0=$(date +%s)
make_venv "$work/venv"
py="$work/venv/bin/python"
pipq() { "$py" -m pip install -q --disable-pip-version-check "$@"; }
pipq --upgrade pip >/dev/null
pipq "./bindings/python[ray,dask,spark,parquet,test]" safetensors
echo "venv with the engines in $(( $(date +%s) - t0 )) s: $("$py" - <<'PYEOF'
import importlib.metadata as m
print(", ".join(f"{p} {m.version(p)}" for p in ("ray", "dask", "distributed", "pyspark", "pyarrow")))
PYEOF
)"

# Loopback only, and nothing phoned home.
export RAY_USAGE_STATS_ENABLED=0 SPARK_LOCAL_IP=127.0.0.1 DASK_DISTRIBUTED__DIAGNOSTICS__NVML=False
unset HETREWARD_LIB LD_LIBRARY_PATH
t0=$(date +%s)
# Run from inside each test folder, so that `import hetreward` is the venv's installed package
# (with its bundled library), never the source folder bindings/python/hetreward.
suite() {
  local dir=$1 log="$work/pytest-$1.log"
  shift
  if ! (cd "bindings/python/$dir" && PYTHONDONTWRITEBYTECODE=1 timeout 900 "$py" -m pytest -q \
          -rs -p no:cacheprovider --rootdir=. --durations=8 "$@") >"$log" 2>&1; then
    cat "$log" >&2
    echo "the distributed tests in bindings/python/$dir failed" >&2
    exit 1
  fi
  # The fault table (test_distributed_faults.py), whole, then the end of the run.
  sed -n '/^fault table/,/^=/p' "$log" | { grep -v '^=' || true; }
  grep -vE '^(INFO|WARNING|[0-9/]+ [0-9:]+ WARN)' "$log" | tail -n 12
  if grep -qiE '[0-9]+ skipped' "$log"; then
    echo "tests in bindings/python/$dir were skipped: a skipped suite is a failed suite" >&2
    exit 1
  fi
}
loaded=$(cd "$work" && "$py" -c 'import hetreward; print(hetreward._native.lib._name)')
case "$loaded" in
  "$work/venv/"*) echo "import hetreward loads $loaded" ;;
  *) echo "hetreward loaded $loaded, not the library in the venv's package" >&2; exit 1 ;;
esac
suite tests test_distributed.py
suite tests_distributed .
echo "Distributed: Ray, Dask and Spark fits equal the one-process fit, and every fault of the table ends in an error naming the shard and worker or in the same model; tests ran in $(( $(date +%s) - t0 )) s"
