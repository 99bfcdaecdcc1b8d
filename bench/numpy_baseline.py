#!/usr/bin/env python3
"""numpy/scipy baseline for hetreward's paper-scale benchmark (BENCHMARKS.md).

Computes what `cargo bench --bench paper_scale` times, on the very same data, the way a
careful numpy user would: the fit by scipy's L-BFGS-B on the same likelihood (analytic
gradient), the expected information as one BLAS product G^T G, the covariance through
Cholesky (cho_factor / cho_solve), and pBoN scoring with a triangular product (BLAS dtrmm).

    cargo bench --bench paper_scale -- --only fit --reps 1 --export /tmp/hr
    python3 bench/numpy_baseline.py /tmp/hr [--threads 2] [--maxiter 15000] [--skip-lbfgs]

It reads z.npy, psi.npy, psi0.npy, y.npy, candidates.npy and hetreward_fit.json from the
export directory and prints its timings next to hetreward's optimum and choices (agreement
checks), plus a JSON line. Needs numpy and scipy (`pip install numpy scipy`).
"""

import argparse
import json
import os
import sys
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir", help="export directory written by `paper_scale --export`")
    ap.add_argument("--threads", type=int, default=2, help="BLAS threads (default 2)")
    ap.add_argument("--maxiter", type=int, default=15000, help="L-BFGS-B iteration cap")
    ap.add_argument("--gtol", type=float, default=1e-8,
                    help="stop when the gradient's Euclidean norm is below this (hetreward's tol)")
    ap.add_argument("--skip-lbfgs", action="store_true", help="time only covariance and scoring")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 unless numpy agrees with hetreward (optimum, SEs, pBoN choices)")
    args = ap.parse_args()

    # BLAS threads must be fixed before numpy loads.
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(args.threads)
    import numpy as np
    import scipy.linalg
    import scipy.optimize
    from scipy.special import expit
    from scipy.linalg.blas import dtrmm

    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # single-threaded scoring then runs with args.threads
        threadpool_limits = None

    d = args.dir
    z = np.load(os.path.join(d, "z.npy"))
    psi = np.load(os.path.join(d, "psi.npy"))
    psi0 = np.load(os.path.join(d, "psi0.npy"))
    y = np.load(os.path.join(d, "y.npy"))
    cand = np.load(os.path.join(d, "candidates.npy"))
    ref = json.load(open(os.path.join(d, "hetreward_fit.json")))
    n, d1 = z.shape
    d2 = psi.shape[1]
    per = ref["per_prompt"]
    print(f"numpy {np.__version__}, scipy {scipy.__version__}, {args.threads} BLAS threads; "
          f"n = {n}, d1 = {d1}, d2 = {d2}, z {z.dtype}")
    out = {"threads": args.threads, "n": n, "d1": d1, "d2": d2}

    t0 = time.perf_counter()
    z = np.ascontiguousarray(z, dtype=np.float64)  # what a numpy user does with f32 embeddings
    out["to_f64_s"] = time.perf_counter() - t0

    # The machine's GEMM rate through numpy (floor reference).
    a = np.random.default_rng(0).standard_normal((2048, 2048))
    a @ a
    ts = []
    for _ in range(5):
        t0 = time.perf_counter()
        a @ a
        ts.append(time.perf_counter() - t0)
    gflops = 2 * 2048 ** 3 / sorted(ts)[2] / 1e9
    out["dgemm_gflops"] = gflops
    print(f"numpy dgemm 2048^3: {gflops:.1f} GFLOP/s")

    def nll_grad(x):
        theta, gamma = x[:d1], x[d1:]
        t = z @ theta
        sigma = psi0 + psi @ gamma
        u = sigma * t
        loss = np.logaddexp(0.0, u) - y * u
        r = expit(u) - y
        g = np.concatenate([z.T @ (r * sigma), psi.T @ (r * t)]) / n
        return loss.mean(), g

    x_ref = np.concatenate([ref["theta"], ref["gamma"]])
    theta_se_ref = np.array(ref["theta_se"])
    f_ref, g_ref = nll_grad(x_ref)
    print(f"at hetreward's optimum: NLL {f_ref:.15f} (hetreward {ref['neg_loglik']:.15f}), "
          f"|grad| {np.linalg.norm(g_ref):.2e}")

    # One gradient evaluation (the unit of work of a first-order method).
    ts = []
    for _ in range(5):
        t0 = time.perf_counter()
        nll_grad(x_ref)
        ts.append(time.perf_counter() - t0)
    out["nll_grad_s"] = sorted(ts)[2]
    print(f"one NLL + gradient evaluation: {out['nll_grad_s'] * 1e3:.1f} ms")

    if not args.skip_lbfgs:
        # L-BFGS-B from zero, stopping on hetreward's criterion (Euclidean gradient norm).
        class Done(Exception):
            pass

        state = {"evals": 0, "x": None}

        def fun(x):
            state["evals"] += 1
            f, g = nll_grad(x)
            if np.linalg.norm(g) <= args.gtol:
                state["x"] = x.copy()
                raise Done
            return f, g

        t0 = time.perf_counter()
        try:
            res = scipy.optimize.minimize(fun, np.zeros(d1 + d2), jac=True, method="L-BFGS-B",
                                          options={"maxiter": args.maxiter, "gtol": 0.0,
                                                   "ftol": 0.0, "maxcor": 10})
            x, nit, converged = res.x, res.nit, False
        except Done:
            x, nit, converged = state["x"], None, True
        t_fit = time.perf_counter() - t0
        f, g = nll_grad(x)
        shift = np.max(np.abs(x[:d1] - x_ref[:d1]) / theta_se_ref)
        print(f"L-BFGS-B: {t_fit:.1f} s, {state['evals']} evaluations, |grad| {np.linalg.norm(g):.2e} "
              f"(reached {args.gtol:g}: {converged}), NLL - hetreward's {f - f_ref:.2e}, "
              f"max |theta - theta_hr| = {shift:.2e} SE")
        out.update({"lbfgs_s": t_fit, "lbfgs_evals": state["evals"], "lbfgs_converged": converged,
                    "lbfgs_grad_norm": float(np.linalg.norm(g)), "lbfgs_nll_gap": float(f - f_ref),
                    "lbfgs_theta_shift_in_se": float(shift)})

    # Expected information at hetreward's optimum and the covariance, as numpy would.
    theta, gamma = x_ref[:d1], x_ref[d1:]
    t0 = time.perf_counter()
    t = z @ theta
    sigma = psi0 + psi @ gamma
    mu = expit(sigma * t)
    sw = np.sqrt(mu * (1.0 - mu))
    G = np.hstack([(sw * sigma)[:, None] * z, (sw * t)[:, None] * psi])
    info = G.T @ G / n
    t_info = time.perf_counter() - t0
    del G
    t0 = time.perf_counter()
    cf = scipy.linalg.cho_factor(info, lower=True)
    V = scipy.linalg.cho_solve(cf, np.eye(d1 + d2))
    L = np.linalg.cholesky(V[:d1, :d1] / n)
    gamma_cov = V[d1:, d1:] / n
    t_cov = time.perf_counter() - t0
    theta_se = np.sqrt(np.diag(V[:d1, :d1]) / n)
    se_rel = np.max(np.abs(theta_se - theta_se_ref) / theta_se_ref)
    gse_rel = np.max(np.abs(np.sqrt(np.diag(gamma_cov)) - np.array(ref["gamma_se"]))
                     / np.array(ref["gamma_se"]))
    print(f"covariance: information (G^T G) {t_info:.2f} s + Cholesky/inverse/factor {t_cov:.2f} s "
          f"= {t_info + t_cov:.2f} s; theta_se max rel diff vs hetreward {se_rel:.1e}, gamma_se {gse_rel:.1e}")
    out.update({"information_s": t_info, "covariance_linalg_s": t_cov,
                "theta_se_rel_vs_hetreward": float(se_rel), "gamma_se_rel_vs_hetreward": float(gse_rel)})

    # pBoN scoring: rewards and SEs = row norms of Phi L (triangular product, dtrmm).
    q = 1.959963984540054
    prompts = cand.shape[0] // per

    # The factor in Fortran order once (dtrmm would copy a C-ordered one on every call).
    Lf = np.asfortranarray(L)

    def pbon_trmm(block):
        phi = np.asfortranarray(block, dtype=np.float64)
        r = phi @ theta
        se = np.linalg.norm(dtrmm(1.0, Lf, phi, side=1, lower=1), axis=1)
        return int(np.argmax(r - q * se))

    def pbon_gemm(block):
        phi = block.astype(np.float64)
        r = phi @ theta
        se = np.linalg.norm(phi @ L, axis=1)
        return int(np.argmax(r - q * se))

    # Whichever of the triangular product and the plain GEMM is faster here.
    probe = cand[:per]
    timings = {}
    for name, f in (("dtrmm", pbon_trmm), ("gemm", pbon_gemm)):
        f(probe)
        t0 = time.perf_counter()
        for _ in range(3):
            f(probe)
        timings[name] = time.perf_counter() - t0
    best = min(timings, key=timings.get)
    pbon = pbon_trmm if best == "dtrmm" else pbon_gemm
    out["pbon_kernel"] = best

    sample = list(range(0, prompts, max(prompts // 50, 1)))

    def per_prompt(count):
        ts = []
        for g in sample:
            block = cand[g * per:g * per + count]
            t0 = time.perf_counter()
            pbon(block)
            ts.append(time.perf_counter() - t0)
        return sorted(ts)[len(ts) // 2]

    if threadpool_limits is not None:
        with threadpool_limits(limits=1):
            t16, t128 = per_prompt(min(16, per)), per_prompt(per)
        single = "1 thread"
    else:
        t16, t128 = per_prompt(min(16, per)), per_prompt(per)
        single = f"{args.threads} threads (pip install threadpoolctl for 1)"
    print(f"pBoN per prompt ({single}, {best}): N = 16 {t16 * 1e3:.2f} ms, N = {per} {t128 * 1e3:.2f} ms")
    t0 = time.perf_counter()
    picks = [pbon(cand[g * per:(g + 1) * per]) for g in range(prompts)]
    t_all = time.perf_counter() - t0
    agree = sum(int(a == b) for a, b in zip(picks, ref["pbon_index"]))
    print(f"pBoN over all {prompts * per} candidates ({args.threads} threads): {t_all:.2f} s; "
          f"same choice as hetreward for {agree}/{prompts} prompts")
    out.update({"pbon16_s": t16, "pbon_per_s": t128, "pbon_all_s": t_all, "pbon_agree": agree,
                "prompts": prompts})
    print(json.dumps(out))
    if args.check:
        ok = (out["theta_se_rel_vs_hetreward"] < 1e-6 and out["gamma_se_rel_vs_hetreward"] < 1e-6
              and out["pbon_agree"] == prompts
              and (args.skip_lbfgs or (out["lbfgs_converged"] and out["lbfgs_theta_shift_in_se"] < 1e-3)))
        print("numpy agrees with hetreward" if ok else "MISMATCH between numpy and hetreward")
        return 0 if ok else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
