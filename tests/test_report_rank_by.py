"""The report ranks by any measure (``--rank-by``) and offers Wilcoxon–Holm after Friedman
(``--posthoc``)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sst

from alprbf.report import build_report, stats
from alprbf.store.results import read_task, task_files, write_task

from .report_fixtures import invoke_report, report_ok, synthetic_experiment


def _holm(p: list[float]) -> list[float]:
    """Holm's step-down adjustment by hand."""
    m, order = len(p), np.argsort(p)
    out, running = [0.0] * m, 0.0
    for i, j in enumerate(order):
        running = max(running, min(1.0, (m - i) * p[j]))
        out[j] = running
    return out


def test_wilcoxon_holm_equals_pairwise_scipy_tests_adjusted_by_hand():
    rng = np.random.default_rng(4)
    scores = pd.DataFrame(rng.normal(size=(9, 4)) + [0, 0.3, 0.8, 1.5],
                          columns=list("abcd"))
    got = stats.wilcoxon_holm(scores)
    pairs = list(itertools.combinations(scores.columns, 2))
    raw = [sst.wilcoxon(scores[a], scores[b], zero_method="zsplit").pvalue for a, b in pairs]
    for (a, b), p in zip(pairs, _holm(raw), strict=True):
        assert got.loc[a, b] == pytest.approx(p, rel=1e-12) == got.loc[b, a]
    assert (np.diag(got) == 1).all()
    # lower is better flips every difference: two-sided p-values do not change
    pd.testing.assert_frame_equal(stats.wilcoxon_holm(-scores, higher_is_better=False), got)


def test_compare_computes_wilcoxon_holm_only_when_asked():
    rng = np.random.default_rng(5)
    scores = pd.DataFrame(rng.normal(size=(6, 3)), columns=list("xyz"))
    assert stats.compare(scores).wilcoxon_holm_p is None
    c = stats.compare(scores, posthoc="wilcoxon-holm")
    pd.testing.assert_frame_equal(c.wilcoxon_holm_p, stats.wilcoxon_holm(scores))


def _with_metrics(exp_dir, f1, log_loss):
    """Rewrite every task file with macro F1 and log-loss as functions of its accuracy and
    method (``f1(acc, model, strategy)``)."""
    for path in task_files(exp_dir):
        df = read_task(path)
        df["test_macro_f1"] = [f1(a, m, s) for a, m, s in
                               zip(df["test_accuracy"], df["model"], df["strategy"],
                                   strict=True)]
        df["test_balanced_accuracy"] = df["test_accuracy"]
        df["test_log_loss"] = log_loss(df["test_accuracy"])
        write_task(df, path)


def _rank_row(out, name="rp"):
    rp = pd.read_csv(out / f"{name}.csv").set_index("dataset")
    return rp.loc["Rank"].astype(float)


@pytest.mark.slow   # left out of make test-quick; make test and CI run it
def test_rank_by_macro_f1_and_log_loss(tmp_path):
    exp = synthetic_experiment(tmp_path)   # accuracy grows fastest for the third method
    # macro F1 reverses the methods' order; log-loss falls as accuracy grows
    order = {("svm", "random"): 0.9, ("svm", "uncertainty"): 0.5, ("nb", "uncertainty"): 0.1}
    _with_metrics(exp, lambda a, m, s: order[(m, s)], lambda acc: 1.0 - acc)
    kw = {"figures": False}                     # the ranks are in the tables
    build_report(exp, out_dir=tmp_path / "acc", formats=("csv",), **kw)
    build_report(exp, out_dir=tmp_path / "f1", formats=("csv", "md"), rank_by="macro_f1", **kw)
    build_report(exp, out_dir=tmp_path / "ll", formats=("csv",), rank_by="log_loss", **kw)
    acc, f1, ll = (_rank_row(tmp_path / d) for d in ("acc", "f1", "ll"))
    assert acc["nb / uncertainty"] < acc["svm / random"]
    assert f1["svm / random"] == 1.0 and f1["nb / uncertainty"] == 3.0
    pd.testing.assert_series_equal(ll, acc)      # lower log-loss wins: the accuracy order
    md = (tmp_path / "f1" / "report.md").read_text()
    assert "Ranked performance (RP) by macro_f1" in md and "macro F1 (%)" in md
    # the published-value comparison still uses accuracy: the reference metric is unchanged
    rp = pd.read_csv(tmp_path / "f1" / "rp.csv").set_index("dataset")
    assert rp.loc["alpha", "svm / random"] == pytest.approx(90.0)


@pytest.mark.slow
def test_rank_by_a_measure_older_files_lack_skips_the_test(tmp_path):
    exp = synthetic_experiment(tmp_path)         # no metric columns: read as nulls
    build_report(exp, out_dir=tmp_path / "r", formats=("csv", "md"), rank_by="macro_f1")
    md = (tmp_path / "r" / "report.md").read_text()
    assert "skipped" in md and "Critical-difference" not in md


@pytest.mark.slow
def test_posthoc_wilcoxon_holm_replaces_the_nemenyi_table(tmp_path):
    exp = synthetic_experiment(tmp_path)
    written = build_report(exp, out_dir=tmp_path / "r", formats=("csv", "md"),
                           posthoc="wilcoxon-holm")
    names = {p.name for p in written}
    assert "wilcoxon_holm.csv" in names and "nemenyi.csv" not in names
    assert "cd_diagram.png" in names
    p = pd.read_csv(tmp_path / "r" / "wilcoxon_holm.csv").set_index("method")
    assert ((p.to_numpy() > 0) & (p.to_numpy() <= 1)).all()


@pytest.mark.parametrize(("option", "value", "words"), [
    ("--rank-by", "f1", "unknown rank-by measure 'f1'"),
    ("--posthoc", "holm", "unknown post-hoc test 'holm'")])
def test_unknown_rank_by_or_posthoc_is_one_line_exit_2(tmp_path, option, value, words):
    exp = synthetic_experiment(tmp_path)
    res = invoke_report(exp, option, value)
    assert res.exit_code == 2
    [line] = [x for x in res.output.splitlines() if x.strip()]
    assert words in line and ("macro_f1" in line or "wilcoxon-holm" in line)


@pytest.mark.slow
def test_cli_rank_by_and_posthoc(tmp_path):
    exp = synthetic_experiment(tmp_path)
    _with_metrics(exp, lambda a, m, s: a, lambda acc: 1.0 - acc)
    report_ok(exp, "--rank-by", "balanced_accuracy", "--posthoc", "wilcoxon-holm",
              "--out", tmp_path / "r", "--format", "csv")
    assert (tmp_path / "r" / "wilcoxon_holm.csv").is_file()
