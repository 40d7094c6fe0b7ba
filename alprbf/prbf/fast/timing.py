"""Once-per-process timings that choose between code paths giving the same results.

Only speed depends on them, but a timing taken during a slow spell of the machine can pick the
slower path for every task a worker process runs (docs/history/notes.md, 'Sparse or dense: the guess
and its threshold').  :func:`best_times` therefore calls each path once first (compilation,
page faults, cold caches) and then times the paths in turn, so that a slow spell weighs on all
of them alike.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np

REPEAT = 30
"""Timings per path.  With five, no first call and one path after the other, fresh processes
on an AMD EPYC (Zen 3) measured the E-step's sparse-path threshold at 0.04-0.70; with thirty
after a first call, taken in turn, 0.26-0.37 (16 processes)."""


def best_times(paths: Sequence[Callable[[], object]], repeat: int = REPEAT) -> list[float]:
    """The shortest of ``repeat`` wall times of each path (seconds), after one untimed call
    of each, the paths timed in turn."""
    for path in paths:
        path()
    best = [np.inf] * len(paths)
    for _ in range(repeat):
        for p, path in enumerate(paths):
            t0 = time.perf_counter()
            path()
            best[p] = min(best[p], time.perf_counter() - t0)
    return best
