#!/usr/bin/env python3
"""numpy's side of `cargo bench --bench select_capi` (BENCHMARKS.md, "pBoN through the C API").

Reads what the bench wrote to DIR (raw little-endian arrays: phi.f32 prompts*N x d1, L.f64 the
d1 x d1 lower Wald factor row-major, theta.f64, draws.f32 B x d1) and times, per prompt of N
candidates, pBoN as a numpy user writes it:

* wald: every candidate's SE as row norms of Phi L (the fastest of BLAS dtrmm, a plain f64
  GEMM and BLAS strmm in f32, whose SEs are rounded to f32: its choices may differ), then
  argmax of r - q se;
* draws64: Phi (f64) @ Draws^T (f64 GEMM) then np.quantile(alpha/2) per row (linear, as the
  library), argmax; the same arithmetic as the library (exact products, f64 sums);
* draws32: the same in f32 (sgemm), rounding the sums to f32 (both skipped for B = 0).

Prints one JSON line: median ms per prompt of each, and each prompt's chosen index.

    python3 bench/select_numpy.py DIR --d1 D1 --n N --reps B --threads T --calls C
"""
import argparse
import json
import os
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--d1", type=int, required=True)
    ap.add_argument("--n", type=int, default=128)
    ap.add_argument("--reps", type=int, required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--alpha", type=float, default=0.05)
    args = ap.parse_args()
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(args.threads)
    import numpy as np
    from scipy.linalg.blas import dtrmm, strmm

    d1, n = args.d1, args.n
    path = lambda f: os.path.join(args.dir, f)
    phi_all = np.fromfile(path("phi.f32"), dtype="<f4").reshape(-1, d1)
    L = np.fromfile(path("L.f64"), dtype="<f8").reshape(d1, d1)
    Lf = np.asfortranarray(L)
    theta = np.fromfile(path("theta.f64"), dtype="<f8")
    draws32 = np.fromfile(path("draws.f32"), dtype="<f4").reshape(args.reps, d1)
    draws64 = draws32.astype(np.float64)
    q = 1.959963984540054

    def wald_trmm(block):
        phi = np.asfortranarray(block, dtype=np.float64)
        se = np.linalg.norm(dtrmm(1.0, Lf, phi, side=1, lower=1), axis=1)
        return int(np.argmax(phi @ theta - q * se))

    Lf32 = np.asfortranarray(L, dtype=np.float32)
    theta32 = theta.astype(np.float32)

    def wald_strmm(block):
        phi = np.asfortranarray(block, dtype=np.float32)
        se = np.linalg.norm(strmm(1.0, Lf32, phi, side=1, lower=1), axis=1)
        return int(np.argmax(phi @ theta32 - np.float32(q) * se))

    def wald_gemm(block):
        phi = block.astype(np.float64)
        return int(np.argmax(phi @ theta - q * np.linalg.norm(phi @ L, axis=1)))

    def draws_f64(block):
        v = block.astype(np.float64) @ draws64.T
        return int(np.argmax(np.quantile(v, args.alpha / 2, axis=1)))

    def draws_f32(block):
        v = block @ draws32.T
        return int(np.argmax(np.quantile(v, args.alpha / 2, axis=1)))

    prompts = phi_all.shape[0] // n
    blocks = [phi_all[g * n:(g + 1) * n] for g in range(prompts)]
    walds = (wald_trmm, wald_gemm, wald_strmm)
    for f in walds:
        f(blocks[0])
    t = {}
    for f in walds:
        t0 = time.perf_counter()
        for _ in range(3):
            f(blocks[0])
        t[f] = time.perf_counter() - t0
    wald = min(t, key=t.get)
    out = {"wald_kernel": wald.__name__}
    ways = [("wald", wald)]
    if args.reps > 0:
        ways += [("draws64", draws_f64), ("draws32", draws_f32)]
    for name, f in ways:
        times, picks = [], []
        for b in blocks:
            for _ in range(args.calls):
                t0 = time.perf_counter()
                i = f(b)
                times.append(time.perf_counter() - t0)
            picks.append(i)
        times.sort()
        out[name + "_ms"] = 1e3 * times[len(times) // 2]
        out[name + "_index"] = picks
    print(json.dumps(out))


if __name__ == "__main__":
    main()
