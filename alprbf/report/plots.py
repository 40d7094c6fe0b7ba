"""Figures: learning curves and the critical-difference diagram (PNG and PDF).

Figures are drawn on :class:`matplotlib.figure.Figure` objects with the Agg canvas, so the
report neither needs a display nor changes the pyplot backend of the calling process.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from .stats import RankedComparison

PLOT_FORMATS = ("png", "pdf")


def _save(fig: Figure, stem: Path, formats=PLOT_FORMATS) -> list[Path]:
    FigureCanvasAgg(fig)
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = []
    for f in formats:
        p = stem.with_suffix(f".{f}")
        fig.savefig(p, dpi=150, bbox_inches="tight")
        paths.append(p)
    return paths


def learning_curves(curves: pd.DataFrame, stem: Path, ylabel: str = "test error (%)",
                    formats=PLOT_FORMATS, ncols: int = 3) -> list[Path]:
    """One panel per dataset, one line per method: mean over folds x repetitions, ±1 std band.

    Parameters
    ----------
    curves : DataFrame
        Columns ``dataset, method, n_labeled, mean, std`` (from ``metrics.curve_stats``).
    stem : Path
        Output path without suffix; ``.png`` and ``.pdf`` are written.
    """
    datasets = sorted(curves["dataset"].unique())
    methods = sorted(curves["method"].unique())
    ncols = max(1, min(ncols, len(datasets)))
    nrows = math.ceil(len(datasets) / ncols)
    fig = Figure(figsize=(4.2 * ncols, 3.3 * nrows), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    colors = {m: f"C{i % 10}" for i, m in enumerate(methods)}
    for ax, d in zip(axes.flat, datasets, strict=False):
        for m in methods:
            c = curves[(curves["dataset"] == d) & (curves["method"] == m)]
            if c.empty:
                continue
            x, y, s = c["n_labeled"], c["mean"], c["std"].fillna(0.0)
            if len(c) == 1:  # no queries (e.g. plain cross-validation): a point with error bar
                ax.errorbar(x, y, yerr=s, fmt="o", color=colors[m], label=m, capsize=3)
            else:
                ax.plot(x, y, color=colors[m], label=m, lw=1.4)
                ax.fill_between(x, y - s, y + s, color=colors[m], alpha=0.2, lw=0)
        ax.set_title(d)
        ax.set_xlabel("labeled samples")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(datasets):]:
        ax.set_visible(False)
    # one entry per method, from whichever panel drew it (a method may miss some data sets)
    by_label = {}
    for ax in axes.flat:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            by_label.setdefault(lab, h)
    labels = [m for m in methods if m in by_label]
    fig.legend([by_label[m] for m in labels], labels, loc="outside lower center",
               ncols=min(4, len(methods)), fontsize="small", frameon=False)
    return _save(fig, stem, formats)


def cd_diagram(comparison: RankedComparison, stem: Path, formats=PLOT_FORMATS) -> list[Path]:
    """Critical-difference diagram (``scikit_posthocs.critical_difference_diagram``).

    Methods joined by a bar are not significantly different.  With the default ``q_alpha`` the
    bars come from the Nemenyi p-values at ``alpha`` (equivalent to the CD rule); with a
    user-supplied ``q_alpha`` they come from the CD rule ``|R_i - R_j| < CD`` so that the
    diagram agrees with the reported CD.  The CD is drawn as a bar above the axis, starting
    at the best mean rank.
    """
    import scikit_posthocs as sp

    c = comparison
    if c.q_alpha_source == "user":
        sig = (~c.significant).astype(float)  # p = 1 (not significant) / 0 (significant)
    else:
        sig = c.nemenyi_p
    fig = Figure(figsize=(7.0, 1.4 + 0.3 * c.k))
    ax = fig.subplots()
    sp.critical_difference_diagram(c.mean_ranks, sig, alpha=c.alpha, ax=ax,
                                   label_fmt_left="{label} ({rank:.3f})",
                                   label_fmt_right="({rank:.3f}) {label}")
    # the CD bar, drawn above the tick labels (the library's own bar overlaps them)
    lo = float(c.mean_ranks.min())
    y = 1.8
    ax.plot([lo, lo + c.cd], [y, y], color="k", lw=1.5)
    ax.plot([lo, lo], [y - 0.15, y + 0.15], color="k", lw=1.5)
    ax.plot([lo + c.cd, lo + c.cd], [y - 0.15, y + 0.15], color="k", lw=1.5)
    ax.text(lo + c.cd / 2, y + 0.25, f"CD = {c.cd:.3f} (α = {c.alpha:g})", ha="center",
            va="bottom", fontsize="small")
    bottom, _ = ax.get_ylim()
    ax.set_ylim(bottom, y + 1.0)
    return _save(fig, stem, formats)
