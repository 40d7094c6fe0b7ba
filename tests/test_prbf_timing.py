"""The once-per-process timings that choose between paths with the same results."""

from __future__ import annotations

import time

from alprbf.prbf.fast.timing import best_times


def test_each_path_is_called_once_untimed_then_in_turn():
    calls = []
    paths = [lambda: calls.append("a"), lambda: calls.append("b")]
    times = best_times(paths, repeat=3)
    assert calls == ["a", "b"] * 4
    assert len(times) == 2 and all(t >= 0.0 for t in times)


def test_the_slower_path_measures_slower_and_a_slow_first_call_is_not_counted():
    first = []

    def slow_first():                          # compiling or page faults: only the first call
        if not first:
            first.append(True)
            time.sleep(0.05)

    fast, slow, cold = best_times([lambda: None, lambda: time.sleep(0.002), slow_first],
                                  repeat=5)
    assert fast < 0.002 <= slow
    assert cold < 0.05
