"""Closes every handle type while other threads use it, for SECONDS seconds per scenario.

Run by test_close_race.py in a subprocess with faulthandler on (``python -X faulthandler
close_race.py SCENARIO [SECONDS]``), so that a crash (SIGSEGV on a freed C object) is a failed
test with a traceback, not a dead test runner. A user thread may see ValueError ("closed") or
a result; anything else, or a crash, fails. Prints ``SCENARIO: N rounds, U uses, C refused``.
"""

import random
import sys
import threading
import time

import numpy as np

import hetreward as hr

D1, D2 = 4, 2


def make_data(n, seed):
    rng = np.random.default_rng(seed)
    cluster = (np.arange(n) % 20).astype(np.int64)
    psi = np.stack([cluster % 2, (cluster % 5) / 4.0], axis=1).astype(np.float64)
    z = rng.uniform(-2.0, 2.0, size=(n, D1))
    sigma = 1.0 + psi @ np.array([0.5, -0.3])
    p = 1.0 / (1.0 + np.exp(-sigma * (z @ np.array([1.0, -0.5, 0.75, 0.25]))))
    y = (rng.uniform(size=n) < p).astype(np.float64)
    return dict(z=z, psi0=np.ones(n), psi=psi, y=y, cluster=cluster)


DATA = make_data(400, 1)
PHI = np.random.default_rng(2).uniform(-1, 1, size=(2000, D1)).astype(np.float32)
ONE = PHI[:1]
with hr.Dataset(**DATA) as _ds, hr.Fitter() as _f:
    MODEL_BYTES = _f.fit(_ds).to_bytes()

counts = {"uses": 0, "refused": 0}
errors = []
count_lock = threading.Lock()


def user(fn):
    """Calls fn until the handle is closed (ValueError); records anything else."""
    def run():
        uses = 0
        try:
            while True:
                fn()
                uses += 1
        except ValueError as exc:
            if "closed" not in str(exc):
                errors.append(exc)
        except BaseException as exc:  # noqa: BLE001 - reported by the parent
            errors.append(exc)
        with count_lock:
            counts["uses"] += uses
            counts["refused"] += 1
    return run


def race(handle, users, closers=2):
    """Starts the users, lets them run a random moment, then closes `handle` from `closers`
    threads at once (close() is idempotent and thread-safe); waits for everyone."""
    threads = [threading.Thread(target=user(fn)) for fn in users]
    for t in threads:
        t.start()
    time.sleep(random.uniform(0, 0.003))
    cl = [threading.Thread(target=handle.close) for _ in range(closers)]
    for t in cl:
        t.start()
    for t in cl + threads:
        t.join()
    assert handle.closed


def model_scenario():
    m = hr.Model.from_bytes(MODEL_BYTES)
    race(m, [lambda: m.score(PHI), lambda: m.score(ONE), lambda: m.compare(PHI, PHI),
             lambda: m.select(PHI[:50]), lambda: m.coefficients(), lambda: m.to_bytes(),
             lambda: m.intervals(), lambda: (m.theta, m.gamma_se, repr(m), m.report),
             lambda: m.rationality(1.0, [0.5, 0.5])])


def dataset_scenario():
    ds = hr.Dataset(**DATA)
    fitters = [hr.Fitter(), hr.Fitter(solver="agd")]
    m = hr.Model.from_bytes(MODEL_BYTES)
    try:
        race(ds, [lambda: fitters[0].fit(ds).close(), lambda: fitters[1].fit(ds).close(),
                  lambda: m.heterogeneity(ds), lambda: (ds.n, repr(ds))])
    finally:
        for f in fitters:
            f.close()
        m.close()


def fitter_scenario():
    ds = hr.Dataset(**DATA)
    f = hr.Fitter(seed=random.randrange(1000))

    def fit_plain():
        try:
            f.fit(ds).close()
        except hr.CancelledError:
            pass  # cancel() below reached this fit (or was pending for it)

    def fit_with_progress():
        try:
            f.fit(ds, progress=lambda p: None).close()
        except hr.CancelledError:
            pass

    def cancel():
        f.cancel()
        time.sleep(0.0005)

    try:
        race(f, [fit_plain, fit_with_progress, cancel])
    finally:
        ds.close()


def pickle_scenario():
    # Pickling, copying and handles made from handles (wald) while the source is closed.
    import copy
    import pickle
    m = hr.Model.from_bytes(MODEL_BYTES)
    race(m, [lambda: pickle.loads(pickle.dumps(m)).close(), lambda: copy.deepcopy(m).close(),
             lambda: m.wald().close(), lambda: m.summary()])


SCENARIOS = {"model": model_scenario, "dataset": dataset_scenario, "fitter": fitter_scenario,
             "pickle": pickle_scenario}


def main():
    name = sys.argv[1]
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 3.0
    random.seed(0)
    rounds = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end and not errors:
        SCENARIOS[name]()
        rounds += 1
    if errors:
        print(f"{name}: unexpected error after {rounds} rounds: {errors[0]!r}", file=sys.stderr)
        raise errors[0]
    print(f"{name}: {rounds} rounds, {counts['uses']} uses, {counts['refused']} refused")


if __name__ == "__main__":
    main()
