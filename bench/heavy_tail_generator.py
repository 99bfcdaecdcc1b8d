#!/usr/bin/env python3
"""A third paper-scale training file for `bench/whole_process.py`, of a design the solver was
not tuned on: heavy-tailed feature scales, heavy-tailed rows, a sparse psi and a psi0 that
varies by annotator.

* z: n x d1, z_i = r_i * D g_i with g_i ~ N(0, I), column scales D = diag(exp(1.5 u_j)),
  u_j ~ N(0, 1) (scales spread over ~4 orders of magnitude), and row norms r_i drawn from a
  Student t with 3 degrees of freedom scaled to median 1 (a few rows hundreds of times
  longer than the typical one). No rotation: the information is far from isotropic and its
  diagonal alone carries the conditioning.
* theta*: sd(theta* . z) = 2 over the rows, with most of its weight on the small-scale columns.
* psi: d2 = 38 sparse columns, each a rare binary flag (a given annotator carries a flag with
  probability 1-8 %, so most rows have zero or one nonzero covariate); gamma* uniform in
  (-0.3, 0.3), one flag adversarial (gamma = -1.5).
* psi0: 1 for three quarters of the annotators, 0.5 or 2 for the rest (an annotator's
  "confidence" scale); n = 33,845 comparisons by 1,500 annotators (cluster ids stored).

Stored as F64 (the layout of bench/section6_generator.py, whose writer it shares).

    python3 bench/heavy_tail_generator.py /tmp/heavy.safetensors [--n 33845 --d1 2048 --seed 11]
"""

import argparse

import numpy as np

from section6_generator import write_safetensors


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--n", type=int, default=33845)
    ap.add_argument("--d1", type=int, default=2048)
    ap.add_argument("--seed", type=int, default=11)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    n, d1, d2 = args.n, args.d1, 38

    scales = np.exp(1.5 * rng.standard_normal(d1))
    t = np.abs(rng.standard_t(3, n))
    r = t / np.median(t)
    z = rng.standard_normal((n, d1)) * scales * r[:, None]

    theta = rng.standard_normal(d1) / np.sqrt(scales)
    theta *= 2.0 / np.std(z @ theta)

    annotators = 1500
    who = rng.integers(0, annotators, n)
    rates = rng.uniform(0.01, 0.08, d2)
    flags = rng.random((annotators, d2)) < rates
    psi = flags[who].astype(np.float64)
    gamma = rng.uniform(-0.3, 0.3, d2)
    gamma[5] = -1.5
    psi0_of = np.where(rng.random(annotators) < 0.75, 1.0, rng.choice([0.5, 2.0], annotators))
    psi0 = psi0_of[who]
    sigma = psi0 + psi @ gamma
    u = sigma * (z @ theta)
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-u))).astype(np.float64)
    write_safetensors(args.out, {"z": z, "psi": psi, "psi0": psi0, "y": y,
                                 "cluster": who.astype(np.int64)})
    print(f"wrote {args.out}: n = {n}, d1 = {d1}, d2 = {d2}, mean y {y.mean():.3f}, "
          f"nonzero psi per row {psi.sum(1).mean():.2f}, adversarial share {np.mean(sigma < 0):.3f}, "
          f"column scales {scales.min():.2g}..{scales.max():.2g}, max row scale {r.max():.0f}")


if __name__ == "__main__":
    main()
