"""Files the binding opens by path (Dataset.load, Model.load): inputs that never answer are
refused at once, and cluster ids above 2^53 are read exactly."""

import os
import threading

import numpy as np
import pytest

import hetreward as hr
from conftest import D1, D2

LIMIT = 30.0  # seconds: each call returns at once; a hang fails instead of blocking the suite


def call_bounded(fn, path):
    """Runs fn(path) on a thread; fails if it has not returned within LIMIT. A call stuck
    opening the FIFO is released by opening its other end, so nothing is left blocked."""
    result = {}

    def run():
        try:
            result["value"] = fn(path)
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            result["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(LIMIT)
    if t.is_alive():
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        t.join(LIMIT)
        pytest.fail(f"{fn.__qualname__}({path!r}) blocked for {LIMIT} s")
    if "error" in result:
        raise result["error"]
    return result["value"]


@pytest.mark.parametrize(
    "loader, name",
    [(hr.Dataset.load, "data.csv"), (hr.Dataset.load, "data.safetensors"),
     (hr.Model.load, "model.hrm")],
)
def test_a_fifo_without_writer_is_refused_at_once(tmp_path, loader, name):
    path = tmp_path / name
    os.mkfifo(path)
    with pytest.raises(hr.HetrewardIOError) as info:
        call_bounded(loader, str(path))
    message = str(info.value)
    assert name in message and "is a FIFO (named pipe), not a regular file" in message


def test_cluster_ids_above_2_pow_53_are_exact(tmp_path, data, model):
    """Eight annotators 2^53 + 0..7 (five if the ids went through a double), from the caller's
    int64 array and from a CSV file; a value no 64-bit id can be is quoted as written."""
    n = len(data["y"])
    ids = (np.int64(1) << 53) + (np.arange(n) % 8).astype(np.int64)
    with hr.Dataset(data["z"], data["psi0"], data["psi"], data["y"], cluster=ids) as ds:
        assert model.heterogeneity(ds)["clusters"] == 8
    header = ["cluster", "y", "psi0"] + [f"z{j + 1}" for j in range(D1)] + \
        [f"psi{k + 1}" for k in range(D2)]
    rows = [",".join([str(int(ids[i]))] + [repr(float(v)) for v in (data["y"][i], data["psi0"][i])]
                     + [repr(float(v)) for v in data["z"][i]]
                     + [repr(float(v)) for v in data["psi"][i]])
            for i in range(n)]
    path = tmp_path / "ids.csv"
    path.write_text("\n".join([",".join(header)] + rows) + "\n")
    with hr.Dataset.load(str(path)) as ds:
        assert model.heterogeneity(ds)["clusters"] == 8
    rows[6] = "9223372036854775808" + rows[6][rows[6].index(","):]
    path.write_text("\n".join([",".join(header)] + rows) + "\n")
    with pytest.raises(hr.BadFormatError) as info:
        hr.Dataset.load(str(path))
    assert ("column `cluster`, data row 7: cluster id `9223372036854775808` is outside"
            in str(info.value))
