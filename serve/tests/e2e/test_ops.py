"""/health, /v1/models and /metrics (Prometheus text, parsed): requests counted by route and
status, latency per stage, upstream errors, requests in flight."""

import requests

import e2e_util as u


def test_health(gateway, cfg):
    r = gateway.get("/health")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["status"] == "ok", body
    assert body["model"] == cfg["HETREWARD_LLAMA_MODEL"], body
    assert isinstance(body["upstreams"], dict), body


def test_models_passes_the_upstream_through(gateway, generator):
    mine = gateway.get("/v1/models")
    theirs = requests.get(generator.url + "/v1/models", timeout=10)
    assert mine.status_code == 200, mine.text
    assert [m["id"] for m in mine.json()["data"]] == [m["id"] for m in theirs.json()["data"]]


def counts(gateway, route_part):
    s = gateway.metrics()
    match = (lambda r: r is not None and route_part in r)
    return (u.metric(s, "hetreward_requests_total", route=match, status="200"),
            u.metric(s, "hetreward_requests_total", route=match, status="400"), s)


def test_metrics_count_requests_by_route_and_status(gateway, model_name):
    ok0, bad0, _ = counts(gateway, "/v1/completions")
    rr0, _, _ = counts(gateway, "rerank")
    r = gateway.post("/v1/completions", {"model": model_name, "prompt": "Hi", "best_of": 2, "max_tokens": 4})
    assert r.status_code == 200, r.text
    r = gateway.post("/v1/completions", {"model": model_name, "prompt": "Hi", "best_of": 2, "n": 3})
    assert r.status_code == 400, r.text
    r = gateway.post("/v1/rerank", {"query": "q", "documents": ["a", "b"]})
    assert r.status_code == 200, r.text
    ok1, bad1, s = counts(gateway, "/v1/completions")
    rr1, _, _ = counts(gateway, "rerank")
    assert (ok1 - ok0, bad1 - bad0, rr1 - rr0) == (1, 1, 1), (ok0, ok1, bad0, bad1, rr0, rr1)
    names = u.metric_names(s)
    for name in ("hetreward_request_duration_seconds_bucket", "hetreward_request_duration_seconds_count",
                 "hetreward_stage_duration_seconds_bucket", "hetreward_requests_in_flight",
                 "hetreward_requests_cancelled_total"):
        assert name in names, (name, sorted(names))
    for stage in ("generation", "embedding", "selection"):
        assert u.metric(s, "hetreward_stage_duration_seconds_count", stage=stage) >= 1, stage
    assert u.metric(s, "hetreward_requests_in_flight") <= 1  # at most this /metrics request
