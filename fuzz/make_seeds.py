#!/usr/bin/env python3
"""Writes the seed corpus of the fuzz targets into fuzz/seeds/<target>/ (deterministic; only the
standard library). Each seed is a small valid input, so libFuzzer starts from files that reach
deep into the readers instead of being rejected at the first byte.

  python3 fuzz/make_seeds.py

The csv and safetensors targets read the first byte as a selector of the model's d1 (1 + b % 4)
and the rest as the file; the model_file target reads the bytes as they are. The model file is
written from docs/model-format.md (independently of the Rust writer)."""
import json
import os
import struct
import zlib

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "seeds")


def put(target, name, data):
    folder = os.path.join(ROOT, target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def model_file(d1, d2, covariance=0, solver=0, converged=1, version=1, draws=0):
    """A valid model: theta, gamma, a diagonal Cholesky factor, a diagonal gamma covariance;
    version 2 adds the interval section: Wald (draws = 0) or a bootstrap with `draws` refits."""
    p = struct.pack("<QII", 400, d1, d2)
    p += bytes([covariance, solver, 0 if converged else 1, converged])
    p += struct.pack("<QQQ", 7, 21, 3)
    p += struct.pack("<dddd", 3.2e-11, 0.5934, 0.0125, 1e-8)
    p += struct.pack(f"<{d1}d", *[0.5 * (j + 1) * (-1) ** j for j in range(d1)])
    p += struct.pack(f"<{d2}d", *[0.25 - 0.1 * k for k in range(d2)])
    for i in range(d1):
        for j in range(i + 1):
            p += struct.pack("<d", 0.05 if i == j else 0.01)
    for i in range(d2):
        for j in range(d2):
            p += struct.pack("<d", 0.02 if i == j else 0.001)
    if version >= 2:
        method = 1 if draws else 0
        p += bytes([method, method]) + struct.pack("<QQQddd", draws, 5 if draws else 0, 0, 1.0, 1.0, 1.0)
        if draws:
            p += struct.pack(f"<{d2}d", *([0.0] * d2))
            p += struct.pack(f"<{draws * (d1 + d2)}f", *[0.01 * (b + 1) for b in range(draws * (d1 + d2))])
    header = b"HETRWRD\0" + struct.pack("<IQ", version, len(p))
    return header + p + struct.pack("<I", zlib.crc32(p) & 0xFFFFFFFF)


def safetensors(tensors):
    """tensors: list of (name, dtype, shape, values); dtypes F64, F32, I64, U8."""
    fmt = {"F64": "d", "F32": "f", "I64": "q", "U8": "B"}
    header, data = {}, b""
    for name, dtype, shape, values in tensors:
        raw = struct.pack(f"<{len(values)}{fmt[dtype]}", *values)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def main():
    # model_file
    put("model_file", "d1_3_d2_2.hrm", model_file(3, 2))
    put("model_file", "d1_1_d2_0_agd.hrm", model_file(1, 0, covariance=2, solver=1, converged=0))
    put("model_file", "d1_4_d2_1_cluster.hrm", model_file(4, 1, covariance=3))
    put("model_file", "v2_d1_3_d2_2_wald.hrm", model_file(3, 2, version=2))
    put("model_file", "v2_d1_2_d2_1_bootstrap.hrm", model_file(2, 1, version=2, draws=3))

    # csv: selector byte, then the text
    n = 8
    rows = [(i % 2, 1.0 + 0.1 * i, 0.5 - 0.2 * i, 0.25 * i, i % 3 == 0) for i in range(n)]
    train = "cluster,y,psi0,z1,z2,psi1\n" + "".join(
        f"{i % 3},{y},{p0},{a},{b},{int(c)}\n" for i, (y, p0, a, b, c) in enumerate(rows)
    )
    put("csv", "training.csv", b"\x01" + train.encode())
    put("csv", "training_d2_0.csv", b"\x00" + b"y,psi0,z1\n1,1,0.5\n0,1,-0.5\n1,1,2\n0,1,1e-3\n")
    put("csv", "phi.csv", b"\x02" + b"phi1,phi2,phi3\n0.5,0.25,1\n-1,2,0.5\n")
    put("csv", "pairs.csv", b"\x01" + b"phi0_1,phi0_2,phi1_1,phi1_2\n0.5,0.25,1,1\n-1,2,0.5,3\n")
    put("csv", "candidates.csv",
        b"\x00" + b"group,penalty,phi1\n0,0.1,0.5\n0,0.2,1\n1,0,-2\n1,0.5,\"3\"\n")

    # safetensors: selector byte, then the file
    z = [0.5, -1.0, 0.25, 1.0, -0.5, 2.0, 1.5, 0.0, -2.0, 0.75]
    put("safetensors", "training.safetensors", b"\x01" + safetensors([
        ("z", "F64", [5, 2], z),
        ("psi0", "F64", [5], [1.0] * 5),
        ("psi", "F64", [5, 1], [0.0, 1.0, 0.0, 1.0, 0.5]),
        ("y", "U8", [5], [1, 0, 1, 1, 0]),
        ("cluster", "I64", [5], [0, 1, 2, 0, 1]),
    ]))
    put("safetensors", "training_pairs_f32.safetensors", b"\x01" + safetensors([
        ("phi0", "F32", [5, 2], z),
        ("phi1", "F32", [5, 2], z[::-1]),
        ("psi0", "F32", [5], [1.0] * 5),
        ("y", "F32", [5], [1, 0, 1, 1, 0]),
    ]))
    put("safetensors", "phi.safetensors", b"\x01" + safetensors([("phi", "F32", [5, 2], z)]))
    put("safetensors", "pairs.safetensors", b"\x00" + safetensors([
        ("phi0", "F64", [3, 1], z[:3]),
        ("phi1", "F64", [3, 1], z[3:6]),
    ]))
    put("safetensors", "candidates.safetensors", b"\x01" + safetensors([
        ("phi", "F64", [5, 2], z),
        ("group", "I64", [5], [0, 0, 1, 1, 1]),
        ("penalty", "F64", [5], [0.0, 0.1, 0.2, 0.0, 1.0]),
    ]))


if __name__ == "__main__":
    main()
