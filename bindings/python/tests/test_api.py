"""The Python binding over the C API: fit, score, compare, select, save/load, errors, threads,
cancellation, summary."""

import concurrent.futures
import math
import os
import signal
import threading
import time

import numpy as np
import pytest

import hetreward as hr
from conftest import D1, D2, TRUE_GAMMA, TRUE_THETA, make_data, phis

Q975, Q95 = 1.959963984540054, 1.6448536269514722


def test_version():
    assert hr.library_version() == hr.__version__


def test_fit(model):
    assert (model.n, model.d1, model.d2) == (1000, D1, D2)
    theta, se = model.theta, model.theta_se
    gamma, gse = model.gamma, model.gamma_se
    assert theta.dtype == np.float64 and theta.shape == (D1,) and gamma.shape == (D2,)
    assert np.all(se > 0) and np.all(np.abs(theta - TRUE_THETA) < 5 * se)
    assert np.all(gse > 0) and np.all(np.abs(gamma - TRUE_GAMMA) < 5 * gse)
    r = model.report
    assert r.converged and r.termination == "converged" and r.solver == "newton"
    assert r.covariance == "expected" and r.iterations >= 1 and r.starts >= 1
    assert r.grad_norm <= r.tol and 0 < r.neg_loglik < math.log(2)


def test_fit_variants():
    d = make_data(400, 2)
    with hr.Dataset(**d) as ds, hr.Fitter() as f:
        base = f.fit(ds).theta
    # float32 arrays use the _f32 constructors; the pairs form with phi0 = 0 is the same data.
    f32 = {k: (v.astype(np.float32) if v.dtype == np.float64 else v) for k, v in d.items()}
    with hr.Dataset(**f32) as a, hr.Dataset.from_pairs(
        np.zeros_like(f32["z"]), f32["z"], f32["psi0"], f32["psi"], f32["y"]
    ) as b, hr.Dataset.from_pairs(np.zeros_like(d["z"]), d["z"], d["psi0"], d["psi"], d["y"],
                                  d["cluster"]) as c, hr.Fitter() as f:
        assert (c.n, c.d1, c.d2) == (400, D1, D2)
        ta, tb, tc = f.fit(a).theta, f.fit(b).theta, f.fit(c).theta
    assert np.array_equal(ta, tb) and np.array_equal(tc, base)
    assert np.allclose(ta, base, rtol=1e-4)

    # d2 = 0: psi may be None.
    with hr.Dataset(d["z"], d["psi0"], None, d["y"]) as ds, hr.Fitter() as f:
        m = f.fit(ds)
        assert m.d2 == 0 and m.gamma.shape == (0,)

    # Options: explicit start, cluster covariance, thread counts (same result), agd capped.
    with hr.Dataset(**d) as ds:
        kw = dict(covariance="cluster", init="explicit", theta0=[0.5, 0, 0, 0], gamma0=[0, 0])
        with hr.Fitter(threads=1, **kw) as f1, hr.Fitter(threads=2, **kw) as f2:
            m1, m2 = f1.fit(ds), f2.fit(ds)
        assert np.array_equal(m1.theta_se, m2.theta_se) and m1.report.covariance == "cluster"
        with hr.Fitter(solver="agd", max_iter=50) as f:
            r = f.fit(ds).report
        assert r.solver == "agd" and not r.converged and r.termination == "max_iterations"


def test_score(model):
    phi = phis(6, 7)
    r95, r90 = model.score(phi, 0.05), model.score(phi, alpha=0.10)
    assert r95.dtype == hr.REWARD_DTYPE and r95.shape == (6,)
    np.testing.assert_allclose(r95["reward"], phi.astype(np.float64) @ model.theta, rtol=1e-12)
    assert np.all(r95["se"] > 0)
    np.testing.assert_allclose(r95["upper"] - r95["reward"], r95["reward"] - r95["lower"],
                               rtol=1e-12)
    np.testing.assert_allclose((r95["upper"] - r95["lower"]) / (r90["upper"] - r90["lower"]),
                               Q975 / Q95, rtol=1e-9)
    # A unit vector scores theta_j with SE theta_se_j.
    unit = np.zeros((1, D1), dtype=np.float32)
    unit[0, 2] = 1
    u = model.score(unit)[0]
    assert u["reward"] == model.theta[2] and math.isclose(u["se"], model.theta_se[2], rel_tol=1e-12)
    # Empty batch, and views that are C-contiguous (row slices) are fine without copies.
    assert model.score(np.empty((0, D1), dtype=np.float32)).shape == (0,)
    big = phis(10, 3)
    assert np.array_equal(model.score(big[2:5]), model.score(big)[2:5])


def test_compare(model):
    phi0, phi1 = phis(5, 11), phis(5, 12)
    exact = model.compare(phi0, phi1)
    indep = model.compare(phi0, phi1, method="independent")
    bound = model.compare(phi0, phi1, 0.05, "bound")
    r0, r1 = model.score(phi0), model.score(phi1)
    assert exact.dtype == hr.COMPARISON_DTYPE
    np.testing.assert_allclose(exact["diff"], r0["reward"] - r1["reward"], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(indep["se"], np.hypot(r0["se"], r1["se"]), rtol=1e-12)
    np.testing.assert_allclose(bound["se"], r0["se"] + r1["se"], rtol=1e-12)
    assert np.all((exact["lower"] < exact["diff"]) & (exact["diff"] < exact["upper"]))
    assert np.all((0 <= exact["p_value"]) & (exact["p_value"] <= 1))
    want = np.where(exact["lower"] > 0, 1, np.where(exact["upper"] < 0, 2, 0))
    assert np.array_equal(exact["verdict"], want)
    good = np.array([[1, -1, 1, 1]], dtype=np.float32)
    c = model.compare(np.vstack([good, -good]), np.vstack([-good, good]))
    assert [hr.VERDICTS[v] for v in c["verdict"]] == ["win", "loss"]


def test_select(model):
    phi = phis(16, 21)
    rewards = model.score(phi)
    bon, cands = model.select(phi, policy="bon")
    pbon, pcands = model.select(phi)  # pbon is the default
    assert bon == int(np.argmax(rewards["reward"])) and pbon == int(np.argmax(rewards["lower"]))
    assert cands.dtype == hr.CANDIDATE_DTYPE
    for f in ("reward", "se", "lower", "upper"):
        assert np.array_equal(cands[f], rewards[f])
    assert np.array_equal(cands["score"], rewards["reward"])
    assert np.array_equal(pcands["score"], rewards["lower"])
    pen = np.zeros(16)
    pen[bon] = 1e6
    moved, pc = model.select(phi, pen, policy="bon")
    assert moved != bon and pc["penalty"][bon] == 1e6


def test_rationality(model):
    sigma, se = model.rationality(1.0, [1.0, 0.0])
    assert math.isclose(sigma, 1 + model.gamma[0], rel_tol=1e-12)
    assert math.isclose(se, model.gamma_se[0], rel_tol=1e-12)
    with pytest.raises(hr.DimensionMismatchError):
        model.rationality(1.0, [1.0])


def _same(a, b):
    phi = phis(32, 5)
    assert np.array_equal(a.score(phi), b.score(phi))
    assert np.array_equal(a.theta, b.theta) and np.array_equal(a.gamma_se, b.gamma_se)
    assert a.n == b.n and a.report.iterations == b.report.iterations


def test_save_load_file(model, tmp_path):
    path = tmp_path / "model.hrm"
    model.save(path)
    with hr.Model.load(path) as loaded:
        _same(model, loaded)
    with hr.Model.load(str(path)) as loaded:
        _same(model, loaded)
    with pytest.raises(hr.HetrewardIOError) as e:
        hr.Model.load(tmp_path / "missing.hrm")
    assert e.value.status == 7 and "missing.hrm" in e.value.message
    assert isinstance(e.value, OSError)
    (tmp_path / "garbage.hrm").write_bytes(b"not a model at all")
    with pytest.raises(hr.BadFormatError):
        hr.Model.load(tmp_path / "garbage.hrm")
    with pytest.raises(hr.HetrewardIOError):
        model.save(tmp_path / "no" / "such" / "dir" / "m.hrm")


def test_save_load_buffer(model, tmp_path):
    buf = model.to_bytes()
    with hr.Model.from_bytes(buf) as a, hr.Model.from_bytes(bytearray(buf)) as b, \
            hr.Model.from_bytes(memoryview(buf)) as c:
        _same(model, a)
        _same(model, b)
        _same(model, c)
    model.save(tmp_path / "m.hrm")
    assert (tmp_path / "m.hrm").read_bytes() == buf
    with pytest.raises(hr.BadFormatError):
        hr.Model.from_bytes(buf[: len(buf) // 2])
    bad = bytearray(buf)
    bad[len(bad) // 2] ^= 0xFF
    with pytest.raises(hr.BadFormatError):
        hr.Model.from_bytes(bad)
    with pytest.raises(hr.HetrewardError):
        hr.Model.from_bytes(b"")


def test_array_checks(model):
    phi = phis(4, 1)
    with pytest.raises(TypeError, match="float32"):
        model.score(phi.astype(np.float64))
    with pytest.raises(TypeError, match="numpy.ndarray"):
        model.score(phi.tolist())
    with pytest.raises(ValueError, match="C-contiguous"):
        model.score(np.asfortranarray(phi))
    with pytest.raises(ValueError, match="C-contiguous"):
        model.score(phis(8, 1)[::2])
    with pytest.raises(TypeError, match="float32"):
        model.score(phi.astype(">f4"))  # byte-swapped
    with pytest.raises(ValueError, match="dimension"):
        model.score(phi.reshape(1, 1, 4, D1))
    with pytest.raises(hr.DimensionMismatchError):
        model.score(phi.reshape(-1))  # 1-D = one answer, of 16 values, not d1 = 4
    with pytest.raises(TypeError, match="float64"):
        model.select(phi, penalty=["a", "b", "c", "d"])
    raw = np.zeros(4 * D1 * 4 + 1, dtype=np.uint8)[1:].view(np.float32).reshape(4, D1)
    assert not raw.flags.aligned
    with pytest.raises(ValueError, match="aligned"):
        model.score(raw)
    d = make_data(100, 3)
    with pytest.raises(TypeError, match="dtype"):
        hr.Dataset(d["z"], d["psi0"].astype(np.float32), d["psi"], d["y"])
    with pytest.raises(TypeError, match="int64"):
        hr.Dataset(**{**d, "cluster": d["cluster"].astype(np.int32)})
    with pytest.raises(hr.DimensionMismatchError, match="y"):
        hr.Dataset(d["z"], d["psi0"], d["psi"], d["y"][:50])
    with pytest.raises(ValueError, match="solver"):
        hr.Fitter(solver="lbfgs")


def test_errors(model):
    phi = phis(3, 1)
    phi[1, 2] = np.nan
    with pytest.raises(hr.NonFiniteError) as e:
        model.score(phi)
    err = e.value
    assert isinstance(err, hr.HetrewardError) and isinstance(err, ValueError)
    assert err.status == 4 and err.status_name == "HETREWARD_NON_FINITE" and "6" in err.message
    assert "HETREWARD_NON_FINITE" in str(err)
    with pytest.raises(hr.InvalidArgumentError, match="alpha"):
        model.score(phis(2, 1), alpha=1.5)
    with pytest.raises(hr.DimensionMismatchError):
        model.score(np.zeros((2, D1 + 1), dtype=np.float32))
    with pytest.raises(hr.DimensionMismatchError):
        model.compare(phis(2, 1), phis(3, 1))
    with pytest.raises(hr.InvalidArgumentError):
        model.compare(phis(2, 1), phis(2, 2), method=99)
    with pytest.raises(hr.DimensionMismatchError):
        model.select(np.empty((0, D1), dtype=np.float32))
    with pytest.raises(hr.NonFiniteError):
        model.select(phis(3, 1), np.array([0, np.inf, 0]))

    d = make_data(100, 3)
    d["y"][5] = 0.5
    with pytest.raises(hr.InvalidArgumentError):
        hr.Dataset(**d)
    with pytest.raises(hr.HetrewardIOError):
        hr.Dataset.load("/nonexistent/none.csv")
    with pytest.raises(hr.InvalidArgumentError, match="eta1"):
        hr.Fitter(eta1=-1.0)
    d = make_data(100, 3)
    with hr.Dataset(d["z"], d["psi0"], d["psi"], d["y"]) as ds:
        with hr.Fitter(covariance="cluster") as f, pytest.raises(hr.InvalidArgumentError,
                                                                 match="cluster"):
            f.fit(ds)
        with hr.Fitter(solver="agd", max_iter=3, require_converged=True) as f, \
                pytest.raises(hr.NotConvergedError) as e:
            f.fit(ds)
        assert e.value.status == 6

    # close() is idempotent; a closed handle refuses to be used.
    ds = hr.Dataset(**make_data(100, 3))
    ds.close()
    ds.close()
    assert ds.closed and "closed" in repr(ds)
    with pytest.raises(ValueError, match="closed"):
        ds.n
    m = hr.Model.from_bytes(model.to_bytes())
    with m:
        pass
    m.close()
    with pytest.raises(ValueError, match="closed"):
        m.score(phis(1, 1))


def test_concurrent_scoring(model):
    """Threads (ctypes releases the GIL) score, compare and select with one model at once:
    every result equals the sequential one; error messages stay per thread."""
    phi = phis(256, 9)

    def compute():
        return (model.score(phi), model.compare(phi[:128], phi[128:]),
                model.select(phi[:16]), model.rationality(1.0, [1.0, 0.75]))

    want = compute()

    def worker(w):
        for _ in range(20):
            got = compute()
            assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
            assert got[2][0] == want[2][0] and np.array_equal(got[2][1], want[2][1])
            assert got[3] == want[3]
            bad = phis(1, 1)
            bad[0, w % D1] = np.inf
            with pytest.raises(hr.NonFiniteError) as e:
                model.score(bad)
            assert str(w % D1) in e.value.message
        return w

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        assert sorted(pool.map(worker, range(8))) == list(range(8))


def _long_fitter():
    return hr.Fitter(solver="agd", init="random", max_iter=10**9, tol=0.0)


def test_cancel_from_another_thread():
    with hr.Dataset(**make_data(300, 5)) as ds, _long_fitter() as f:
        seen = []
        started = threading.Event()

        def progress(p):
            seen.append(p.iteration)
            if p.iteration >= 2:
                started.set()

        canceller = threading.Thread(target=lambda: (started.wait(30), f.cancel()))
        canceller.start()
        t0 = time.monotonic()
        with pytest.raises(hr.CancelledError) as e:
            f.fit(ds, progress=progress)
        canceller.join()
        assert e.value.status == 9 and "cancel" in e.value.message
        assert 2 <= seen[-1] < 10**8 and time.monotonic() - t0 < 30
        # The request was cleared: the fitter fits again (a capped fit in a fresh fitter of
        # the same dataset is the proof the dataset is intact, too).
    with hr.Dataset(**make_data(300, 5)) as ds, hr.Fitter(solver="agd", max_iter=20) as f:
        f.cancel()  # a request made while no fit runs applies to the next fit, once
        with pytest.raises(hr.CancelledError):
            f.fit(ds)
        assert f.fit(ds).report.iterations > 0


def test_progress_callback_cancels_and_reraises():
    with hr.Dataset(**make_data(300, 5)) as ds, hr.Fitter(solver="agd", init="random") as f:
        calls = []

        def stop_at_3(p):
            calls.append(p)
            assert p.grad_norm >= 0 and p.neg_loglik > 0
            return p.iteration >= 3  # truthy = cancel

        with pytest.raises(hr.CancelledError):
            f.fit(ds, progress=stop_at_3)
        assert len(calls) == 4 and calls[-1].iteration == 3 and calls[-1].max_iter == 10000

        class Boom(Exception):
            pass

        def boom(p):
            if p.iteration == 1:
                raise Boom("from the callback")

        with pytest.raises(Boom) as e:
            f.fit(ds, progress=boom)
        assert isinstance(e.value.__cause__, hr.CancelledError)
        # A callback that always continues leaves the result as without one.
        plain = f.fit(ds)
        observed = f.fit(ds, progress=lambda p: None)
        assert np.array_equal(plain.theta, observed.theta)


def test_ctrl_c_cancels_the_fit(sigint_raises):
    if threading.current_thread() is not threading.main_thread():
        pytest.fail("must run in the main thread")
    with hr.Dataset(**make_data(300, 5)) as ds, _long_fitter() as f:
        timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
        timer.start()
        t0 = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            f.fit(ds)
        timer.join()
        assert time.monotonic() - t0 < 30
        # No request is left over for the next fit.
        f2 = hr.Fitter(solver="agd", max_iter=20)
        assert f2.fit(ds).report.iterations > 0


def test_coefficients(model):
    t = model.coefficients()
    assert t.dtype == hr.COEFFICIENT_DTYPE and len(t) == D1 + D2
    assert list(t["block"]) == [0] * D1 + [1] * D2
    assert list(t["index"]) == list(range(D1)) + list(range(D2))
    assert list(t["estimate"]) == list(np.concatenate([model.theta, model.gamma]))
    assert list(t["se"]) == list(np.concatenate([model.theta_se, model.gamma_se]))
    assert (model.coefficients(which="theta") == t[:D1]).all()
    assert (model.coefficients(which="gamma").tobytes() == t[D1:].tobytes())
    narrow = model.coefficients(alpha=0.5)
    assert (narrow["lower"] > t["lower"]).all() and (narrow["p_value"] == t["p_value"]).all()
    with pytest.raises(hr.HetrewardError):
        model.coefficients(alpha=1.5)
    with pytest.raises(ValueError):
        model.coefficients(which="beta")


def test_summary(model):
    s = model.summary()
    text = str(s)
    for word in ("coef", "std err", "P>|z|", "[0.025", "0.975]", "theta[0]", "gamma[1]",
                 "newton", "expected"):
        assert word in text, word
    assert len(s.rows) == D1 + D2
    est = np.concatenate([model.theta, model.gamma])
    se = np.concatenate([model.theta_se, model.gamma_se])
    for row, e, sd in zip(s.rows, est, se):
        assert row.estimate == e and row.se == sd and math.isclose(row.z, e / sd)
        # Same normal quantile for the library's rows (theta) and the gamma rows.
        assert math.isclose((row.upper - row.estimate) / row.se, Q975, rel_tol=1e-9)
        assert math.isclose((row.estimate - row.lower) / row.se, Q975, rel_tol=1e-9)
        assert math.isclose(row.p_value, math.erfc(abs(row.z) / math.sqrt(2)), rel_tol=1e-9,
                            abs_tol=1e-300)
    # Every row is the library's coefficient table, untouched.
    table = model.coefficients()
    assert [(r.estimate, r.se, r.z, r.p_value, r.lower, r.upper) for r in s.rows] == [
        tuple(float(t[f]) for f in ("estimate", "se", "z", "p_value", "lower", "upper"))
        for t in table]
    # theta rows agree with the library's own test of theta_j against the zero answer.
    units = np.eye(D1, dtype=np.float32)
    c = model.compare(units, np.zeros_like(units))
    for r, p in zip(s.rows[:D1], c["p_value"]):
        assert math.isclose(r.p_value, p, rel_tol=1e-9, abs_tol=1e-300)
    s90 = model.summary(alpha=0.1, theta_names=list("abcd"), gamma_names=["expert", "grade"])
    assert "[0.05" in str(s90) and s90.rows[0].name == "a" and s90.rows[-1].name == "grade"
    with pytest.raises(ValueError):
        model.summary(theta_names=["x"])


def _import_in_subprocess(env):
    import subprocess
    import sys

    code = ("import os, hetreward; "
            "print(hetreward.library_version(), os.path.realpath(hetreward._native.lib._name))")
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          cwd="/")


def test_library_lookup():
    """The library bundled in the package (the wheel's) without any environment variable;
    HETREWARD_LIB (a file or a folder) overrides it; the system loader (LD_LIBRARY_PATH)
    comes last; a wrong HETREWARD_LIB is an ImportError that says what to do.

    Needs a separately installed library (scripts/install.sh) for the override:
    HETREWARD_TEST_EXTERNAL_LIB, else HETREWARD_LIB."""
    import glob

    lib = os.environ.get("HETREWARD_TEST_EXTERNAL_LIB") or os.environ.get("HETREWARD_LIB")
    if not lib:
        pytest.fail("set HETREWARD_TEST_EXTERNAL_LIB to an installed libhetreward.so")
    folder = lib if os.path.isdir(lib) else os.path.dirname(lib)
    base = {k: v for k, v in os.environ.items() if k not in ("HETREWARD_LIB", "LD_LIBRARY_PATH")}
    # The subprocess imports the same hetreward package as this test (installed or not).
    base["PYTHONPATH"] = os.path.dirname(os.path.dirname(os.path.abspath(hr.__file__)))
    bundled = glob.glob(os.path.join(os.path.dirname(hr.__file__), "_libhetreward*.so"))
    if bundled:
        out = _import_in_subprocess(base)
        assert out.returncode == 0, out.stderr
        assert out.stdout.split() == [hr.library_version(), os.path.realpath(bundled[0])]
    for env in ({**base, "HETREWARD_LIB": folder}, {**base, "HETREWARD_LIB": lib},
                {**base, "LD_LIBRARY_PATH": folder} if not bundled else None):
        if env is None:
            continue
        out = _import_in_subprocess(env)
        assert out.returncode == 0, out.stderr
        version, path = out.stdout.split()
        assert version == hr.library_version()
        assert os.path.dirname(path) == os.path.realpath(folder), (path, folder)
    out = _import_in_subprocess({**base, "HETREWARD_LIB": "/nonexistent/libhetreward.so"})
    assert out.returncode != 0 and "HETREWARD_LIB" in out.stderr and "ImportError" in out.stderr


def test_calibrated_intervals():
    # Without annotator ids auto picks by shape (issue 11); with them, the cluster jackknife.
    d = {**make_data(300, 4), "cluster": None}
    with hr.Dataset(**make_data(300, 4)) as ds:
        with hr.Fitter(intervals="auto") as f, f.fit(ds) as m:
            info = m.intervals()
            assert (info["requested"], info["method"], info["reps"]) == ("auto", "cluster-onestep", 20)
    with hr.Dataset(**d) as ds:
        with hr.Fitter(intervals="auto", bootstrap_reps=30, seed=2) as f:
            m = f.fit(ds)
        info = m.intervals()
        assert info["requested"] == "auto" and info["method"] in ("bootstrap", "resized")
        assert info["reps"] == 30 and info["seed"] == 2 and info["mle_finite"]
        assert abs(info["d1_over_n"] - D1 / 300) < 1e-15
        w = m.wald()
        assert w.intervals()["method"] == "wald"
        phi = phis(3, 5)
        a, b = m.score(phi), w.score(phi)
        assert np.array_equal(a["reward"], b["reward"]) and not np.array_equal(a["lower"], b["lower"])
        assert np.allclose(b["upper"] - b["reward"], b["reward"] - b["lower"])
        psi = np.full(D2, 0.5)
        sigma, se = m.rationality(1.0, psi)
        ri, wi = m.rationality_interval(1.0, psi), w.rationality_interval(1.0, psi)
        assert ri[:2] == (sigma, se) and ri[2] < ri[3]
        assert abs((wi[3] - wi[0]) - (wi[0] - wi[2])) < 1e-12  # Wald: symmetric
        with pytest.raises(hr.InvalidArgumentError, match="alpha"):
            m.rationality_interval(1.0, psi, alpha=0.0)
        w.close()
        m.close()
        with pytest.raises(hr.InvalidArgumentError, match="bootstrap_reps"):
            hr.Fitter(intervals="bootstrap", bootstrap_reps=5)
        with pytest.raises(ValueError):
            hr.Fitter(intervals="profile")


def test_heterogeneity_diagnostic(data, model):
    # Comparisons independent given the covariates: design effects near 1, no warning; the
    # summary is the largest standardised excess; a dataset without ids is refused by name.
    with hr.Dataset(**data) as ds:
        h = model.heterogeneity(ds)
    p = D1 + D2
    assert h["clusters"] == 20 and len(h["design_effects"]) == p
    assert np.all((h["effective_clusters"] >= 1) & (h["effective_clusters"] <= 19))
    excess = (h["design_effects"] - 1) / np.sqrt(2 / h["effective_clusters"])
    assert h["worst"] == int(np.argmax(excess))
    assert h["excess_z"] == pytest.approx(excess[h["worst"]], rel=1e-12)
    assert np.all((h["design_effects"] > 0.3) & (h["design_effects"] < 2.5))
    de = h["design_effects"][h["worst"]]
    coverage = math.erf(1.959963984540054 / math.sqrt(2 * de))
    assert h["independent_coverage"] == pytest.approx(coverage)
    assert not h["warning"]
    with hr.Dataset(**{**data, "cluster": None}) as ds, \
            pytest.raises(hr.InvalidArgumentError, match="cluster"):
        model.heterogeneity(ds)


def test_leverage_diagnostics(data):
    # 20 annotators: leverages sum to d1 + d2, each coefficient's partial leverages to 1, the
    # effective numbers are 1 / sum P^2 and the summary is the arrays'. The second rationality
    # covariate non-zero for annotator 3 only: that annotator carries gamma_1, and it warns.
    lone = {**data, "psi": data["psi"].copy()}
    lone["psi"][data["cluster"] != 3, 1] = 0.0
    p = D1 + D2
    with hr.Dataset(**lone) as ds, hr.Fitter() as fitter:
        with fitter.fit(ds) as m:
            lev = m.leverage(ds)
    assert list(lev["cluster_ids"]) == list(range(20))
    assert lev["partial"].shape == (20, p)
    # Products in single precision, sums in double (docs/diagnostics.md): 1e-6.
    assert lev["leverage"].sum() == pytest.approx(p, rel=1e-6)
    assert np.allclose(lev["partial"].sum(axis=0), 1.0, atol=1e-6)
    assert np.allclose(lev["effective"], 1.0 / (lev["partial"] ** 2).sum(axis=0), rtol=1e-10)
    assert lev["max_leverage"] == lev["leverage"].max()
    assert lev["max_leverage_cluster"] == int(np.argmax(lev["leverage"]))
    assert lev["min_effective_coefficient"] == D1 + 1 and lev["min_effective"] < 3
    assert lev["max_partial_cluster"] == 3 and lev["max_partial"] > 0.5
    assert lev["warning"]
    with hr.Dataset(**{**data, "cluster": None}) as ds, hr.Fitter() as fitter:
        with fitter.fit(ds) as m, pytest.raises(hr.InvalidArgumentError, match="cluster"):
            m.leverage(ds)


def test_unbounded_coefficients(data):
    # Annotator 3 alone in the second rationality covariate: the cluster jackknife cannot
    # estimate gamma_1 without it, so the model lists it with its carrier and its row of the
    # coefficient table is unbounded; the Wald copy lists none.
    lone = {**data, "psi": data["psi"].copy()}
    lone["psi"][data["cluster"] != 3, 1] = 0.0
    with hr.Dataset(**lone) as ds, hr.Fitter(intervals="cluster-jackknife") as fitter:
        with fitter.fit(ds) as m:
            u = m.unbounded()
            assert u.dtype == hr.UNBOUNDED_DTYPE
            assert [tuple(int(v) for v in r) for r in u] == [(1, 1, 3)]
            row = m.coefficients(which="gamma")[1]
            assert np.isinf(row["se"]) and np.isinf(row["lower"]) and np.isinf(row["upper"])
            assert np.isfinite(m.coefficients(which="gamma")[0]["se"])
            with m.wald() as w:
                assert len(w.unbounded()) == 0
