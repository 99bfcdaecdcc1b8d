#!/usr/bin/env python3
"""Whole-process benchmark (issue 12 part 5, BENCHMARKS.md "Whole process").

Times `hetreward fit FILE --out M --report R` as users run it (wall clock of the process:
reading, validating, fitting, covariance, writing the model and the report, printing), and
in the same run the baseline: one OpenBLAS dsyrk of the file's z (`Z^T Z`, n x d1, f64),
the floor of the covariance's dominant product. Prints the medians and their ratio, plus a
JSON line.

    cargo bench --bench paper_scale -- --precision f64 --only none --write-training /tmp/paper.safetensors
    cargo build --release
    python3 bench/whole_process.py /tmp/paper.safetensors [--bin target/release/hetreward ...] \
        [--reps 3] [--threads 2]

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
    ap.add_argument("file", help="training safetensors file (z F64)")
    ap.add_argument("--bin", action="append",
                    help="the hetreward CLI (default target/release/hetreward); repeat to compare "
                         "builds (e.g. before/after) in the same run")
    ap.add_argument("--reps", type=int, default=3, help="repetitions of each timing (median)")
    ap.add_argument("--threads", type=int, default=2, help="BLAS threads of the baseline")
    args = ap.parse_args()
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(args.threads)
    import numpy as np
    from scipy.linalg.blas import dsyrk

    with open(args.file, "rb") as f:
        hlen = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(hlen))
    z_info = header["z"]
    if z_info["dtype"] != "F64":
        sys.exit("whole_process.py: z must be F64 (write the file with --precision f64)")
    n, d1 = z_info["shape"]
    start = 8 + hlen + z_info["data_offsets"][0]
    z = np.fromfile(args.file, dtype="<f8", count=n * d1, offset=start).reshape(n, d1)

    def syrk():
        t = time.perf_counter()
        dsyrk(1.0, z.T, trans=0)  # z.T is Fortran-ordered d1 x n: no copy; Z^T Z
        return time.perf_counter() - t

    bins = args.bin or ["target/release/hetreward"]

    def cli(binary, out_dir):
        cmd = [binary, "fit", args.file, "--out", os.path.join(out_dir, "m.hrm"),
               "--report", os.path.join(out_dir, "r.json")]
        t = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        return time.perf_counter() - t

    syrk()  # warm up BLAS
    whole = {b: [] for b in bins}
    floor = []
    with tempfile.TemporaryDirectory() as out_dir:
        cli(bins[0], out_dir)  # warm the page cache
        for _ in range(args.reps):  # interleaved: all see the same machine load
            for b in bins:
                whole[b].append(cli(b, out_dir))
            floor.append(syrk())
    s = statistics.median(floor)
    print(f"file: n = {n}, d1 = {d1}, z F64; {args.reps} reps, medians")
    print(f"OpenBLAS dsyrk of z ({args.threads} thr)  {s:8.3f} s   runs: {', '.join(f'{v:.2f}' for v in floor)}")
    out = {"dsyrk_s": s, "dsyrk_runs": floor, "n": n, "d1": d1, "whole": {}}
    for b in bins:
        w = statistics.median(whole[b])
        print(f"hetreward fit, {b}: {w:8.3f} s = {w / s:5.2f}x dsyrk   runs: "
              f"{', '.join(f'{v:.2f}' for v in whole[b])}")
        out["whole"][b] = {"whole_s": w, "ratio": w / s, "runs": whole[b]}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
