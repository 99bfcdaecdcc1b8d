"""hetreward.distributed: fit one model over shards held by an engine's workers.

The library runs the solver on the driver (hetreward_fit_distributed) and asks for the
shards' sums once per *round*; the workers compute them with the library and send them back
as bytes; the driver merges them in shard order. No networking of our own: Ray, Dask or
Spark move the bytes.

    import ray, hetreward as hr
    from hetreward import distributed as hd

    ray.init(num_cpus=8)
    sources = [hd.ParquetShard(f"prefs/part-{k}.parquet") for k in range(8)]
    with hd.RayEngine(sources) as engine:
        model, info = hd.fit(engine, hr.Fitter(covariance="cluster", tol=1e-10))
    print(model.summary(), info.total, "rounds")

Engines: :class:`RayEngine` (an actor per shard), :class:`DaskEngine` (a
``distributed.Client``; tasks pinned to the worker holding the shard), :class:`SparkEngine`
(``mapPartitions`` + ``treeAggregate``) and :class:`LocalEngine` (in process). Sources:
:class:`ArrayShard`, :class:`SafetensorsShard`, :class:`ParquetShard`. Failures:
:class:`ShardError`, :class:`WorkerLostError`, :class:`RoundTimeoutError` (each names the
shards, the workers and the round). See docs/distributed.md for when distribution pays and
for what each engine does when a worker is lost or freezes.
"""

from ._driver import FitInfo, Round, fit
from ._engines import DaskEngine, LocalEngine, RayEngine, SparkEngine
from ._faults import RoundTimeoutError, ShardError, WorkerLostError
from ._shards import ArrayShard, ParquetShard, SafetensorsShard, answer, write_parquet

__all__ = [
    "fit", "FitInfo", "Round", "LocalEngine", "RayEngine", "DaskEngine", "SparkEngine",
    "ArrayShard", "SafetensorsShard", "ParquetShard", "write_parquet", "answer",
    "ShardError", "WorkerLostError", "RoundTimeoutError",
]
