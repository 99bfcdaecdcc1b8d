"""Shared fixtures: data drawn from the model itself, and one fitted model."""

import os
import pathlib

import numpy as np
import pytest

import hetreward as hr

D1, D2 = 4, 2
TRUE_THETA = np.array([1.0, -0.5, 0.75, 0.25])
TRUE_GAMMA = np.array([0.5, -0.3])
REPO = pathlib.Path(__file__).resolve().parents[3]


def make_data(n, seed):
    """n comparisons from 20 annotators with a one-hot and a graded covariate; P(y = 1) =
    mu(sigma * theta . z), sigma = 1 + gamma . psi. Returns float64 arrays and int64 ids."""
    rng = np.random.default_rng(seed)
    cluster = (np.arange(n) % 20).astype(np.int64)
    psi = np.stack([cluster % 2, (cluster % 5) / 4.0], axis=1).astype(np.float64)
    psi0 = np.ones(n)
    z = rng.uniform(-2.0, 2.0, size=(n, D1))
    sigma = psi0 + psi @ TRUE_GAMMA
    y = (rng.uniform(size=n) < 1.0 / (1.0 + np.exp(-sigma * (z @ TRUE_THETA)))).astype(np.float64)
    return dict(z=z, psi0=psi0, psi=psi, y=y, cluster=cluster)


def phis(m, seed):
    return np.random.default_rng(seed).uniform(-1, 1, size=(m, D1)).astype(np.float32)


@pytest.fixture(scope="session")
def data():
    return make_data(1000, 1)


@pytest.fixture(scope="session")
def model(data):
    with hr.Dataset(**data) as ds, hr.Fitter() as fitter:
        m = fitter.fit(ds)
    yield m
    m.close()


@pytest.fixture(scope="session")
def cli():
    """The hetreward command-line tool: HETREWARD_CLI, else the repository's release build.
    Missing is a failure, not a skip."""
    path = os.environ.get("HETREWARD_CLI") or str(REPO / "target" / "release" / "hetreward")
    if not os.access(path, os.X_OK):
        pytest.fail(f"hetreward CLI not found at {path}: set HETREWARD_CLI or cargo build --release")
    return path


@pytest.fixture
def sigint_raises():
    """Python's own Ctrl-C handler for the test's duration, whatever the launcher left: a
    program started in the background of a non-interactive shell (`cmd &`) inherits SIGINT
    ignored, and Python then installs no KeyboardInterrupt handler — a Ctrl-C test's fit
    would run forever instead of failing."""
    import signal

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
