"""``alprbf report``: tables, statistics and figures from result files.

The report reads only the runner's files (Parquet task files, ``run.json``, ``reference.csv``;
see :mod:`alprbf.report.io`) and never imports models, strategies, protocol or runner.
Definitions of every measure: ``alprbf/report/DEFINITIONS.md``.

Output layout
-------------
``results_root`` may be one experiment directory (it has ``tasks/``) or a directory of
experiment directories.  Default ``out_dir`` is ``<results_root>/report``.

* one experiment: everything goes to ``out_dir`` (``report.md`` is the index);
* several: each experiment gets ``out_dir/<experiment>/`` with its own ``report.md`` and
  ``out_dir/report.md`` links to them.

Per experiment: ``report.md``; tables ``error_at_budget``, ``rp``, ``rp_stats``, ``nemenyi``,
``aulc``, ``dur``, ``cost``, ``reference`` (each as ``.md``, ``.csv``, ``.tex`` per
``formats``); figures ``learning_curves.{png,pdf}`` and ``cd_diagram.{png,pdf}``.  Parts that do
not apply are skipped with a note in ``report.md`` (no Friedman test with fewer than two
datasets or methods, no AULC/DUR without a baseline or without queries, no ``reference`` table
without a reference file).

Methods.  ``methods`` keeps only the methods whose ``"model / strategy"`` matches one of the
given shell patterns (``fnmatch``, case-sensitive), e.g. the paper's two methods of seed 000
Fig. 6 out of a nine-method run.  A pattern that matches no method in any experiment is an
error; an experiment left with no method is skipped.

Baseline.  ``baseline`` names a method (matched like reference methods: display label,
``"model / strategy"``, a unique model or a unique strategy).  When it is None, the single
method whose strategy is ``random`` is the baseline if there is exactly one; otherwise AULC and
DUR are skipped with a note.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from fnmatch import fnmatchcase
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import UserError
from . import metrics, plots, stats, tables
from .io import (
    Experiment,
    add_method_column,
    find_experiments,
    load_experiment,
    load_reference,
    load_results,
    match_reference,
    method_labels,
    resolve_method,
)

__all__ = ["build_report", "load_results", "load_reference", "REPORT_FORMATS", "RP_MEASURES"]

REPORT_FORMATS = tables.FORMATS
RP_MEASURES = metrics.RP_MEASURES


def build_report(results_root: str | Path, out_dir: str | Path | None = None,
                 baseline: str | None = None, formats: Sequence[str] = ("md", "csv", "tex"),
                 alpha: float = 0.10, q_alpha: float | None = None,
                 rp_measure: str = "train_best", reference: str | Path | None = None,
                 window: float = 0.2, methods: Sequence[str] | None = None) -> list[Path]:
    """Write the report of every experiment below ``results_root``.

    Parameters
    ----------
    results_root : path
        A results directory or one experiment directory.
    out_dir : path, optional
        Where to write; default ``<results_root>/report``.
    baseline : str, optional
        Method for AULC and DUR (see the module docstring for the default).
    formats : sequence of {"md", "csv", "tex"}
        Table formats.  ``report.md`` and the PNG/PDF figures are always written.
    alpha : float
        Significance level of the Friedman test and of the Nemenyi critical difference.
    q_alpha : float, optional
        Critical value for the CD instead of ``studentized_range.ppf(1 - alpha, k, inf)/sqrt(2)``.
    rp_measure : {"train_best", "final"}
        Accuracy ranked by RP: seed 003's (test accuracy at the iteration with the best training
        accuracy) or the final test accuracy.
    reference : path, optional
        Reference CSV to use instead of each experiment's ``reference.csv``.
    window : float
        Fraction of the budget at its end that defines the DUR target accuracy.
    methods : sequence of str, optional
        Shell patterns on ``"model / strategy"``; report only the matching methods.

    Returns
    -------
    list of Path
        Every file written, ``report.md`` of the top level first.

    Raises
    ------
    UserError
        Missing or invalid results, unknown format / RP measure / baseline, bad alpha or q_alpha,
        a ``methods`` pattern that matches nothing.
    """
    formats = _check_args(formats, alpha, q_alpha, rp_measure, window)
    root = Path(results_root)
    experiments = find_experiments(root)
    out = Path(out_dir) if out_dir is not None else root / "report"
    ref = load_reference(reference) if reference is not None else None
    frames = [(e, load_experiment(e)) for e in experiments]
    frames = [(e, d) for e, d in frames if not d.empty]
    if not frames:
        raise UserError(f"the result files under {root} contain no rows")
    if methods:
        frames = select_methods(frames, methods)
    if baseline is not None and not any(
            resolve_method(baseline, method_labels(d))[0] for _, d in frames):
        _, why = resolve_method(baseline, method_labels(frames[0][1]))
        raise UserError(f"baseline {why}")
    single = (root / "tasks").is_dir() and len(frames) == 1
    written: list[Path] = []
    if single:
        e, d = frames[0]
        written += _experiment_report(e, d, out, baseline, formats, alpha, q_alpha, rp_measure,
                                      ref, window)
        return written
    index = ["# alprbf report", ""]
    for e, d in frames:
        sub = out / _safe(e.name)
        paths = _experiment_report(e, d, sub, baseline, formats, alpha, q_alpha, rp_measure,
                                   ref, window)
        written += paths
        index.append(f"- [{e.name}]({_safe(e.name)}/report.md): {d['dataset'].nunique()} "
                     f"dataset(s), {len(method_labels(d))} method(s), {d['task_id'].nunique()} "
                     "task(s)")
    top = out / "report.md"
    top.write_text("\n".join(index) + "\n")
    return [top, *written]


def select_methods(frames: list[tuple[Experiment, pd.DataFrame]], patterns: Sequence[str]
                   ) -> list[tuple[Experiment, pd.DataFrame]]:
    """Keep the rows whose ``"model / strategy"`` matches one of ``patterns`` (fnmatch).

    Experiments left without rows are dropped.  Raises :class:`UserError` naming the patterns
    that match no method, with the methods there are.
    """
    used: set[str] = set()
    have: set[str] = set()
    out = []
    for e, d in frames:
        labels = method_labels(d)
        have.update(labels["full"])
        match = np.array([[fnmatchcase(n, p) for p in patterns] for n in labels["full"]],
                         dtype=bool).reshape(len(labels), len(patterns))
        used.update(p for p, hit in zip(patterns, match.any(axis=0), strict=True) if hit)
        kept = labels.loc[match.any(axis=1), ["model", "strategy"]]
        if len(kept):
            rows = pd.MultiIndex.from_frame(d[["model", "strategy"]]).isin(
                pd.MultiIndex.from_frame(kept))
            out.append((e, d[rows].reset_index(drop=True)))
    missing = [p for p in patterns if p not in used]
    if missing:
        raise UserError(f"--methods pattern(s) {', '.join(repr(p) for p in missing)} match no "
                        f"method; methods: {', '.join(sorted(have))}")
    return out


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name) or "experiment"


def _check_args(formats, alpha, q_alpha, rp_measure, window) -> tuple[str, ...]:
    if isinstance(formats, str):
        formats = [f.strip() for f in formats.split(",") if f.strip()]
    for f in formats:
        if f not in REPORT_FORMATS:
            from ..errors import unknown_name
            raise unknown_name("report format", f, REPORT_FORMATS)
    if not 0.0 < alpha < 1.0:
        raise UserError(f"alpha must be between 0 and 1 (exclusive), got {alpha}")
    if q_alpha is not None and not q_alpha > 0:
        raise UserError(f"q_alpha must be positive, got {q_alpha}")
    if rp_measure not in RP_MEASURES:
        from ..errors import unknown_name
        raise unknown_name("RP measure", rp_measure, RP_MEASURES)
    if not 0.0 < window <= 1.0:
        raise UserError(f"DUR window must be in (0, 1], got {window}")
    return tuple(dict.fromkeys(formats))


def _choose_baseline(baseline: str | None, labels: pd.DataFrame) -> tuple[str | None, str]:
    """The baseline's display label and a note for report.md."""
    if baseline is not None:
        label, why = resolve_method(baseline, labels)
        if label is None:
            return None, f"AULC and DUR skipped: baseline {why}."
        return label, f"Baseline for AULC and DUR: `{label}`."
    rnd = labels[labels["strategy"] == "random"]
    if len(rnd) == 1:
        label = rnd["label"].iloc[0]
        return label, (f"Baseline for AULC and DUR: `{label}` (the only method with strategy "
                       "`random`; choose another with --baseline).")
    why = ("no method uses strategy `random`" if rnd.empty
           else f"{len(rnd)} methods use strategy `random`")
    return None, (f"AULC and DUR skipped: no baseline given and {why}; pass --baseline with one "
                  "of: " + ", ".join(f"`{x}`" for x in labels["label"]) + ".")


def _incomplete_cells(exp: Experiment, df: pd.DataFrame) -> list[str]:
    """``dataset / method n/planned`` for grid cells with fewer tasks than folds x repetitions
    (a run stopped early, or started with ``--only``)."""
    proto = (exp.meta.get("config") or {}).get("protocol") or {}
    try:
        planned = int(proto["folds"]) * int(proto.get("repetitions", 1))
    except (KeyError, TypeError, ValueError):
        return []
    found = df.groupby(["dataset", "method"])["task_id"].nunique()
    return [f"{d} / {m} {n}/{planned}" for (d, m), n in found.items() if n < planned]


def _experiment_report(exp: Experiment, rows: pd.DataFrame, out: Path, baseline: str | None,
                       formats, alpha, q_alpha, rp_measure, ref, window) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    df = add_method_column(rows)
    labels = method_labels(rows)
    notes: list[str] = []
    made: list[tables.Table] = []
    figures: list[tuple[str, list[Path]]] = []
    ours = []  # long frame of our measures for the reference comparison
    incomplete = _incomplete_cells(exp, df)
    if incomplete:
        notes.append("Incomplete cells (tasks found / planned; their means and stds use the "
                     "tasks found): " + ", ".join(incomplete) + ".")

    # ---- learning curves and error at budget
    err_curves = metrics.curve_stats(df, "test_error")
    figures.append(("Learning curves (test error, mean ± 1 std over folds x repetitions)",
                    plots.learning_curves(err_curves, out / "learning_curves")))
    err = metrics.error_at_budget(df)
    ours.append(err.assign(metric="error_at_budget"))
    ours.append(err.assign(metric="accuracy_at_budget", mean=100.0 - err["mean"]))

    # ---- references
    if ref is None and exp.reference_path is not None:
        ref_exp = load_reference(exp.reference_path)
        notes.append(f"Published reference values from `{exp.reference_path.name}`.")
    else:
        ref_exp = ref
    matched = None
    if ref_exp is not None:
        matched = match_reference(ref_exp, labels, sorted(df["dataset"].unique()))
        n_un = int(matched["our_method"].isna().sum())
        if n_un:
            notes.append(f"{n_un} reference row(s) match no result; see the reference table.")
    made.append(tables.error_at_budget_table(err, matched))

    # ---- RP
    scores = metrics.rp_scores(df, rp_measure)
    ours.append(scores.assign(metric="rp_accuracy"))
    if rp_measure == "train_best" and df["train_accuracy"].isna().any():
        notes.append("Some rows lack train_accuracy; RP ignores them (a curve without any uses "
                     "its last row).")
    wide = scores.pivot(index="dataset", columns="method", values="mean").dropna()
    comparison, skipped = None, ""
    if wide.shape[0] < 2:
        skipped = f"needs at least 2 datasets with results for every method, found {wide.shape[0]}"
    elif wide.shape[1] < 2:
        skipped = f"needs at least 2 methods, found {wide.shape[1]}"
    else:
        comparison = stats.compare(wide, True, alpha, q_alpha)
        figures.append((f"Critical-difference diagram (RP, α = {alpha:g})",
                        plots.cd_diagram(comparison, out / "cd_diagram")))
    if skipped:
        notes.append(f"Friedman test, Nemenyi post-hoc and CD diagram skipped: {skipped}.")
    made += tables.rp_tables(scores, comparison, rp_measure, skipped)

    # ---- AULC and DUR
    base, note = _choose_baseline(baseline, labels)
    notes.append(note)
    if base is not None:
        acc_curves = metrics.curve_stats(df, "test_accuracy")
        if acc_curves.groupby(["dataset", "method"]).size().max() < 2:
            notes.append("AULC and DUR skipped: the curves have a single point (no queries).")
        else:
            vb = metrics.versus_baseline(acc_curves, base, window)
            made += tables.versus_baseline_tables(vb, base)
            flag = ["" if r else "target not reached" for r in vb["dur_reached"]]
            ours.append(vb.assign(metric="aulc", mean=vb["aulc"], std=float("nan")))
            ours.append(vb.assign(metric="dur", mean=vb["dur"], std=float("nan"), flag=flag))
            ours.append(vb.assign(metric="dur_labels", mean=vb["dur_labels"], std=float("nan"),
                                  flag=flag))
            ours.append(vb.assign(metric="dur_target", mean=vb["dur_target"], std=float("nan")))

    # ---- cost
    cost = metrics.cost_summary(df)
    made.append(tables.cost_table(cost))
    for m, s in (("train_time_s", "train_time_s_std"), ("components", "components_std"),
                 ("fit_seconds_per_query", None)):
        ours.append(cost.assign(metric=m, mean=cost[m],
                                std=cost[s] if s else float("nan")))

    if matched is not None:
        cols = ["dataset", "method", "metric", "mean", "std", "flag"]
        long = pd.concat([o.assign(flag=o["flag"] if "flag" in o else "")[cols] for o in ours],
                         ignore_index=True)
        made.append(tables.reference_table(matched, long))

    written: list[Path] = []
    for t in made:
        written += tables.write_table(t, out, formats)
    written += [p for _, ps in figures for p in ps]
    index = out / "report.md"
    index.write_text(_index_md(exp, rows, labels, notes, made, figures, formats, out))
    return [index, *written]


def _index_md(exp, rows, labels, notes, made, figures, formats, out) -> str:
    cfg = exp.meta.get("config") or {}
    lines = [f"# Report: {exp.name}", "",
             f"- results: `{exp.path}`",
             f"- datasets: {', '.join(sorted(rows['dataset'].unique()))}",
             "- methods: " + ", ".join(
                 f"`{x}`" + ("" if x == full else f" ({full})")
                 for x, full in zip(labels["label"], labels["full"], strict=True)),
             f"- tasks: {rows['task_id'].nunique()}; folds x repetitions per cell: "
             f"{rows.groupby(['dataset', 'model', 'strategy'])['task_id'].nunique().max()}"]
    if cfg.get("protocol"):
        p = cfg["protocol"]
        lines.append("- protocol: " + ", ".join(f"{k}={p[k]}" for k in sorted(p)
                                                 if not isinstance(p[k], dict)))
    lines += ["- definitions of the measures: `alprbf/report/DEFINITIONS.md`", ""]
    if notes:
        lines += ["## Notes", ""] + [f"- {n}" for n in notes] + [""]
    for title, paths in figures:
        png = [p for p in paths if p.suffix == ".png"]
        lines += [f"## {title}", ""]
        if png:
            lines.append(f"![{title}]({os.path.relpath(png[0], out)})")
        lines += ["", "Files: " + ", ".join(f"[{p.name}]({os.path.relpath(p, out)})"
                                            for p in paths), ""]
    for t in made:
        lines += [f"## {t.title}", "", tables.to_markdown(t.display).rstrip(), ""]
        lines += [n for n in t.notes] + [""] if t.notes else []
        lines += ["Files: " + ", ".join(f"[{t.name}.{f}]({t.name}.{f})" for f in formats), ""]
    return "\n".join(lines)
