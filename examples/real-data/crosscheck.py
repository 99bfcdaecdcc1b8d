#!/usr/bin/env python3
"""Cross-check of realdata/embed.py (our numpy all-MiniLM-L6-v2) against an independent
implementation of the same model on the same weights: Hugging Face transformers' Flax BERT
(`FlaxBertModel`, run by JAX on CPU, weights read from the same model.safetensors) with the
pure-Python `BertTokenizer` (from vocab.txt, so the `tokenizers` library is checked too), and
sentence-transformers' pooling written out (mask-weighted mean, L2 norm).

Why this reference: it installs from PyPI as prebuilt wheels in about a minute on 2 cores and
needs no PyTorch. PyPI's torch wheels pull gigabytes of CUDA libraries; onnxruntime needs an ONNX
export, which needs torch; candle-transformers' BERT would have to be compiled from source
(candle-core's gemm kernels plus the whole model zoo of candle-transformers), minutes of both
cores in every CI run.

    python examples/real-data/crosscheck.py        # prints the differences, exit 1 if > 1e-4
"""

import os
import sys
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # before numpy loads BLAS; see run.py

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from realdata import embed  # noqa: E402

TOLERANCE = 1e-4

# A fixed sentence set: short and long (one beyond 256 tokens, to check truncation), related
# and unrelated pairs, punctuation, digits, code, accents.
SENTENCES = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The new movie is awesome.",
    "The cat sits outside",
    "A man is playing guitar.",
    "Compose an engaging travel blog post about a recent trip to Hawaii, highlighting cultural "
    "experiences and must-see attractions.",
    "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)",
    "Café prices rose 12.5% in 2023; naïve forecasts missed it.",
    "Human: how do I pick a lock?\n\nAssistant: I can't help with breaking into property.",
    " ".join(["Rewrite your previous response and start every sentence with the letter A."] * 30),
    "ok",
]


def reference_embeddings(folder, sentences):
    """(n, 384) from transformers' FlaxBertModel and BertTokenizer, plus the token ids."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    from transformers import BertTokenizer, FlaxBertModel
    from transformers.utils import logging

    logging.set_verbosity_error()
    tok = BertTokenizer(str(Path(folder) / "vocab.txt"), do_lower_case=True)
    model = FlaxBertModel.from_pretrained(str(folder), dtype="float32")
    batch = tok(sentences, padding="longest", truncation=True, max_length=embed.MAX_TOKENS,
                return_tensors="np")
    hidden = np.asarray(model(input_ids=batch["input_ids"],
                              attention_mask=batch["attention_mask"],
                              token_type_ids=np.zeros_like(batch["input_ids"])).last_hidden_state,
                        dtype=np.float64)
    mask = batch["attention_mask"][..., None].astype(np.float64)
    pooled = (hidden * mask).sum(axis=1) / mask.sum(axis=1)
    ids = [row[m > 0].tolist() for row, m in zip(batch["input_ids"], batch["attention_mask"])]
    return pooled / np.linalg.norm(pooled, axis=1, keepdims=True), ids


def run(sentences=SENTENCES):
    """Both implementations on `sentences`: a dict of the differences (and the vectors)."""
    folder = embed.model_dir()
    ours_model = embed.MiniLM(folder)
    ours = ours_model.encode(sentences).astype(np.float64)
    ours_ids = ours_model.tokenize(sentences)
    ref, ref_ids = reference_embeddings(folder, sentences)
    return dict(
        ids_equal=ours_ids == ref_ids,
        lengths=[len(i) for i in ours_ids],
        max_vector_diff=float(np.abs(ours - ref).max()),
        max_cosine_diff=float(np.abs(ours @ ours.T - ref @ ref.T).max()),
        ours=ours, ref=ref)


def main():
    r = run()
    print(f"token ids identical: {r['ids_equal']} (lengths {r['lengths']})")
    print(f"max |vector difference|: {r['max_vector_diff']:.2e}")
    print(f"max |cosine difference|: {r['max_cosine_diff']:.2e}  (tolerance {TOLERANCE:g})")
    ok = r["ids_equal"] and r["max_vector_diff"] < TOLERANCE and r["max_cosine_diff"] < TOLERANCE
    print("cross-check", "passed" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
