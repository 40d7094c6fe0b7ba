"""AULC, DUR, RP rows, error at budget and cost on hand-worked tiny curves."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from alprbf.report import metrics


def rows(curves: dict, n0: int = 10, step: int = 10) -> pd.DataFrame:
    """Result rows from {(dataset, method, fold): [(test_acc, train_acc), ...]}."""
    out = []
    for (d, m, f), pts in curves.items():
        for it, (te, tr) in enumerate(pts):
            out.append({"dataset": d, "method": m, "fold": f, "repetition": 0, "iteration": it,
                        "n_labeled": n0 + step * it, "test_accuracy": te, "test_error": 1 - te,
                        "train_accuracy": tr, "fit_seconds": 0.5 * (it + 1),
                        "query_seconds": 0.0 if it == 0 else 0.3,
                        "eval_seconds": 0.1, "queried": [] if it == 0 else [1, 2],
                        "model_size": 2 + f, "n_components_presplit": 1 + f})
    return pd.DataFrame(out)


# ------------------------------------------------------------------------------------ AULC


def test_aulc_on_a_linear_gain():
    # method gains 1 point per label over a flat baseline: mean difference = 10 points
    x = np.array([0.0, 10.0, 20.0])
    assert metrics.aulc(x, [50, 60, 70], x, [50, 50, 50]) == pytest.approx(10.0)
    assert metrics.aulc(x, [50, 50, 50], x, [50, 60, 70]) == pytest.approx(-10.0)
    assert metrics.aulc(x, [55, 55, 55], x, [55, 55, 55]) == 0.0


def test_aulc_interpolates_different_grids_and_uses_the_common_range():
    # the coarse curve is linear, so interpolating it onto the fine grid is exact
    assert metrics.aulc([0, 20], [50, 70], [0, 10, 20], [50, 50, 50]) == pytest.approx(10.0)
    # common range [10, 20]: method 60 -> 70, baseline flat 50: mean difference 15
    assert metrics.aulc([10, 20, 30], [60, 70, 80], [0, 10, 20], [50, 50, 50]) == \
        pytest.approx(15.0)
    # a kink: method (0:50, 10:70, 20:70) vs 50 flat: area = 100 + 200 = 300 over 20
    assert metrics.aulc([0, 10, 20], [50, 70, 70], [0, 20], [50, 50]) == pytest.approx(15.0)


def test_aulc_without_queries_is_nan():
    assert np.isnan(metrics.aulc([10], [50], [10], [60]))


# ------------------------------------------------------------------------------------- DUR

XB = np.array([10, 20, 30, 40, 50, 60])          # 10 initial labels, budget 50
AB = np.array([50, 60, 70, 80, 85, 90.0])


def test_dur_target_averages_the_last_20_percent_of_the_budget():
    # queries q = 0..50; last 20 %: q >= 40, i.e. n = 50 and 60 -> (85 + 90) / 2
    assert metrics.dur_target(XB, AB, 0.2) == pytest.approx(87.5)
    # last 40 %: q >= 30 -> n = 40, 50, 60
    assert metrics.dur_target(XB, AB, 0.4) == pytest.approx((80 + 85 + 90) / 3)


def test_dur_hand_worked():
    r = metrics.dur(XB, [50, 70, 88, 89, 90, 91], XB, AB)
    assert r.target == pytest.approx(87.5)
    assert r.labels_base == 60          # baseline first reaches 87.5 at n = 60
    assert r.labels == 30               # method first reaches it at n = 30
    assert r.dur == pytest.approx(0.5)
    assert r.reached
    base = metrics.dur(XB, AB, XB, AB)
    assert base.dur == 1.0 and base.reached


def test_dur_not_reached_is_explicit():
    r = metrics.dur(XB, [50, 55, 60, 65, 70, 87.4], XB, AB)
    assert not r.reached
    assert np.isnan(r.dur) and np.isnan(r.labels)
    assert r.bound == pytest.approx(60 / 60)


def test_dur_reached_exactly_at_the_target_counts():
    # baseline flat: target equals every value; float round-off in the mean must not matter
    flat = np.full(6, 0.7 * 100)
    r = metrics.dur(XB, flat, XB, flat)
    assert r.reached and r.labels == 10 and r.dur == 1.0


def test_versus_baseline_table():
    d = rows({("ds", "base", 0): [(0.5, 0), (0.6, 0), (0.7, 0)],
              ("ds", "base", 1): [(0.5, 0), (0.6, 0), (0.7, 0)],
              ("ds", "good", 0): [(0.5, 0), (0.7, 0), (0.8, 0)],
              ("ds", "good", 1): [(0.5, 0), (0.7, 0), (0.8, 0)],
              ("ds", "bad", 0): [(0.5, 0), (0.5, 0), (0.6, 0)],
              ("ds", "bad", 1): [(0.5, 0), (0.5, 0), (0.6, 0)]})
    curves = metrics.curve_stats(d, "test_accuracy")
    vb = metrics.versus_baseline(curves, "base").set_index("method")
    # n = 10, 20, 30; target = mean over q >= 16: the last point, 70 %
    assert vb.loc["base", "dur_target"] == pytest.approx(70.0)
    assert vb.loc["base", "dur"] == 1.0 and vb.loc["base", "aulc"] == 0.0
    assert vb.loc["good", "dur"] == pytest.approx(20 / 30)
    # good - base: differences 0, 10, 10 -> trapezoid (5 + 10) * 10 / 20 = 7.5
    assert vb.loc["good", "aulc"] == pytest.approx(7.5)
    assert not vb.loc["bad", "dur_reached"] and np.isnan(vb.loc["bad", "dur"])
    assert vb.loc["bad", "dur_bound"] == pytest.approx(1.0)
    assert vb.loc["bad", "aulc"] == pytest.approx(-7.5)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(0, 100), min_size=2, max_size=12),
       st.lists(st.floats(0, 100), min_size=2, max_size=12))
def test_aulc_is_antisymmetric_and_shift_equivariant(a, b):
    n = min(len(a), len(b))
    x = np.arange(n) * 5.0 + 10
    a, b = np.asarray(a[:n]), np.asarray(b[:n])
    assert metrics.aulc(x, a, x, b) == pytest.approx(-metrics.aulc(x, b, x, a), abs=1e-9)
    assert metrics.aulc(x, a + 3.0, x, a) == pytest.approx(3.0)


# ------------------------------------------------------------------------------------- RP


def test_rp_train_best_picks_the_latest_best_training_step():
    d = rows({("ds", "m", 0): [(0.50, 0.6), (0.70, 0.9), (0.60, 0.8), (0.65, 0.9)],
              ("ds", "m", 1): [(0.40, 0.9), (0.80, 0.7), (0.90, 0.8), (0.95, 0.5)]})
    chosen = metrics.rp_rows(d, "train_best").set_index("fold")
    assert chosen.loc[0, "iteration"] == 3  # tie 0.9 at iterations 1 and 3: latest
    assert chosen.loc[1, "iteration"] == 0
    s = metrics.rp_scores(d, "train_best").iloc[0]
    assert s["mean"] == pytest.approx(100 * (0.65 + 0.40) / 2)
    assert s["std"] == pytest.approx(100 * np.std([0.65, 0.40], ddof=1))
    f = metrics.rp_scores(d, "final").iloc[0]
    assert f["mean"] == pytest.approx(100 * (0.65 + 0.95) / 2)


def test_rp_ignores_missing_train_accuracy():
    d = rows({("ds", "m", 0): [(0.5, np.nan), (0.7, 0.8), (0.6, np.nan)]})
    assert metrics.rp_rows(d, "train_best")["iteration"].tolist() == [1]
    d = rows({("ds", "m", 0): [(0.5, np.nan), (0.7, np.nan)]})
    assert metrics.rp_rows(d, "train_best")["iteration"].tolist() == [1]  # falls back to last


# ---------------------------------------------------------------------- budget, curves, cost


def test_error_at_budget_and_curve_stats():
    d = rows({("ds", "m", 0): [(0.5, 0), (0.8, 0), (0.9, 0)],
              ("ds", "m", 1): [(0.5, 0), (0.7, 0)]})          # this fold stopped early
    e = metrics.error_at_budget(d).iloc[0]
    assert e["mean"] == pytest.approx(100 * (0.1 + 0.3) / 2)
    assert e["std"] == pytest.approx(100 * np.std([0.1, 0.3], ddof=1))
    assert e["n"] == 2 and e["n_labeled"] == 30
    c = metrics.curve_stats(d, "test_error")
    assert c["n_labeled"].tolist() == [10, 20]                # n = 30 lacks fold 1
    assert c["mean"].tolist() == pytest.approx([50.0, 25.0])


def test_cost_summary_by_hand():
    d = rows({("ds", "m", 0): [(0.5, 0), (0.6, 0), (0.7, 0)],
              ("ds", "m", 1): [(0.5, 0), (0.6, 0)]})
    c = metrics.cost_summary(d).iloc[0]
    # fit_seconds 0.5 (it + 1): fold 0: 0.5 + 1 + 1.5 = 3, fold 1: 0.5 + 1 = 1.5
    assert c["train_time_s"] == pytest.approx(2.25)
    assert c["train_time_s_std"] == pytest.approx(np.std([3, 1.5], ddof=1))
    assert c["fit_seconds_per_query"] == pytest.approx((3 + 1.5) / 5)
    # 3 query rows of 0.3 s, 2 labels each
    assert c["query_seconds_per_label"] == pytest.approx(0.9 / 6)
    assert c["components"] == pytest.approx(2.5)  # model_size 2 + fold
    assert c["components_presplit"] == pytest.approx(1.5)  # 1 + fold
    # fit + query + evaluation: fold 0: 3 + 0.6 + 0.3, fold 1: 1.5 + 0.3 + 0.2
    assert c["eval_seconds_per_query"] == pytest.approx(0.1)
    assert c["total_time_s"] == pytest.approx((3.9 + 2.0) / 2)
    assert c["total_time_s_std"] == pytest.approx(np.std([3.9, 2.0], ddof=1))


def test_cost_summary_without_the_newer_columns():
    # read_results gives the columns an older task file lacks as nulls
    d = rows({("ds", "m", 0): [(0.5, 0), (0.6, 0)]}).assign(
        eval_seconds=None, n_components_presplit=None, task_id="t")
    c = metrics.cost_summary(d).iloc[0]
    assert c["eval_seconds_per_query"] == 0.0
    assert c["total_time_s"] == pytest.approx(0.5 + 1.0 + 0.3)
    assert np.isnan(c["components_presplit"])
    assert metrics.tasks_lacking(d, "eval_seconds") == ["t"]


# ------------------------------------------------------------------ the run's schedule


def _best_makespan(durations, workers):
    """The optimal makespan by trying every assignment of tasks to workers (tiny cases)."""
    import itertools
    best = float("inf")
    for assign in itertools.product(range(workers), repeat=len(durations)):
        loads = [0.0] * workers
        for d, w in zip(durations, assign, strict=True):
            loads[w] += d
        best = min(best, max(loads))
    return best


def test_lpt_makespan_hand_worked():
    from alprbf.report.metrics import lpt_makespan
    # Graham's tight case for 2 workers: 3, 3, 2, 2, 2 -> LPT {3, 2, 2} | {3, 2} = 7; best 6
    assert lpt_makespan([3, 3, 2, 2, 2], 2) == 7
    assert _best_makespan([3, 3, 2, 2, 2], 2) == 6
    assert lpt_makespan([5, 1, 1], 1) == 7
    assert lpt_makespan([5, 1, 1], 16) == 5
    assert lpt_makespan([], 2) == 0
    with pytest.raises(ValueError, match="workers"):
        lpt_makespan([1.0], 0)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.0, 100.0), min_size=1, max_size=7), st.integers(1, 3))
def test_lpt_makespan_within_graham_bounds(durations, workers):
    from alprbf.report.metrics import lpt_makespan
    got = lpt_makespan(durations, workers)
    best = _best_makespan(durations, workers)
    total, longest = sum(durations), max(durations)
    assert best - 1e-9 <= got <= 4.0 / 3.0 * best + 1e-9
    assert max(total / workers, longest) - 1e-9 <= got <= total / workers + longest + 1e-9
