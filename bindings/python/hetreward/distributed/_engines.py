"""Engines: thin adapters from "compute this request on every shard" to Ray, Dask and Spark.

Each engine holds the shards' sources in shard order and has three methods:

* ``summaries()`` — every shard's summary (the first pass), in shard order;
* ``round(request)`` — every shard's answer to ``request`` (bytes), in shard order (or one
  already-merged answer, Spark's treeAggregate); the driver merges them in that order;
* ``close()`` — releases the workers' shards (also ``with engine: ...``).

The engines move bytes only; the math is the library's, on the workers
(``_shards.answer``) and on the driver (hetreward_fit_distributed).
"""

from __future__ import annotations

from typing import List, Sequence

from . import _shards


class _Engine:
    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        pass


class LocalEngine(_Engine):
    """Every shard in this process (a baseline, and for tests): the same bytes travel."""

    def __init__(self, sources: Sequence, threads: int = 0):
        self.sources = list(sources)
        self.threads = threads

    def summaries(self):
        return [_shards.summary(s) for s in self.sources]

    def round(self, request: bytes) -> List[bytearray]:
        return [_shards.answer(s, request, self.threads) for s in self.sources]

    def close(self) -> None:
        for s in self.sources:
            _shards.forget(s.key)


class _RayShards:
    """A Ray actor holding some shards (loaded once) for the engine's lifetime."""

    def __init__(self, sources, threads: int):
        self.sources, self.threads = list(sources), threads
        for s in self.sources:
            _shards.dataset(s)

    def summaries(self):
        return [_shards.summary(s) for s in self.sources]

    def answers(self, request: bytes) -> List[bytearray]:
        return [_shards.answer(s, request, self.threads) for s in self.sources]


class RayEngine(_Engine):
    """Ray actors holding the shards: shard ``k`` lives in actor ``k mod actors`` (default one
    actor per shard), which loads it once and keeps it; a round is one call per actor, the
    request put in the object store once. Needs ``ray.init()`` first. ``num_cpus`` per actor
    (default ``1 / actors``: every actor fits on one CPU); ``threads``: the library's threads
    per shard."""

    def __init__(self, sources: Sequence, *, actors: int = None, num_cpus: float = None,
                 threads: int = 1):
        import ray

        if not ray.is_initialized():
            raise RuntimeError("RayEngine needs ray.init() first")
        self._ray = ray
        self.sources = list(sources)
        count = min(actors or len(self.sources), len(self.sources))
        self.owner = [k % count for k in range(len(self.sources))]
        cpus = num_cpus if num_cpus is not None else 1.0 / count
        actor = ray.remote(num_cpus=cpus)(_RayShards)
        self.actors = [actor.remote([s for s, o in zip(self.sources, self.owner) if o == a],
                                    threads) for a in range(count)]

    def _in_shard_order(self, per_actor):
        """Per-actor lists (actor a holds shards a, a + count, ...) back in shard order."""
        its = [iter(x) for x in per_actor]
        return [next(its[o]) for o in self.owner]

    def summaries(self):
        return self._in_shard_order(self._ray.get([a.summaries.remote() for a in self.actors]))

    def round(self, request: bytes):
        ref = self._ray.put(request)
        return self._in_shard_order(self._ray.get([a.answers.remote(ref) for a in self.actors]))

    def close(self) -> None:
        for a in self.actors:
            self._ray.kill(a)
        self.actors = []


class DaskEngine(_Engine):
    """Shard ``k`` lives on worker ``k mod workers`` (the source is scattered there once and
    the worker loads the shard on first use and keeps it); a round is one task per shard,
    pinned to its worker. ``client``: a ``distributed.Client``."""

    def __init__(self, client, sources: Sequence, *, threads: int = 1):
        self.client = client
        self.sources = list(sources)
        self.threads = threads
        workers = sorted(client.scheduler_info()["workers"])
        if not workers:
            raise RuntimeError("the Dask cluster has no workers")
        self.where = [workers[k % len(workers)] for k in range(len(self.sources))]
        self.refs = [client.scatter(s, workers=[w], broadcast=False)
                     for s, w in zip(self.sources, self.where)]

    def _each(self, fn, *args):
        futures = [self.client.submit(fn, ref, *args, workers=[w], allow_other_workers=False,
                                      pure=False)
                   for ref, w in zip(self.refs, self.where)]
        return self.client.gather(futures)

    def summaries(self):
        return self._each(_shards.summary)

    def round(self, request: bytes):
        return self._each(_shards.answer, request, self.threads)

    def close(self) -> None:
        keys = [s.key for s in self.sources]
        for key, w in zip(keys, self.where):
            self.client.submit(_shards.forget, key, workers=[w], pure=False).result()
        self.client.cancel(self.refs)
        self.refs = []


class SparkEngine(_Engine):
    """One partition per shard (``mapPartitions``); a round's answers are merged by the
    library inside ``treeAggregate`` and one answer reaches the driver. Python workers load
    each shard once per worker process (``spark.python.worker.reuse``, on by default).
    ``sc``: a ``pyspark.SparkContext``."""

    def __init__(self, sc, sources: Sequence, *, threads: int = 1, depth: int = 2):
        self.sc = sc
        self.sources = list(sources)
        self.threads, self.depth = threads, depth
        self.rdd = sc.parallelize(self.sources, len(self.sources)).cache()

    def summaries(self):
        return self.rdd.map(_shards.summary).collect()

    def round(self, request: bytes):
        threads = self.threads

        def answers(it):
            return [_shards.answer(s, request, threads) for s in it]

        merged = self.rdd.mapPartitions(answers).treeAggregate(
            None, _shards.merge_bytes, _shards.merge_bytes, depth=self.depth)
        return [merged]

    def close(self) -> None:
        self.rdd.unpersist()
