"""Helpers of the gateway's end-to-end tests: real llama-server processes (generation and
embeddings), the `hetreward serve` gateway in front of them, a recording loopback proxy, the
Python binding's reference selection, and small HTTP/Prometheus helpers.

Every process started here is registered and killed at the end of the session (conftest.py);
everything listens on 127.0.0.1 only. Logs go to target/serve-e2e/logs/.
"""

import http.client
import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import requests
import numpy as np

ROOT = Path(__file__).resolve().parents[3]
OUT = ROOT / "target" / "serve-e2e"
LOGS = OUT / "logs"

# What examples/llama-cpp/setup.sh exports in target/llama-cpp/env.sh.
REQUIRED = ("HETREWARD_LLAMA_SERVER", "HETREWARD_LLAMA_GENERATOR", "HETREWARD_LLAMA_EMBEDDER",
            "HETREWARD_LLAMA_MODEL", "HETREWARD_LIB")


def _env_sh():
    path = ROOT / "target" / "llama-cpp" / "env.sh"
    vals = {}
    if path.exists():
        for line in path.read_text().splitlines():
            m = re.fullmatch(r'export (\w+)="(.*)"', line.strip())
            if m:
                vals[m.group(1)] = m.group(2)
    return vals


def settings():
    """The paths the tests need: from the environment, else target/llama-cpp/env.sh. A missing
    one is an error (never a skip)."""
    file_vals = _env_sh()
    out, missing = {}, []
    for name in REQUIRED:
        v = os.environ.get(name) or file_vals.get(name)
        if not v or not Path(v).exists():
            missing.append(f"{name}={v!r}")
        out[name] = v
    gw = os.environ.get("HETREWARD_SERVE_BIN", str(ROOT / "target" / "release" / "hetreward"))
    if not Path(gw).exists():
        missing.append(f"HETREWARD_SERVE_BIN={gw!r} (cargo build --release -p hetreward-cli)")
    out["HETREWARD_SERVE_BIN"] = gw
    if missing:
        raise RuntimeError("missing inputs of the e2e tests: " + ", ".join(missing) +
                           " -- run `bash examples/llama-cpp/setup.sh` (it writes target/llama-cpp/env.sh)")
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_ALL = []
_LOCK = threading.Lock()


class Proc:
    """A child process whose stderr (and stdout unless captured) goes to a log file."""

    def __init__(self, name, argv, capture_stdout=False, env=None):
        LOGS.mkdir(parents=True, exist_ok=True)
        self.name, self.argv = name, argv
        self.log_path = LOGS / f"{name}.log"
        self.log = open(self.log_path, "ab", buffering=0)
        self.log.write(f"\n=== {time.strftime('%H:%M:%S')} {' '.join(map(str, argv))}\n".encode())
        self.p = subprocess.Popen([str(a) for a in argv], stdin=subprocess.DEVNULL,
                                  stdout=subprocess.PIPE if capture_stdout else self.log,
                                  stderr=self.log, env=env)
        with _LOCK:
            _ALL.append(self)

    @property
    def pid(self):
        return self.p.pid

    def alive(self):
        return self.p.poll() is None

    def signal(self, sig):
        if self.alive():
            os.kill(self.p.pid, sig)

    def stop(self, timeout=10):
        """SIGTERM, then SIGKILL after `timeout`; returns the exit code."""
        if self.alive():
            self.p.terminate()
            try:
                self.p.wait(timeout)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait(10)
        return self.p.returncode

    def kill(self):
        if self.alive():
            try:
                os.kill(self.p.pid, signal.SIGCONT)  # a stopped process must see the KILL now
            except ProcessLookupError:
                pass
            self.p.kill()
        self.p.wait(10)

    def tail(self, n=30):
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(lines[-n:])


def kill_all():
    with _LOCK:
        procs = list(_ALL)
    for p in procs:
        try:
            p.kill()
        except Exception as e:  # noqa: BLE001 - keep killing the others
            print(f"could not kill {p.name} ({p.pid}): {e}", file=sys.stderr)


def wait_ok(url, proc, timeout=60.0, what=None):
    """Polls GET url until 200; fails with the process's log tail if it exits or time runs out."""
    t0 = time.monotonic()
    last = None
    while time.monotonic() - t0 < timeout:
        if proc is not None and not proc.alive():
            raise RuntimeError(f"{what or proc.name} exited ({proc.p.returncode}):\n{proc.tail()}")
        try:
            r = requests.get(url, timeout=2)
            if r.status_code == 200:
                return time.monotonic() - t0
            last = f"{r.status_code} {r.text[:200]}"
        except requests.RequestException as e:
            last = repr(e)
        time.sleep(0.1)
    raise RuntimeError(f"{url} not ready after {timeout} s (last: {last})"
                       + (f"\n{proc.tail()}" if proc else ""))


class LlamaServer:
    """llama.cpp's llama-server on a loopback port: `kind` "gen" (SmolLM2, --parallel 8,
    --no-repack: this CPU's repacked buffers crash the generator) or "emb" (MiniLM, mean pooling)."""

    def __init__(self, cfg, kind, port=None, parallel=8, name=None):
        self.cfg, self.kind, self.parallel = cfg, kind, parallel
        self.port = port or free_port()
        self.name = name or ("llama-gen" if kind == "gen" else "llama-emb")
        self.proc = None
        self.start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def argv(self):
        # One compute thread each (HETREWARD_E2E_LLAMA_THREADS to change): ggml's worker threads
        # spin at their barriers, and on 2 cores shared by two servers, the gateway and the test
        # clients (or beside a compile) 2 threads made a best_of=4 request 5-8x slower than 1
        # (measured: 7-15 s vs 1.5-2 s for 24 tokens).
        t = os.environ.get("HETREWARD_E2E_LLAMA_THREADS", "1")
        base = [self.cfg["HETREWARD_LLAMA_SERVER"], "--host", "127.0.0.1", "--port", str(self.port),
                "--no-webui", "-t", t, "-tb", t]
        if self.kind == "gen":
            return base + ["-m", self.cfg["HETREWARD_LLAMA_GENERATOR"], "--parallel", str(self.parallel),
                           "--no-repack", "-c", str(512 * self.parallel)]
        return base + ["-m", self.cfg["HETREWARD_LLAMA_EMBEDDER"], "--embeddings", "--pooling", "mean"]

    def start(self, timeout=60.0):
        self.proc = Proc(self.name, self.argv())
        self.ready_s = wait_ok(self.url + "/health", self.proc, timeout)
        return self

    def slots(self):
        r = requests.get(self.url + "/slots", timeout=5)
        r.raise_for_status()
        return r.json()


class Gateway:
    """`hetreward serve` on 127.0.0.1:0; the port is read from its one stdout line."""

    LINE = re.compile(r"hetreward serve: listening on (http://127\.0\.0\.1:(\d+))")

    def __init__(self, cfg, upstream, embeddings, extra=(), model=None, name="gateway", timeout=60.0):
        self.model = model or cfg["HETREWARD_LLAMA_MODEL"]
        argv = [cfg["HETREWARD_SERVE_BIN"], "serve", "--model", self.model, "--upstream", upstream,
                "--embeddings", embeddings, "--listen", "127.0.0.1:0", *map(str, extra)]
        self.proc = Proc(name, argv, capture_stdout=True)
        lines = queue.Queue()

        def pump():
            out = self.proc.p.stdout
            first = True
            for raw in iter(out.readline, b""):
                if first:
                    lines.put(raw.decode(errors="replace"))
                    first = False
                self.proc.log.write(b"[stdout] " + raw)
            if first:
                lines.put(None)

        threading.Thread(target=pump, daemon=True).start()
        t0 = time.monotonic()
        try:
            line = lines.get(timeout=timeout)
        except queue.Empty:
            self.proc.kill()
            raise RuntimeError(f"gateway printed nothing in {timeout} s:\n{self.proc.tail()}")
        if line is None:
            self.proc.p.wait(10)
            raise RuntimeError(f"gateway exited ({self.proc.p.returncode}) before listening:\n{self.proc.tail()}")
        m = self.LINE.fullmatch(line.strip())
        assert m, f"unexpected first stdout line {line!r}"
        self.url, self.port = m.group(1), int(m.group(2))
        self.start_s = time.monotonic() - t0

    def get(self, path, **kw):
        return requests.get(self.url + path, timeout=kw.pop("timeout", 10), **kw)

    def post(self, path, body=None, content=None, timeout=120, headers=None):
        if content is not None:
            return requests.post(self.url + path, data=content, timeout=timeout,
                              headers=headers or {"content-type": "application/json"})
        return requests.post(self.url + path, json=body, timeout=timeout, headers=headers)

    def metrics(self):
        r = self.get("/metrics")
        assert r.status_code == 200, (r.status_code, r.text[:300])
        return parse_prometheus(r.text)


# --- Prometheus text format --------------------------------------------------------------------

_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+\S+)?$')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_prometheus(text):
    """[(name, {label: value}, float)] of every sample line; raises on a malformed line."""
    out = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if not m:
            raise AssertionError(f"not a Prometheus sample line: {line!r}")
        labels = dict(_LABEL.findall(m.group(3) or ""))
        out.append((m.group(1), labels, float(m.group(4))))
    return out


def metric(samples, name, **match):
    """Sum of the samples called `name` whose labels contain `match` (a value given as a
    callable is a predicate)."""
    total = 0.0
    for n, labels, v in samples:
        if n != name:
            continue
        ok = True
        for k, want in match.items():
            got = labels.get(k)
            ok = ok and (want(got) if callable(want) else got == want)
        if ok:
            total += v
    return total


def metric_names(samples):
    return {n for n, _, _ in samples}


# --- the reference: the Python binding on features from the embedding server ------------------

class Reference:
    """The projection and the Python binding's Model, to recompute the gateway's figures."""

    def __init__(self, cfg):
        os.environ["HETREWARD_LIB"] = cfg["HETREWARD_LIB"]
        sys.path.insert(0, str(ROOT / "bindings" / "python"))
        import hetreward  # noqa: PLC0415 - after HETREWARD_LIB is set
        from safetensors import safe_open  # noqa: PLC0415

        path = cfg["HETREWARD_LLAMA_MODEL"]
        self.model = hetreward.Model.load(path)
        with safe_open(path.removesuffix(".hrm") + ".projection.safetensors", "numpy") as f:
            self.mean = f.get_tensor("mean").astype(np.float64)
            self.components = f.get_tensor("components").astype(np.float64)
            self.template = f.metadata()["text"]

    def text(self, question, answer):
        """The projection's template with {question} and {answer} filled in one pass, as
        examples/llama-cpp/pbon.cpp does."""
        return re.sub(r"\{question\}|\{answer\}",
                      lambda m: question if m.group(0) == "{question}" else answer, self.template)

    @staticmethod
    def embed(emb_url, texts):
        r = requests.post(emb_url + "/v1/embeddings", json={"input": texts, "model": "embedding"}, timeout=60)
        r.raise_for_status()
        data = sorted(r.json()["data"], key=lambda d: d["index"])
        return np.array([d["embedding"] for d in data], dtype=np.float64)

    def features(self, emb):
        """phi = float32((e - mean) @ components.T) computed in f64 (the contract's rule)."""
        return ((emb - self.mean) @ self.components.T).astype(np.float32)

    def select(self, emb, alpha=0.05, policy="pbon"):
        """The binding's selection on embeddings `emb` (rows in candidate order)."""
        return self.model.select(self.features(np.asarray(emb, dtype=np.float64)), alpha=alpha, policy=policy)

    def recorded_embeddings(self, proxy, before, question, answers):
        """The vectors the gateway received for these answers, from the embeddings proxy's
        exchanges after index `before`; asserts it embedded exactly the template's texts in
        one call."""
        new = proxy.exchanges("/embeddings")[before:]
        want = [self.text(question, a) for a in answers]
        calls = [x for x in new if x["body"].get("input") == want]
        assert len(calls) == 1, ("the gateway did not embed the template's texts in one call",
                                 want, [x["body"].get("input") for x in new])
        data = sorted(calls[0]["response"]["data"], key=lambda d: d["index"])
        return np.array([d["embedding"] for d in data], dtype=np.float64)


def assert_figures(got, want, what, rtol):
    """got: list of dicts with reward/se/lower/upper; want: the binding's structured array."""
    for key in ("reward", "se", "lower", "upper"):
        g = np.array([x[key] for x in got], dtype=np.float64)
        w = np.asarray(want[key], dtype=np.float64)
        assert np.allclose(g, w, rtol=rtol, atol=rtol * max(1e-3, float(np.abs(w).max()))), (
            f"{what}: {key} differs from the binding's select: gateway {g.tolist()} vs binding {w.tolist()}")


def max_rel_diff(got, want):
    worst = 0.0
    for key in ("reward", "se", "lower", "upper"):
        g = np.array([x[key] for x in got], dtype=np.float64)
        w = np.asarray(want[key], dtype=np.float64)
        worst = max(worst, float(np.max(np.abs(g - w) / np.maximum(np.abs(w), 1e-12))))
    return worst


# --- a recording proxy in front of a real upstream ---------------------------------------------

class RecordingProxy:
    """A loopback HTTP/1.1 proxy that forwards every request to `target` (a real llama-server)
    and records each exchange (method, path, parsed JSON request body, status, parsed JSON
    response), so a test sees exactly what the gateway sent upstream (no seed added, n = best_of,
    extension fields removed, the texts it embeds) and the vectors it got back. The vectors
    matter: llama-server's embeddings of the same text differ with the batch it is computed in
    and the slots' history (up to ~1e-4 per element, measured), so the figures can be compared
    exactly only on the vectors the gateway itself received."""

    def __init__(self, target):
        self.target = urlsplit(target)
        self.requests = []
        self.lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def _forward(self):
                n = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(n) if n else b""
                try:
                    parsed = json.loads(body) if body else None
                except ValueError:
                    parsed = body
                rec = {"method": self.command, "path": self.path, "body": parsed}
                conn = http.client.HTTPConnection(proxy.target.hostname, proxy.target.port, timeout=300)
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in ("host", "connection", "content-length", "transfer-encoding")}
                conn.request(self.command, self.path, body=body or None, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                rec["status"] = resp.status
                try:
                    rec["response"] = json.loads(data) if data else None
                except ValueError:
                    rec["response"] = data
                with proxy.lock:
                    proxy.requests.append(rec)
                self.send_response(resp.status)
                for k, v in resp.getheaders():
                    if k.lower() not in ("connection", "content-length", "transfer-encoding", "keep-alive"):
                        self.send_header(k, v)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                conn.close()

            do_GET = do_POST = _forward

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def exchanges(self, suffix):
        """The recorded POST exchanges to a path ending with `suffix`, oldest first."""
        with self.lock:
            return [r for r in self.requests if r["method"] == "POST" and r["path"].endswith(suffix)]

    def posts(self, suffix):
        return [r["body"] for r in self.exchanges(suffix)]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def error_of(resp):
    """The OpenAI-style error object of a response, asserting its shape."""
    body = resp.json()
    assert isinstance(body, dict) and isinstance(body.get("error"), dict), body
    err = body["error"]
    assert isinstance(err.get("message"), str) and err["message"], err
    assert isinstance(err.get("type"), str), err
    return err


def percentile(values, q):
    if not values:
        return None
    return float(np.percentile(np.asarray(values, dtype=np.float64), q))


def write_json(name, data):
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / name
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    return path


# --- load -------------------------------------------------------------------------------------

LOAD_PROMPTS = [
    "Give two tips for writing a clear bug report.",
    "What is the capital of France?",
    "Explain recursion in one sentence.",
    "Name three primary colors.",
    "Why is the sky blue?",
    "Write a haiku about rain.",
]


def load_body(i, model_name, best_of, max_tokens):
    """Request i of a load run: chat and completions alternate, prompts rotate."""
    prompt = LOAD_PROMPTS[i % len(LOAD_PROMPTS)]
    body = {"model": model_name, "best_of": best_of, "n": 1, "max_tokens": max_tokens}
    if i % 2:
        return "/v1/chat/completions", {**body, "messages": [{"role": "user", "content": prompt}]}
    return "/v1/completions", {**body, "prompt": prompt}


def run_load(url, model_name, clients, total, best_of, max_tokens, deadline_s, timeout_s=120.0,
             during=None):
    """`total` requests from `clients` threads (each its own keep-alive connection); max_tokens is
    a callable i -> int. `during(records)` runs in the caller's thread while the load runs. Returns
    (records, wall seconds); a record has status, latency_s, timings (or error)."""
    import random  # noqa: PLC0415

    counter = iter(range(total))
    lock = threading.Lock()
    records = []
    t_end = time.monotonic() + deadline_s

    def worker(seed):
        rng = random.Random(seed)
        with requests.Session() as c:
            while time.monotonic() < t_end:
                with lock:
                    i = next(counter, None)
                if i is None:
                    return
                path, body = load_body(i, model_name, best_of, max_tokens(i, rng))
                t0 = time.perf_counter()
                rec = {"i": i, "path": path}
                try:
                    r = c.post(url + path, json=body, timeout=timeout_s)
                    rec["status"] = r.status_code
                    if r.status_code == 200:
                        rec["timings"] = r.json()["hetreward"]["timings"]
                    else:
                        rec["error"] = r.text[:300]
                except requests.RequestException as e:
                    rec["status"] = None
                    rec["error"] = repr(e)
                rec["latency_s"] = time.perf_counter() - t0
                with lock:
                    records.append(rec)

    threads = [threading.Thread(target=worker, args=(k,), daemon=True) for k in range(clients)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    if during is not None:
        during(records)
    for t in threads:
        t.join(max(0.0, t_end - time.monotonic()) + timeout_s)
    return records, time.monotonic() - t0


def summarize(records, wall_s):
    ok = [r for r in records if r.get("status") == 200]
    lat = [r["latency_s"] * 1000 for r in ok]
    over = [r["timings"]["total_ms"] - r["timings"]["generation_ms"] - r["timings"]["embedding_ms"] for r in ok]
    sel = [r["timings"]["selection_us"] for r in ok]
    gen = [r["timings"]["generation_ms"] for r in ok]
    emb = [r["timings"]["embedding_ms"] for r in ok]
    fail = [r for r in records if r.get("status") != 200]
    return {
        "requests": len(records), "ok": len(ok), "failed": len(fail),
        "failures": [{k: r.get(k) for k in ("i", "path", "status", "error")} for r in fail[:10]],
        "wall_s": round(wall_s, 2), "throughput_rps": round(len(ok) / wall_s, 2) if wall_s else None,
        "latency_ms": {"p50": percentile(lat, 50), "p99": percentile(lat, 99), "max": max(lat, default=None)},
        "gateway_overhead_ms": {"p50": percentile(over, 50), "p99": percentile(over, 99), "max": max(over, default=None)},
        "generation_ms": {"p50": percentile(gen, 50), "p99": percentile(gen, 99)},
        "embedding_ms": {"p50": percentile(emb, 50), "p99": percentile(emb, 99)},
        "selection_us": {"p50": percentile(sel, 50), "p99": percentile(sel, 99), "max": max(sel, default=None)},
    }
