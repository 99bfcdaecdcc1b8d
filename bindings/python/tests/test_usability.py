"""What users of the Python package expect beyond the C API: fits that ignore the GIL when no
progress callback is given, Ctrl-C through hetreward_fitter_cancel, pickling, small inputs
converted, and result arrays whose bytes depend only on the results."""

import copy
import ctypes
import os
import pickle
import signal
import threading
import time

import numpy as np
import pytest

import hetreward as hr
from hetreward import _core
from conftest import D1, make_data, phis


def _agd(iterations):
    """An agd fit of exactly `iterations` iterations (tol 0: it never converges first)."""
    return hr.Fitter(solver="agd", init="random", restarts=0, max_iter=iterations, tol=0.0,
                     threads=1)


def test_fit_without_callback_does_not_wait_for_the_gil():
    """A fit without a progress callback runs no Python code, so a thread holding the GIL
    does not stop it. Here the main thread holds the GIL for HOLD seconds (a C call through
    ctypes.PyDLL keeps it) while a fit runs on another thread: the fit goes on and its time,
    as the library measures it, stays that of a fit alone. A trampoline installed in every
    fit (as before) waits for the GIL at the next iteration: the fit then takes >= HOLD."""
    hold = 3.0
    usleep = ctypes.PyDLL(None).usleep  # PyDLL: the GIL stays held during the call
    usleep.argtypes = [ctypes.c_uint]
    with hr.Dataset(**make_data(2000, 7)) as ds, _agd(1000) as fitter:
        alone = fitter.fit(ds).report
        result = {}
        entering = threading.Event()

        def fit():
            entering.set()
            result["report"] = fitter.fit(ds).report

        worker = threading.Thread(target=fit)
        worker.start()
        entering.wait()
        time.sleep(0.05)  # the worker enters the C call (it needs microseconds)
        usleep(int(hold * 1e6))
        worker.join()
    busy = result["report"]
    assert alone.iterations == busy.iterations == 1000
    assert busy.seconds < 2 * alone.seconds + 1.0 < hold, (alone.seconds, busy.seconds)


def test_progress_callback_still_runs_and_cancels():
    """The trampoline is installed for a fit given a callback, and only for that fit."""
    with hr.Dataset(**make_data(300, 5)) as ds, _agd(50) as fitter:
        seen = []
        m = fitter.fit(ds, progress=lambda p: seen.append(p.iteration))
        assert seen == list(range(50)) and m.report.iterations == 50  # called before each
        seen.clear()
        fitter.fit(ds)
        assert seen == []
        with pytest.raises(hr.CancelledError):
            fitter.fit(ds, progress=lambda p: p.iteration >= 5)
        assert fitter.fit(ds).report.iterations == 50  # no request left over


def test_ctrl_c_calls_hetreward_fitter_cancel(monkeypatch, sigint_raises):
    """Ctrl-C during a fit (no callback: no trampoline to notice it) is passed to the
    library by hetreward_fitter_cancel, stops the fit, and leaves the fitter usable."""
    if threading.current_thread() is not threading.main_thread():
        pytest.fail("must run in the main thread")
    calls = []
    real = _core.lib.hetreward_fitter_cancel

    def spy(fitter):
        calls.append(fitter)
        real(fitter)

    monkeypatch.setattr(_core.lib, "hetreward_fitter_cancel", spy)
    with hr.Dataset(**make_data(300, 5)) as ds, _agd(10**9) as f:
        timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
        timer.start()
        t0 = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            f.fit(ds)
        timer.join()
        assert len(calls) == 1 and time.monotonic() - t0 < 30
        # The fit has ended when fit() returns (not merely been asked to).
        assert not [t for t in threading.enumerate() if t.name == "hetreward-fit"]
        # No request is left over: the same fitter runs iterations again (a leftover request
        # would cancel before the first), here until its callback stops it.
        seen = []
        with pytest.raises(hr.CancelledError):
            f.fit(ds, progress=lambda p: seen.append(p.iteration) or p.iteration >= 3)
        assert seen == [0, 1, 2, 3]


def test_cancel_before_fit_applies_to_the_next_fit_with_or_without_callback():
    with hr.Dataset(**make_data(300, 5)) as ds, _agd(20) as f:
        f.cancel()
        with pytest.raises(hr.CancelledError):
            f.fit(ds, progress=lambda p: None)
        assert f.fit(ds).report.iterations == 20
        f.cancel()
        with pytest.raises(hr.CancelledError):
            f.fit(ds)
        assert f.fit(ds, progress=lambda p: None).report.iterations == 20


def test_models_and_fitters_pickle(model):
    """Models pickle as their model-file bytes (multiprocessing, joblib, Ray need it);
    fitters as their options."""
    for clone in (pickle.loads(pickle.dumps(model)), copy.deepcopy(model)):
        assert clone is not model and clone.to_bytes() == model.to_bytes()
        for attr in ("theta", "gamma", "theta_se", "gamma_se"):
            assert np.array_equal(getattr(clone, attr), getattr(model, attr))
        assert clone.report == model.report
        phi = phis(8, 3)
        assert model.score(phi).tobytes() == clone.score(phi).tobytes()
        clone.close()
    closed = hr.Model.from_bytes(model.to_bytes())
    closed.close()
    with pytest.raises(ValueError, match="closed"):
        pickle.dumps(closed)
    data = make_data(300, 5)
    fitter = hr.Fitter(solver="agd", max_iter=30, theta0=[0.1] * D1, init="explicit",
                       gamma0=[0.0, 0.0])
    twin = pickle.loads(pickle.dumps(fitter))
    with hr.Dataset(**data) as ds:
        assert np.array_equal(fitter.fit(ds).theta, twin.fit(ds).theta)


def test_small_inputs_are_converted(model):
    """Labels as ints, bools or a list; a penalty list; one answer as a 1-D array-like:
    converted, with the same results as the exact types."""
    d = make_data(300, 9)
    with hr.Fitter() as f:
        with hr.Dataset(**d) as ds:
            want = f.fit(ds).theta
        for y in (d["y"].astype(np.int64), d["y"].astype(bool), d["y"].astype(int).tolist(),
                  d["y"].astype(np.float32)):
            with hr.Dataset(**{**d, "y": y}) as ds:
                assert np.array_equal(f.fit(ds).theta, want)
        f32 = {k: (v.astype(np.float32) if v.dtype == np.float64 else v) for k, v in d.items()}
        with hr.Dataset(**{**f32, "y": d["y"].astype(np.int8)}) as ds:
            assert ds.n == 300
    phi = phis(5, 4)
    pen = [0.0, 0.5, 1.0, 0.25, 3.0]
    assert np.array_equal(model.select(phi, penalty=pen)[1],
                          model.select(phi, penalty=np.array(pen))[1])
    assert model.select(phi, penalty=[0, 1, 0, 1, 0])[1]["penalty"].tolist() == [0, 1, 0, 1, 0]
    one = model.score(phi[2])
    assert one.shape == (1,) and one.tobytes() == model.score(phi[2:3]).tobytes()
    assert model.score(phi[2].astype(np.float64).tolist()).tobytes() == one.tobytes()
    c = model.compare(phi[0], phi[1].tolist())
    assert c.tobytes() == model.compare(phi[0:1], phi[1:2]).tobytes()
    assert model.select(phi[3])[0] == 0


def test_big_arrays_stay_strict_and_in_place(model):
    """2-D feature arrays are never converted: wrong dtype, order or type is an error, and
    the right ones are read in place (a 1-D float32 answer is a view, not a copy)."""
    phi = phis(6, 2)
    with pytest.raises(TypeError, match="float32"):
        model.score(phi.astype(np.float64))
    with pytest.raises(TypeError, match="numpy.ndarray"):
        model.score(phi.tolist())
    with pytest.raises(ValueError, match="C-contiguous"):
        model.score(np.asfortranarray(phi))
    d = make_data(100, 3)
    with pytest.raises(TypeError, match="dtype"):
        hr.Dataset(d["z"].astype(np.float32), d["psi0"], d["psi"], d["y"])
    with pytest.raises(TypeError, match="int64"):
        hr.Dataset(**{**d, "cluster": d["cluster"].astype(np.int32)})
    assert np.shares_memory(_core._answers(phi[1], "phi"), phi)
    assert _core._answers(phi, "phi") is phi
    y = d["y"]
    assert _core._small(y, "y", np.float64) is y


def test_result_padding_is_zero(model):
    """The comparison record has 4 padding bytes after `verdict`: they are zero, so equal
    results are equal bytes (tobytes, hashing), whatever the memory held before."""
    phi0, phi1 = phis(64, 5), phis(64, 6)
    assert hr.COMPARISON_DTYPE.itemsize == 48 and hr.COMPARISON_DTYPE.fields["verdict"][1] == 40
    blobs = set()
    for fill in (0x00, 0xAB, 0xFF, 0x5A):
        for _ in range(4):
            # Dirty freed memory of the size numpy is about to allocate.
            junk = np.full(64 * 48, fill, dtype=np.uint8)
            del junk
            out = model.compare(phi0, phi1)
            raw = out.view(np.uint8).reshape(64, 48)
            assert not raw[:, 44:].any()
            blobs.add(out.tobytes())
    assert len(blobs) == 1
