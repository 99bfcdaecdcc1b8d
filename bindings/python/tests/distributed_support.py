"""Data and comparisons shared by the distributed tests (test_distributed*.py)."""

import numpy as np

import hetreward as hr
from hetreward import distributed as hd

KINDS = ("expected", "observed", "robust", "cluster")
#: Tight enough that both fits sit at the optimum to rounding (Newton's last step takes the
#: gradient from ~1e-7 to ~1e-15), so the comparison measures the distribution, not the stop.
TOL = 1e-13


def paper_data(n=2000, seed=11):
    """The paper's §6.1 simulation (uniform actions; theta = (1/4, 1/2, 1/3), gamma =
    (1/2, 1/3), psi0 = x, psi = (x^3, x^2)) with 97 annotators spread over the rows."""
    rng = np.random.default_rng(seed)
    s, a0, a1, x = rng.standard_normal(n), rng.random(n), 2 * rng.random(n), rng.standard_normal(n)

    def phi(a):
        return np.stack([s * s * a, a * a * s, a * s], axis=1)

    z = phi(a1) - phi(a0)
    sigma = x + 0.5 * x ** 3 + x * x / 3
    p = 1 / (1 + np.exp(-sigma * (z @ np.array([0.25, 0.5, 1 / 3]))))
    y = (rng.random(n) < p).astype(np.float64)
    cluster = (np.arange(n) * 7919) % 97
    return z, x, np.stack([x ** 3, x * x], axis=1), y, cluster.astype(np.int64)


def medium_data(n=20_000, d1=64, d2=5, seed=17):
    """n = 20,000, d1 = 64, d2 = 5 one-hot rationality groups, 400 annotators spread over the
    rows."""
    rng = np.random.default_rng(seed)
    theta = np.sin(np.arange(d1) * 0.61) * 0.25
    gamma = np.array([0.6, -0.4, 0.9, -0.3, 0.5])[:d2]
    z = rng.standard_normal((n, d1))
    group = rng.integers(0, d2 + 1, n)
    psi = np.zeros((n, d2))
    rows = np.flatnonzero(group < d2)
    psi[rows, group[rows]] = 1.0
    sigma = 1 + psi @ gamma
    y = (rng.random(n) < 1 / (1 + np.exp(-sigma * (z @ theta)))).astype(np.float64)
    cluster = ((np.arange(n) * 104_729) % 400).astype(np.int64)
    return z, np.ones(n), psi, y, cluster


def random_parts(n, k, seed=3):
    """k shards of random rows (every annotator in every shard)."""
    return np.array_split(np.random.default_rng(seed).permutation(n), k)


def contiguous_parts(n, k):
    return np.array_split(np.arange(n), k)


def array_shards(data, parts):
    z, psi0, psi, y, cluster = data
    return [hd.ArrayShard(np.ascontiguousarray(z[p]), np.ascontiguousarray(psi0[p]),
                          np.ascontiguousarray(psi[p]), np.ascontiguousarray(y[p]),
                          np.ascontiguousarray(cluster[p])) for p in parts]


def parquet_shards(data, parts, folder):
    z, psi0, psi, y, cluster = data
    return [hd.write_parquet(folder / f"part-{k}.parquet", np.ascontiguousarray(z[p]),
                             psi0[p], np.ascontiguousarray(psi[p]), y[p], cluster[p])
            for k, p in enumerate(parts)]


def safetensors_shards(data, parts, folder):
    from safetensors.numpy import save_file

    z, psi0, psi, y, cluster = data
    out = []
    for k, p in enumerate(parts):
        path = folder / f"part-{k}.safetensors"
        save_file({"z": np.ascontiguousarray(z[p]), "psi0": np.ascontiguousarray(psi0[p]),
                   "psi": np.ascontiguousarray(psi[p]), "y": np.ascontiguousarray(y[p]),
                   "cluster": np.ascontiguousarray(cluster[p])}, str(path))
        out.append(hd.SafetensorsShard(str(path)))
    return out


def single_process(data, kinds=KINDS):
    """The one-process fits, by covariance kind."""
    with hr.Dataset(*data) as ds:
        return {k: hr.Fitter(covariance=k, tol=TOL).fit(ds) for k in kinds}


def values(model):
    return (np.r_[model.theta, model.gamma], np.r_[model.theta_se, model.gamma_se])


def max_rel(a, b):
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-3)))


def assert_same(got, want, rtol):
    """Estimates and standard errors of two models agree within rtol (relative)."""
    (e1, s1), (e2, s2) = values(got), values(want)
    assert got.report.covariance == want.report.covariance
    de, ds = max_rel(e1, e2), max_rel(s1, s2)
    assert de <= rtol and ds <= rtol, f"estimates differ by {de:.2e}, SEs by {ds:.2e}"
    return max(de, ds)
