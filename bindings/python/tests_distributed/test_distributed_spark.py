"""Spark (local[2]): one small end-to-end fit, mapPartitions + treeAggregate, equal to the
single-process fit within 1e-10 (expected and cluster covariances)."""

import os
import sys

import pytest

import hetreward as hr
from hetreward import distributed as hd

from distributed_support import TOL, array_shards, assert_same, paper_data, random_parts, \
    single_process


@pytest.fixture(scope="module")
def spark():
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"  # loopback only
    from pyspark import SparkConf, SparkContext

    conf = (SparkConf().setMaster("local[2]").setAppName("hetreward-test")
            .set("spark.driver.host", "127.0.0.1").set("spark.driver.bindAddress", "127.0.0.1")
            .set("spark.ui.enabled", "false").set("spark.ui.showConsoleProgress", "false").set("spark.python.worker.reuse", "true"))
    sc = SparkContext(conf=conf)
    sc.setLogLevel("ERROR")
    yield sc
    sc.stop()


def test_small_fit_on_spark(spark):
    data = paper_data(n=1000)
    want = single_process(data, ("expected", "cluster"))
    with hd.SparkEngine(spark, array_shards(data, random_parts(1000, 4))) as eng:
        for kind in ("expected", "cluster"):
            model, info = hd.fit(eng, hr.Fitter(covariance=kind, tol=TOL))
            assert_same(model, want[kind], 1e-10)
            assert info.shards == 4 and model.report.converged
