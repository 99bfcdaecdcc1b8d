#!/usr/bin/env python3
"""Real candidates for `cargo bench --bench select_capi -- --real DIR` (BENCHMARKS.md, "pBoN
through the C API"): the MT-Bench reward model's features of the six models' answers to each
question, as a Best-of-N user of that model computes them.

Reads the MT-Bench judgments (data/real, through examples/real-data/realdata/data.py), the
reward model's projection companion (`mtbench_reward.projection.safetensors`: PCA mean and
components over all-MiniLM-L6-v2 embeddings) and the embedding cache the real-data pipeline
wrote (`~/.cache/hetreward/embeddings/<embedding model key>.npz`, rows keyed by the text's
sha256; the pipeline computes them: examples/real-data/run.sh). Writes to DIR:

* `phi.f32`: questions x 6 x d1 little-endian float32, each question's turn-1 answers (text
  "{question}\\n\\n{answer}") projected as the model's features, models in data.MODELS order;
* `meta.json`: d1, the number of questions and answers per question.

    python3 bench/mtbench_features.py --export DIR_WITH_MODEL --out DIR [--cache DIR]
"""
import argparse
import json
import os
import struct
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples" / "real-data"))
from realdata import data  # noqa: E402
from realdata.embed import default_cache_dir, text_hash  # noqa: E402


def read_safetensors(path):
    """Tensors and metadata of a safetensors file (F64 tensors only, as the companion has)."""
    raw = Path(path).read_bytes()
    (size,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + size])
    body = raw[8 + size:]
    meta = header.pop("__metadata__", {})
    out = {}
    for name, t in header.items():
        assert t["dtype"] == "F64", t
        a, b = t["data_offsets"]
        out[name] = np.frombuffer(body[a:b], dtype="<f8").reshape(t["shape"])
    return out, meta


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--export", required=True, help="folder with mtbench_reward.projection.safetensors")
    ap.add_argument("--out", required=True)
    ap.add_argument("--cache", default=None)
    ap.add_argument("--data", default=None)
    args = ap.parse_args()
    proj, meta = read_safetensors(Path(args.export) / "mtbench_reward.projection.safetensors")
    cache = Path(args.cache) if args.cache else default_cache_dir()
    with np.load(cache / f"{meta['embedding_model']}.npz") as f:
        table = dict(zip(f["hashes"].tolist(), f["vectors"]))
    mt = data.load_mtbench(data.data_dir(args.data))
    rows = []
    for q in mt.questions:
        texts = [mt.texts.get((q, m, 1)) for m in data.MODELS]
        if any(t is None or text_hash(t) not in table for t in texts):
            continue
        emb = np.stack([table[text_hash(t)] for t in texts]).astype(np.float64)
        rows.append(((emb - proj["mean"]) @ proj["components"].T).astype(np.float32))
    if not rows:
        raise SystemExit(f"no question has all six answers embedded in {cache}")
    phi = np.stack(rows)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    phi.astype("<f4").tofile(out / "phi.f32")
    (out / "meta.json").write_text(json.dumps(
        {"d1": int(phi.shape[2]), "questions": int(phi.shape[0]), "answers": int(phi.shape[1])}))
    print(f"{phi.shape[0]} questions x {phi.shape[1]} answers x d1 = {phi.shape[2]} -> {out}")


if __name__ == "__main__":
    main()
