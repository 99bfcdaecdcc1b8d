"""hetreward.distributed without an engine (LocalEngine: the same bytes travel, in process):
the driver loop of the C API from Python, progress, cancellation and errors. The engines
(Ray, Dask, Spark) are tested in tests_distributed/ (scripts/ci.d/80-distributed.sh)."""

import threading

import numpy as np
import pytest

import hetreward as hr
from hetreward import distributed as hd

from distributed_support import (TOL, array_shards, assert_same, contiguous_parts, paper_data,
                                 random_parts, safetensors_shards, single_process)


@pytest.fixture(scope="module")
def paper():
    data = paper_data()
    return data, single_process(data)


@pytest.mark.parametrize("kind", ["expected", "observed", "robust", "cluster"])
def test_local_engine_equals_one_process(paper, kind):
    data, want = paper
    with hd.LocalEngine(array_shards(data, random_parts(2000, 8))) as eng:
        model, info = hd.fit(eng, hr.Fitter(covariance=kind, tol=TOL))
    assert_same(model, want[kind], 1e-10)
    assert info.total == len(info.rounds) and info.covariance == 1
    # The covariance round fetches only what the kind needs.
    assert info.rounds[-1].what == {"expected": "expected", "observed": "observed",
                                    "robust": "observed+meat",
                                    "cluster": "observed+clusters"}[kind]
    assert all(r.largest_answer <= r.answer_bytes for r in info.rounds)


def test_partitioning_changes_only_rounding(paper):
    data, _ = paper
    models = []
    for parts in (random_parts(2000, 8), random_parts(2000, 8)[::-1], contiguous_parts(2000, 3)):
        with hd.LocalEngine(array_shards(data, parts)) as eng:
            models.append(hd.fit(eng, hr.Fitter(covariance="robust", tol=TOL))[0])
    for m in models[1:]:
        assert_same(m, models[0], 1e-12)


def test_progress_and_round_callbacks(paper):
    data, _ = paper
    progress, rounds = [], []
    with hd.LocalEngine(array_shards(data, random_parts(2000, 4))) as eng:
        model, info = hd.fit(eng, hr.Fitter(), progress=progress.append, on_round=rounds.append)
    assert progress and isinstance(progress[0], hr.Progress)
    assert [r.index for r in rounds] == list(range(1, info.total + 1))
    assert rounds == list(info.rounds)


def test_cancellation_and_errors_stop_the_fit_cleanly(paper):
    data, _ = paper
    with hd.LocalEngine(array_shards(data, random_parts(2000, 4))) as eng:
        with pytest.raises(hr.CancelledError,
                           match=r"the oracle returned 9 \(HETREWARD_CANCELLED\) in round 2"):
            hd.fit(eng, hr.Fitter(), on_round=lambda r: r.index == 2)
        with pytest.raises(hr.CancelledError):
            hd.fit(eng, hr.Fitter(), progress=lambda p: True)
        stop = threading.Event()
        stop.set()
        # A cancellation, said as one (not "the oracle returned 1 (HETREWARD_NULL_POINTER)").
        with pytest.raises(hr.CancelledError,
                           match="^HETREWARD_CANCELLED: cancelled during the summary pass: "
                                 "the cancel Event was set; still out: shard 0 on this process"):
            hd.fit(eng, hr.Fitter(), cancel=stop)

        class Boom(RuntimeError):
            pass

        def fail(r):
            raise Boom("engine lost")

        with pytest.raises(Boom, match="engine lost"):
            hd.fit(eng, hr.Fitter(), on_round=fail)
        # A fitter the distributed fit refuses, with the library's message.
        with pytest.raises(hr.InvalidArgumentError, match="newton solver only"):
            hd.fit(eng, hr.Fitter(solver="agd"))
        # After all that the engine and a fitter still fit.
        model, _ = hd.fit(eng, hr.Fitter())
        assert model.report.converged


def test_mismatched_shards_fail_before_any_round(paper):
    data, _ = paper
    z, psi0, psi, y, cl = data
    good = array_shards(data, random_parts(2000, 2))
    other = hd.ArrayShard(np.ascontiguousarray(z[:500, :2]), psi0[:500].copy(),
                          np.ascontiguousarray(psi[:500]), y[:500].copy(), cl[:500].copy())
    rounds = []
    with hd.LocalEngine(good + [other]) as eng:
        with pytest.raises(hr.DimensionMismatchError, match="shard 2"):
            hd.fit(eng, hr.Fitter(), on_round=rounds.append)
    assert rounds == []


def test_shards_smaller_than_the_parameter_count_fit_as_one(tmp_path):
    """Identifiability is the merged data's (issue 22): 3-row shards (5 parameters; psi0 in
    the span of each shard's psi) from arrays and from safetensors files fit to the
    one-process model; too few rows in all fail before any round, naming the shards."""
    data = paper_data(n=600)
    want = single_process(data, ("expected",))["expected"]
    parts = contiguous_parts(600, 200)
    with pytest.raises(hr.InvalidArgumentError, match="3 samples cannot identify 5"):
        hr.Dataset(*(np.ascontiguousarray(a[parts[0]]) for a in data))
    sources = array_shards(data, parts)
    sources[:20] = safetensors_shards(data, parts[:20], tmp_path)
    with hd.LocalEngine(sources) as eng:
        model, info = hd.fit(eng, hr.Fitter(tol=TOL))
    assert_same(model, want, 1e-10)
    assert info.shards == 200
    rounds = []
    with hd.LocalEngine(sources[:1]) as eng:
        with pytest.raises(hr.InvalidArgumentError,
                           match="`shards`: 3 samples cannot identify 5 parameters"):
            hd.fit(eng, hr.Fitter(), on_round=rounds.append)
    assert rounds == []
