"""close() of every handle type while other threads use it never crashes the interpreter
(issue 32, class 1): the user threads get results or ValueError("closed"), nothing else.

Each scenario of close_race.py runs in a subprocess under faulthandler, so a SIGSEGV is a
failed test with the C-level traceback, not a dead test runner. Before the per-handle use
guard (_core._Use) the "model" and "dataset" scenarios crashed within a second."""

import os
import signal
import subprocess
import sys

import pytest

import hetreward as hr

HERE = os.path.dirname(os.path.abspath(__file__))
SECONDS = float(os.environ.get("HETREWARD_CLOSE_RACE_SECONDS", "3"))


@pytest.mark.parametrize("scenario", ["model", "dataset", "fitter", "pickle"])
def test_close_while_in_use_never_crashes(scenario):
    env = dict(os.environ)
    # The subprocess imports the same hetreward package as this test (installed or not).
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.dirname(os.path.dirname(os.path.abspath(hr.__file__))), HERE])
    out = subprocess.run(
        [sys.executable, "-X", "faulthandler", os.path.join(HERE, "close_race.py"), scenario,
         str(SECONDS)],
        env=env, capture_output=True, text=True, timeout=SECONDS + 60)
    if out.returncode < 0:
        pytest.fail(f"{scenario}: the interpreter died of "
                    f"{signal.Signals(-out.returncode).name}:\n{out.stderr[-6000:]}")
    assert out.returncode == 0, out.stderr[-6000:]
    print(out.stdout.strip())
    assert f"{scenario}: " in out.stdout
