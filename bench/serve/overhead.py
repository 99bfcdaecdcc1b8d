"""The gateway's own overhead under load (issue 30's benchmark; not a timed test).

Starts one llama-server generating (SmolLM2, --parallel 8), one serving MiniLM embeddings and
`hetreward serve` in front (all on loopback ports, killed at the end), then for each concurrency
level sends best_of=8 requests (max_tokens 4, chat and completions alternating) and reports:

* the gateway's overhead per request: total_ms - generation_ms - embedding_ms of the response's
  hetreward.timings (everything the gateway adds: parsing, the in-flight bound, building the
  embedding batch, features, selection, the response), p50/p99;
* selection_us (features + hetreward::select) p50/p99;
* client latency p50/p99 (dominated by the CPU-bound generator on this machine);
* the gateway's VmRSS idle (after a warm-up request) and its maximum under load (sampled).

Reproduce (after `bash examples/llama-cpp/setup.sh` and `cargo build --release -p hetreward-cli`):

    source target/llama-cpp/env.sh
    "$HETREWARD_LLAMA_PYTHON" bench/serve/overhead.py            # --concurrency 16,32 --requests 64

The figures are also written to target/serve-e2e/bench-overhead.json.
"""

import argparse
import os
import platform
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "serve" / "tests" / "e2e"))
import e2e_util as u  # noqa: E402


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--concurrency", default="16,32", help="comma-separated client counts (default 16,32)")
    ap.add_argument("--requests", type=int, default=64, help="requests per level (default 64)")
    ap.add_argument("--best-of", type=int, default=8)
    ap.add_argument("--max-tokens", type=int, default=4)
    ap.add_argument("--parallel", type=int, default=8, help="llama-server slots (>= best_of)")
    ap.add_argument("--workers", type=int, default=2, help="the gateway's --workers")
    args = ap.parse_args()
    cfg = u.settings()
    levels = [int(x) for x in args.concurrency.split(",")]
    try:
        gen = u.LlamaServer(cfg, "gen", parallel=args.parallel, name="bench-llama-gen")
        emb = u.LlamaServer(cfg, "emb", name="bench-llama-emb")
        gw = u.Gateway(cfg, gen.url, emb.url, extra=["--workers", args.workers], name="bench-gateway")
        model_name = gw.get("/v1/models").json()["data"][0]["id"]
        for i in range(4):  # warm-up: connections, the first requests' allocations
            path, body = u.load_body(i, model_name, args.best_of, args.max_tokens)
            r = gw.post(path, body)
            assert r.status_code == 200, r.text
        time.sleep(0.5)
        idle_kb = rss_kb(gw.proc.pid)
        rows = []
        for c in levels:
            peak = [0]
            done = threading.Event()

            def sample():
                while not done.is_set():
                    peak[0] = max(peak[0], rss_kb(gw.proc.pid) or 0)
                    time.sleep(0.1)

            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            records, wall = u.run_load(gw.url, model_name, c, args.requests, args.best_of,
                                       lambda i, rng: args.max_tokens, deadline_s=600, timeout_s=300)
            done.set()
            sampler.join()
            s = u.summarize(records, wall)
            s.update(concurrency=c, best_of=args.best_of, max_tokens=args.max_tokens, rss_busy_max_kb=peak[0])
            rows.append(s)
        idle_after_kb = rss_kb(gw.proc.pid)
    finally:
        u.kill_all()

    def f(x, nd=2):
        return "-" if x is None else f"{x:.{nd}f}"

    print(f"\nhetreward serve overhead: best_of={args.best_of}, max_tokens={args.max_tokens}, "
          f"{args.requests} requests per level, llama-server --parallel {args.parallel}, "
          f"gateway --workers {args.workers}; {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores")
    hdr = (f"{'clients':>7} {'ok/sent':>8} {'req/s':>6} {'client p50':>11} {'client p99':>11} "
           f"{'overhead p50':>13} {'overhead p99':>13} {'select p50':>11} {'select p99':>11} {'RSS busy':>9}")
    print(hdr)
    print("-" * len(hdr))
    for s in rows:
        print(f"{s['concurrency']:>7} {s['ok']:>4}/{s['requests']:<3} {f(s['throughput_rps']):>6} "
              f"{f(s['latency_ms']['p50'], 0) + ' ms':>11} {f(s['latency_ms']['p99'], 0) + ' ms':>11} "
              f"{f(s['gateway_overhead_ms']['p50']) + ' ms':>13} {f(s['gateway_overhead_ms']['p99']) + ' ms':>13} "
              f"{f(s['selection_us']['p50'], 0) + ' us':>11} {f(s['selection_us']['p99'], 0) + ' us':>11} "
              f"{s['rss_busy_max_kb'] / 1024:>6.1f} MB")
    print(f"gateway VmRSS idle: {idle_kb / 1024:.1f} MB (after warm-up), {idle_after_kb / 1024:.1f} MB after the runs")
    print("overhead = total_ms - generation_ms - embedding_ms (hetreward.timings); target p50 <= 2 ms, "
          "p99 <= 10 ms; selection <= 100 us")
    out = {"levels": rows, "rss_idle_kb": idle_kb, "rss_idle_after_kb": idle_after_kb, "args": vars(args)}
    print(f"written: {u.write_json('bench-overhead.json', out)}")
    failed = sum(s["failed"] for s in rows)
    if failed:
        print(f"{failed} requests failed: {[s['failures'] for s in rows]}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
