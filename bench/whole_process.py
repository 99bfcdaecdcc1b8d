#!/usr/bin/env python3
"""Whole-process benchmark (issue 12 part 5, BENCHMARKS.md "Whole process").

Times `hetreward fit FILE --out M --report R` as users run it (wall clock of the process:
reading, validating, fitting, covariance, writing the model and the report, printing), and
in the same run the baseline: one OpenBLAS dsyrk of the file's z (`Z^T Z`, n x d1, f64),
the floor of the covariance's dominant product. Given the paper_scale benchmark (`--bench`),
each round also runs its `process` workload on the file, which times the process's phases and
its own floor on this machine: one read of the file + one f64 Gram (the covariance's
information) + one f32 Gram of z (the preconditioner's), and for a file with cluster ids the
f32 product of the n x p information rows by the p x p inverse (the leverage diagnostic's).
Prints the medians, each round's load
average, the ratios (to the dsyrk, to the floor) and a JSON line.

    cargo bench --bench paper_scale -- --precision f64 --only none --write-training /tmp/paper.safetensors
    cargo build --release
    python3 bench/whole_process.py /tmp/paper.safetensors [--bin target/release/hetreward ...] \
        [--reps 3] [--threads 2] [--bench target/release/deps/paper_scale-HASH]

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
    ap.add_argument("--bench", help="the paper_scale benchmark executable (`cargo bench --bench "
                                    "paper_scale --no-run` prints it): also measure the floor")
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
    def process(out_dir):
        out = os.path.join(out_dir, "process.json")
        subprocess.run([args.bench, "--only", "process", "--file", args.file, "--reps", "1",
                        "--threads", str(args.threads), "--json", out],
                       check=True, stdout=subprocess.DEVNULL)
        return json.load(open(out))["process"]

    whole = {b: [] for b in bins}
    floor, phases, loads = [], [], []
    with tempfile.TemporaryDirectory() as out_dir:
        cli(bins[0], out_dir)  # warm the page cache
        for _ in range(args.reps):  # interleaved: all see the same machine load
            loads.append(os.getloadavg()[0])
            for b in bins:
                whole[b].append(cli(b, out_dir))
            floor.append(syrk())
            if args.bench:
                phases.append(process(out_dir))
    s = statistics.median(floor)
    print(f"file: n = {n}, d1 = {d1}, z F64; {args.reps} reps, medians; load averages "
          f"{', '.join(f'{v:.1f}' for v in loads)}")
    print(f"OpenBLAS dsyrk of z ({args.threads} thr)  {s:8.3f} s   runs: {', '.join(f'{v:.2f}' for v in floor)}")
    out = {"dsyrk_s": s, "dsyrk_runs": floor, "n": n, "d1": d1, "loads": loads, "whole": {}}
    if phases:
        keys = sorted(phases[0])
        med = {k: statistics.median(p[k] for p in phases) for k in keys}
        fl = med["floor_s"]
        fl_ratio = statistics.median(p["floor_s"] / d for p, d in zip(phases, floor))
        leverage = (f" + leverage f32 product {med['floor_leverage_f32']:.3f}"
                    if "floor_leverage_f32" in med else "")
        print(f"floor (read {med['fs_read_floor']:.3f} + f64 Gram {med['floor_gram_f64']:.3f} + "
              f"f32 Gram {med['floor_gram_f32']:.3f}{leverage})  {fl:8.3f} s = {fl_ratio:5.2f}x dsyrk")
        print("in-process phases: " + ", ".join(f"{k} {v:.3f}" for k, v in med.items()
                                                 if "floor" not in k))
        out["floor_s"], out["floor_ratio"], out["phases"] = fl, fl_ratio, med
    for b in bins:
        w = statistics.median(whole[b])
        ratio = statistics.median(v / d for v, d in zip(whole[b], floor))
        line = (f"hetreward fit, {b}: {w:8.3f} s = {ratio:5.2f}x dsyrk (median of the rounds' "
                f"ratios)")
        out["whole"][b] = {"whole_s": w, "ratio": ratio, "runs": whole[b]}
        if phases:
            to_floor = statistics.median(v / p["floor_s"] for v, p in zip(whole[b], phases))
            line += f" = {to_floor:4.2f}x the floor"
            out["whole"][b]["ratio_to_floor"] = to_floor
        print(line + f"   runs: {', '.join(f'{v:.2f}' for v in whole[b])}")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
