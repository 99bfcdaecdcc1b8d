"""The driver: hetreward_fit_distributed with an oracle that asks an engine for every round."""

from __future__ import annotations

import ctypes
import struct
import threading
import time
from ctypes import POINTER, byref
from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence, Tuple

from .. import _native as _n
from .._core import Fitter, Model, Progress, _check
from ..errors import error_for
from . import _shards

lib = _n.lib

#: Section bits of a request (the C API's HETREWARD_SHARD_* values).
SECTIONS = {1: "value", 2: "observed products", 4: "expected products", 8: "expected",
            16: "observed", 32: "meat", 64: "clusters"}


@dataclass(frozen=True)
class Round:
    """One round: a request answered by every shard, merged on the driver."""

    index: int  # 1-based
    what: str  # the sections asked for, e.g. "value+expected+observed"
    products: int  # Hessian-vector products in the request
    request_bytes: int  # the request sent to every shard
    answer_bytes: int  # every answer received by the driver, summed
    largest_answer: int  # the largest single answer
    seconds: float  # from sending the request to the merged answer


@dataclass(frozen=True)
class FitInfo:
    """How a distributed fit went: its rounds and where the time went."""

    shards: int
    n: int
    total: int  # rounds (the summary pass excluded)
    points: int
    products: int
    preconditioner: int
    covariance: int
    rounds: Tuple[Round, ...]
    summary_seconds: float  # the summary pass
    seconds: float  # the whole fit, summary pass included

    @property
    def round_seconds(self) -> float:
        """Mean seconds per round."""
        return sum(r.seconds for r in self.rounds) / max(len(self.rounds), 1)


def _what(request: bytes) -> Tuple[str, int]:
    sections, = struct.unpack_from("<I", request, 28)
    products, = struct.unpack_from("<Q", request, 32)
    names = [name for bit, name in SECTIONS.items() if sections & bit]
    return "+".join(names) or "count", products


def fit(engine, fitter: Optional[Fitter] = None, *,
        progress: Optional[Callable[[Progress], object]] = None,
        on_round: Optional[Callable[[Round], object]] = None,
        cancel: Optional[threading.Event] = None) -> Tuple[Model, FitInfo]:
    """Fits the model over ``engine``'s shards; the library runs the solver here and asks the
    engine for the shards' sums once per round (hetreward_fit_distributed).

    ``fitter``: the options (a :class:`hetreward.Fitter`; default ``Fitter()``): tolerance,
    iteration cap, covariance kind, ``require_converged``. The same model as
    ``fitter.fit(all_rows)``, to rounding. ``progress(Progress)`` is called after every solver
    iteration and ``on_round(Round)`` after every round; a truthy return from either cancels
    the fit (:class:`hetreward.CancelledError`), and an exception in either (or in the
    engine, or Ctrl-C) cancels it and is re-raised. Setting ``cancel`` (a
    ``threading.Event``) or calling ``fitter.cancel()`` from another thread stops the fit
    before its next round. Returns the model and a :class:`FitInfo`.
    """
    fitter = fitter if fitter is not None else Fitter()
    t_start = time.perf_counter()
    summaries = engine.summaries()
    summary_seconds = time.perf_counter() - t_start
    arr = (_n.hetreward_shard_summary * len(summaries))()
    for slot, s in zip(arr, summaries):
        slot.n, slot.d1, slot.d2, slot.clustered, slot.schema = s
    log: List[Round] = []
    state = {"error": None}

    def oracle(req_ptr, req_len, out_answer, _user_data) -> int:
        try:
            if cancel is not None and cancel.is_set():
                return 1
            request = ctypes.string_at(req_ptr, req_len)
            t0 = time.perf_counter()
            answers: Sequence = engine.round(request)
            merged = _shards.stats_from_bytes(answers[0])
            out_answer[0] = merged  # the library owns it from here, whatever happens
            for buf in answers[1:]:
                other = _shards.stats_from_bytes(buf)
                try:
                    _check(lib.hetreward_shard_stats_merge(merged, other))
                finally:
                    lib.hetreward_shard_stats_free(other)
            what, products = _what(request)
            r = Round(len(log) + 1, what, products, req_len, sum(len(a) for a in answers),
                      max(len(a) for a in answers), time.perf_counter() - t0)
            log.append(r)
            if on_round is not None and on_round(r):
                return 1
            return 0
        except BaseException as exc:  # re-raised below, on the caller's thread
            state["error"] = exc
            return 1

    trampoline = _n.hetreward_shard_oracle(oracle)
    rounds = _n.hetreward_distributed_rounds()
    out = POINTER(_n.hetreward_model)()
    with fitter._lock:
        base = fitter._live()
        c_fitter = base
        # Kept alive until the fit returns: the library calls it.
        progress_trampoline = None
        if progress is not None:
            progress_trampoline = _n.hetreward_progress_callback(fitter._on_progress)
            c_fitter = fitter._new_c_fitter(progress_trampoline)
        fitter._progress, fitter._callback_error = progress, None
        with fitter._cancel_lock:
            fitter._running = c_fitter
            if fitter._cancel_pending:
                fitter._cancel_pending = False
                lib.hetreward_fitter_cancel(c_fitter)
        try:
            status = lib.hetreward_fit_distributed(c_fitter, arr, len(summaries), trampoline,
                                                   None, byref(out), byref(rounds))
            message = _n.last_error() if status else ""
        finally:
            with fitter._cancel_lock:
                fitter._running = None
            fitter._progress = None
            del progress_trampoline
            if c_fitter is not base:
                lib.hetreward_fitter_free(c_fitter)
        error = state["error"] or fitter._callback_error
        fitter._callback_error = None
    if status != 0:
        exc = error_for(status, message, _n.status_name(status))
        if error is not None:
            raise error from exc
        raise exc
    info = FitInfo(len(summaries), sum(s[0] for s in summaries), rounds.total, rounds.points,
                   rounds.products, rounds.preconditioner, rounds.covariance, tuple(log),
                   summary_seconds, time.perf_counter() - t_start)
    return Model._adopt(out), info
