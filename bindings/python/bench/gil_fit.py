"""A fit of 300 agd iterations while another Python thread holds the GIL (it spins in Python),
against the same fit alone. Prints the median wall time of 5 of each and their ratio.

    python bindings/python/bench/gil_fit.py [THREADS]   # the package installed; THREADS: the
                                                         # fit's threads, 0 = all cores

Before the progress trampoline was installed only for fits given a callback, every
iteration waited for the GIL here.
"""

import statistics
import sys
import threading
import time

import numpy as np

import hetreward as hr


def data(n=2000, d1=4, seed=7):
    rng = np.random.default_rng(seed)
    z = rng.uniform(-2, 2, size=(n, d1))
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-(z @ np.linspace(1, -1, d1))))).astype(float)
    return hr.Dataset(z, np.ones(n), None, y)


def main():
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    with data() as ds, hr.Fitter(solver="agd", init="random", restarts=0, max_iter=300,
                                 tol=0.0, threads=threads) as fitter:
        fitter.fit(ds)  # warm-up
        alone, busy = [], []
        for _ in range(5):
            t = time.perf_counter()
            fitter.fit(ds)
            alone.append(time.perf_counter() - t)
            stop = threading.Event()
            spinner = threading.Thread(target=lambda: [None for _ in iter(stop.is_set, True)])
            spinner.start()
            t = time.perf_counter()
            fitter.fit(ds)
            busy.append(time.perf_counter() - t)
            stop.set()
            spinner.join()
    a, b = statistics.median(alone), statistics.median(busy)
    print(f"300 agd iterations, n = 2000, threads {threads}, switch interval {sys.getswitchinterval() * 1e3:.0f} ms: "
          f"alone {a:.3f} s, with a thread holding the GIL {b:.3f} s (x{b / a:.2f})")


if __name__ == "__main__":
    main()
