"""The engine tests of hetreward.distributed (Ray, Dask, Spark): their own suite, run by
scripts/ci.d/80-distributed.sh, which installs the engines (the bindings step's suite in
tests/ has none). Local loopback clusters only. The data and comparisons are shared with
tests/test_distributed.py (tests/distributed_support.py)."""

import os
import sys

import pytest

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # nothing phoned home

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "tests"))


@pytest.fixture(scope="session")
def ray_cluster():
    """A local Ray cluster with 2 CPUs (worker processes on this machine)."""
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             configure_logging=False)
    yield ray
    ray.shutdown()


@pytest.fixture(scope="session")
def dask_client():
    """distributed.LocalCluster with 2 worker processes, 1 thread each, on 127.0.0.1.

    The fault tests kill the same worker more than once, seconds apart. On each lost worker
    LocalCluster starts a timer (``distributed.deploy.lost-worker-timeout``, 15 s): when it
    fires and no worker of that name is listed, the cluster closes the name's nanny for good.
    A second kill within 15 s of the first leaves such a moment (the nanny restarting the
    worker), and from then on the cluster has one worker (CI failure of 2026-11-29: every
    later Dask test timed out waiting for two). The nanny restarts a killed worker itself, so
    the timer is made longer than the suite."""
    import dask
    from distributed import Client, LocalCluster

    with dask.config.set({"distributed.deploy.lost-worker-timeout": "1h"}):
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                               host="127.0.0.1", dashboard_address=None)
        client = Client(cluster)
        yield client
        client.close()
        cluster.close()


def pytest_terminal_summary(terminalreporter):
    """The fault table measured by test_distributed_faults.py (docs/distributed.md)."""
    table = getattr(sys.modules.get("test_distributed_faults"), "TABLE", None)
    if not table:
        return
    terminalreporter.write_line("fault table (seconds to the error, or to the end of the fit):")
    for (fault, engine), (behaviour, seconds, message) in sorted(table.items()):
        terminalreporter.write_line(f"  {fault:28s} {engine:6s} {seconds:7.2f} s  {behaviour}")
        if message and os.environ.get("HETREWARD_FAULT_MESSAGES"):
            terminalreporter.write_line(f"      {message[:300]}")
