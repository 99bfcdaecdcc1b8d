"""LOAD: 16 concurrent clients (threads, one keep-alive connection each), 200 requests,
best_of=4, max_tokens 4-8, chat and completions alternating, against the real llama-server
(~5 requests/s on this 2-core machine): 0 failed requests. Client latency p50/p99 and the
gateway's own share (total_ms - generation_ms - embedding_ms of the timings extension) are
printed and written to target/serve-e2e/load.json and results.json. Bounded: 150 s."""

import json

import e2e_util as u

CLIENTS, TOTAL, BEST_OF, DEADLINE_S = 16, 200, 4, 150


def test_load_16_clients_200_requests_no_failure(gateway, model_name, results):
    m0 = gateway.metrics()
    records, wall = u.run_load(gateway.url, model_name, CLIENTS, TOTAL, BEST_OF,
                               lambda i, rng: rng.randint(4, 8), DEADLINE_S)
    s = u.summarize(records, wall)
    s.update(clients=CLIENTS, best_of=BEST_OF, max_tokens="4-8")
    m1 = gateway.metrics()
    routes = lambda r: r in ("/v1/completions", "/v1/chat/completions")  # noqa: E731
    s["gateway_counted_200"] = (u.metric(m1, "hetreward_requests_total", route=routes, status="200")
                                - u.metric(m0, "hetreward_requests_total", route=routes, status="200"))
    results["load"] = s
    u.write_json("load.json", s)
    print("\nLOAD " + json.dumps(s, indent=2))
    assert s["requests"] == TOTAL, f"only {s['requests']} of {TOTAL} requests within {DEADLINE_S} s"
    assert s["failed"] == 0, s["failures"]
    assert s["gateway_counted_200"] == TOTAL, s
