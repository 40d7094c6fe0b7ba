"""Figures: learning curves and the critical-difference diagram (PNG and PDF).

Figures are drawn on :class:`matplotlib.figure.Figure` objects with the Agg canvas, so the
report neither needs a display nor changes the pyplot backend of the calling process.
"""

from __future__ import annotations

import io
import math
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from PIL import Image

from .stats import RankedComparison

PLOT_FORMATS = ("png", "pdf")
DPI = 150
#: ``Figure.savefig`` options of every figure file
SAVE_OPTIONS = {"dpi": DPI, "bbox_inches": "tight", "pad_inches": 0.15}

#: Line styles and markers cycled beside the ten colours, so that no two of up to 40 methods
#: look alike and the curves stay apart in grey-scale prints.
LINESTYLES = ("-", "--", "-.", ":")
MARKERS = ("o", "s", "^", "v", "D", "P", "X", "<", ">", "h")


def _save(fig: Figure, stem: Path, formats=PLOT_FORMATS) -> list[Path]:
    FigureCanvasAgg(fig)
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = []
    for f in formats:
        p = stem.with_suffix(f".{f}")
        if f == "png":
            _save_png_preview(fig, p)
        else:
            # no creation date in a PDF, so that the same report gives the same file
            meta = {"CreationDate": None} if f == "pdf" else None
            fig.savefig(p, metadata=meta, **SAVE_OPTIONS)
        paths.append(p)
    return paths


def _save_png_preview(fig: Figure, path: Path) -> None:
    """The PNG as a 256-colour palette image: the PDF beside it is the exact (vector) figure.

    The translucent std bands give a full-colour PNG tens of thousands of colours, most of
    them blends no eye separates; a palette image is about a third of the size (2.2 MB ->
    0.65 MB for the 20 panels of table 003), which keeps the tracked record small.
    Deterministic: Pillow's median-cut quantiser has no random start.
    """
    path.write_bytes(png_bytes(fig))


def png_bytes(fig: Figure, dpi: float = DPI) -> bytes:
    """The figure as palette PNG bytes (see :func:`_save_png_preview`), the same bytes on
    every call."""
    if not isinstance(fig.canvas, FigureCanvasAgg):
        FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", **{**SAVE_OPTIONS, "dpi": dpi})
    buf.seek(0)
    with Image.open(buf) as im:
        rgb = im.convert("RGB")     # the figure's background is opaque white
    out = io.BytesIO()
    rgb.quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(out, format="png",
                                                                   optimize=True)
    return out.getvalue()


def method_styles(methods: list[str]) -> dict[str, dict]:
    """Colour, line style and marker of each method (matplotlib keyword arguments)."""
    return {m: {"color": f"C{i % 10}", "linestyle": LINESTYLES[i % len(LINESTYLES)],
                "marker": MARKERS[i % len(MARKERS)]} for i, m in enumerate(methods)}


def learning_curves(curves: pd.DataFrame, stem: Path, ylabel: str = "test error (%)",
                    formats=PLOT_FORMATS, ncols: int = 3,
                    published: pd.DataFrame | None = None) -> list[Path]:
    """One panel per dataset, one line per method: mean over folds x repetitions, ±1 std band.

    Each method has its own colour, line style and marker; the band is clipped to [0, 100].

    Parameters
    ----------
    curves : DataFrame
        Columns ``dataset, method, n_labeled, mean, std`` (from ``metrics.curve_stats``); only
        cells with at least two points (some queries) should be passed.
    stem : Path
        Output path without suffix; ``.png`` and ``.pdf`` are written.
    published : DataFrame, optional
        Published endpoints, columns ``dataset, method, mean, std``: a star (with the
        published std as error bar) at the method's last labeled-set size.
    """
    datasets = sorted(curves["dataset"].unique())
    methods = sorted(curves["method"].unique())
    style = method_styles(methods)
    ncols = max(1, min(ncols, len(datasets)))
    nrows = math.ceil(len(datasets) / ncols)
    fig = Figure(figsize=(4.2 * ncols, 3.3 * nrows), layout="constrained", dpi=DPI)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for ax, d in zip(axes.flat, datasets, strict=False):
        for m in methods:
            c = curves[(curves["dataset"] == d) & (curves["method"] == m)]
            if not c.empty:
                _draw_curve(ax, c, m, style[m])
        if published is not None:
            _draw_published(ax, curves[curves["dataset"] == d],
                            published[published["dataset"] == d], style)
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
    labels = [m for m in methods if m in by_label] + [x for x in by_label if x not in methods]
    fig.legend([by_label[m] for m in labels], labels, loc="outside lower center",
               ncols=min(3, len(labels)), fontsize="small", frameon=False)
    return _save(fig, stem, formats)


def learning_curve_pngs(curves: pd.DataFrame, ylabel: str = "test error (%)",
                        published: pd.DataFrame | None = None, dpi: float = 100
                        ) -> dict[str, bytes]:
    """One small figure per data set (PNG bytes, for the HTML report), each method in the same
    style on every data set as in :func:`learning_curves`, its legend beside the axes.

    ``curves`` and ``published`` as for :func:`learning_curves`.
    """
    methods = sorted(curves["method"].unique())
    style = method_styles(methods)
    out = {}
    for d in sorted(curves["dataset"].unique()):
        c_d = curves[curves["dataset"] == d]
        fig = Figure(figsize=(7.6, 3.4), layout="constrained", dpi=dpi)
        ax = fig.subplots()
        for m in methods:
            c = c_d[c_d["method"] == m]
            if not c.empty:
                _draw_curve(ax, c, m, style[m])
        if published is not None:
            _draw_published(ax, c_d, published[published["dataset"] == d], style)
        ax.set_title(d)
        ax.set_xlabel("labeled samples")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        handles, labels = ax.get_legend_handles_labels()
        keep = dict(zip(labels, handles, strict=True))
        fig.legend(list(keep.values()), list(keep), loc="outside right upper",
                   fontsize="small", frameon=False)
        out[d] = png_bytes(fig, dpi)
    return out


PUBLISHED_LABEL = "published (± std)"


def _draw_curve(ax, c: pd.DataFrame, label: str, style: dict) -> None:
    x, y, s = c["n_labeled"].to_numpy(), c["mean"].to_numpy(), c["std"].fillna(0.0).to_numpy()
    ax.plot(x, y, label=label, lw=1.4, markersize=4, markevery=max(1, len(x) // 8), **style)
    ax.fill_between(x, np.clip(y - s, 0.0, 100.0), np.clip(y + s, 0.0, 100.0),
                    color=style["color"], alpha=0.15, lw=0)


def _draw_published(ax, curves: pd.DataFrame, published: pd.DataFrame, style: dict) -> None:
    for r in published.itertuples(index=False):
        c = curves[curves["method"] == r.method]
        if c.empty:
            continue
        ax.errorbar([c["n_labeled"].max()], [r.mean], yerr=[0.0 if np.isnan(r.std) else r.std],
                    fmt="*", markersize=11, color=style[r.method]["color"],
                    markeredgecolor="k", ecolor="k", capsize=3, zorder=5)
        ax.plot([], [], "*", color="w", markeredgecolor="k", markersize=11,
                label=PUBLISHED_LABEL)


def cd_diagram(comparison: RankedComparison, stem: Path, formats=PLOT_FORMATS) -> list[Path]:
    """Critical-difference diagram (``scikit_posthocs.critical_difference_diagram``).

    Methods joined by a bar are not significantly different. With the default ``q_alpha`` the
    bars come from the Nemenyi p-values at ``alpha`` (equivalent to the CD rule); with a
    user-supplied ``q_alpha`` they come from the CD rule ``|R_i - R_j| < CD`` so that the
    diagram agrees with the reported CD. The CD is drawn as a bar above the axis, starting at
    the best mean rank. After a Wilcoxon–Holm post-hoc test (``wilcoxon_holm_p``) the bars come
    from its adjusted p-values at ``alpha`` and no CD is drawn (that test has none). The figure
    is drawn and saved at one resolution and saved with a margin, so that the labels outside
    the axes are never cut.
    """
    import scikit_posthocs as sp

    c = comparison
    if c.wilcoxon_holm_p is not None:
        sig = c.wilcoxon_holm_p
    elif c.q_alpha_source == "user":
        sig = (~c.significant).astype(float)  # p = 1 (not significant) / 0 (significant)
    else:
        sig = c.nemenyi_p
    fig = Figure(figsize=(7.0, 1.4 + 0.3 * c.k), dpi=DPI)
    ax = fig.subplots()
    drawn = sp.critical_difference_diagram(c.mean_ranks, sig, alpha=c.alpha, ax=ax,
                                           label_fmt_left="{label} ({rank:.3f})",
                                           label_fmt_right="({rank:.3f}) {label}")
    for lines in drawn["crossbars"]:   # the library walks a set: its order follows the hash
        for line in lines:             # seed, so draw every bar left to right (same pixels)
            x, y = line.get_data()
            line.set_data(sorted(x), y)
    for artist in ax.texts:
        artist.set_clip_on(False)
    if c.wilcoxon_holm_p is not None:
        return _save(fig, stem, formats)
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
    ax.texts[-1].set_clip_on(False)
    return _save(fig, stem, formats)
