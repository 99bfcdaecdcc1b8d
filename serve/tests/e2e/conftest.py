"""Session fixtures of the gateway's end-to-end tests (issue 30): one llama-server generating
with SmolLM2, one serving MiniLM embeddings (mean pooling), and `hetreward serve` in front of
them, each started once per session on a free loopback port and killed at the end. The fault
tests start their own servers (they kill, stop or restart them).

Inputs (a missing one is an error, never a skip): the variables of target/llama-cpp/env.sh
(written by examples/llama-cpp/setup.sh; read from that file when not in the environment) and
HETREWARD_SERVE_BIN (default target/release/hetreward).

Figures measured here (load, faults) are written to target/serve-e2e/results.json.
"""

import atexit
import json
import time
import types

import openai
import pytest

import e2e_util as u

atexit.register(u.kill_all)

# The gateway's figures vs the binding's `select` on the features recomputed from the vectors the
# gateway itself received (recorded by a proxy, see `recorded`): the same inputs, so they agree
# to rounding; 1e-6 relative (the absolute floor scaled by the largest figure).
RTOL = 1e-6


@pytest.fixture(scope="session")
def cfg():
    return u.settings()


@pytest.fixture(scope="session")
def results():
    data = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    yield data
    data["finished"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    path = u.write_json("results.json", data)
    print(f"\nserve e2e figures written to {path}:\n{json.dumps(data, indent=2, sort_keys=True)}")


@pytest.fixture(scope="session", autouse=True)
def _kill_everything_at_the_end():
    yield
    u.kill_all()


@pytest.fixture(scope="session")
def generator(cfg):
    s = u.LlamaServer(cfg, "gen")
    yield s
    s.proc.kill()


@pytest.fixture(scope="session")
def embedder(cfg):
    s = u.LlamaServer(cfg, "emb")
    yield s
    s.proc.kill()


@pytest.fixture(scope="session")
def gateway(cfg, generator, embedder):
    g = u.Gateway(cfg, generator.url, embedder.url)
    yield g
    g.proc.kill()


@pytest.fixture(scope="session")
def recorded(cfg, generator, embedder):
    """A second gateway whose upstreams are recording proxies in front of the same real
    llama-servers: the tests see what it sends upstream and the vectors it gets back
    (llama-server's embeddings vary with the batch by ~1e-4, so an exact check of the figures
    needs the gateway's own vectors)."""
    gen_proxy, emb_proxy = u.RecordingProxy(generator.url), u.RecordingProxy(embedder.url)
    g = u.Gateway(cfg, gen_proxy.url, emb_proxy.url, name="gateway-recorded")
    yield types.SimpleNamespace(gateway=g, gen=gen_proxy, emb=emb_proxy,
                                client=openai.OpenAI(base_url=g.url + "/v1", api_key="none",
                                                     max_retries=0, timeout=120))
    g.proc.kill()
    gen_proxy.close()
    emb_proxy.close()


@pytest.fixture(scope="session")
def ref(cfg):
    return u.Reference(cfg)


@pytest.fixture(scope="session")
def model_name(gateway):
    r = gateway.get("/v1/models")
    assert r.status_code == 200, r.text
    return r.json()["data"][0]["id"]


@pytest.fixture(scope="session")
def client(gateway):
    return openai.OpenAI(base_url=gateway.url + "/v1", api_key="none", max_retries=0, timeout=120)


@pytest.fixture()
def still_serving(gateway, model_name):
    """After the test: the gateway still answers a good request and its health is 200."""
    yield
    assert gateway.proc.alive(), f"gateway died:\n{gateway.proc.tail()}"
    r = gateway.post("/v1/completions", {"model": model_name, "prompt": "Hello", "best_of": 2,
                                         "max_tokens": 4})
    assert r.status_code == 200, (r.status_code, r.text)
    assert gateway.get("/health").status_code == 200
