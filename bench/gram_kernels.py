#!/usr/bin/env python3
"""The Gram kernels against numpy's dsyrk in one run (BENCHMARKS.md "Dense kernels").

Alternates, round by round so that both see the same machine load: numpy's dsyrk and ssyrk
of an n x d1 matrix (OpenBLAS, `Z^T Z`), then the paper_scale benchmark's `gram` workload
(one repetition of each kernel: the crate's f64 and f32 streamed Gram, faer's bare triangular
product, the x86 kernel forced to AVX2). Prints each kernel's median and its median ratio
to the dsyrk of the same round (wall clock and CPU seconds), the load average of each round,
and a JSON line. On a loaded machine run it with `--threads 1` as well: a single-threaded
kernel's CPU seconds are its work whatever share of a core it got.

    cargo bench --bench paper_scale --no-run      # prints the benchmark executable's path
    python3 bench/gram_kernels.py --bench target/release/deps/paper_scale-HASH [--rounds 5]

Needs numpy and scipy (`pip install numpy scipy`).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", required=True, help="the paper_scale benchmark executable")
    ap.add_argument("--n", type=int, default=33845, help="rows (default: the paper's 33,845)")
    ap.add_argument("--d1", type=int, default=2048, help="columns (default 2048)")
    ap.add_argument("--threads", type=int, default=2, help="threads of both (default 2)")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (medians)")
    args = ap.parse_args()
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(args.threads)
    import numpy as np
    from scipy.linalg.blas import dsyrk, ssyrk

    rng = np.random.default_rng(1)
    zt = np.asfortranarray(rng.random((args.n, args.d1)) - 0.5).T  # d1 x n, Fortran: no copy
    zt32 = zt.astype(np.float32, order="F")

    def timed(f):
        t, c = time.perf_counter(), time.process_time()
        f()
        return time.perf_counter() - t, time.process_time() - c

    dsyrk(1.0, zt, trans=0)  # warm up BLAS
    rows, cpus = [], []
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "gram.json")
        for r in range(args.rounds):
            load = os.getloadavg()[0]
            row, cpu = {"load": load}, {}
            row["dsyrk"], cpu["dsyrk"] = timed(lambda: dsyrk(1.0, zt, trans=0))
            row["ssyrk"], cpu["ssyrk"] = timed(lambda: ssyrk(1.0, zt32, trans=0))
            subprocess.run([args.bench, "--only", "gram", "--reps", "1", "--n", str(args.n),
                            "--d1", str(args.d1), "--threads", str(args.threads), "--json", out],
                           check=True, stdout=subprocess.DEVNULL)
            for name, v in json.load(open(out))["gram"].items():
                row[name], cpu[name] = v["median_s"], v["cpu_s"]
            rows.append(row)
            cpus.append(cpu)
            print(f"round {r + 1}: load {load:.1f}, " +
                  ", ".join(f"{k} {v:.3f}" for k, v in row.items() if k != "load"), flush=True)
    loads = ", ".join(f"{r['load']:.1f}" for r in rows)
    print(f"\nn = {args.n}, d1 = {args.d1}, {args.threads} threads, {args.rounds} interleaved "
          f"rounds; load averages {loads}")
    print("ratios: median over the rounds of (kernel / dsyrk of the same round), by wall clock and "
          "by CPU seconds (user + system, all threads: the load-independent measure of the work "
          "when --threads 1)")
    print(f"{'kernel':<20} {'wall s':>8} {'x dsyrk':>8} {'cpu s':>8} {'x dsyrk':>8}")
    summary = {}
    for k in cpus[0]:
        m = statistics.median(r[k] for r in rows)
        ratio = statistics.median(r[k] / r["dsyrk"] for r in rows)
        c = statistics.median(r[k] for r in cpus)
        cratio = statistics.median(r[k] / r["dsyrk"] for r in cpus)
        summary[k] = {"median_s": m, "ratio_to_dsyrk": ratio, "cpu_s": c, "cpu_ratio_to_dsyrk": cratio,
                      "runs": [r[k] for r in rows], "cpu_runs": [r[k] for r in cpus]}
        print(f"{k:<20} {m:8.3f} {ratio:8.2f} {c:8.3f} {cratio:8.2f}")
    print(json.dumps({"n": args.n, "d1": args.d1, "threads": args.threads,
                      "loads": [r["load"] for r in rows], "kernels": summary}))


if __name__ == "__main__":
    sys.exit(main())
