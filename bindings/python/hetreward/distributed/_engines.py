"""Engines: thin adapters from "compute this request on every shard" to Ray, Dask and Spark.

Each engine holds the shards' sources in shard order and has these methods:

* ``summaries(watch=None)`` — every shard's summary (the first pass), in shard order;
* ``round(request, watch=None)`` — every shard's answer to ``request`` (bytes), in shard
  order (or one already-merged answer, Spark's treeAggregate); the driver merges them in
  that order;
* ``worker(k)`` — a name for where shard ``k`` runs (for error messages);
* ``close()`` — releases the workers' shards (also ``with engine: ...``); returns within a
  bounded time even after a lost or frozen worker.

``watch`` (a :class:`~hetreward.distributed._faults.Watch`) is checked while a round runs:
it raises the fit's cancellation or its per-round timeout; the engine then withdraws the
round's work and re-raises. A worker lost during a round is an error naming the shard and the
worker (:class:`WorkerLostError`), unless the engine runs the shard elsewhere: Dask
re-dispatches it to a live worker, which reads it again from its source; Ray restarts the
actor (``restarts``); Spark re-runs the task (``spark.task.maxFailures``). A shard read again
must be the one the fit started with (:func:`_shards.dataset` checks its file's stamp).

The engines move bytes only; the math is the library's, on the workers
(``_shards.answer``) and on the driver (hetreward_fit_distributed).
"""

from __future__ import annotations

import re
import threading
import time
import uuid
from typing import Dict, List, Sequence

from . import _shards
from ._faults import RoundTimeoutError, ShardError, unwatched, what_round


class _Engine:
    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def worker(self, k: int) -> str:
        return "this process"

    def close(self) -> None:
        pass


class LocalEngine(_Engine):
    """Every shard in this process (a baseline, and for tests): the same bytes travel. A
    cancellation or timeout is seen between two shards of a round."""

    def __init__(self, sources: Sequence, threads: int = 0):
        self.sources = list(sources)
        self.threads = threads
        self.stamps = [None] * len(self.sources)

    def summaries(self, watch=None):
        watch = watch or unwatched()
        out = []
        for k, s in enumerate(self.sources):
            watch.check({j: "this process" for j in range(k, len(self.sources))})
            summary, self.stamps[k] = _shards.describe(s)
            out.append(summary)
        return out

    def round(self, request: bytes, watch=None) -> List[bytearray]:
        watch = watch or unwatched()
        out = []
        for k, (s, stamp) in enumerate(zip(self.sources, self.stamps)):
            watch.check({j: "this process" for j in range(k, len(self.sources))})
            try:
                out.append(_shards.answer(s, request, self.threads, stamp))
            except Exception as exc:
                raise watch.failed(k, "this process", exc) from exc
        return out

    def close(self) -> None:
        for s in self.sources:
            _shards.forget(s.key)


class _RayShards:
    """A Ray actor holding some shards (loaded once) for the engine's lifetime; a restarted
    actor loads them again from their sources."""

    def __init__(self, indices, sources, threads: int):
        self.indices, self.sources, self.threads = list(indices), list(sources), threads
        self.stamps = [None] * len(self.sources)

    def where(self):
        import os
        import socket

        return f"pid {os.getpid()} on {socket.gethostname()}"

    def summaries(self):
        out = []
        for j, s in enumerate(self.sources):
            summary, self.stamps[j] = _shards.describe(s)
            out.append(summary)
        return out

    def answers(self, request: bytes, stamps) -> List[bytearray]:
        return [_shards.answer_of(k, s, request, self.threads, stamp)
                for k, s, stamp in zip(self.indices, self.sources, stamps)]


class RayEngine(_Engine):
    """Ray actors holding the shards: shard ``k`` lives in actor ``k mod actors`` (default one
    actor per shard), which loads it once and keeps it; a round is one call per actor, the
    request put in the object store once. Needs ``ray.init()`` first. ``num_cpus`` per actor
    (default ``1 / actors``: every actor fits on one CPU); ``threads``: the library's threads
    per shard. ``restarts``: how many times Ray restarts a dead actor (which reads its shards
    again) and retries its call; 0 makes a lost actor an error at once."""

    def __init__(self, sources: Sequence, *, actors: int = None, num_cpus: float = None,
                 threads: int = 1, restarts: int = 1):
        import ray

        if not ray.is_initialized():
            raise RuntimeError("RayEngine needs ray.init() first")
        self._ray = ray
        self.sources = list(sources)
        count = min(actors or len(self.sources), len(self.sources))
        self.owner = [k % count for k in range(len(self.sources))]
        cpus = num_cpus if num_cpus is not None else 1.0 / count
        actor = ray.remote(num_cpus=cpus, max_restarts=restarts,
                           max_task_retries=restarts)(_RayShards)
        self.held = [[k for k, o in enumerate(self.owner) if o == a] for a in range(count)]
        self.actors = [actor.remote(held, [self.sources[k] for k in held], threads)
                       for held in self.held]
        self.places = ["?"] * count
        self.stamps = [None] * len(self.sources)

    def worker(self, k: int) -> str:
        a = self.owner[k]
        return f"Ray actor {a} ({self.places[a]})"

    def _in_shard_order(self, per_actor):
        """Per-actor lists (actor a holds shards a, a + count, ...) back in shard order."""
        its = [iter(x) for x in per_actor]
        return [next(its[o]) for o in self.owner]

    def _call(self, refs, watch):
        """Every actor's answer (refs in actor order), watched; lost actors named."""
        ray = self._ray
        out = [None] * len(refs)
        pending = dict(enumerate(refs))
        try:
            while pending:
                ready, _ = ray.wait(list(pending.values()), num_returns=len(pending),
                                    timeout=watch.remaining())
                for a, ref in list(pending.items()):
                    if ref not in ready:
                        continue
                    del pending[a]
                    try:
                        out[a] = ray.get(ref)
                    except ray.exceptions.RayActorError as exc:
                        raise watch.lost(self.held[a], self.worker(self.held[a][0]),
                                         _first_line(exc)) from exc
                    except ray.exceptions.RayTaskError as exc:
                        shard = _named_shard(exc, self.held[a])
                        raise watch.failed(shard, self.worker(shard), exc) from exc
                if pending:
                    watch.check({k: self.worker(k) for a in pending for k in self.held[a]})
        except BaseException as exc:
            for a in pending:  # stop what still runs; a frozen actor is restarted (if allowed)
                _quietly(ray.cancel, refs[a])
                if isinstance(exc, RoundTimeoutError):
                    _quietly(ray.kill, self.actors[a], no_restart=False)
            raise
        return out

    def summaries(self, watch=None):
        watch = watch or unwatched()
        self.places = self._call([a.where.remote() for a in self.actors], watch)
        got = self._call([a.summaries.remote() for a in self.actors], watch)
        out = self._in_shard_order(got)
        for k in range(len(self.sources)):
            self.stamps[k] = _shards.stamp(self.sources[k])
        return out

    def round(self, request: bytes, watch=None):
        watch = watch or unwatched()
        ref = self._ray.put(request)
        calls = [a.answers.remote(ref, [self.stamps[k] for k in held])
                 for a, held in zip(self.actors, self.held)]
        return self._in_shard_order(self._call(calls, watch))

    def close(self) -> None:
        for a in self.actors:
            _quietly(self._ray.kill, a)
        self.actors = []


def _quietly(fn, *args, **kwargs) -> None:
    """Clean-up after a failed round: its own failure must not hide the round's error."""
    try:
        fn(*args, **kwargs)
    except Exception:
        pass


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


def _named_shard(exc: BaseException, held: List[int]) -> int:
    """The shard an actor's error names (``shard k: ...``), else the actor's first."""
    m = re.search(r"shard (\d+):", str(exc))
    return int(m.group(1)) if m and int(m.group(1)) in held else held[0]


class DaskEngine(_Engine):
    """Shard ``k`` starts on worker ``k mod workers`` (the source is scattered there once and
    the worker loads the shard on first use and keeps it); a round is one task per shard,
    pinned to its worker. ``client``: a ``distributed.Client``.

    A worker that leaves the cluster during a round (killed, pre-empted, scaled away) is
    noticed within a second; with ``redispatch`` (default) its shards move to live workers
    (round robin), which read them again from their sources, and the round goes on: the same
    answers, so the same model. ``retries``: how often one shard may move in one round before
    the round fails with :class:`WorkerLostError`. ``close_timeout``: seconds ``close()``
    waits for the workers to drop their shards."""

    def __init__(self, client, sources: Sequence, *, threads: int = 1, redispatch: bool = True,
                 retries: int = 2, close_timeout: float = 10.0):
        self.client = client
        self.sources = list(sources)
        self.threads = threads
        self.redispatch, self.retries, self.close_timeout = redispatch, retries, close_timeout
        workers = self._alive()
        if not workers:
            raise RuntimeError("the Dask cluster has no workers")
        self.where = [workers[k % len(workers)] for k in range(len(self.sources))]
        self.refs = [client.scatter(s, workers=[w], broadcast=False)
                     for s, w in zip(self.sources, self.where)]
        self.stamps = [None] * len(self.sources)
        #: Shards moved to another worker: (round, shard, from, to, seconds after the loss).
        self.moves: List[tuple] = []
        #: Workers that let a round time out (frozen?): close() does not wait for them.
        self.unresponsive = set()

    def worker(self, k: int) -> str:
        return f"Dask worker {self.where[k]}"

    def _alive(self) -> List[str]:
        """The workers the scheduler lists now, asked directly (``Client.nthreads``).
        ``Client.scheduler_info()["workers"]`` is a cache that the client's periodic refresh
        (totals only, no workers) may overwrite between the call's own refresh and its return:
        it then says a cluster of two has none: 93 of 7,437 calls with a 5 ms refresh; none
        of 8,996 with the default 2 s, yet one of 35 fault-test runs under load met it. Mid-round
        that would call every shard of a slow round lost."""
        return sorted(self.client.nthreads())

    def _move(self, k: int, watch, cause: str, lost_at: float) -> None:
        """Shard ``k`` to another live worker (its source scattered there again)."""
        alive = [w for w in self._alive() if w != self.where[k]]
        if not alive:
            raise watch.lost([k], self.worker(k), f"{cause}; no other worker is left")
        target = alive[k % len(alive)]
        old = self.where[k]
        self.where[k] = target
        self.refs[k] = self.client.scatter(self.sources[k], workers=[target], broadcast=False)
        self.moves.append((watch.index, k, old, target, time.monotonic() - lost_at))

    def _each(self, fn, args, watch) -> list:
        from distributed import TimeoutError as DaskTimeout
        from distributed import wait

        client = self.client

        def submit(k):
            return client.submit(fn, self.refs[k], *args(k), workers=[self.where[k]],
                                 allow_other_workers=False, pure=False)

        out = [None] * len(self.sources)
        pending = {k: submit(k) for k in range(len(self.sources))}
        moved = [0] * len(self.sources)
        try:
            while pending:
                try:
                    # All at once: one wait per round when nothing goes wrong.
                    wait(list(pending.values()), timeout=max(watch.remaining(), 0.001))
                    alive = None
                except (DaskTimeout, TimeoutError):  # slow: is every worker still there?
                    alive = set(self._alive())
                except Exception:  # cancelled futures (a lost worker's): seen below
                    alive = None
                if all(f.status == "finished" for f in pending.values()):
                    for k, value in zip(list(pending), client.gather(list(pending.values()))):
                        out[k] = value  # one transfer for the whole round
                    pending.clear()
                    break
                for k, f in list(pending.items()):
                    status = f.status
                    if status == "finished":
                        out[k] = f.result()
                        del pending[k]
                        continue
                    if status == "pending":
                        if alive is None or self.where[k] in alive:
                            continue
                        cause = "it left the cluster"
                    elif status == "error":
                        exc = f.exception()
                        if type(exc).__name__ != "KilledWorker" and \
                                self.where[k] in set(self._alive()):
                            raise watch.failed(k, self.worker(k), exc) from exc
                        cause = _first_line(exc)
                    else:  # cancelled or lost: its scattered source died with the worker
                        cause = f"its task was {status}"
                    lost_at = time.monotonic()
                    client.cancel([f])
                    if not self.redispatch or moved[k] >= self.retries:
                        raise watch.lost([k], self.worker(k), cause)
                    moved[k] += 1
                    self._move(k, watch, cause, lost_at)
                    pending[k] = submit(k)
                if pending:
                    watch.check({k: self.worker(k) for k in pending})
        except BaseException as exc:
            _quietly(client.cancel, list(pending.values()))
            if isinstance(exc, RoundTimeoutError):  # close() does not wait for them
                self.unresponsive.update(self.where[k] for k in pending)
            raise
        return out

    def summaries(self, watch=None):
        got = self._each(_shards.describe, lambda k: (), watch or unwatched())
        self.stamps = [stamp for _, stamp in got]
        return [summary for summary, _ in got]

    def round(self, request: bytes, watch=None):
        return self._each(_shards.answer,
                          lambda k: (request, self.threads, self.stamps[k]),
                          watch or unwatched())

    def close(self) -> None:
        """Drops the shards on the live workers (waiting ``close_timeout`` seconds at most; a
        worker that let a round time out is not asked: a frozen worker keeps its copy) and
        releases the scattered sources."""
        from distributed import wait

        if not self.refs:
            return
        alive = set(self._alive()) - self.unresponsive
        futures = [self.client.submit(_shards.forget, s.key, workers=[w], pure=False)
                   for s, w in zip(self.sources, self.where) if w in alive]
        # A worker that froze since: it keeps its copy; nothing waits for it.
        _quietly(wait, futures, timeout=self.close_timeout)
        _quietly(self.client.cancel, futures + self.refs)
        self.refs = []


_SPARK_LOST = re.compile(r"Lost task (\d+)\.\d+ in stage [\d.]+ \(TID \d+\) \(([^)]*)\)")
_SPARK_WORKER_DIED = ("Python worker exited unexpectedly", "ExecutorLostFailure",
                      "Executor heartbeat timed out", "Worker crashed", "crashed")


class SparkEngine(_Engine):
    """One partition per shard (``mapPartitionsWithIndex``); a round's answers are merged by
    the library inside ``treeAggregate`` and one answer reaches the driver. Python workers load
    each shard once per worker process (``spark.python.worker.reuse``, on by default).
    ``sc``: a ``pyspark.SparkContext``. Spark re-runs a failed task itself
    (``spark.task.maxFailures``; in local mode ``local[N,F]``), in a new Python worker that
    reads the shard again; a round's job runs in its own job group, cancelled (with its
    tasks' Python workers) when the fit is cancelled or the round times out."""

    def __init__(self, sc, sources: Sequence, *, threads: int = 1, depth: int = 2):
        self.sc = sc
        self.sources = list(sources)
        self.threads, self.depth = threads, depth
        self.rdd = sc.parallelize(self.sources, len(self.sources)).cache()
        self.stamps = [None] * len(self.sources)

    def worker(self, k: int) -> str:
        return "a Spark executor"

    def _run(self, job, watch):
        """Runs ``job`` (a Spark action) in a job group of its own, watched."""
        group = f"hetreward-{uuid.uuid4().hex}"
        result: Dict[str, object] = {}
        done = threading.Event()

        def work():
            try:
                self.sc.setJobGroup(group, f"hetreward {watch.index}", interruptOnCancel=True)
                result["value"] = job()
            except BaseException as exc:
                result["error"] = exc
            finally:
                done.set()

        threading.Thread(target=work, name="hetreward-spark-round", daemon=True).start()
        try:
            while not done.wait(watch.remaining()):
                watch.check({k: self.worker(k) for k in range(len(self.sources))})
        except BaseException:
            _quietly(self.sc.cancelJobGroup, group)
            done.wait(60)  # Spark kills the tasks' Python workers (spark.python.task.killTimeout)
            raise
        if "error" in result:
            raise self._explain(result["error"], watch) from result["error"]
        return result["value"]

    def _explain(self, exc: BaseException, watch) -> ShardError:
        """The shard and the executor a failed job names: the worker's ``shard k: ...``
        (:func:`_shards.answer_of`) or Spark's ``Lost task k.a in stage ... (host executor)``
        (the partition is the shard)."""
        text = str(exc)
        named = re.search(r"RuntimeError: shard (\d+): ", text)
        lost = _SPARK_LOST.search(text)
        place = f"Spark {lost.group(2)}" if lost else "a Spark executor"
        if named is not None:
            return watch.failed(int(named.group(1)), place, exc)
        if lost is not None:
            shard = int(lost.group(1))
            if any(s in text for s in _SPARK_WORKER_DIED):
                return watch.lost([shard], place, "its Python worker or executor died, after "
                                  "Spark's retries (spark.task.maxFailures)")
            return watch.failed(shard, place, exc)
        return ShardError(f"{what_round(watch.index)} failed in Spark: {_first_line(exc)}",
                          round=watch.index)

    def summaries(self, watch=None):
        watch = watch or unwatched()
        got = self._run(lambda: self.rdd.map(_shards.describe).collect(), watch)
        self.stamps = [stamp for _, stamp in got]
        return [summary for summary, _ in got]

    def round(self, request: bytes, watch=None):
        threads, stamps = self.threads, list(self.stamps)

        def answers(index, it):
            return [_shards.answer_of(index, s, request, threads, stamps[index]) for s in it]

        merged = self._run(lambda: self.rdd.mapPartitionsWithIndex(answers).treeAggregate(
            None, _shards.merge_bytes, _shards.merge_bytes, depth=self.depth),
            watch or unwatched())
        return [merged]

    def close(self) -> None:
        self.rdd.unpersist()
