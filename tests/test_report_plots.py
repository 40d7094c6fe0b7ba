"""Plots read only the curve table; checks on what they draw."""

import io

import numpy as np
import pandas as pd
import pytest
from PIL import Image

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


@pytest.mark.slow   # left out of make test-quick; make test and CI run it
def test_the_same_results_give_the_same_figure_files(tmp_path):
    """PDFs carry no creation date and the CD diagram's bars do not follow the hash seed."""
    import filecmp
    import os
    import subprocess
    import sys

    from .report_fixtures import synthetic_experiment

    synthetic_experiment(tmp_path / "res", methods=(
        ("svm", "random"), ("svm", "uncertainty"), ("nb", "uncertainty"), ("nb", "random"),
        ("lr", "random")))
    outs = []
    for seed in ("1", "2"):
        out = tmp_path / f"rep{seed}"
        env = dict(os.environ, PYTHONHASHSEED=seed, MPLBACKEND="Agg")
        subprocess.run([sys.executable, "-m", "alprbf", "report", str(tmp_path / "res"),
                        "--out", str(out)], check=True, env=env, capture_output=True)
        outs.append(out)
    names = sorted(str(p.relative_to(outs[0])) for p in outs[0].rglob("*") if p.is_file())
    assert {"demo/cd_diagram.png", "demo/cd_diagram.pdf"} <= set(names)
    match, mismatch, errors = filecmp.cmpfiles(outs[0], outs[1], names, shallow=False)
    assert match == names and not mismatch and not errors


@pytest.mark.slow
def test_png_is_a_palette_preview_of_the_vector_figure(tmp_path, monkeypatch):
    """The PNG is a 256-colour palette image (small in the record); its pixels stay within a
    few levels of the full-colour rendering, and the PDF is written beside it."""
    rows = [{"dataset": d, "method": m, "n_labeled": n, "mean": 10.0 + i + n / 10,
             "std": 2.0 + i} for d in ("a", "b") for i, m in enumerate(("m1", "m2", "m3"))
            for n in range(10, 200, 5)]
    seen = {}
    real_save = plots._save

    def keep(fig, stem, formats):
        seen["fig"] = fig
        return real_save(fig, stem, formats)

    monkeypatch.setattr(plots, "_save", keep)
    paths = plots.learning_curves(pd.DataFrame(rows), tmp_path / "lc")
    assert {p.suffix for p in paths} == {".png", ".pdf"} and all(p.is_file() for p in paths)
    with Image.open(tmp_path / "lc.png") as im:
        assert im.mode == "P" and len(im.getcolors(256) or []) <= 256
        ours = np.asarray(im.convert("RGB"), dtype=float)
    buf = io.BytesIO()
    seen["fig"].savefig(buf, format="png", **plots.SAVE_OPTIONS)
    buf.seek(0)
    with Image.open(buf) as im:
        full = np.asarray(im.convert("RGB"), dtype=float)
    assert ours.shape == full.shape
    assert np.abs(ours - full).mean() < 2.0          # mean error under 2 of 255 levels
