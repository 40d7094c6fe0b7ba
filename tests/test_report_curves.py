"""Learning curves and figures (issue 17 items 1 and 4): curves aligned on queries, no figure
for supervised tables, distinct styles, clipped bands, published endpoints, uncut CD labels and
the paper-style LaTeX table."""

from __future__ import annotations

import matplotlib.colors as mcolors
import matplotlib.image as mimage
import numpy as np
import pandas as pd
import pytest

from alprbf.report import metrics, plots, stats, tables
from tests.report_fixtures import curve_rows, report_ok, write_run_json, write_task


def _capture_figures(monkeypatch) -> dict:
    """Keep the figures the report draws (by file stem) instead of only their files."""
    seen = {}
    save = plots._save

    def capture(fig, stem, formats=plots.PLOT_FORMATS):
        seen[stem.name] = fig
        return save(fig, stem, formats)

    monkeypatch.setattr(plots, "_save", capture)
    return seen


# ------------------------------------------------------------------------ 1. alignment


def test_curves_align_on_queries_when_initial_sizes_differ():
    rows = []
    for f, n0 in ((0, 614), (1, 615)):  # pima: training parts of 614 and 615 rows
        for it in range(3):
            rows.append({"dataset": "pima", "method": "m", "fold": f, "repetition": 0,
                         "iteration": it, "n_labeled": n0 + 2 * it,
                         "test_error": 0.3 - 0.01 * it - 0.02 * f})
    c = metrics.curve_stats(pd.DataFrame(rows), "test_error")
    assert c["queries"].tolist() == [0, 2, 4]
    assert c["n_labeled"].tolist() == [614.5, 616.5, 618.5]
    assert c["mean"].tolist() == pytest.approx([29.0, 28.0, 27.0])
    assert (c["n"] == 2).all()


def test_supervised_folds_of_different_sizes_report_without_learning_curves(tmp_path):
    # Titsias & Likas 2001's pima run: budget 0, folds of 614 and 615 training rows (issue 17:
    # exit 1)
    exp = tmp_path / "t002"
    for m_i, m in enumerate(("prbf_M10", "constrained_prbf_M10")):
        for f, n0 in ((0, 614), (1, 615)):
            write_task(exp, curve_rows("t002", "pima", m, "random", f, 0, [0.7 + 0.02 * m_i],
                                       n0=n0, model_size=10))
    write_run_json(exp, "t002", budget=0)
    report_ok(exp)
    out = exp / "report"
    assert not (out / "learning_curves.png").exists()
    index = (out / "report.md").read_text()
    assert "Learning curves not drawn: no method queried a label (supervised" in index
    err = pd.read_csv(out / "error_at_budget.csv")
    assert set(err["method"]) == {"prbf_M10", "constrained_prbf_M10"}


@pytest.mark.slow
def test_no_dataset_is_dropped_from_the_learning_curves(tmp_path, monkeypatch):
    # initial sets that differ by one label between folds (the five data sets of table-001
    # used to vanish, leaving iris alone)
    exp = tmp_path / "al"
    datasets = ("bupa", "glass", "iris", "wine", "new-thyroid")
    for d in datasets:
        for m in ("a", "b"):
            for f in range(2):
                write_task(exp, curve_rows("al", d, m, "random" if m == "a" else "margin", f, 0,
                                           [0.5, 0.6, 0.7], n0=10 + (f if d != "iris" else 0)))
    write_run_json(exp, "al", budget=4)
    seen = _capture_figures(monkeypatch)
    report_ok(exp)
    titles = [ax.get_title() for ax in seen["learning_curves"].axes if ax.get_visible()]
    assert titles == sorted(datasets)
    assert "leave out" not in (exp / "report" / "report.md").read_text()


# --------------------------------------------------------------------------- 4. figures


def _curve_frame(methods, mean=50.0, std=5.0):
    return pd.DataFrame([{"dataset": "d", "method": m, "n_labeled": n, "mean": mean, "std": std}
                         for m in methods for n in (10, 20, 30)])


def test_many_methods_get_distinct_colour_style_and_marker(tmp_path, monkeypatch):
    methods = [f"method_{i}" for i in range(9)]
    seen = _capture_figures(monkeypatch)
    plots.learning_curves(_curve_frame(methods), tmp_path / "lc")
    lines = [ln for ln in seen["lc"].axes[0].get_lines() if ln.get_label() in methods]
    looks = {(mcolors.to_hex(ln.get_color()), ln.get_linestyle(), ln.get_marker())
             for ln in lines}
    assert len(lines) == 9 and len(looks) == 9
    assert len({ln.get_linestyle() for ln in lines}) > 1
    assert len({ln.get_marker() for ln in lines}) == 9


def test_std_band_is_clipped_to_percent_range(tmp_path, monkeypatch):
    seen = _capture_figures(monkeypatch)
    plots.learning_curves(pd.concat([_curve_frame(["hi"], 98.0, 5.0),
                                     _curve_frame(["lo"], 1.0, 4.0)]), tmp_path / "lc")
    ys = np.concatenate([p.get_paths()[0].vertices[:, 1]
                         for p in seen["lc"].axes[0].collections])
    assert ys.max() == pytest.approx(100.0) and ys.min() == pytest.approx(0.0)


def test_published_endpoint_is_marked(tmp_path, monkeypatch):
    seen = _capture_figures(monkeypatch)
    pub = pd.DataFrame([{"dataset": "d", "method": "a", "mean": 19.0, "std": 0.5}])
    plots.learning_curves(_curve_frame(["a", "b"]), tmp_path / "lc", published=pub)
    stars = [ln for ln in seen["lc"].axes[0].get_lines() if ln.get_marker() == "*"
             and len(ln.get_xdata())]
    assert len(stars) == 1
    assert (stars[0].get_xdata()[0], stars[0].get_ydata()[0]) == (30, 19.0)
    legend = [t.get_text() for t in seen["lc"].legends[0].get_texts()]
    assert legend == ["a", "b", plots.PUBLISHED_LABEL]


def test_report_marks_the_published_endpoint(tmp_path, monkeypatch):
    exp = tmp_path / "e"
    for f in range(2):
        write_task(exp, curve_rows("e", "seg", "lit", "pr", f, 0, [0.5, 0.6, 0.8]))
        write_task(exp, curve_rows("e", "seg", "lit", "random", f, 0, [0.5, 0.6, 0.7]))
    write_run_json(exp, "e", budget=4)
    (exp / "reference.csv").write_text("dataset,method,metric,mean,std\n"
                                       "seg,lit / pr,error_at_budget,11.5,2.0\n")
    seen = _capture_figures(monkeypatch)
    report_ok(exp)
    stars = [ln for ln in seen["learning_curves"].axes[0].get_lines()
             if ln.get_marker() == "*" and len(ln.get_xdata())]
    assert [(s.get_xdata()[0], s.get_ydata()[0]) for s in stars] == [(14, 11.5)]
    assert "★ published value" in (exp / "report" / "report.md").read_text()


def test_cd_diagram_labels_are_not_cut(tmp_path):
    rng = np.random.default_rng(1)
    cols = [f"a_long_method_label_{i} / strategy_{i}" for i in range(6)]
    c = stats.compare(pd.DataFrame(rng.normal(size=(6, 6)), columns=cols))
    png = next(p for p in plots.cd_diagram(c, tmp_path / "cd") if p.suffix == ".png")
    img = mimage.imread(png)[..., :3]
    ink = (img < 0.9).any(axis=2)
    assert not ink[:, :4].any() and not ink[:, -4:].any()  # a blank margin on both sides
    assert not ink[:4].any() and not ink[-4:].any()


def test_paper_style_latex_table():
    err = pd.DataFrame([
        {"dataset": "bupa", "method": "incremental_prbf_split", "mean": 28.4, "std": 5.2},
        {"dataset": "bupa", "method": "svm", "mean": 30.5, "std": 5.3},
        {"dataset": "iris", "method": "incremental_prbf_split", "mean": 2.0, "std": 3.2},
        {"dataset": "iris", "method": "svm", "mean": 2.0, "std": 4.7},
        {"dataset": "wine", "method": "svm", "mean": 1.1, "std": 3.5}])
    tex = tables.paper_latex(err)
    assert r"A: incremental\_prbf\_split; B: svm" in tex  # short labels with their key
    assert r"data set & A & B \\" in tex
    assert r"bupa & \textbf{28.40} (5.20) & 30.50 (5.30) \\" in tex
    assert r"iris & \textbf{2.00} (3.20) & \textbf{2.00} (4.70) \\" in tex  # ties: both
    assert r"wine & -- & \textbf{1.10} (3.50) \\" in tex
    assert tex.isascii()
    short = tables.short_labels(["svm", "prbf_M10"])
    assert short == {"svm": "svm", "prbf_M10": "prbf_M10"}
