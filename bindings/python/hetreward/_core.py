"""Dataset, Fitter and Model: thin classes over the C handles of include/hetreward.h."""

from __future__ import annotations

import ctypes
import os
import threading
import weakref
from ctypes import POINTER, byref, c_double, c_float, c_int64, c_size_t, c_uint8
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Optional, Sequence, Tuple, Union

import numpy as np

from . import _native as _n
from .errors import CANCELLED as _CANCELLED
from .errors import DimensionMismatchError, HetrewardError, error_for  # noqa: F401

if TYPE_CHECKING:
    from ._summary import Summary

lib = _n.lib

# Option tables (name -> code, or code -> name for outputs), built from the library's names at
# import (hetreward_option_at): the names are the CLI's, defined once in the library.
SOLVERS = _n.option_codes(_n.HETREWARD_OPTION_SOLVER)
COVARIANCES = _n.option_codes(_n.HETREWARD_OPTION_COVARIANCE)
INITS = _n.option_codes(_n.HETREWARD_OPTION_INIT)
TERMINATIONS = _n.option_names(_n.HETREWARD_OPTION_TERMINATION)
DIFF_METHODS = _n.option_codes(_n.HETREWARD_OPTION_DIFF)
POLICIES = _n.option_codes(_n.HETREWARD_OPTION_POLICY)
INTERVALS = _n.option_codes(_n.HETREWARD_OPTION_INTERVALS)
COEFFICIENTS = _n.option_codes(_n.HETREWARD_OPTION_COEFFICIENTS)
#: Verdict names of Model.compare's ``verdict`` field, indexed by its value ("tie", "win",
#: "loss").
_verdicts = _n.option_names(_n.HETREWARD_OPTION_VERDICT)
VERDICTS = tuple(_verdicts[code] for code in range(len(_verdicts)))

#: numpy dtypes laid out exactly as the C output structs, so the library writes straight into
#: the arrays Model.score / compare / select return.
REWARD_DTYPE = np.dtype([("reward", "<f8"), ("se", "<f8"), ("lower", "<f8"), ("upper", "<f8")])
COMPARISON_DTYPE = np.dtype(
    [("diff", "<f8"), ("se", "<f8"), ("lower", "<f8"), ("upper", "<f8"), ("p_value", "<f8"),
     ("verdict", "<u4")],
    align=True,
)
CANDIDATE_DTYPE = np.dtype(
    [("reward", "<f8"), ("se", "<f8"), ("lower", "<f8"), ("upper", "<f8"), ("penalty", "<f8"),
     ("score", "<f8")]
)
#: One row of Model.coefficients(): ``block`` 0 theta, 1 gamma; ``index`` in that vector.
COEFFICIENT_DTYPE = np.dtype(
    [("block", "<u4"), ("index", "<u8"), ("estimate", "<f8"), ("se", "<f8"), ("z", "<f8"),
     ("p_value", "<f8"), ("lower", "<f8"), ("upper", "<f8")],
    align=True,
)
#: One row of Model.unbounded(): ``block`` 0 theta, 1 gamma; ``index`` in that vector;
#: ``annotator`` the id of the annotator that carries the coefficient alone.
UNBOUNDED_DTYPE = np.dtype([("block", "<u4"), ("index", "<u8"), ("annotator", "<i8")],
                           align=True)
for _dt, _st in ((REWARD_DTYPE, _n.hetreward_reward), (COMPARISON_DTYPE, _n.hetreward_comparison),
                 (CANDIDATE_DTYPE, _n.hetreward_candidate),
                 (COEFFICIENT_DTYPE, _n.hetreward_coefficient),
                 (UNBOUNDED_DTYPE, _n.hetreward_unbounded)):
    assert _dt.itemsize == ctypes.sizeof(_st), (_dt, _st)


def _check(status: int) -> None:
    """Raises the exception of a nonzero status, with this thread's last error message."""
    if status != 0:
        raise error_for(status, _n.last_error(), _n.status_name(status))


def _code(table: dict, value: Union[str, int], what: str) -> int:
    if isinstance(value, str):
        try:
            return table[value.lower()]
        except KeyError:
            raise ValueError(f"{what} must be one of {sorted(table)}, got {value!r}") from None
    return int(value)


def _array(a, name: str, dtypes, ndim: int, optional: bool = False):
    """Checks that `a` can be handed to C in place: a numpy array of one of `dtypes`,
    C-contiguous, aligned, with `ndim` dimensions. Returns it unchanged (never a copy)."""
    if a is None:
        if optional:
            return None
        raise TypeError(f"{name} is required")
    dtypes = tuple(np.dtype(d) for d in dtypes)
    want = " or ".join(str(d) for d in dtypes)
    if not isinstance(a, np.ndarray):
        raise TypeError(
            f"{name} must be a numpy.ndarray of {want}, got {type(a).__name__} "
            f"(convert once with np.ascontiguousarray({name}, dtype=np.{dtypes[0]}))"
        )
    if a.dtype not in dtypes:
        raise TypeError(
            f"{name} has dtype {a.dtype}, expected {want} (hetreward never converts arrays "
            f"silently: use {name}.astype(np.{dtypes[0]}))"
        )
    if a.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimension(s), got shape {a.shape}")
    if not a.flags.c_contiguous:
        raise ValueError(
            f"{name} is not C-contiguous (row-major); hetreward reads arrays in place, so pass "
            f"np.ascontiguousarray({name})"
        )
    if not a.flags.aligned:
        raise ValueError(f"{name} is not aligned for its dtype")
    return a


def _small(a, name: str, dtype, ndim: int = 1, optional: bool = False):
    """A small input converted once (a copy when needed): labels, penalties, one answer's
    embedding. Anything numpy reads as numbers of the right shape is accepted (lists, ints,
    bools, another float type); an array already right is passed as it is."""
    if a is None:
        if optional:
            return None
        raise TypeError(f"{name} is required")
    try:
        out = np.ascontiguousarray(a, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be numbers convertible to {np.dtype(dtype)}: {exc}") from None
    if out.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimension(s), got shape {out.shape}")
    return out


def _answers(phi, name: str):
    """Answers' embeddings, float32 (m, d1): a 2-D batch must be a float32 C-contiguous numpy
    array (read in place, never converted); one answer given as a 1-D array-like of d1 numbers
    is small and is converted to a (1, d1) float32 array."""
    if not isinstance(phi, np.ndarray) or phi.ndim == 1:
        if np.ndim(phi) == 1:
            return _small(phi, name, np.float32).reshape(1, -1)
    return _array(phi, name, (np.float32,), 2)


def _padding(dtype: np.dtype) -> np.ndarray:
    """The byte offsets of a structured dtype that no field covers."""
    covered = np.zeros(dtype.itemsize, dtype=bool)
    for field_dtype, offset in (f[:2] for f in dtype.fields.values()):
        covered[offset:offset + field_dtype.itemsize] = True
    return np.flatnonzero(~covered)


def _zero_padding(out: np.ndarray) -> None:
    """Sets the padding bytes of a structured result array to zero."""
    pad = _padding(out.dtype)
    if pad.size and out.size:
        out.view(np.uint8).reshape(out.size, out.dtype.itemsize)[:, pad] = 0


def _ptr(a, ctype):
    """Pointer to the first element of a checked array (NULL for None or an empty array)."""
    if a is None or a.size == 0:
        return None
    return a.ctypes.data_as(POINTER(ctype))


class _Use:
    """One use of a handle's C pointer, for the duration of the C call(s) made inside
    ``with handle._use() as ptr:``. Raises ValueError if the handle is closed; a close()
    during the use frees the C object when the last use ends (see _Handle)."""

    __slots__ = ("_h",)

    def __init__(self, handle):
        self._h = handle  # a strong reference: no finalizer runs while a use is open

    def __enter__(self):
        h = self._h
        with h._guard:
            if h._closed:
                raise ValueError(f"I/O operation on a closed {type(h).__name__}")
            h._uses += 1
            return h._ptr

    def __exit__(self, *exc) -> None:
        h = self._h
        with h._guard:
            h._uses -= 1
            last = h._closed and h._uses == 0
        if last:
            h._finalizer()  # close() was called during this use: free now, once


class _Handle:
    """An owned C handle, freed once by close(), the context manager, or the finalizer.

    Every call that passes the pointer to C runs inside ``with self._use() as ptr:``, which
    counts it as a use. close() marks the handle closed (new uses raise ValueError) and frees
    the C object at once if no use is in flight, else the last use frees it when its C call
    returns: close() never waits and never frees an object another thread is using, in
    whatever order threads call. The finalizer (garbage collection) cannot run during a use,
    which holds a reference to the handle. The guard is a plain lock held only for a counter
    update, never across a C call."""

    _free = None  # the C free function, set by subclasses

    def __init__(self, ptr):
        self._guard = threading.Lock()
        self._uses = 0
        self._closed = False
        self._ptr = ptr
        self._finalizer = weakref.finalize(self, type(self)._free, ptr)

    def _use(self) -> _Use:
        return _Use(self)

    def _call(self, fn, *args):
        """``fn(ptr, *args)`` with this handle's pointer, as one use (_Use inlined: this is
        the hot path of score and the other one-call methods)."""
        guard = self._guard
        with guard:
            if self._closed:
                raise ValueError(f"I/O operation on a closed {type(self).__name__}")
            self._uses += 1
        try:
            return fn(self._ptr, *args)
        finally:
            with guard:
                self._uses -= 1
                last = self._closed and self._uses == 0
            if last:
                self._finalizer()

    def close(self) -> None:
        """Marks the object closed (later calls raise ValueError) and frees the C object: now,
        or when calls other threads are making with it return. Idempotent."""
        with self._guard:
            if self._closed:
                return
            self._closed = True
            free_now = self._uses == 0
        if free_now:
            self._finalizer()

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Dataset(_Handle):
    """A validated training set of n pairwise comparisons (copied into the library).

    ``Dataset(z, psi0, psi, y, cluster=None)``: ``z`` (n, d1) feature differences
    phi(a1) - phi(a0), ``psi0`` (n,) the fixed part of each annotator's rationality, ``psi``
    (n, d2) annotator covariates (``None`` when d2 = 0), ``y`` (n,) labels 0/1 (1 = the
    annotator preferred a1), ``cluster`` optional (n,) int64 annotator ids (for the cluster
    covariance). Float arrays are all float64 or all float32, C-contiguous, and read in place;
    only the labels ``y`` are converted (ints, bools or a list of 0/1 are fine).
    Immutable: any number of threads may fit with one dataset.
    """

    _free = staticmethod(lib.hetreward_dataset_free)

    def __init__(self, z, psi0, psi, y, cluster=None):
        arrays = self._checked(("z",), (z,), psi0, psi, y, cluster)
        self._init_from(lib.hetreward_dataset_new, lib.hetreward_dataset_new_f32, *arrays)

    @classmethod
    def from_pairs(cls, phi0, phi1, psi0, psi, y, cluster=None) -> "Dataset":
        """A dataset from both answers' features, (n, d1) each: z = phi1 - phi0 row by row."""
        self = cls.__new__(cls)
        arrays = cls._checked(("phi0", "phi1"), (phi0, phi1), psi0, psi, y, cluster)
        self._init_from(lib.hetreward_dataset_from_pairs, lib.hetreward_dataset_from_pairs_f32,
                        *arrays)
        return self

    @classmethod
    def load(cls, path) -> "Dataset":
        """Reads a .csv or .safetensors training set (docs/contract.md §6)."""
        return cls._loaded(lib.hetreward_dataset_load, path)

    @classmethod
    def _loaded(cls, loader, path) -> "Dataset":
        out = POINTER(_n.hetreward_dataset)()
        _check(loader(_path(path), byref(out)))
        self = cls.__new__(cls)
        _Handle.__init__(self, out)
        return self

    @classmethod
    def _shard(cls, z, psi0, psi, y, cluster=None, *, path=None) -> "Dataset":
        """One shard of a distributed fit, from arrays (as the constructor) or a file
        (``path``, as :meth:`load`): identifiability (more rows than parameters, psi0) is
        checked on the merged shards only (hetreward_dataset_new_shard)."""
        if path is not None:
            return cls._loaded(lib.hetreward_dataset_load_shard, path)
        self = cls.__new__(cls)
        arrays = cls._checked(("z",), (z,), psi0, psi, y, cluster)
        self._init_from(lib.hetreward_dataset_new_shard, lib.hetreward_dataset_new_shard_f32,
                        *arrays)
        return self

    @staticmethod
    def _checked(names, feats, psi0, psi, y, cluster):
        floats = (np.float64, np.float32)
        feats = tuple(_array(f, nm, floats, 2) for nm, f in zip(names, feats))
        dtype = feats[0].dtype
        psi0 = _array(psi0, "psi0", (dtype,), 1)
        y = _small(y, "y", dtype)  # labels: small, converted (ints, bools, lists)
        psi = _array(psi, "psi", (dtype,), 2, optional=True)
        cluster = _array(cluster, "cluster", (np.int64,), 1, optional=True)
        n, d1 = feats[0].shape
        d2 = 0 if psi is None else psi.shape[1]
        for nm, a in zip(names, feats):
            if a.shape != (n, d1):
                raise DimensionMismatchError(3, f"{nm} has shape {a.shape}, {names[0]} {(n, d1)}")
        for nm, a, shape in (("psi0", psi0, (n,)), ("y", y, (n,)),
                             ("psi", psi, (n, d2)), ("cluster", cluster, (n,))):
            if a is not None and a.shape != shape:
                raise DimensionMismatchError(
                    3, f"{nm} has shape {a.shape}, expected {shape} (n = {n} rows of {names[0]})")
        return (n, d1, d2, dtype, feats, psi0, psi, y, cluster)

    def _init_from(self, f64, f32, n, d1, d2, dtype, feats, psi0, psi, y, cluster):
        fn, ct = (f64, c_double) if dtype == np.float64 else (f32, c_float)
        out = POINTER(_n.hetreward_dataset)()
        _check(fn(n, d1, d2, *(_ptr(f, ct) for f in feats), _ptr(psi0, ct), _ptr(psi, ct),
                  _ptr(y, ct), _ptr(cluster, c_int64), byref(out)))
        _Handle.__init__(self, out)

    @property
    def n(self) -> int:
        return self._call(lib.hetreward_dataset_n)

    @property
    def d1(self) -> int:
        return self._call(lib.hetreward_dataset_d1)

    @property
    def d2(self) -> int:
        return self._call(lib.hetreward_dataset_d2)

    def __repr__(self) -> str:
        try:
            with self._use() as p:  # one use: a close() from another thread cannot split it
                n, d1, d2 = (lib.hetreward_dataset_n(p), lib.hetreward_dataset_d1(p),
                             lib.hetreward_dataset_d2(p))
        except ValueError:
            return "<hetreward.Dataset (closed)>"
        return f"<hetreward.Dataset n={n} d1={d1} d2={d2}>"


def _path(path) -> bytes:
    return os.fsencode(path)


@dataclass(frozen=True)
class Progress:
    """What a progress callback sees before each solver iteration: the state it starts from
    (``iteration`` = iterations done so far in this start, 0 for the start point)."""

    start: int  # which start is running, 0-based
    iteration: int  # iterations done in this start
    max_iter: int  # the iteration cap of this start
    neg_loglik: float  # current mean negative log-likelihood
    grad_norm: float  # current gradient norm (the fit stops when it is <= tol)


@dataclass(frozen=True)
class FitReport:
    """How a model was fitted (hetreward_fit_report)."""

    solver: str
    covariance: str
    termination: str
    converged: bool
    iterations: int
    total_iterations: int
    starts: int
    grad_norm: float
    neg_loglik: float
    seconds: float
    tol: float


_NAMES_OF = {
    "solver": _n.option_names(_n.HETREWARD_OPTION_SOLVER),
    "covariance": _n.option_names(_n.HETREWARD_OPTION_COVARIANCE),
    "intervals": _n.option_names(_n.HETREWARD_OPTION_INTERVALS),
}


class Fitter(_Handle):
    """Fit options (hetreward_fit_params); fits any number of datasets, one at a time.

    Keyword arguments left at ``None`` take the library's defaults: ``solver`` "newton" or
    "agd"; ``covariance`` "expected" (the paper's), "observed", "robust" or "cluster";
    ``eta1`` 0.1, ``eta2`` 0.08 (agd step sizes); ``max_iter`` 0 = the solver's default;
    ``tol`` 1e-8; ``seed`` 0; ``init`` "default", "random" or "explicit" (with ``theta0``,
    ``gamma0``); ``restarts`` 2; ``threads`` 0 = all cores (results do not depend on it);
    ``require_converged`` False; ``intervals`` "wald" (the paper's), "bootstrap", "resized",
    "cluster-jackknife", "cluster-onestep" (both need cluster ids) or "auto" (see
    Model.intervals); ``bootstrap_reps`` 0 = the method's default (10..100000). A
    Fitter pickles as its options.
    """

    _free = staticmethod(lib.hetreward_fitter_free)

    def __init__(self, *, solver=None, covariance=None, eta1=None, eta2=None, max_iter=None,
                 tol=None, seed=None, init=None, restarts=None, theta0=None, gamma0=None,
                 threads=None, require_converged=None, intervals=None, bootstrap_reps=None):
        self._options = {k: v for k, v in locals().items() if k != "self" and v is not None}
        p = lib.hetreward_fit_default_params()
        if intervals is not None:
            p.intervals = _code(INTERVALS, intervals, "intervals")
        if bootstrap_reps is not None:
            p.bootstrap_reps = bootstrap_reps
        if solver is not None:
            p.solver = _code(SOLVERS, solver, "solver")
        if covariance is not None:
            p.covariance = _code(COVARIANCES, covariance, "covariance")
        if init is not None:
            p.init = _code(INITS, init, "init")
        for field, value in (("eta1", eta1), ("eta2", eta2), ("max_iter", max_iter), ("tol", tol),
                             ("seed", seed), ("restarts", restarts), ("threads", threads),
                             ("require_converged", require_converged)):
            if value is not None:
                setattr(p, field, value)
        # Small parameter vectors: converted explicitly. Kept alive with the params, which
        # create a second C fitter (with the progress trampoline) for fits given a callback.
        self._keep = []
        for field, value in (("theta0", theta0), ("gamma0", gamma0)):
            if value is not None:
                arr = np.ascontiguousarray(value, dtype=np.float64).reshape(-1)
                self._keep.append(arr)
                setattr(p, field, _ptr(arr, c_double))
                setattr(p, field + "_len", arr.size)
        self._params = p
        # The progress trampoline is installed only in fits given a callback (a C fitter of
        # their own, made per fit): without one the library never waits for the GIL.
        self._progress: Optional[Callable] = None
        self._callback_error: Optional[BaseException] = None
        self._lock = threading.Lock()  # one fit at a time
        self._cancel_lock = threading.Lock()  # guards _running and _cancel_pending
        self._running = None  # the C fitter of the fit in progress
        self._cancel_pending = False  # cancel() while no fit ran: applies to the next fit
        # Set by cancel() during a fit: what a distributed fit watches while a round runs.
        self._cancel_requested = threading.Event()
        _Handle.__init__(self, self._new_c_fitter(None))

    def _new_c_fitter(self, trampoline, params=None):
        """A C fitter with these options (or ``params``: the options changed by the caller)
        and ``trampoline`` as its progress callback."""
        p = _n.hetreward_fit_params.from_buffer_copy(params or self._params)  # progress: NULL
        if trampoline is not None:
            p.progress = trampoline
        out = POINTER(_n.hetreward_fitter)()
        _check(lib.hetreward_fitter_new(byref(p), byref(out)))
        return out

    def __reduce__(self):
        return (_fitter_from_options, (dict(self._options),))

    def _on_progress(self, progress_ptr, _user_data) -> int:
        cb = self._progress
        if cb is None:
            return 0
        p = progress_ptr.contents
        try:
            stop = cb(Progress(p.start, p.iteration, p.max_iter, p.neg_loglik, p.grad_norm))
        except BaseException as exc:  # re-raised by fit() on the caller's thread
            self._callback_error = exc
            return 1
        return 1 if stop else 0

    def fit(self, dataset: Dataset, progress: Optional[Callable[[Progress], object]] = None
            ) -> "Model":
        """Fits a model to ``dataset`` and blocks until done.

        ``progress(Progress)`` is called before every solver iteration, on a library worker
        thread; a truthy return value cancels the fit (:class:`CancelledError`), ``None`` or
        ``False`` lets it continue, and an exception cancels it and is re-raised here.
        Without ``progress`` no Python code runs during the fit, so the fit does not slow
        down when other threads hold the GIL.
        Ctrl-C (KeyboardInterrupt) in the main thread cancels the fit
        (hetreward_fitter_cancel) and is re-raised once the fit has stopped.
        Raises :class:`CancelledError`, :class:`NotConvergedError` (with
        ``require_converged``), :class:`SingularInformationError`,
        :class:`InvalidArgumentError` (e.g. cluster covariance without cluster ids), ...
        """
        with self._lock:
            # Uses of both handles for the whole fit: a close() of the dataset (or of this
            # fitter, which also waits for the lock) while it runs frees nothing until the
            # fit returns.
            with self._use() as base, dataset._use() as data:
                trampoline = None
                if progress is not None:
                    trampoline = _n.hetreward_progress_callback(self._on_progress)
                    fitter = self._new_c_fitter(trampoline)
                else:
                    fitter = base
                self._progress, self._callback_error = progress, None
                result = {}

                done = threading.Event()

                def work():
                    try:
                        out = POINTER(_n.hetreward_model)()
                        status = lib.hetreward_fitter_fit(fitter, data, byref(out))
                        # The message is per thread: read it on the thread that made the call.
                        result["status"] = status
                        result["message"] = _n.last_error() if status else ""
                        result["out"] = out
                    finally:
                        done.set()

                with self._cancel_lock:
                    self._running = fitter
                    if self._cancel_pending:
                        self._cancel_pending = False
                        lib.hetreward_fitter_cancel(fitter)
                interrupted = False
                try:
                    if threading.current_thread() is threading.main_thread():
                        # Run in a helper thread so that Ctrl-C reaches this one and can stop it.
                        # Waits on an Event, not Thread.join: a join interrupted by Ctrl-C may
                        # mark a thread that still runs as finished (CPython 3.11's
                        # _wait_for_tstate_lock), and this fit must end before the fitter is
                        # used or freed again.
                        worker = threading.Thread(target=work, name="hetreward-fit", daemon=True)
                        try:
                            worker.start()
                            while not done.wait(0.25):
                                pass
                        except KeyboardInterrupt:
                            interrupted = True
                            lib.hetreward_fitter_cancel(fitter)
                            while worker.ident is not None and not done.is_set():
                                try:
                                    done.wait(0.25)
                                except KeyboardInterrupt:  # already cancelling
                                    pass
                            raise
                    else:
                        work()
                finally:
                    with self._cancel_lock:
                        self._running = None
                    self._progress = None
                    if fitter is not base:
                        lib.hetreward_fitter_free(fitter)
                    elif interrupted and result.get("status") != _CANCELLED:
                        # The fit ended before the request: the request would stay for the next
                        # fit, so this fitter's C object is replaced by a clean one.
                        self._replace(self._new_c_fitter(None))
                        if result.get("status") == 0:
                            lib.hetreward_model_free(result["out"])
                error = self._callback_error
                self._callback_error = None
                if result["status"] != 0:
                    exc = error_for(result["status"], result["message"],
                                    _n.status_name(result["status"]))
                    if error is not None:
                        raise error from exc
                    raise exc
                return Model._adopt(result["out"])

    def _replace(self, ptr) -> None:
        # Under self._lock: every use of this fitter's pointer (fit, the distributed fit)
        # holds the lock, so nothing else is using the old one.
        with self._guard:
            old, self._ptr = self._finalizer, ptr
            self._finalizer = weakref.finalize(self, type(self)._free, ptr)
        old()

    def cancel(self) -> None:
        """Asks the running fit to stop before its next iteration (hetreward_fitter_cancel).
        Safe from any thread. A request made while no fit runs applies to the next fit."""
        if self._closed:
            raise ValueError("I/O operation on a closed Fitter")
        with self._cancel_lock:
            if self._running is not None:
                lib.hetreward_fitter_cancel(self._running)
                self._cancel_requested.set()
            else:
                self._cancel_pending = True

    def close(self) -> None:
        """Frees the fitter (waits for a running fit to return first)."""
        with self._lock:
            super().close()


def _fitter_from_options(options: dict) -> Fitter:
    return Fitter(**options)


class Model(_Handle):
    """A fitted reward model: theta, gamma, their covariance and the fit report.

    Immutable: any number of threads may score, compare and select with one model at once.
    Feature arrays are float32, shape (m, d1), C-contiguous; they are read in place.
    """

    _free = staticmethod(lib.hetreward_model_free)

    @classmethod
    def _adopt(cls, ptr) -> "Model":
        self = cls.__new__(cls)
        _Handle.__init__(self, ptr)
        return self

    @classmethod
    def load(cls, path) -> "Model":
        """Reads a model file (Model.save or ``hetreward fit --out``)."""
        out = POINTER(_n.hetreward_model)()
        _check(lib.hetreward_model_load(_path(path), byref(out)))
        return cls._adopt(out)

    @classmethod
    def from_bytes(cls, data) -> "Model":
        """Reads a model from bytes (``to_bytes()`` or a model file's contents); any buffer
        (bytes, bytearray, memoryview, uint8 array) is read in place."""
        buf = np.frombuffer(data, dtype=np.uint8)
        out = POINTER(_n.hetreward_model)()
        _check(lib.hetreward_model_load_buffer(_ptr(buf, c_uint8), buf.size, byref(out)))
        return cls._adopt(out)

    def __reduce__(self):
        # Pickles (multiprocessing, joblib, Ray, copy.deepcopy) as the model file's bytes.
        return (Model.from_bytes, (self.to_bytes(),))

    def save(self, path) -> None:
        """Writes the model file (atomically: a temporary file is renamed over ``path``)."""
        _check(self._call(lib.hetreward_model_save, _path(path)))

    def to_bytes(self) -> bytes:
        """The model in the model file format."""
        size = c_size_t()
        with self._use() as ptr:
            _check(lib.hetreward_model_save_buffer(ptr, None, 0, byref(size)))
            buf = (c_uint8 * size.value)()
            _check(lib.hetreward_model_save_buffer(ptr, buf, size.value, byref(size)))
        return bytes(buf)[: size.value]

    @property
    def n(self) -> int:
        """Training sample size."""
        return self._call(lib.hetreward_model_n)

    @property
    def d1(self) -> int:
        """Reward-feature dimension (length of theta and of every feature row)."""
        return self._call(lib.hetreward_model_d1)

    @property
    def d2(self) -> int:
        """Annotator-covariate dimension (length of gamma, may be 0)."""
        return self._call(lib.hetreward_model_d2)

    def _vector(self, fn, size: int) -> np.ndarray:
        out = np.empty(size, dtype=np.float64)
        _check(self._call(fn, _ptr(out, c_double), size))
        return out

    @property
    def theta(self) -> np.ndarray:
        return self._vector(lib.hetreward_model_theta, self.d1)

    @property
    def gamma(self) -> np.ndarray:
        return self._vector(lib.hetreward_model_gamma, self.d2)

    @property
    def theta_se(self) -> np.ndarray:
        return self._vector(lib.hetreward_model_theta_se, self.d1)

    @property
    def gamma_se(self) -> np.ndarray:
        return self._vector(lib.hetreward_model_gamma_se, self.d2)

    def intervals(self) -> dict:
        """The model's interval method ("wald", "bootstrap" or "resized"; ``requested`` is
        "auto" when auto picked it), B, diverged refits, alpha_hat, c_hat and the fit's
        diagnostics (d1/n, mle_finite, max |gamma_hat|, diverged share, ``warning`` or None)."""
        i = _n.hetreward_interval_info()
        _check(self._call(lib.hetreward_model_intervals, byref(i)))
        n = c_size_t(0)
        _check(self._call(lib.hetreward_model_interval_warning, None, 0, byref(n)))
        buf = ctypes.create_string_buffer(n.value + 1)
        _check(self._call(lib.hetreward_model_interval_warning, buf, n.value + 1, byref(n)))
        names = _NAMES_OF["intervals"]
        return {
            "method": names.get(i.method, str(i.method)),
            "requested": names.get(i.requested, str(i.requested)),
            "reps": i.reps, "diverged": i.diverged, "seed": i.seed, "shrink": i.shrink,
            "alpha_hat": i.alpha_hat, "c_hat": i.c_hat, "d1_over_n": i.d1_over_n,
            "mle_finite": bool(i.mle_finite), "max_abs_gamma": i.max_abs_gamma,
            "diverged_share": i.diverged_share,
            "warning": buf.value.decode() if i.has_warning else None,
        }

    def heterogeneity(self, dataset: "Dataset") -> dict:
        """The annotator-heterogeneity diagnostic of this model's estimate on ``dataset`` (which
        must have cluster ids, e.g. the data it was fitted on): per coefficient (theta, then
        gamma) ``design_effects`` (cluster-robust CR1 variance / expected-information variance;
        near 1 when comparisons are independent given the covariates) and
        ``effective_clusters`` (k: the design effect's noise SD is about sqrt(2 / k)); the
        number of ``clusters``; the ``worst`` coefficient's index, its ``excess_z``
        ((design effect - 1) / sqrt(2 / k)) and ``independent_coverage`` (about what a 95%
        interval assuming independence covers); ``warning`` (bool: such intervals would
        under-cover). Raises :class:`InvalidArgumentError` without cluster ids."""
        p = self.d1 + self.d2
        de, k = np.empty(p), np.empty(p)
        i = _n.hetreward_heterogeneity()
        with self._use() as model, dataset._use() as data:
            _check(lib.hetreward_model_heterogeneity(
                model, data, p, de.ctypes.data_as(POINTER(c_double)),
                k.ctypes.data_as(POINTER(c_double)), byref(i)))
        return {"clusters": i.clusters, "design_effects": de, "effective_clusters": k,
                "worst": i.worst, "excess_z": i.worst_excess_z,
                "independent_coverage": i.independent_coverage, "warning": bool(i.warning)}

    def leverage(self, dataset: "Dataset") -> dict:
        """The annotators' leverage diagnostics of this model's estimate on ``dataset`` (which
        must have cluster ids), after MacKinnon, Nielsen & Webb's summclust: ``cluster_ids``
        (increasing), per annotator its ``leverage`` tr(I_g I^-1) (they sum to d1 + d2) and
        ``partial`` (G x (d1 + d2): its share of each coefficient's information; columns sum
        to 1); per coefficient (theta, then gamma) ``effective`` annotators 1 / sum_g P_gj^2;
        the summary ``max_leverage`` (and ``max_leverage_cluster``), ``min_effective`` (and
        ``min_effective_coefficient``), ``max_partial`` (``max_partial_cluster``,
        ``max_partial_coefficient``); ``warning`` (bool: a coefficient's effective number is
        below 10 or one annotator carries over half of it). Raises
        :class:`InvalidArgumentError` without cluster ids."""
        p = self.d1 + self.d2
        eff = np.empty(p)
        i = _n.hetreward_leverage_info()
        i.struct_size = ctypes.sizeof(_n.hetreward_leverage_info)
        dp = POINTER(c_double)
        with self._use() as model, dataset._use() as data:
            _check(lib.hetreward_model_leverage(
                model, data, p, eff.ctypes.data_as(dp), 0, None, None, None, byref(i)))
            g = i.clusters
            ids, lev, part = np.empty(g, dtype=np.int64), np.empty(g), np.empty((g, p))
            _check(lib.hetreward_model_leverage(
                model, data, p, eff.ctypes.data_as(dp), g,
                ids.ctypes.data_as(POINTER(c_int64)), lev.ctypes.data_as(dp),
                part.ctypes.data_as(dp), byref(i)))
        return {"cluster_ids": ids, "leverage": lev, "partial": part, "effective": eff,
                "max_leverage": i.max_leverage, "max_leverage_cluster": i.max_leverage_cluster,
                "min_effective": i.min_effective,
                "min_effective_coefficient": i.min_effective_coefficient,
                "max_partial": i.max_partial, "max_partial_cluster": i.max_partial_cluster,
                "max_partial_coefficient": i.max_partial_coefficient,
                "warning": bool(i.warning)}

    def wald(self) -> "Model":
        """A copy of the model with the paper's Wald intervals, whatever method it carries."""
        out = POINTER(_n.hetreward_model)()
        _check(self._call(lib.hetreward_model_wald, byref(out)))
        return Model._adopt(out)

    @property
    def report(self) -> FitReport:
        r = _n.hetreward_fit_report()
        _check(self._call(lib.hetreward_model_report, byref(r)))
        return FitReport(
            solver=_NAMES_OF["solver"].get(r.solver, str(r.solver)),
            covariance=_NAMES_OF["covariance"].get(r.covariance, str(r.covariance)),
            termination=TERMINATIONS.get(r.termination, str(r.termination)),
            converged=bool(r.converged),
            iterations=r.iterations,
            total_iterations=r.total_iterations,
            starts=r.starts,
            grad_norm=r.grad_norm,
            neg_loglik=r.neg_loglik,
            seconds=r.seconds,
            tol=r.tol,
        )

    def score(self, phi, alpha: float = 0.05) -> np.ndarray:
        """Rewards of m answers, ``phi`` float32 (m, d1): a structured array of m records
        (reward, se, lower, upper) with (1 - alpha) CIs. One answer may be given as a 1-D
        array-like of d1 numbers (converted; the result has one record)."""
        phi = _answers(phi, "phi")
        m, d1 = phi.shape
        out = np.zeros(m, dtype=REWARD_DTYPE)
        _check(self._call(lib.hetreward_model_score, _ptr(phi, c_float), m, d1, alpha,
                                         _ptr(out, _n.hetreward_reward)))
        return out

    def compare(self, phi0, phi1, alpha: float = 0.05, method: Union[str, int] = "exact"
                ) -> np.ndarray:
        """Compares row i of ``phi0`` (answer a0) with row i of ``phi1`` (a1), float32 (m, d1)
        each: structured array of (diff, se, lower, upper, p_value, verdict); diff =
        r(a0) - r(a1); verdict 0 tie, 1 win (a0 significantly better), 2 loss (see VERDICTS).
        ``method``: "exact" (default), "independent" or "bound". One pair may be given as two
        1-D array-likes of d1 numbers (converted)."""
        phi0 = _answers(phi0, "phi0")
        phi1 = _answers(phi1, "phi1")
        if phi0.shape != phi1.shape:
            raise DimensionMismatchError(
                3, f"phi0 has shape {phi0.shape}, phi1 has shape {phi1.shape}")
        m, d1 = phi0.shape
        out = np.zeros(m, dtype=COMPARISON_DTYPE)
        _check(self._call(lib.hetreward_model_compare,
            _ptr(phi0, c_float), _ptr(phi1, c_float), m, d1, alpha,
            _code(DIFF_METHODS, method, "method"), _ptr(out, _n.hetreward_comparison)))
        # The record ends in 4 padding bytes, which the library writes as whatever its struct
        # held: zeroed, so that equal results are equal bytes (tobytes(), hashing).
        _zero_padding(out)
        return out

    def select(self, phi, penalty=None, alpha: float = 0.05, policy: Union[str, int] = "pbon"
               ) -> Tuple[int, np.ndarray]:
        """Best of the candidate answers to one prompt, ``phi`` float32 (N, d1), with
        optional (N,) ``penalty`` (any numbers: a list is fine, converted to float64). ``policy`` "bon" (argmax reward - penalty) or
        "pbon" (argmax lower - penalty). Returns (index, candidates), candidates a structured
        array of (reward, se, lower, upper, penalty, score). Ties go to the lowest index."""
        phi = _answers(phi, "phi")
        penalty = _small(penalty, "penalty", np.float64, optional=True)
        m, d1 = phi.shape
        if penalty is not None and penalty.shape != (m,):
            raise DimensionMismatchError(3, f"penalty has shape {penalty.shape}, expected {(m,)}")
        out = np.zeros(m, dtype=CANDIDATE_DTYPE)
        index = c_size_t()
        _check(self._call(lib.hetreward_model_select,
            _ptr(phi, c_float), m, d1, _ptr(penalty, c_double), alpha,
            _code(POLICIES, policy, "policy"), byref(index), _ptr(out, _n.hetreward_candidate)))
        return index.value, out

    def rationality(self, psi0: float, psi: Sequence[float]) -> Tuple[float, float]:
        """sigma_hat = psi0 + gamma_hat . psi of an annotator profile, and its SE."""
        psi = np.ascontiguousarray(psi, dtype=np.float64).reshape(-1)  # d2 values, explicit
        sigma, se = c_double(), c_double()
        _check(self._call(lib.hetreward_model_rationality, psi0, _ptr(psi, c_double), psi.size,
                                               byref(sigma), byref(se)))
        return sigma.value, se.value

    def coefficients(self, alpha: float = 0.05, which: Union[str, int] = "all") -> np.ndarray:
        """The library's coefficient table under the model's interval method (see
        intervals(); ``model.wald().coefficients()`` gives the paper's Wald table): a
        structured array (block, index, estimate, se, z, p_value, lower, upper) with
        (1 - alpha) CIs; ``which`` "theta" (d1 rows), "gamma" (d2 rows) or "all" (theta then
        gamma; ``block`` is 0 for theta, 1 for gamma)."""
        code = _code(COEFFICIENTS, which, "which")
        count = c_size_t()
        _check(self._call(lib.hetreward_model_coefficients, code, alpha, None, 0, byref(count)))
        out = np.zeros(count.value, dtype=COEFFICIENT_DTYPE)
        _check(self._call(lib.hetreward_model_coefficients, code, alpha,
                                                _ptr(out, _n.hetreward_coefficient), out.size,
                                                byref(count)))
        return out

    def unbounded(self) -> np.ndarray:
        """The coefficients whose intervals are unbounded, each with the annotator that
        carries it alone (its covariate is zero in every other annotator's rows): a
        structured array (block, index, annotator), theta before gamma. Empty but for a
        cluster interval method on such data; those coefficients' rows of coefficients() have
        an infinite SE and bounds."""
        count = c_size_t()
        _check(self._call(lib.hetreward_model_unbounded, None, 0, byref(count)))
        out = np.zeros(count.value, dtype=UNBOUNDED_DTYPE)
        _check(self._call(lib.hetreward_model_unbounded, _ptr(out, _n.hetreward_unbounded),
                          out.size, byref(count)))
        return out

    def rationality_interval(self, psi0: float, psi: Sequence[float],
                             alpha: float = 0.05) -> Tuple[float, float, float, float]:
        """sigma_hat, its SE and the (1 - alpha) interval ``(sigma, se, lower, upper)`` under
        the model's interval method (for a bootstrap model the percentile interval of the
        refits' rationalities, not sigma +- q se)."""
        psi = np.ascontiguousarray(psi, dtype=np.float64).reshape(-1)  # d2 values, explicit
        out = _n.hetreward_reward()
        _check(self._call(lib.hetreward_model_rationality_interval, psi0, _ptr(psi, c_double),
                                                        psi.size, alpha, byref(out)))
        return out.reward, out.se, out.lower, out.upper

    def summary(self, alpha: float = 0.05, theta_names: Optional[Sequence[str]] = None,
                gamma_names: Optional[Sequence[str]] = None) -> "Summary":
        """A statsmodels-style table of the estimates: estimate, SE, z, p-value and the
        (1 - alpha) CI of every theta_j and gamma_k, as the library computes them under the
        model's interval method (coefficients()); print it, or use ``.rows``."""
        from ._summary import Summary

        return Summary.of(self, alpha, theta_names, gamma_names)

    def __repr__(self) -> str:
        try:
            with self._use() as p:  # one use: a close() from another thread cannot split it
                n, d1, d2 = (lib.hetreward_model_n(p), lib.hetreward_model_d1(p),
                             lib.hetreward_model_d2(p))
        except ValueError:
            return "<hetreward.Model (closed)>"
        return f"<hetreward.Model n={n} d1={d1} d2={d2}>"


__all__ = [
    "Dataset", "Fitter", "Model", "Progress", "FitReport", "HetrewardError", "VERDICTS",
    "REWARD_DTYPE", "COMPARISON_DTYPE", "CANDIDATE_DTYPE", "COEFFICIENT_DTYPE", "UNBOUNDED_DTYPE",
]
