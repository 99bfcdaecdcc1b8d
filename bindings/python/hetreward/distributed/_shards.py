"""Where a shard's rows come from, and what a worker does with them.

A *source* is a small picklable description of one shard that a worker turns into a
:class:`hetreward.Dataset` once (``load``) and keeps: :class:`ArrayShard` (numpy arrays
shipped with the task), :class:`SafetensorsShard` (read by the library itself) and
:class:`ParquetShard` (read with pyarrow; fixed-size-list columns are handed to the library
in place, without a copy in Python). Workers answer a driver's request with :func:`answer`:
the library computes the shard's sums (hetreward_shard_stats_compute_request) and returns
them as versioned bytes.
"""

from __future__ import annotations

import ctypes
import os
import uuid
from ctypes import POINTER, byref, c_uint8
from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple

import numpy as np

from .. import _native as _n
from .._core import Dataset, _check

lib = _n.lib


def _key() -> str:
    return uuid.uuid4().hex


@dataclass(frozen=True)
class ArrayShard:
    """A shard given as arrays (as :class:`hetreward.Dataset` takes them); shipped to the
    worker with its first task, then kept there."""

    z: np.ndarray
    psi0: np.ndarray
    psi: Optional[np.ndarray]
    y: np.ndarray
    cluster: Optional[np.ndarray] = None
    key: str = field(default_factory=_key)

    def load(self) -> Dataset:
        # An engine's deserialiser may hand back arrays at unaligned offsets in its buffer;
        # only those are copied (the library reads aligned arrays in place).
        def aligned(a):
            return None if a is None else np.require(a, requirements=("C", "A"))

        return Dataset._shard(*(aligned(a) for a in (self.z, self.psi0, self.psi, self.y,
                                                      self.cluster)))


@dataclass(frozen=True)
class SafetensorsShard:
    """A shard in a .safetensors training file (tensors z, psi0, psi, y, cluster; docs/contract.md §6),
    read by the library on the worker (no Python copy)."""

    path: str
    key: str = field(default_factory=_key)

    def load(self) -> Dataset:
        return Dataset._shard(None, None, None, None, path=self.path)


@dataclass(frozen=True)
class ParquetShard:
    """A shard in a Parquet file: ``z`` a fixed-size list of d1 floats per row, ``psi0``,
    ``y`` floats of the same type, ``psi`` a fixed-size list of d2 floats (absent when
    d2 = 0), ``cluster`` int64 (optional). The lists' values are contiguous row-major in
    Arrow, so they reach the library in place; only a file written in several row groups is
    combined into one chunk first (a copy)."""

    path: str
    key: str = field(default_factory=_key)

    def load(self) -> Dataset:
        import pyarrow.parquet as pq

        table = pq.read_table(self.path).combine_chunks()
        names = set(table.column_names)
        missing = {"z", "psi0", "y"} - names
        if missing:
            raise ValueError(f"{self.path}: no column(s) {sorted(missing)}")

        def flat(name):
            col = table.column(name).chunk(0)
            if col.null_count:
                raise ValueError(f"{self.path}: column {name} has nulls")
            return col.to_numpy(zero_copy_only=True)

        def matrix(name):
            col = table.column(name).chunk(0)
            width = getattr(col.type, "list_size", None)
            if width is None:
                raise ValueError(f"{self.path}: column {name} must be a fixed-size list")
            if col.null_count or col.values.null_count:
                raise ValueError(f"{self.path}: column {name} has nulls")
            values = col.values.slice(col.offset * width, len(col) * width)
            return values.to_numpy(zero_copy_only=True).reshape(len(col), width)

        z = matrix("z")
        psi = matrix("psi") if "psi" in names else None
        cluster = flat("cluster") if "cluster" in names else None
        return Dataset._shard(z, flat("psi0"), psi, flat("y"), cluster)


def write_parquet(path, z, psi0, psi, y, cluster=None) -> ParquetShard:
    """Writes arrays as a :class:`ParquetShard` file (one row group) and returns its source."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    def fixed(a):
        return pa.FixedSizeListArray.from_arrays(pa.array(a.reshape(-1)), a.shape[1])

    cols = {"z": fixed(z), "psi0": pa.array(psi0), "y": pa.array(y)}
    if psi is not None and psi.shape[1] > 0:
        cols["psi"] = fixed(psi)
    if cluster is not None:
        cols["cluster"] = pa.array(cluster)
    pq.write_table(pa.table(cols), path, row_group_size=max(len(y), 1))
    return ParquetShard(os.fspath(path))


#: Shards loaded in this (worker) process, by source key: each worker loads its shard once.
_LOADED: Dict[str, Dataset] = {}

#: What identifies the version of a shard's file: (size, modification time in ns).
Stamp = Optional[Tuple[int, int]]


def stamp(source) -> Stamp:
    """The file's (size, mtime in ns) for sources read from a file (``path``), else ``None``
    (arrays travel with their source and cannot change)."""
    path = getattr(source, "path", None)
    if path is None:
        return None
    st = os.stat(path)
    return (st.st_size, st.st_mtime_ns)


def dataset(source, expect: Stamp = None) -> Dataset:
    """The shard of ``source``, loaded on first use in this process and kept. ``expect``: the
    stamp the file had when the fit started; a shard read again (a worker that replaced a lost
    one) whose file changed since then is refused, so that a fit never mixes two versions of a
    shard."""
    ds = _LOADED.get(source.key)
    if ds is None:
        if expect is not None:
            now = stamp(source)
            if now != tuple(expect):
                raise ValueError(
                    f"{source.path}: changed since the fit started (size, mtime_ns "
                    f"{tuple(expect)} -> {now}); refusing to mix two versions of the shard")
        ds = _LOADED[source.key] = source.load()
    return ds


def forget(key: str) -> bool:
    """Drops a loaded shard (frees its memory). True if it was loaded here."""
    ds = _LOADED.pop(key, None)
    if ds is not None:
        ds.close()
    return ds is not None


Summary = Tuple[int, int, int, bool, int]


def summary(source) -> Summary:
    """The shard's summary (n, d1, d2, clustered, schema checksum): hetreward_shard_summary_of."""
    return describe(source)[0]


def describe(source) -> Tuple[Summary, Stamp]:
    """The shard's summary and the stamp of its file (taken before it is loaded)."""
    before = stamp(source)
    s = _n.hetreward_shard_summary()
    _check(dataset(source)._call(lib.hetreward_shard_summary_of, byref(s)))
    return (s.n, s.d1, s.d2, bool(s.clustered), s.schema), before


def _u8(buf) -> ctypes._Pointer:
    """A uint8 pointer into ``buf`` (bytes, bytearray, memoryview, numpy) without a copy."""
    return np.frombuffer(buf, dtype=np.uint8).ctypes.data_as(POINTER(c_uint8))


def stats_to_bytes(stats) -> bytearray:
    """Serialises (and keeps) a hetreward_shard_stats handle."""
    size = ctypes.c_size_t()
    _check(lib.hetreward_shard_stats_byte_size(stats, byref(size)))
    out = bytearray(size.value)
    _check(lib.hetreward_shard_stats_to_bytes(stats, (c_uint8 * size.value).from_buffer(out),
                                              size.value))
    return out


def stats_from_bytes(buf):
    """A new hetreward_shard_stats handle from bytes (the caller frees or hands it over)."""
    out = POINTER(_n.hetreward_shard_stats)()
    view = np.frombuffer(buf, dtype=np.uint8)
    _check(lib.hetreward_shard_stats_from_bytes(_u8(view), view.size, byref(out)))
    return out


def answer(source, request, threads: int = 1, expect: Stamp = None) -> bytearray:
    """The shard's answer to a driver's request, as bytes (on the worker).

    ``threads``: the library's threads for this shard (1 when the engine runs one task per
    core). ``expect``: the file's stamp at the summary pass (see :func:`dataset`)."""
    view = np.frombuffer(request, dtype=np.uint8)
    out = POINTER(_n.hetreward_shard_stats)()
    shard = dataset(source, expect)
    _check(shard._call(lib.hetreward_shard_stats_compute_request, _u8(view), view.size,
                       threads, byref(out)))
    try:
        return stats_to_bytes(out)
    finally:
        lib.hetreward_shard_stats_free(out)


def answer_of(index: int, source, request, threads: int = 1, expect: Stamp = None) -> bytearray:
    """:func:`answer` for shard ``index``, whose errors name the shard (``shard 3: ...``): what
    an engine's worker runs when only its error text reaches the driver."""
    try:
        return answer(source, request, threads, expect)
    except Exception as exc:
        raise RuntimeError(f"shard {index}: {type(exc).__name__}: {exc}") from exc


def merge_bytes(a, b) -> bytearray:
    """The merged statistics of two answers' bytes, as bytes (a tree aggregation's combine;
    ``None`` is the empty answer)."""
    if a is None:
        return b
    if b is None:
        return a
    sa, sb = stats_from_bytes(a), stats_from_bytes(b)
    try:
        _check(lib.hetreward_shard_stats_merge(sa, sb))
        return stats_to_bytes(sa)
    finally:
        lib.hetreward_shard_stats_free(sa)
        lib.hetreward_shard_stats_free(sb)
