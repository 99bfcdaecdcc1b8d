"""Completions and chat through the official openai client: best_of candidates from the real
llama-server, the n best by lower bound returned with reward/se/lower/upper, the audited
candidates listed, and the figures equal to the Python binding's `Model.select` on features
recomputed here from the embedding server's vectors of the same texts."""

import pytest

import e2e_util as u
from conftest import RTOL

PROMPT = "Give two tips for writing a clear bug report."
FIGURES = ("reward", "se", "lower", "upper")


def ask(client, model_name, route, n, best_of=4, max_tokens=24, **extra):
    if route == "completions":
        r = client.completions.create(model=model_name, prompt=PROMPT, best_of=best_of, n=n,
                                      max_tokens=max_tokens, extra_body=extra or None)
        d = r.model_dump()
        return d, [c["text"] for c in d["choices"]]
    r = client.chat.completions.create(model=model_name, messages=[{"role": "user", "content": PROMPT}],
                                       n=n, max_tokens=max_tokens, extra_body={"best_of": best_of, **extra})
    d = r.model_dump()
    return d, [c["message"]["content"] for c in d["choices"]]


def check_response(d, texts, n, best_of, alpha=0.05, policy="pbon"):
    h = d.get("hetreward")
    assert isinstance(h, dict), f"no hetreward extension object: {list(d)}"
    assert h["policy"] == policy and h["alpha"] == pytest.approx(alpha), h
    assert isinstance(h["interval_method"], str) and h["interval_method"], h
    cands = h["candidates"]
    assert [c["index"] for c in cands] == list(range(best_of)), cands
    for c in cands:
        for k in (*FIGURES, "score"):
            assert isinstance(c[k], float | int), (k, c)
        assert c["se"] >= 0 and c["lower"] <= c["reward"] <= c["upper"], c
    key = "lower" if policy == "pbon" else "reward"
    # The n best by the policy's key, best first, ties to the lower index.
    expect = sorted(range(best_of), key=lambda k: (-cands[k][key], k))[:n]
    assert h["chosen"] == expect, (h["chosen"], [c[key] for c in cands])
    assert len(d["choices"]) == n and [c["index"] for c in d["choices"]] == list(range(n))
    for i, ch in enumerate(d["choices"]):
        cand = cands[h["chosen"][i]]
        assert texts[i] == cand["text"], (texts[i], cand["text"])
        for k in FIGURES:
            assert ch[k] == cand[k], (k, ch, cand)
    t = h["timings"]
    for k in ("generation_ms", "embedding_ms", "selection_us", "total_ms"):
        assert t[k] >= 0, t
    assert t["total_ms"] >= t["generation_ms"] + t["embedding_ms"] - 1, t
    return h


@pytest.mark.parametrize("route", ["completions", "chat"])
@pytest.mark.parametrize("n", [1, 2])
def test_best_of_picks_the_lower_bound_argmax_and_matches_binding(recorded, model_name, ref, results, route, n):
    before = len(recorded.emb.exchanges("/embeddings"))
    d, texts = ask(recorded.client, model_name, route, n)
    h = check_response(d, texts, n, 4)
    cands = h["candidates"]
    emb = ref.recorded_embeddings(recorded.emb, before, PROMPT, [c["text"] for c in cands])
    idx, figs = ref.select(emb)
    assert idx == h["chosen"][0], (idx, h["chosen"])
    results.setdefault("binding_agreement_max_rel_diff", {})[f"{route}_n{n}"] = u.max_rel_diff(cands, figs)
    u.assert_figures(cands, figs, f"{route} n={n}", RTOL)
    for i, k in enumerate(h["chosen"]):  # the chosen, in order, are the binding's ranking
        assert figs["lower"][k] == max(figs["lower"][j] for j in range(4) if j not in h["chosen"][:i])


def test_bon_policy_and_alpha_extension_fields(recorded, model_name, ref):
    before = len(recorded.emb.exchanges("/embeddings"))
    d, texts = ask(recorded.client, model_name, "chat", 1, policy="bon", alpha=0.2)
    h = check_response(d, texts, 1, 4, alpha=0.2, policy="bon")
    emb = ref.recorded_embeddings(recorded.emb, before, PROMPT, [c["text"] for c in h["candidates"]])
    idx, figs = ref.select(emb, alpha=0.2, policy="bon")
    assert idx == h["chosen"][0]
    u.assert_figures(h["candidates"], figs, "bon alpha=0.2", RTOL)


@pytest.mark.parametrize("route", ["completions", "chat"])
def test_temperature_zero_is_accepted(client, model_name, route):
    d, texts = ask(client, model_name, route, 1, max_tokens=12, temperature=0)
    check_response(d, texts, 1, 4)


def test_upstream_request_one_call_with_n_no_added_seed(recorded, model_name):
    proxy, client = recorded.gen, recorded.client
    # No seed from the client: none is added, n = best_of in ONE request, the extension fields
    # removed, temperature 0 passed through.
    before = len(proxy.posts("/completions"))
    d = client.completions.create(model=model_name, prompt=PROMPT, best_of=4, n=2, max_tokens=8,
                                  temperature=0, extra_body={"alpha": 0.1, "policy": "pbon"}).model_dump()
    assert len(d["choices"]) == 2
    sent = proxy.posts("/completions")[before:]
    assert len(sent) == 1, sent
    body = sent[0]
    assert "seed" not in body, body
    assert body["n"] == 4 and body["temperature"] == 0, body
    for k in ("best_of", "alpha", "policy"):
        assert k not in body, body
    # Chat: the same rule.
    before = len(proxy.posts("/chat/completions"))
    client.chat.completions.create(model=model_name, messages=[{"role": "user", "content": PROMPT}], n=1,
                                   max_tokens=8, extra_body={"best_of": 3})
    (body,) = proxy.posts("/chat/completions")[before:]
    assert "seed" not in body and body["n"] == 3 and "best_of" not in body, body
    # A client's seed is passed on unchanged.
    before = len(proxy.posts("/completions"))
    client.completions.create(model=model_name, prompt=PROMPT, best_of=2, n=1, max_tokens=4, seed=1234)
    (body,) = proxy.posts("/completions")[before:]
    assert body["seed"] == 1234 and body["n"] == 2, body
