#!/usr/bin/env python3
"""A second paper-scale training file, generated in numpy (issue 23), independent of the Rust
harness's `sim::high_dimensional` generator, for `bench/whole_process.py`.

The paper's §6 recipe lifted to the LLM application's shape: a prompt s ~ N(0, 1), answers
a0 ~ N(0, 1) and a1 ~ N(0, 2) (variance 2) per comparison, and features built from the §6 map
phi(s, a) = (s^2 a, a^2 s, a s) extended by random projections: a fixed Gaussian embedding
matrix E (d1 x 3) followed by a tanh, plus isotropic noise (a real embedding's bulk), so
z_i = phi_emb(s, a1) - phi_emb(s, a0). Annotators: psi0(x) = 1 (as the application) and
one-hot covariates of d2 = 38 columns over annotator groups (the first level of each of a
few variables dropped), groups drawn per comparison; gamma* small except one adversarial level.
theta* is random with sd(theta* . z) = 2. Labels drawn from the model. Stored as F64.

    python3 bench/section6_generator.py /tmp/s6.safetensors [--n 33845 --d1 2048 --seed 7]
"""

import argparse
import json
import struct

import numpy as np


def write_safetensors(path, tensors):
    header, offset, blobs = {}, 0, []
    for name, arr in tensors.items():
        arr = np.ascontiguousarray(arr)
        dtype = {np.dtype("<f8"): "F64", np.dtype("<f4"): "F32", np.dtype("<i8"): "I64"}[arr.dtype]
        b = arr.tobytes()
        header[name] = {"dtype": dtype, "shape": list(arr.shape), "data_offsets": [offset, offset + len(b)]}
        offset += len(b)
        blobs.append(b)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--n", type=int, default=33845)
    ap.add_argument("--d1", type=int, default=2048)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    n, d1 = args.n, args.d1

    s = rng.standard_normal(n)
    a0 = rng.standard_normal(n)
    a1 = rng.normal(0.0, np.sqrt(2.0), n)
    emb = rng.standard_normal((3, d1)) / np.sqrt(3.0)

    def features(a):
        phi = np.stack([s * s * a, a * a * s, a * s], axis=1)  # the paper's §6 map
        return np.tanh(phi @ emb) + 0.3 * rng.standard_normal((n, d1))

    z = features(a1) - features(a0)
    theta = rng.standard_normal(d1)
    theta *= 2.0 / np.std(z @ theta)

    # Covariates: 7 variables with 6 levels each (first level the baseline: 5 columns each)
    # plus a 3-level channel (2 columns), one-hot: d2 = 37 + 1 always-on intercept-free column
    # for an adversarial group of annotators (38 in all).
    d2 = 38
    psi = np.zeros((n, d2))
    annotators = 1000
    who = rng.integers(0, annotators, n)
    levels = rng.integers(0, 6, (annotators, 7))
    channel = rng.choice(3, annotators, p=[0.7, 0.25, 0.05])
    gamma = np.zeros(d2)
    col = 0
    for v in range(7):
        for lvl in range(1, 6):
            psi[:, col] = (levels[who, v] == lvl)
            gamma[col] = rng.uniform(-0.2, 0.3)
            col += 1
    psi[:, 35] = channel[who] == 1
    psi[:, 36] = channel[who] == 2
    gamma[35], gamma[36] = -0.3, -1.6  # channel 2 is adversarial (sigma < 0)
    psi[:, 37] = (who % 10 == 0)  # a "veteran" flag
    gamma[37] = 0.2
    sigma = 1.0 + psi @ gamma
    u = sigma * (z @ theta)
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-u))).astype(np.float64)
    write_safetensors(args.out, {"z": z, "psi": psi, "psi0": np.ones(n), "y": y,
                                 "cluster": who.astype(np.int64)})
    print(f"wrote {args.out}: n = {n}, d1 = {d1}, d2 = {d2}, mean y {y.mean():.3f}, "
          f"adversarial share {np.mean(sigma < 0):.3f}")


if __name__ == "__main__":
    main()
