"""Plots read only the curve table; checks on what they draw."""

import pandas as pd

from alprbf.report import plots


def test_legend_names_methods_missing_from_the_first_panel(tmp_path, monkeypatch):
    rows = []
    for dataset, methods in (("a", ["m1"]), ("b", ["m1", "m2"])):
        for m in methods:
            for n in (10, 20):
                rows.append({"dataset": dataset, "method": m, "n_labeled": n, "mean": 5.0,
                             "std": 1.0})
    seen = {}

    def capture(fig, stem, formats):
        seen["fig"] = fig
        return []

    monkeypatch.setattr(plots, "_save", capture)
    plots.learning_curves(pd.DataFrame(rows), tmp_path / "lc")
    (legend,) = seen["fig"].legends
    assert [t.get_text() for t in legend.get_texts()] == ["m1", "m2"]
