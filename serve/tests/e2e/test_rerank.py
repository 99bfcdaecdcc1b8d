"""Rerank in the style of llama.cpp's tools/server/tests/unit/test_rerank.py (its documents and
query, top_n, invalid inputs -> 400), on the Jina/Cohere v1 shape (/v1/rerank, /rerank) and the
Cohere v2 shape (/v2/rerank): documents scored by the reward model, ordered by the lower bound
unless asked otherwise, figures equal to the binding's on the embedding server's vectors."""

import pytest

import e2e_util as u
from conftest import RTOL

# llama.cpp's test documents and query.
TEST_DOCUMENTS = [
    "A machine is a physical system that uses power to apply forces and control movement to perform an action. The term is commonly applied to artificial devices, such as those employing engines or motors, but also to natural biological macromolecules, such as molecular machines.",
    "Learning is the process of acquiring new understanding, knowledge, behaviors, skills, values, attitudes, and preferences. The ability to learn is possessed by humans, non-human animals, and some machines; there is also evidence for some kind of learning in certain plants.",
    "Machine learning is a field of study in artificial intelligence concerned with the development and study of statistical algorithms that can learn from data and generalize to unseen data, and thus perform tasks without explicit instructions.",
    "Paris, capitale de la France, est une grande ville européenne et un centre mondial de l'art, de la mode, de la gastronomie et de la culture. Son paysage urbain du XIXe siècle est traversé par de larges boulevards et la Seine.",
]
QUERY = "Machine learning is"
FIGURES = ("reward", "se", "lower", "upper")


def check_results(body, n_docs, key="lower", documents=True):
    assert body["object"] == "list" and isinstance(body["id"], str), body
    assert isinstance(body["usage"]["total_tokens"], int), body["usage"]
    res = body["results"]
    assert sorted(r["index"] for r in res) == sorted(set(r["index"] for r in res))
    assert all(0 <= r["index"] < n_docs for r in res)
    for r in res:
        for k in (*FIGURES, "relevance_score"):
            assert isinstance(r[k], float | int), (k, r)
        assert r["relevance_score"] == r[key], r
        assert r["se"] >= 0 and r["lower"] <= r["reward"] <= r["upper"], r
        if documents:
            assert r["document"] == {"text": TEST_DOCUMENTS[r["index"]]}, r
        else:
            assert "document" not in r or r["document"] is None, r
    keys = [r[key] for r in res]
    assert keys == sorted(keys, reverse=True), keys
    h = body["hetreward"]
    assert h["order_by"] == key and isinstance(h["interval_method"], str), h
    return res


@pytest.mark.parametrize("path", ["/v1/rerank", "/rerank"])
def test_rerank_jina_shape_matches_binding(recorded, ref, path):
    before = len(recorded.emb.exchanges("/embeddings"))
    r = recorded.gateway.post(path, {"model": "reward", "query": QUERY, "documents": TEST_DOCUMENTS})
    assert r.status_code == 200, r.text
    res = check_results(r.json(), 4)
    assert len(res) == 4
    _, figs = ref.select(ref.recorded_embeddings(recorded.emb, before, QUERY, TEST_DOCUMENTS))
    by_index = sorted(res, key=lambda x: x["index"])
    u.assert_figures(by_index, figs, f"rerank {path}", RTOL)
    # Ordered by the lower bound, ties to the lower index.
    expect = sorted(range(4), key=lambda k: (-figs["lower"][k], k))
    assert [x["index"] for x in res] == expect


def test_rerank_cohere_v2_shape(gateway):
    docs = [{"text": d} for d in TEST_DOCUMENTS[:2]] + TEST_DOCUMENTS[2:]
    r = gateway.post("/v2/rerank", {"model": "reward", "query": QUERY, "documents": docs, "top_n": 3})
    assert r.status_code == 200, r.text
    res = check_results(r.json(), 4)
    assert len(res) == 3


def test_rerank_order_by_reward(gateway):
    r = gateway.post("/v1/rerank", {"query": QUERY, "documents": TEST_DOCUMENTS, "order_by": "reward"})
    assert r.status_code == 200, r.text
    check_results(r.json(), 4, key="reward")


def test_rerank_return_documents_false(gateway):
    r = gateway.post("/v1/rerank", {"query": QUERY, "documents": TEST_DOCUMENTS, "return_documents": False})
    assert r.status_code == 200, r.text
    check_results(r.json(), 4, documents=False)


@pytest.mark.parametrize("top_n,expected_len", [(None, 4), (2, 2), (4, 4), (99, 4)])
def test_rerank_top_n(gateway, top_n, expected_len):
    data = {"query": QUERY, "documents": TEST_DOCUMENTS}
    if top_n is not None:
        data["top_n"] = top_n
    r = gateway.post("/rerank", data)
    assert r.status_code == 200, r.text
    assert len(check_results(r.json(), 4)) == expected_len


@pytest.mark.parametrize("body", [
    {"query": QUERY, "documents": []},
    {"query": QUERY, "documents": None},
    {"query": QUERY, "documents": 123},
    {"query": QUERY, "documents": [1, 2, 3]},
    {"query": QUERY, "documents": ["ok", {"text": 5}]},
    {"documents": TEST_DOCUMENTS},
    {"query": QUERY, "documents": TEST_DOCUMENTS, "top_n": 0},
], ids=["empty", "null", "number", "non-string", "non-string-text", "missing-query", "top_n-0"])
@pytest.mark.parametrize("path", ["/v1/rerank", "/v2/rerank"])
def test_invalid_rerank_request_is_400(gateway, still_serving, body, path):
    r = gateway.post(path, body)
    assert r.status_code == 400, (r.status_code, r.text)
    assert u.error_of(r)["type"] == "invalid_request_error"
