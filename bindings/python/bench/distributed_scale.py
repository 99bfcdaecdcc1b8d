"""The scale figures of BENCHMARKS.md (distributed section), measured in one run:

* per engine (in-process baseline, Ray, Dask, Spark; loopback clusters on this machine, 8
  shards): start-up, an empty round, and for each dataset the rounds of a fit (cluster
  covariance), the bytes of the largest shard answer per kind of round, the median seconds per
  round and the whole fit; the one-machine fit (hr.Fitter, one start) and one pass over all
  rows in process as the baselines;
* the per-shard cost model (seconds per row x dimension for value and Hessian-vector passes,
  per row x p^2 for a packed Fisher block) fitted on one shard and checked on other shapes.

    python bindings/python/bench/distributed_scale.py [--engines local,dask,ray,spark] \
        [--json OUT.json]

(the package installed with its engine extras, e.g. by scripts/ci.d/80-distributed.sh's venv:
pip install "./bindings/python[ray,dask,spark,parquet]").
"""

import argparse
import json
import os
import statistics
import struct
import sys
import time
import zlib

import numpy as np

import hetreward as hr
from hetreward import distributed as hd

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from distributed_support import array_shards, medium_data, paper_data, random_parts  # noqa: E402

SHARDS = 8
VALUE, OBS_PRODUCTS, EXPECTED = 1, 2, 8


def request(d1, d2, sections, vectors=()):
    """A shard request's bytes (src/shard/wire.rs, version 1) at theta = 0.1, gamma = 0."""
    head = b"HRSHREQ\0" + struct.pack("<IQQIQ", 1, d1, d2, sections, len(vectors))
    body = np.r_[np.full(d1, 0.1), np.zeros(d2)].tobytes()
    body += b"".join(np.asarray(v, dtype="<f8").tobytes() for v in vectors)
    raw = head + body
    return raw + struct.pack("<I", zlib.crc32(raw))


def kind_of(r, last):
    if r.index == last:
        return "covariance"
    if "products" in r.what:
        return "product"
    if r.what == "expected":
        return "preconditioner"
    return "point"


def median_time(fn, reps):
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def start(name):
    """Starts the engine's local cluster; returns (make_engine(sources), stop())."""
    if name == "local":
        return (lambda s: hd.LocalEngine(s, threads=1)), (lambda: None)
    if name == "ray":
        import ray

        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
                 configure_logging=False)
        return (lambda s: hd.RayEngine(s, actors=2)), ray.shutdown
    if name == "dask":
        from distributed import Client, LocalCluster

        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                               host="127.0.0.1", dashboard_address=None)
        client = Client(cluster)

        def stop():
            client.close()
            cluster.close()

        return (lambda s: hd.DaskEngine(client, s)), stop
    if name == "spark":
        os.environ["PYSPARK_PYTHON"] = os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
        os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
        from pyspark import SparkConf, SparkContext

        conf = (SparkConf().setMaster("local[2]").setAppName("hetreward-bench")
                .set("spark.driver.host", "127.0.0.1").set("spark.ui.enabled", "false")
                .set("spark.ui.showConsoleProgress", "false"))
        sc = SparkContext(conf=conf)
        sc.setLogLevel("ERROR")
        return (lambda s: hd.SparkEngine(sc, s)), sc.stop
    raise ValueError(name)


def cost_model(data):
    """Per-shard seconds per unit, fitted on one shard of `data` (threads = 1)."""
    z, psi0, psi, y, cl = data
    n, d1 = z.shape
    d2 = psi.shape[1]
    p = d1 + d2
    src = hd.ArrayShard(z, psi0, psi, y, cl)
    v = [np.linspace(-1, 1, p)]
    reqs = {"value": request(d1, d2, VALUE), "product": request(d1, d2, OBS_PRODUCTS, v),
            "fisher": request(d1, d2, EXPECTED)}
    hd.answer(src, reqs["value"])  # load once
    t = {k: median_time(lambda r=r: hd.answer(src, r), 5) for k, r in reqs.items()}
    from hetreward.distributed import _shards

    _shards.forget(src.key)
    return {"value": t["value"] / (n * d1), "product": t["product"] / (n * d1),
            "fisher": t["fisher"] / (n * p * p)}, t, (n, d1, p)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--engines", default="local,dask,ray,spark")
    ap.add_argument("--json")
    args = ap.parse_args()
    datasets = {"paper": paper_data(), "medium": medium_data(),
                "wide": medium_data(n=20_000, d1=384, d2=5, seed=5)}
    out = {"machine": os.cpu_count(), "datasets": {}, "engines": {}, "model": {}}

    # Baselines: one machine, all rows.
    for name, data in datasets.items():
        n, d1 = data[0].shape
        d2 = data[2].shape[1]
        with hr.Dataset(*data) as ds:
            fitter = hr.Fitter(covariance="cluster", restarts=0, threads=1)
            fit_s = median_time(lambda: fitter.fit(ds), 3)
        src = hd.ArrayShard(*data)
        req = request(d1, d2, VALUE)
        hd.answer(src, req)
        pass_s = median_time(lambda: hd.answer(src, req, 1), 5)
        out["datasets"][name] = {"n": n, "d1": d1, "d2": d2, "one_machine_fit_s": fit_s,
                                 "one_pass_s": pass_s}
        print(f"{name}: n={n} d1={d1} d2={d2}  one-machine fit {fit_s:.3f} s, one pass "
              f"{pass_s * 1e3:.2f} ms", flush=True)

    for engine in filter(None, args.engines.split(",")):
        t0 = time.perf_counter()
        make, stop = start(engine)
        cluster_s = time.perf_counter() - t0
        res = {"cluster_start_s": cluster_s, "fits": {}}
        try:
            for name, data in datasets.items():
                parts = random_parts(len(data[3]), SHARDS)
                t0 = time.perf_counter()
                with make(array_shards(data, parts)) as eng:
                    eng.summaries()  # ships and loads the shards
                    load_s = time.perf_counter() - t0
                    d1, d2 = data[0].shape[1], data[2].shape[1]
                    empty = request(d1, d2, 0)
                    empty_s = median_time(lambda: eng.round(empty), 7)
                    model, info = hd.fit(eng, hr.Fitter(covariance="cluster", tol=1e-10))
                by = {}
                for r in info.rounds:
                    k = by.setdefault(kind_of(r, info.total), {"rounds": 0, "bytes": 0, "seconds": []})
                    k["rounds"] += 1
                    k["bytes"] = max(k["bytes"], r.largest_answer)
                    k["seconds"].append(r.seconds)
                for k in by.values():
                    k["median_s"] = statistics.median(k.pop("seconds"))
                res["fits"][name] = {"load_s": load_s, "empty_round_s": empty_s,
                                     "rounds": info.total, "fit_s": info.seconds,
                                     "round_s": info.round_seconds, "by_kind": by}
                print(f"{engine:5} {name:6}: start {cluster_s:.1f} s + load {load_s:.2f} s, "
                      f"empty round {empty_s * 1e3:.1f} ms, {info.total} rounds, "
                      f"{info.round_seconds * 1e3:.1f} ms/round, fit {info.seconds:.2f} s; "
                      + ", ".join(f"{k} x{v['rounds']} {v['bytes']} B {v['median_s'] * 1e3:.1f} ms"
                                  for k, v in by.items()), flush=True)
        finally:
            stop()
        out["engines"][engine] = res

    # The per-shard cost model: fitted on one shard larger than the caches (as a 10M x 4096
    # shard is), checked on shards of other shapes.
    coef, t_fit, shape = cost_model(datasets["wide"])
    out["model"]["coefficients"] = coef
    out["model"]["fitted_on"] = {"shape": shape, "seconds": t_fit}
    print(f"cost model on a {shape[0]} x {shape[1]} shard (p = {shape[2]}): "
          f"value {coef['value'] * 1e9:.3f} ns/(row*d1), product {coef['product'] * 1e9:.3f} "
          f"ns/(row*d1), Fisher {coef['fisher'] * 1e9:.4f} ns/(row*p^2)")
    checks = []
    for label, data in (("8,000 x 1024", medium_data(n=8_000, d1=1024, d2=5, seed=9)),
                        ("20,000 x 64", datasets["medium"])):
        _, t, (n, d1, p) = cost_model(data)
        pred = {"value": coef["value"] * n * d1, "product": coef["product"] * n * d1,
                "fisher": coef["fisher"] * n * p * p}
        checks.append({"data": label, "measured": t, "predicted": pred})
        print(f"check on {label}: " + ", ".join(
            f"{k} measured {t[k] * 1e3:.2f} ms / predicted {pred[k] * 1e3:.2f} ms" for k in t))
    out["model"]["checks"] = checks
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
