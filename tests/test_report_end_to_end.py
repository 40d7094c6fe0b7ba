"""build_report on synthetic Parquet task files: every output, references, edge cases."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from alprbf.errors import UserError
from alprbf.report import build_report
from tests.report_fixtures import (
    curve_rows,
    invoke_report,
    report_ok,
    synthetic_experiment,
    write_run_json,
    write_task,
)

#: whole reports of several experiments: left out of `make test-quick`
pytestmark = pytest.mark.slow

TABLES = ("error_at_budget", "rp", "rp_stats", "nemenyi", "aulc", "dur", "cost", "reference")
NAN_WORD = re.compile(r"\bnan\b", re.IGNORECASE)


def _no_silent_nan(paths):
    for p in paths:
        if p.suffix in (".md", ".csv", ".tex"):
            text = p.read_text()
            assert not NAN_WORD.search(text), f"'nan' printed in {p.name}"


@pytest.fixture
def experiment(tmp_path):
    exp = synthetic_experiment(tmp_path)
    (exp / "reference.csv").write_text(
        "dataset,method,metric,mean,std,source\n"
        "alpha,nb,error_at_budget,20.0,1.0,made-up table\n"
        "beta,svm / uncertainty,rp_accuracy,90.0,,made-up table\n"
        "zeta,nb,dur,1.0,,made-up table\n")
    return exp


def test_full_report(experiment):
    paths = build_report(experiment)
    out = experiment / "report"
    names = {p.name for p in paths}
    for t in TABLES:
        for f in ("md", "csv", "tex"):
            assert f"{t}.{f}" in names
    for fig in ("learning_curves", "cd_diagram"):
        for f in ("png", "pdf"):
            p = out / f"{fig}.{f}"
            assert p in paths and p.stat().st_size > 1000
    assert (out / "learning_curves.png").read_bytes()[:4] == b"\x89PNG"
    assert (out / "cd_diagram.pdf").read_bytes()[:4] == b"%PDF"
    assert paths[0] == out / "report.md"
    _no_silent_nan(paths)

    # error at budget: recompute from the Parquet rows independently
    rows = pd.concat([pq.read_table(p).to_pandas()
                      for p in (experiment / "tasks").glob("*.parquet")])
    last = rows[rows["iteration"] == rows["iteration"].max()]
    sel = last[(last["dataset"] == "alpha") & (last["model"] == "nb")]
    want = 100 * sel["test_error"].to_numpy()
    csv = pd.read_csv(out / "error_at_budget.csv")
    got = csv[(csv["dataset"] == "alpha") & (csv["method"] == "nb / uncertainty")].iloc[0]
    assert got["mean"] == pytest.approx(want.mean(), rel=1e-5)
    assert got["std"] == pytest.approx(want.std(ddof=1), rel=1e-5, abs=1e-9)
    assert got["ref_mean"] == 20.0
    assert got["diff"] == pytest.approx(want.mean() - 20.0, rel=1e-5)

    # the reference stands beside ours, with the difference, in the Markdown tables
    md = (out / "error_at_budget.md").read_text()
    assert "nb / uncertainty [paper]" in md and "20.00 (1.00)" in md
    assert f"{want.mean() - 20.0:+.2f}" in md
    ref_md = (out / "reference.md").read_text()
    assert "made-up table" in ref_md
    assert "unmapped: dataset 'zeta' is not in the config" in ref_md
    ref_csv = pd.read_csv(out / "reference.csv")
    rp = pd.read_csv(out / "rp.csv").set_index("dataset")
    ours = rp.loc["beta", "svm / uncertainty"]
    assert rp.loc["Rank"].sum() == pytest.approx(3 * 4 / 2)
    assert rp.loc["Wins"].sum() == pytest.approx(5, rel=1e-5)
    row = ref_csv[ref_csv["metric"] == "rp_accuracy"].iloc[0]
    assert row["diff"] == pytest.approx(ours - 90.0, rel=1e-5)

    # the baseline defaulted to the only `random` method; report.md says so and links tables
    index = (out / "report.md").read_text()
    assert "`svm / random` (the only method with strategy `random`" in index
    for t in TABLES:
        assert f"({t}.md)" in index
    assert "![" in index and "(learning_curves.png)" in index
    tex = (out / "rp_stats.tex").read_text()
    assert tex.startswith("\\begin{table}") and "\\end{tabular}" in tex
    for p in out.glob("*.tex"):  # plain ASCII LaTeX, specials escaped
        text = p.read_text()
        assert text.isascii(), p.name
        bare = re.sub(r"\\[%&_#]| & ", "", text)  # escaped specials and column separators
        assert not re.search(r"[%&_#]", bare), p.name


def test_formats_and_out_dir(experiment, tmp_path):
    out = tmp_path / "elsewhere"
    paths = build_report(experiment, out_dir=out, formats=("csv",), baseline="nb",
                         alpha=0.05, q_alpha=3.0, rp_measure="final")
    assert all(p.is_relative_to(out) for p in paths)
    assert not list(out.glob("*.tex")) and (out / "aulc.csv").exists()
    stats_csv = pd.read_csv(out / "rp_stats.csv").set_index("statistic")["value"]
    k, n = 3, 5
    assert stats_csv["critical difference CD"] == pytest.approx(3.0 * np.sqrt(k * (k + 1)
                                                                              / (6 * n)), rel=1e-5)
    aulc = pd.read_csv(out / "aulc.csv")
    assert (aulc[aulc["method"] == "nb / uncertainty"]["aulc"] == 0).all()
    assert "Baseline for AULC and DUR: `nb / uncertainty`" in (out / "report.md").read_text()


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"baseline": "qbc"}, "baseline 'qbc' matches no method"),
    ({"baseline": "svm"}, "ambiguous"),
    ({"formats": ("md", "pdf")}, "unknown report format 'pdf'"),
    ({"rp_measure": "best"}, "unknown RP measure 'best'"),
    ({"alpha": 1.5}, "alpha must be between 0 and 1"),
    ({"q_alpha": -1.0}, "q_alpha must be positive"),
])
def test_bad_arguments_are_user_errors(experiment, kwargs, message):
    with pytest.raises(UserError, match=message):
        build_report(experiment, **kwargs)


def test_single_dataset_and_no_baseline(tmp_path):
    exp = synthetic_experiment(tmp_path, "solo", datasets=("only",),
                               methods=(("svm", "uncertainty"), ("nb", "uncertainty")))
    paths = build_report(exp)
    index = (exp / "report" / "report.md").read_text()
    assert "Significance tests (Wilcoxon, or Friedman with Nemenyi and the CD diagram) " \
           "skipped: needs at least 5 datasets with results for every method, found 1" in index
    assert "AULC and DUR skipped: no baseline given and no method uses strategy `random`" \
        in index
    assert not (exp / "report" / "cd_diagram.png").exists()
    assert not (exp / "report" / "aulc.md").exists()
    assert "skipped" in (exp / "report" / "rp_stats.md").read_text()
    _no_silent_nan(paths)


def test_dur_not_reached_is_printed_like_the_paper(tmp_path):
    exp = tmp_path / "nr"
    for f in range(2):
        write_task(exp, curve_rows("nr", "d1", "base", "random", f, 0,
                                   [0.5, 0.6, 0.7, 0.8, 0.9, 0.9]))
        write_task(exp, curve_rows("nr", "d1", "slow", "uncertainty", f, 0,
                                   [0.5, 0.5, 0.55, 0.6, 0.6, 0.65]))
    write_run_json(exp, "nr", budget=10)
    paths = build_report(exp, baseline="base")
    md = (exp / "report" / "dur.md").read_text()
    # target 90 % reached by the baseline at n = 18 (of 20): slow's bound is 20 / 18
    assert ">>1.111 (>>20)" in md
    assert "| Mean | " in md and ">>1.111" in md.split("| Mean |")[1]
    csv = pd.read_csv(exp / "report" / "dur.csv")
    slow = csv[csv["method"] == "slow / uncertainty"].iloc[0]
    assert not slow["dur_reached"] and pd.isna(slow["dur"])
    _no_silent_nan(paths)


def test_supervised_only_results_skip_aulc(tmp_path):
    exp = tmp_path / "cv"
    for d in ("a", "b"):
        for m_i, m in enumerate(("svm", "prbf")):
            for f in range(3):
                write_task(exp, curve_rows("cv", d, m, "random", f, 0, [0.8 + 0.05 * m_i
                                                                         + 0.01 * f],
                                           model_size=None))
    paths = build_report(exp)
    index = (exp / "report" / "report.md").read_text()
    assert "AULC and DUR skipped: no baseline given and 2 methods use strategy `random`" \
        in index
    cost = (exp / "report" / "cost.md").read_text()
    data_rows = [ln for ln in cost.splitlines() if ln.startswith("| a ") or ln.startswith("| b ")]
    assert len(data_rows) == 4
    # no model size and no queries: explicit n/a in the last two columns
    assert all(ln.endswith("| n/a | n/a |") for ln in data_rows)
    _no_silent_nan(paths)
    paths = build_report(exp, baseline="svm")
    assert "AULC and DUR skipped: the curves have a single point" in (
        exp / "report" / "report.md").read_text()


def test_several_experiments_get_an_index(tmp_path):
    synthetic_experiment(tmp_path, "first", datasets=("a", "b"))
    synthetic_experiment(tmp_path, "second", datasets=("a", "b"))
    paths = build_report(tmp_path, figures=False)
    top = tmp_path / "report" / "report.md"
    assert paths[0] == top
    text = top.read_text()
    assert "[first](first/report.md)" in text and "[second](second/report.md)" in text
    assert (tmp_path / "report" / "second" / "rp.csv").exists()


def test_baseline_missing_on_a_dataset_and_coarser_grid(tmp_path):
    exp = tmp_path / "x"
    for f in range(2):
        write_task(exp, curve_rows("x", "d1", "base", "random", f, 0, [0.5, 0.6, 0.7, 0.8]))
        write_task(exp, curve_rows("x", "d1", "m", "unc", f, 0, [0.5, 0.7, 0.8], batch=3))
        write_task(exp, curve_rows("x", "d2", "m", "unc", f, 0, [0.5, 0.7, 0.8]))
    paths = build_report(exp, figures=False)
    aulc = pd.read_csv(exp / "report" / "aulc.csv").set_index(["dataset", "method"])
    # m at n = 10, 13, 16 vs base at 10, 12, 14, 16 (interpolated): differences 0, 10/3, 5,
    # 10/3, 0 at n = 10, 12, 13, 14, 16 -> trapezoid 15 over 6 labels
    assert aulc.loc[("d1", "m / unc"), "aulc"] == pytest.approx(2.5)
    assert pd.isna(aulc.loc[("d2", "m / unc"), "aulc"])
    md = (exp / "report" / "aulc.md").read_text()
    assert "| d2 | n/a | n/a |" in md and "n/a on d2: the baseline has no results there" in md
    _no_silent_nan(paths)


def test_cells_with_missing_folds_are_named(experiment):
    # a run stopped early (or started with --only) leaves a cell with fewer folds than planned
    victim = next((experiment / "tasks").glob("beta-nb-uncertainty-r0-f1*"))
    victim.unlink()
    build_report(experiment, figures=False)
    text = (experiment / "report" / "report.md").read_text()
    assert "Incomplete cells" in text and "beta / nb / uncertainty 1/2" in text
    assert "alpha" not in text.split("Incomplete cells")[1].split("\n")[0]


def test_methods_filter_keeps_only_matching_methods(experiment, tmp_path):
    build_report(experiment, out_dir=tmp_path / "all", figures=False)
    paths = build_report(experiment, out_dir=tmp_path / "svm", methods=["svm / *"])
    full = pd.read_csv(tmp_path / "all" / "error_at_budget.csv").set_index(["dataset", "method"])
    sub = pd.read_csv(tmp_path / "svm" / "error_at_budget.csv").set_index(["dataset", "method"])
    # one model left: the display labels are the strategies; the numbers are unchanged
    assert set(sub.index.get_level_values("method")) == {"random", "uncertainty"}
    for (d, m), row in sub.iterrows():
        assert row["mean"] == pytest.approx(full.loc[(d, f"svm / {m}"), "mean"])
    for name in ("error_at_budget", "rp", "cost"):
        assert "nb" not in (tmp_path / "svm" / f"{name}.md").read_text()
    # the paper's row for nb is still listed: its method was left out by --methods
    ref = (tmp_path / "svm" / "reference.md").read_text()
    assert "| alpha | nb | error_at_budget | 20.000 (1.000) | n/a | n/a | not selected |" in ref
    assert paths[0] == tmp_path / "svm" / "report.md"
    assert (tmp_path / "svm" / "learning_curves.png").exists()


def test_methods_filter_names_patterns_that_match_nothing(experiment):
    with pytest.raises(UserError, match=r"'nope\*' match no method; methods: nb / uncertainty, "
                                        r"svm / random, svm / uncertainty"):
        build_report(experiment, methods=["svm / random", "nope*"])


def test_methods_option_on_the_command_line(experiment):
    report_ok(experiment, "--methods", "nb / *, svm / random", "--no-figures")
    csv = pd.read_csv(experiment / "report" / "error_at_budget.csv")
    assert set(csv["method"]) == {"nb / uncertainty", "svm / random"}
    res = invoke_report(experiment, "--methods", "qbc*")
    assert res.exit_code == 2 and len(res.stderr.strip().splitlines()) == 1
    assert "'qbc*' match no method" in res.stderr


def test_curve_accuracy_chooses_what_aulc_and_dur_use(tmp_path):
    """Train accuracies shifted up by 10 points for one method only: on ``train`` its AULC rises
    by exactly 10 (points per labeled sample averaged = mean difference), RP is unchanged."""
    exp = tmp_path / "ca"
    test_b, test_m = [0.5, 0.6, 0.7, 0.8], [0.55, 0.65, 0.75, 0.8]
    for f in range(2):
        write_task(exp, curve_rows("ca", "d1", "base", "random", f, 0, test_b))
        write_task(exp, curve_rows("ca", "d1", "m", "uncertainty", f, 0, test_m,
                                   train_accuracies=[a + 0.1 for a in test_m]))
    write_run_json(exp, "ca", budget=6)
    build_report(exp, baseline="base", out_dir=tmp_path / "test")
    build_report(exp, baseline="base", out_dir=tmp_path / "train", curve_accuracy="train")
    a_test, a_train = (pd.read_csv(tmp_path / d / "aulc.csv").set_index("method")
                       .loc["m / uncertainty", "aulc"] for d in ("test", "train"))
    assert a_train == pytest.approx(a_test + 10.0, abs=1e-3)   # the CSV keeps 4 decimals
    rp = [(tmp_path / d / "rp.csv").read_text() for d in ("test", "train")]
    assert rp[0] == rp[1]
    assert "on the train accuracy" in (tmp_path / "train" / "dur.md").read_text()
    assert "AULC and DUR use the training-pool accuracy" in \
        (tmp_path / "train" / "report.md").read_text()
    assert "AULC and DUR use the test accuracy" in (tmp_path / "test" / "report.md").read_text()
    res = invoke_report(exp, "--curve-accuracy", "pool")
    assert res.exit_code == 2 and "curve accuracy 'pool'" in res.output


def test_merged_datasets_and_error_at_fractions(tmp_path):
    """Nguyen & Smeulders 2004's reading: one-vs-rest variants of one database size merged into one
    panel, every curve counted once, the error read at fractions of the database size."""
    import json

    exp = tmp_path / "m"
    errs = {}
    for digit in (0, 1):
        for rep in range(3):
            acc = [0.7 + 0.01 * rep + 0.02 * digit + 0.03 * i for i in range(6)]  # n0=10, +2
            errs[(digit, rep)] = acc
            write_task(exp, curve_rows("m", f"db-n100-{digit}", "svm", "random", 0, rep, acc))
    config = {"name": "m", "protocol": {"folds": 5, "test": "unlabeled", "repetitions": 3},
              "datasets": [{"name": "db", "label": f"db-n100-{d}", "rows": 100} for d in (0, 1)],
              "methods": [[{"name": "svm", "label": "svm"}, {"name": "random",
                                                            "label": "random"}]]}
    (exp / "run.json").write_text(json.dumps({"experiment": "m", "config": config}))
    build_report(exp, merge_datasets="db-(n[0-9]+)-[0-9]", error_at_fraction=(0.12, 0.2))
    index = (exp / "report" / "report.md").read_text()
    assert "Incomplete" not in index          # 3 repetitions x 1 "fold" x 2 digits planned
    err = pd.read_csv(exp / "report" / "error_at_budget.csv")
    assert err["dataset"].tolist() == ["n100"] and err["n"].tolist() == [6]
    want = np.mean([100 * (1 - a[-1]) for a in errs.values()])
    assert err["mean"].iloc[0] == pytest.approx(want, abs=1e-3)
    at = pd.read_csv(exp / "report" / "error_at_fraction.csv")
    # 12 % of 100 rows = 12 labels (iteration 1), 20 % = 20 labels (iteration 5)
    for frac, it in (("12 %", 1), ("20 %", 5)):
        row = at[at["at"] == frac].iloc[0]
        assert row["mean"] == pytest.approx(np.mean([100 * (1 - a[it]) for a in errs.values()]),
                                            abs=1e-3)
    res = invoke_report(exp, "--merge-datasets", "zzz-(n)")
    assert res.exit_code == 2 and "matches no data set label" in res.output
    res = invoke_report(exp, "--merge-datasets", "db-n100-[0-9]")
    assert res.exit_code == 2 and "exactly one (group)" in res.output


def test_dur_note_names_the_window_used(experiment, tmp_path):
    build_report(experiment, baseline="svm / random", out_dir=tmp_path / "w", window=0.3,
                 figures=False)
    assert "over the last 30 % of the budget" in (tmp_path / "w" / "dur.md").read_text()


def test_no_figures_writes_the_same_tables_and_says_so(experiment, tmp_path):
    with_figs = build_report(experiment, out_dir=tmp_path / "figs", formats=("md", "csv", "html"))
    without = build_report(experiment, out_dir=tmp_path / "none", formats=("md", "csv", "html"),
                           figures=False)
    names = {p.name for p in with_figs} - {p.name for p in without}
    assert names == {"learning_curves.png", "learning_curves.pdf", "cd_diagram.png",
                     "cd_diagram.pdf"}
    for p in without:
        if p.suffix == ".csv":
            assert p.read_bytes() == (tmp_path / "figs" / p.name).read_bytes(), p.name
    assert "Figures not drawn (--no-figures)" in (tmp_path / "none" / "report.md").read_text()
    assert "data:image/png" not in (tmp_path / "none" / "report.html").read_text()
    res = invoke_report(experiment, "--no-figures", "--out", str(tmp_path / "cli"))
    assert res.exit_code == 0 and not list((tmp_path / "cli").glob("*.png"))
