"""The driver: hetreward_fit_distributed with an oracle that asks an engine for every round."""

from __future__ import annotations

import ctypes
import inspect
import struct
import threading
import time
from ctypes import POINTER, byref, c_double, c_uint64
from dataclasses import dataclass, field
from typing import Callable, List, Optional, Sequence, Tuple

import numpy as np

from .. import _native as _n
from .._core import Fitter, Model, Progress, _check, _ptr
from ..errors import CANCELLED, CancelledError, error_for
from . import _shards
from ._faults import ShardError, Watch, what_round

lib = _n.lib

#: Section bits of a request (the C API's HETREWARD_SHARD_* values) -> their names, from the
#: library (hetreward_option_at).
SECTIONS = _n.option_names(_n.HETREWARD_OPTION_SHARD)


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
    #: Where the round was asked: theta (d1) and gamma (d2).
    theta: np.ndarray = field(compare=False, repr=False, default=None)
    gamma: np.ndarray = field(compare=False, repr=False, default=None)
    #: The mean negative log-likelihood there (rounds that asked for the value; else None).
    neg_loglik: Optional[float] = None
    #: The fit's current point after this round — the lowest-NLL point evaluated so far, the
    #: solver's last accepted iterate — as (theta, gamma): pass it as ``fit(..., start=)`` to
    #: resume a fit that stopped (a lost driver, a failed round) from here.
    resume: Tuple[np.ndarray, np.ndarray] = field(compare=False, repr=False, default=None)


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


def _where(request: bytes) -> Tuple[np.ndarray, np.ndarray]:
    """The request's theta and gamma (the format of Request::to_bytes, src/shard/wire.rs:
    d1 and d2 at bytes 12 and 20, the values after the 40-byte header)."""
    d1, d2 = struct.unpack_from("<QQ", request, 12)
    values = np.frombuffer(request, dtype="<f8", count=d1 + d2, offset=40).copy()
    return values[:d1], values[d1:]


def _mean_nll(stats, p: int) -> Optional[float]:
    n, nll = c_uint64(), c_double()
    grad = np.empty(p)
    if lib.hetreward_shard_stats_value(stats, byref(n), byref(nll), _ptr(grad, c_double), p):
        return None
    return nll.value / max(n.value, 1)


def _takes_watch(method) -> bool:
    try:
        return "watch" in inspect.signature(method).parameters
    except (TypeError, ValueError):
        return False


def _started_at(fitter: Fitter, start):
    """The fitter's parameters with an explicit start at ``start`` = (theta, gamma)."""
    if start is None:
        return None
    theta, gamma = (np.ascontiguousarray(v, dtype=np.float64).reshape(-1) for v in start)
    p = _n.hetreward_fit_params.from_buffer_copy(fitter._params)
    p.init = 2  # explicit
    p.theta0, p.theta0_len = _ptr(theta, c_double), theta.size
    p.gamma0, p.gamma0_len = _ptr(gamma, c_double), gamma.size
    return p, (theta, gamma)


def fit(engine, fitter: Optional[Fitter] = None, *,
        progress: Optional[Callable[[Progress], object]] = None,
        on_round: Optional[Callable[[Round], object]] = None,
        cancel: Optional[threading.Event] = None,
        round_timeout: Optional[float] = None,
        start: Optional[Tuple[Sequence[float], Sequence[float]]] = None
        ) -> Tuple[Model, FitInfo]:
    """Fits the model over ``engine``'s shards; the library runs the solver here and asks the
    engine for the shards' sums once per round (hetreward_fit_distributed).

    ``fitter``: the options (a :class:`hetreward.Fitter`; default ``Fitter()``): tolerance,
    iteration cap, covariance kind, ``require_converged``. The same model as
    ``fitter.fit(all_rows)``, to rounding. ``progress(Progress)`` is called after every solver
    iteration and ``on_round(Round)`` after every round; a truthy return from either cancels
    the fit (:class:`hetreward.CancelledError`), and an exception in either (or in the
    engine, or Ctrl-C) cancels it and is re-raised. Setting ``cancel`` (a
    ``threading.Event``) or calling ``fitter.cancel()`` from another thread stops the fit,
    within :data:`_faults.POLL` seconds even while a round runs (engines that take a
    ``watch``; other engines between rounds). ``round_timeout``: seconds one round (and the
    summary pass) may take before the fit fails with :class:`RoundTimeoutError` naming the
    shards and workers that did not answer (default: no limit). ``start``: (theta, gamma)
    to start from instead of the default start — a :attr:`Round.resume` of an earlier fit
    that stopped, to go on from its last round. Returns the model and a :class:`FitInfo`.

    A round that fails raises a :class:`ShardError` (:class:`WorkerLostError`,
    :class:`RoundTimeoutError`) naming the shards, the workers and the round.
    """
    fitter = fitter if fitter is not None else Fitter()
    watched = _takes_watch(engine.round)
    fitter._cancel_requested.clear()

    def why_cancelled() -> Optional[str]:
        if cancel is not None and cancel.is_set():
            return "the cancel Event was set"
        if fitter._cancel_requested.is_set():
            return "Fitter.cancel() was called"
        return None

    def watch(index: int) -> Watch:
        return Watch(index, round_timeout, why_cancelled)

    t_start = time.perf_counter()
    summaries = (engine.summaries(watch=watch(0)) if _takes_watch(engine.summaries)
                 else engine.summaries())
    summary_seconds = time.perf_counter() - t_start
    arr = (_n.hetreward_shard_summary * len(summaries))()
    for slot, s in zip(arr, summaries):
        slot.n, slot.d1, slot.d2, slot.clustered, slot.schema = s
    p = summaries[0][1] + summaries[0][2] if summaries else 0
    log: List[Round] = []
    state = {"error": None, "best": None}
    worker = getattr(engine, "worker", lambda k: f"the worker of shard {k}")

    def stop(exc: BaseException) -> int:
        state["error"] = exc
        return CANCELLED

    def oracle(req_ptr, req_len, out_answer, _user_data) -> int:
        index = len(log) + 1
        try:
            reason = why_cancelled()
            if reason is not None:
                return stop(CancelledError(CANCELLED, f"cancelled before {what_round(index)}: "
                                                      f"{reason}"))
            request = ctypes.string_at(req_ptr, req_len)
            t0 = time.perf_counter()
            answers: Sequence = (engine.round(request, watch=watch(index)) if watched
                                 else engine.round(request))
            merged = None
            for k, buf in enumerate(answers):
                try:
                    stats = _shards.stats_from_bytes(buf)
                except Exception as exc:
                    name = worker(k) if len(answers) == len(summaries) else "the engine"
                    what = f"shard {k}" if len(answers) == len(summaries) else "the merged answer"
                    raise ShardError(f"{what_round(index)}: {what} from {name} is damaged: "
                                     f"{exc}", [k], [name], index) from exc
                if merged is None:
                    merged = stats
                    out_answer[0] = merged  # the library owns it from here, whatever happens
                    continue
                try:
                    _check(lib.hetreward_shard_stats_merge(merged, stats))
                finally:
                    lib.hetreward_shard_stats_free(stats)
            what, products = _what(request)
            theta, gamma = _where(request)
            nll = _mean_nll(merged, p) if "value" in what else None
            if nll is not None and (state["best"] is None or nll <= state["best"][0]):
                state["best"] = (nll, theta, gamma)
            best = state["best"]
            r = Round(index, what, products, req_len, sum(len(a) for a in answers),
                      max(len(a) for a in answers), time.perf_counter() - t0, theta, gamma,
                      nll, (best[1], best[2]) if best else (theta, gamma))
            log.append(r)
            if on_round is not None and on_round(r):
                return CANCELLED
            return 0
        except BaseException as exc:  # re-raised below, on the caller's thread
            return stop(exc)

    trampoline = _n.hetreward_shard_oracle(oracle)
    rounds = _n.hetreward_distributed_rounds()
    out = POINTER(_n.hetreward_model)()
    explicit = _started_at(fitter, start)
    with fitter._lock, fitter._use() as base:
        c_fitter = base
        # Kept alive until the fit returns: the library calls it.
        progress_trampoline = None
        if progress is not None or explicit is not None:
            if progress is not None:
                progress_trampoline = _n.hetreward_progress_callback(fitter._on_progress)
            c_fitter = fitter._new_c_fitter(progress_trampoline,
                                            explicit[0] if explicit else None)
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
            fitter._cancel_requested.clear()
            fitter._progress = None
            del progress_trampoline
            if c_fitter is not base:
                lib.hetreward_fitter_free(c_fitter)
        error = state["error"] or fitter._callback_error
        fitter._callback_error = None
    if status != 0:
        exc = error_for(status, message, _n.status_name(status))
        if error is not None:
            # The library's status is the context of the caller's or engine's error; an
            # engine's own cause (the worker's exception) stays its cause.
            if error.__cause__ is not None:
                raise error
            raise error from exc
        raise exc
    info = FitInfo(len(summaries), sum(s[0] for s in summaries), rounds.total, rounds.points,
                   rounds.products, rounds.preconditioner, rounds.covariance, tuple(log),
                   summary_seconds, time.perf_counter() - t_start)
    return Model._adopt(out), info
