"""FAULTS against real llama-server processes, each bounded in time; every test starts the
servers it harms (its own generator, embedder or gateway) so the session's stay healthy. The
time to a clear error (and to recovery) of each is recorded in target/serve-e2e/results.json.

* kill -9 of the generator mid-request: every in-flight client gets a 502 naming the generation
  upstream within seconds, new requests a fast 502, /health 503; restarted on the same port, the
  gateway recovers by itself.
* SIGSTOP of the embedder with --embedding-timeout 3: a 504 naming the embedding stage in ~3 s;
  SIGCONT: it recovers.
* model reload under load (POST /admin/reload and SIGHUP while 16 clients run): 0 failures.
* a client that disconnects: hetreward_requests_cancelled_total increments and the gateway
  closes its upstream connection within seconds (llama-server's /slots recorded: it does not
  always notice a closed connection, even without the gateway).
* SIGTERM with requests in flight: they complete with 200, new connections are refused, exit 0.
* more than --max-in-flight requests: 429 rate_limit_error, fast.
"""

import json
import os
import shutil
import signal
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import requests
import pytest

import e2e_util as u

LONG_PROMPT = "Write a long story about a lighthouse keeper and a storm."


def long_body(model_name, max_tokens=200, best_of=4):
    """A chat request that stays in flight for seconds: ignore_eos (llama-server's own sampling
    field, passed through by the gateway) makes each candidate generate max_tokens tokens."""
    return {"model": model_name, "messages": [{"role": "user", "content": LONG_PROMPT}],
            "best_of": best_of, "n": 1, "max_tokens": max_tokens, "ignore_eos": True}


def small_body(model_name):
    return {"model": model_name, "prompt": "Hello", "best_of": 2, "n": 1, "max_tokens": 4}


def post_timed(url, path, body, timeout=60):
    t0 = time.monotonic()
    try:
        r = requests.post(url + path, json=body, timeout=timeout)
        return r, t0, time.monotonic()
    except requests.RequestException as e:
        return e, t0, time.monotonic()


def wait_until(pred, timeout, step=0.05):
    """Seconds until pred() is truthy, or None after `timeout`."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if pred():
            return time.monotonic() - t0
        time.sleep(step)
    return None


def busy_slots(server):
    try:
        return sum(1 for s in server.slots() if s.get("is_processing"))
    except requests.RequestException:
        return -1


def in_flight(gateway):
    return u.metric(gateway.metrics(), "hetreward_requests_in_flight")


@pytest.fixture()
def faults(results):
    return results.setdefault("faults", {})


def test_generator_killed_mid_request_then_restarted(cfg, embedder, model_name, faults):
    gen = u.LlamaServer(cfg, "gen", name="llama-gen-kill")
    gw = u.Gateway(cfg, gen.url, embedder.url, name="gateway-kill")
    where = f"127.0.0.1:{gen.port}"
    rec = faults.setdefault("generator_kill_9", {})
    try:
        assert gw.post("/v1/completions", small_body(model_name)).status_code == 200
        with ThreadPoolExecutor(4) as pool:
            futs = [pool.submit(post_timed, gw.url, "/v1/chat/completions", long_body(model_name))
                    for _ in range(4)]
            assert wait_until(lambda: busy_slots(gen) >= 4, 20) is not None, "generation never started"
            t_kill = time.monotonic()
            gen.proc.p.send_signal(signal.SIGKILL)
            outs = [f.result(timeout=30) for f in futs]
        delays = []
        for r, _, t1 in outs:
            assert isinstance(r, requests.Response), f"in-flight client got {r!r}, not a 502"
            assert r.status_code == 502, (r.status_code, r.text)
            err = u.error_of(r)
            assert where in err["message"], err
            delays.append(t1 - t_kill)
        rec["in_flight_clients"] = len(outs)
        rec["in_flight_502_after_s"] = [round(d, 3) for d in delays]
        assert max(delays) < 5, delays
        # New requests: a fast 502; /health 503.
        r, t0, t1 = post_timed(gw.url, "/v1/completions", small_body(model_name))
        assert isinstance(r, requests.Response) and r.status_code == 502, r
        assert where in u.error_of(r)["message"]
        rec["new_request_502_s"] = round(t1 - t0, 3)
        assert t1 - t0 < 2, t1 - t0
        t0 = time.monotonic()
        h = gw.get("/health")
        rec["health_503_s"] = round(time.monotonic() - t0, 3)
        assert h.status_code == 503, (h.status_code, h.text)
        assert h.json()["status"] == "unavailable", h.text
        # Restart on the same port: the gateway recovers by itself.
        gen.start()
        t_up = time.monotonic()

        def served():
            r, _, _ = post_timed(gw.url, "/v1/completions", small_body(model_name), timeout=30)
            return isinstance(r, requests.Response) and r.status_code == 200

        rec["generator_restart_s"] = round(gen.ready_s, 3)
        took = wait_until(served, 30, step=0.2)
        assert took is not None, "gateway did not recover within 30 s of the generator's restart"
        rec["recovered_after_restart_s"] = round(time.monotonic() - t_up, 3)
        assert gw.get("/health").status_code == 200
    finally:
        gw.proc.kill()
        gen.proc.kill()


def test_embedder_stopped_gives_504_then_recovers(cfg, generator, model_name, faults):
    emb = u.LlamaServer(cfg, "emb", name="llama-emb-stop")
    gw = u.Gateway(cfg, generator.url, emb.url, extra=["--embedding-timeout", "3"], name="gateway-stop")
    rec = faults.setdefault("embedder_sigstop", {})
    try:
        assert gw.post("/v1/completions", small_body(model_name)).status_code == 200
        emb.proc.signal(signal.SIGSTOP)
        # Rerank has only the embedding stage: the 504 should come at the timeout.
        r, t0, t1 = post_timed(gw.url, "/v1/rerank", {"query": "q", "documents": ["a", "b"]})
        assert isinstance(r, requests.Response) and r.status_code == 504, r
        err = u.error_of(r)
        assert "embedding" in err["message"], err
        rec["rerank_504_s"] = round(t1 - t0, 3)
        assert 2.8 <= t1 - t0 <= 5.0, t1 - t0
        r, t0, t1 = post_timed(gw.url, "/v1/completions", small_body(model_name))
        assert isinstance(r, requests.Response) and r.status_code == 504, r
        assert "embedding" in u.error_of(r)["message"]
        rec["completion_504_s"] = round(t1 - t0, 3)
        assert 2.8 <= t1 - t0 <= 8.0, t1 - t0
        h = gw.get("/health")
        rec["health_while_stopped"] = h.status_code
        assert h.status_code == 503, h.text
        emb.proc.signal(signal.SIGCONT)
        t_cont = time.monotonic()

        def served():
            r, _, _ = post_timed(gw.url, "/v1/completions", small_body(model_name), timeout=30)
            return isinstance(r, requests.Response) and r.status_code == 200

        assert wait_until(served, 20, step=0.2) is not None, "no recovery within 20 s of SIGCONT"
        rec["recovered_after_sigcont_s"] = round(time.monotonic() - t_cont, 3)
        assert gw.get("/health").status_code == 200
    finally:
        gw.proc.kill()
        emb.proc.kill()


def test_reload_under_load_no_failure(cfg, generator, embedder, model_name, faults, tmp_path):
    src = cfg["HETREWARD_LLAMA_MODEL"]
    model = tmp_path / "model.hrm"
    proj = tmp_path / "model.projection.safetensors"
    shutil.copy(src, model)
    shutil.copy(src.removesuffix(".hrm") + ".projection.safetensors", proj)
    gw = u.Gateway(cfg, generator.url, embedder.url, model=str(model), name="gateway-reload")
    rec = faults.setdefault("reload_under_load", {})
    reloads = []
    try:
        ok0 = u.metric(gw.metrics(), "hetreward_model_reloads_total", result="ok")

        def during(records):
            for k, how in enumerate(["post", "sighup", "replace+post", "sighup"]):
                time.sleep(2.0)
                if how.startswith("replace"):
                    # A new file at the same paths, swapped in atomically.
                    for a, b in ((src, model), (src.removesuffix(".hrm") + ".projection.safetensors", proj)):
                        tmp = b.with_suffix(".tmp")
                        shutil.copy(a, tmp)
                        os.replace(tmp, b)
                t0 = time.monotonic()
                if how.endswith("post"):
                    r = gw.post("/admin/reload", {}, timeout=30)
                    reloads.append({"how": how, "status": r.status_code, "s": round(time.monotonic() - t0, 3),
                                    "done_after_requests": len(records)})
                else:
                    gw.proc.signal(signal.SIGHUP)
                    reloads.append({"how": how, "status": "signal", "done_after_requests": len(records)})

        records, wall = u.run_load(gw.url, model_name, 16, 96, 4, lambda i, rng: rng.randint(4, 8), 90,
                                   during=during)
        s = u.summarize(records, wall)
        took = wait_until(lambda: u.metric(gw.metrics(), "hetreward_model_reloads_total", result="ok") - ok0 >= 4, 10)
        rec.update(requests=s["requests"], failed=s["failed"], failures=s["failures"], reloads=reloads,
                   reloads_ok=u.metric(gw.metrics(), "hetreward_model_reloads_total", result="ok") - ok0,
                   latency_ms=s["latency_ms"])
        assert all(x["status"] in (200, "signal") for x in reloads), reloads
        assert s["requests"] == 96 and s["failed"] == 0, s["failures"]
        assert took is not None, rec
        assert all(x["done_after_requests"] < 96 for x in reloads), f"reloads not under load: {reloads}"
    finally:
        gw.proc.kill()


def tcp_states(port):
    """Counts of the TCP states of the sockets whose local port is `port` (the server side of
    its connections): "01" ESTABLISHED, "08" CLOSE_WAIT (the peer closed), "0A" LISTEN."""
    out = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                parts = line.split()
                if int(parts[1].rsplit(":", 1)[1], 16) == port:
                    out[parts[3]] = out.get(parts[3], 0) + 1
    return out


def test_client_disconnect_cancels_upstream(cfg, embedder, model_name, faults):
    """The gateway's part: the request counted cancelled and its upstream connection closed
    (the generator's side of it leaves ESTABLISHED). Whether llama-server then frees its slots
    is its own polling: measured on this build, directly without the gateway too, it often
    keeps generating to max_tokens after its client closed the connection, so that time is
    recorded, not asserted."""
    gen = u.LlamaServer(cfg, "gen", name="llama-gen-cancel")
    gw = u.Gateway(cfg, gen.url, embedder.url, name="gateway-cancel")
    rec = faults.setdefault("client_disconnect", {})
    try:
        c0 = u.metric(gw.metrics(), "hetreward_requests_cancelled_total")
        body = json.dumps(long_body(model_name, max_tokens=200)).encode()
        sock = socket.create_connection(("127.0.0.1", gw.port), timeout=5)
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        assert wait_until(lambda: busy_slots(gen) >= 4, 10) is not None, "generation never started"
        established = tcp_states(gen.port).get("01", 0)
        assert established >= 1, tcp_states(gen.port)
        sock.shutdown(socket.SHUT_RDWR)
        sock.close()
        t_disc = time.monotonic()
        t_cancel = wait_until(lambda: u.metric(gw.metrics(), "hetreward_requests_cancelled_total") - c0 >= 1, 5)
        t_closed = wait_until(lambda: tcp_states(gen.port).get("01", 0) < established, 5, step=0.01)
        rec.update(cancel_counted_after_s=t_cancel and round(t_cancel, 3),
                   upstream_connection_closed_after_s=t_closed and round(time.monotonic() - t_disc, 3),
                   generator_tcp_states_after=tcp_states(gen.port))
        assert t_cancel is not None, "hetreward_requests_cancelled_total did not increment within 5 s"
        assert t_closed is not None, f"the gateway kept its upstream connection open: {tcp_states(gen.port)}"
        t_idle = wait_until(lambda: busy_slots(gen) == 0, 5)
        rec["llama_server_slots_idle_after_s"] = t_idle and round(time.monotonic() - t_disc, 3)
        assert gw.post("/v1/completions", small_body(model_name)).status_code == 200
    finally:
        gw.proc.kill()
        gen.proc.kill()


DRAIN_BOUND_S = 30


def test_sigterm_drains_in_flight_then_exits_0(cfg, generator, embedder, model_name, faults):
    gw = u.Gateway(cfg, generator.url, embedder.url, name="gateway-sigterm")
    rec = faults.setdefault("sigterm_drain", {})
    try:
        with ThreadPoolExecutor(4) as pool:
            futs = [pool.submit(post_timed, gw.url, "/v1/chat/completions",
                                long_body(model_name, max_tokens=48, best_of=2)) for _ in range(4)]
            assert wait_until(lambda: in_flight(gw) >= 4, 10) is not None, "requests never in flight"
            t_term = time.monotonic()
            gw.proc.signal(signal.SIGTERM)
            time.sleep(0.3)
            refused = False
            try:
                socket.create_connection(("127.0.0.1", gw.port), timeout=1).close()
            except ConnectionRefusedError:
                refused = True
            outs = [f.result(timeout=DRAIN_BOUND_S) for f in futs]
        for r, _, _ in outs:
            assert isinstance(r, requests.Response) and r.status_code == 200, r
        code = gw.proc.p.wait(DRAIN_BOUND_S)
        rec.update(in_flight=len(outs), completed_200=len(outs),
                   last_answer_after_term_s=round(max(t1 for _, _, t1 in outs) - t_term, 3),
                   exited_after_term_s=round(time.monotonic() - t_term, 3), exit_code=code,
                   new_connection_refused=refused)
        assert refused, "a new connection was accepted after SIGTERM"
        assert code == 0, gw.proc.tail()
    finally:
        gw.proc.kill()


def test_over_max_in_flight_is_429(cfg, generator, embedder, model_name, faults):
    gw = u.Gateway(cfg, generator.url, embedder.url, extra=["--max-in-flight", "2"], name="gateway-429")
    rec = faults.setdefault("max_in_flight_429", {})
    try:
        with ThreadPoolExecutor(2) as pool:
            futs = [pool.submit(post_timed, gw.url, "/v1/chat/completions",
                                long_body(model_name, max_tokens=48, best_of=2)) for _ in range(2)]
            assert wait_until(lambda: in_flight(gw) >= 2, 10) is not None, "requests never in flight"
            times = []
            for _ in range(3):
                r, t0, t1 = post_timed(gw.url, "/v1/completions", small_body(model_name))
                assert isinstance(r, requests.Response) and r.status_code == 429, r
                err = u.error_of(r)
                assert err["type"] == "rate_limit_error" and "limit 2" in err["message"], err
                times.append(t1 - t0)
            outs = [f.result(timeout=60) for f in futs]
        assert all(isinstance(r, requests.Response) and r.status_code == 200 for r, _, _ in outs), outs
        rec["rejected_429_s"] = [round(t, 4) for t in times]
        assert max(times) < 1.0, times
        assert gw.post("/v1/completions", small_body(model_name)).status_code == 200
    finally:
        gw.proc.kill()
