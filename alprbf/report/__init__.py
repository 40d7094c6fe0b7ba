"""``alprbf report``: tables, statistics and figures from result files.

The report reads only the runner's files (Parquet task files, ``run.json``, ``reference.csv``;
see :mod:`alprbf.report.io`) and never imports models, strategies, protocol or runner.
Definitions of every measure: ``alprbf/report/DEFINITIONS.md``.

Output layout
-------------
``results_root`` may be one experiment directory (it has ``tasks/``) or a directory of
experiment directories.  Default ``out_dir`` is ``<results_root>/report``.  An output
directory that cannot be created or written (a read-only results directory, a path under a
regular file) is a :class:`~alprbf.errors.UserError` before anything is written.

* one experiment: everything goes to ``out_dir`` (``report.md`` is the index);
* several: each experiment gets ``out_dir/<dir>/`` with its own ``report.md``, where ``<dir>``
  is the name of the experiment's directory, or its path below ``results_root`` (``/`` as
  ``__``) when two experiment directories share a name; ``out_dir/report.md`` links to them.

Per experiment: ``report.md``; ``failed_tasks`` (tasks that failed or timed out, with links to
their tracebacks; only when there are some); tables ``error_at_budget``, ``rp``, ``rp_stats``,
``nemenyi``, ``aulc``, ``dur``, ``health``, ``cost``, ``run_cost``, ``reference`` (each as
``.md``, ``.csv``, ``.tex`` per ``formats``), ``error_at_budget_paper.tex`` (the compact
paper-style table, with ``tex``); figures ``learning_curves.{png,pdf}`` and
``cd_diagram.{png,pdf}``; with the format ``html``, ``report.html`` (and ``index.html`` over
several experiments; :mod:`alprbf.report.html`). Parts that do not apply are skipped with a
note in ``report.md`` (no learning curves without queries, no test below
:data:`alprbf.report.stats.MIN_DATASETS` datasets, Wilcoxon instead of Friedman / Nemenyi / CD
for two methods, no AULC/DUR without a baseline or without queries, no ``reference`` table
without a reference file).

Methods.  ``methods`` keeps only the methods whose ``"model / strategy"`` matches one of the
given shell patterns (``fnmatch``, case-sensitive), e.g. the paper's two methods of
Constantinopoulos & Likas 2008, Fig. 6 out of a nine-method run.  A pattern that matches no method
in any experiment is an error; an experiment left with no method is skipped.

Baseline.  ``baseline`` names a method (matched like reference methods: display label,
``"model / strategy"``, a unique model or a unique strategy).  When it is None, the single
method whose strategy is ``random`` is the baseline if there is exactly one; otherwise AULC and
DUR are skipped with a note.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import UserError, unknown_name
from ..store.results import read_failures, task_files
from . import health, metrics, reference, stats, tables
from . import html as pages
from .io import (
    SUMMARY,
    Experiment,
    add_method_column,
    check_reference,
    find_experiments,
    load_experiment,
    load_reference,
    load_results,
    match_reference,
    method_labels,
    resolve_method,
)

__all__ = ["build_report", "check_reference", "load_results", "load_reference",
           "REPORT_FORMATS", "RP_MEASURES", "CURVE_ACCURACIES", "RANK_BY", "POSTHOCS"]

#: ``formats`` of :func:`build_report`: the tables' (:data:`tables.FORMATS`) and ``html``,
#: the self-contained pages (:mod:`alprbf.report.html`).
REPORT_FORMATS = (*tables.FORMATS, "html")
RP_MEASURES = metrics.RP_MEASURES
CURVE_ACCURACIES = tuple(metrics.CURVE_ACCURACIES)
RANK_BY = tuple(metrics.RANK_BY)
POSTHOCS = stats.POSTHOCS


@dataclass(frozen=True)
class ReportOptions:
    """The choices of one ``build_report`` call that every experiment's report shares."""

    baseline: str | None = None
    formats: tuple[str, ...] = REPORT_FORMATS
    alpha: float = 0.10
    q_alpha: float | None = None
    rp_measure: str = "train_best"
    reference: pd.DataFrame | None = None
    window: float = 0.2
    methods: tuple[str, ...] = ()
    curve_accuracy: str = "test"
    merge_datasets: str | None = None
    error_at_fraction: tuple[float, ...] = ()
    rank_by: str = "accuracy"
    posthoc: str = "nemenyi"
    figures: bool = True
    sanity: tuple[health.Allowed, ...] = ()

    def selected(self, full_label: str) -> bool:
        """Whether ``--methods`` keeps the method ``"model / strategy"``."""
        return not self.methods or any(fnmatchcase(full_label, p) for p in self.methods)


def build_report(results_root: str | Path, out_dir: str | Path | None = None,
                 baseline: str | None = None, formats: Sequence[str] = ("md", "csv", "tex"),
                 alpha: float = 0.10, q_alpha: float | None = None,
                 rp_measure: str = "train_best", reference: str | Path | None = None,
                 window: float = 0.2, methods: Sequence[str] | None = None,
                 curve_accuracy: str = "test", merge_datasets: str | None = None,
                 error_at_fraction: Sequence[float] = (), rank_by: str = "accuracy",
                 posthoc: str = "nemenyi", figures: bool = True,
                 sanity: str | Path | None = None) -> list[Path]:
    """Write the report of every experiment below ``results_root``.

    Parameters
    ----------
    results_root : path
        A results directory or one experiment directory.
    out_dir : path, optional
        Where to write; default ``<results_root>/report``.
    baseline : str, optional
        Method for AULC and DUR (see the module docstring for the default).
    formats : sequence of {"md", "csv", "tex", "html"}
        Table formats, and ``html``: a self-contained page ``report.html`` per experiment and
        ``index.html`` over several (:mod:`alprbf.report.html`).  ``report.md`` and the
        PNG/PDF figures are always written.
    alpha : float
        Significance level of the tests and of the Nemenyi critical difference.
    q_alpha : float, optional
        Critical value for the CD instead of ``studentized_range.ppf(1 - alpha, k, inf)/sqrt(2)``.
    rp_measure : {"train_best", "final"}
        Accuracy ranked by RP: Reitmaier et al. 2016's (test accuracy at the iteration with the best
        training accuracy) or the final test accuracy.
    reference : path, optional
        Reference CSV to use instead of each experiment's ``reference.csv``.
    window : float
        Fraction of the budget at its end that defines the DUR target accuracy.
    methods : sequence of str, optional
        Shell patterns on ``"model / strategy"``; report only the matching methods.
    curve_accuracy : {"test", "train"}
        Accuracy behind AULC and DUR (:data:`metrics.CURVE_ACCURACIES`); RP always ranks test
        accuracies.
    merge_datasets : str, optional
        A regular expression with one group: data sets whose label it matches in full are
        reported as one, named by the group (``'mnist-(n[0-9]+)-[0-9]'`` averages Nguyen & Smeulders
        2004's ten one-vs-rest digits per database size); every curve of them counts once.
    error_at_fraction : sequence of float
        Also tabulate the test error at these fractions of each data set's database size
        (the config's ``rows``; Nguyen & Smeulders 2004: 0.01, 0.02, 0.035).
    rank_by : {"accuracy", "balanced_accuracy", "macro_f1", "log_loss"}
        What the RP tables, their test and the CD diagram rank (:data:`metrics.RANK_BY`), at
        the rows ``rp_measure`` chooses; the published values are always compared with the
        accuracy ranking.
    posthoc : {"nemenyi", "wilcoxon-holm"}
        Post-hoc test after the Friedman test (:mod:`alprbf.report.stats`).
    figures : bool
        Draw the figures (learning curves, CD diagram, the HTML page's per-data-set curves).
        False writes every table and note as with True, and ``report.md`` says that the
        figures were left out: drawing is most of a report's time on many data sets.
    sanity : path, optional
        A YAML list of the cells whose model fails the sanity suite
        (:func:`alprbf.report.health.load_sanity_failures`; the project's is
        ``results/sanity-failures.yaml``): their published values get no verdict.

    Returns
    -------
    list of Path
        Every file written, ``report.md`` of the top level first.

    Raises
    ------
    UserError
        Missing or invalid results, unknown format / RP measure / baseline, bad alpha or q_alpha,
        a ``methods`` pattern that matches nothing, an output directory that cannot be written.
    """
    if curve_accuracy not in metrics.CURVE_ACCURACIES:
        raise unknown_name("curve accuracy", curve_accuracy, CURVE_ACCURACIES)
    if rank_by not in metrics.RANK_BY:
        raise unknown_name("rank-by measure", rank_by, RANK_BY)
    if posthoc not in POSTHOCS:
        raise unknown_name("post-hoc test", posthoc, POSTHOCS)
    merge = _merge_pattern(merge_datasets)
    fractions = tuple(float(f) for f in error_at_fraction)
    if any(not 0.0 < f <= 1.0 for f in fractions):
        raise UserError(f"--error-at-fraction values must be in (0, 1], got {list(fractions)}")
    opts = ReportOptions(baseline, _check_args(formats, alpha, q_alpha, rp_measure, window),
                         alpha, q_alpha, rp_measure,
                         load_reference(reference) if reference is not None else None, window,
                         tuple(methods or ()), curve_accuracy, merge_datasets, fractions,
                         rank_by, posthoc, bool(figures),
                         tuple(health.load_sanity_failures(sanity)) if sanity is not None else ())
    root = Path(results_root)
    experiments = find_experiments(root)
    out = Path(out_dir) if out_dir is not None else root / "report"
    frames = [(e, d) for e in experiments if not (d := load_experiment(e)).empty]
    if not frames:
        raise UserError(f"the result files under {root} contain no rows")
    if merge is not None:
        labels = sorted({x for _, d in frames for x in d["dataset"].unique()})
        if not any(merge.fullmatch(x) for x in labels):
            raise UserError(f"--merge-datasets {merge_datasets!r} matches no data set label; "
                            f"labels: {', '.join(labels[:8])}{' ...' if len(labels) > 8 else ''}")
        frames = [(e, d.assign(dataset=d["dataset"].map(lambda x: _merged(merge, x))))
                  for e, d in frames]
    plans = {e.path: _plan(e, d) for e, d in frames}
    if opts.methods:
        frames = select_methods(frames, opts.methods)
    if baseline is not None and not any(
            resolve_method(baseline, method_labels(d))[0] for _, d in frames):
        _, why = resolve_method(baseline, method_labels(frames[0][1]))
        raise UserError(f"baseline {why}")
    _check_writable(out, explicit=out_dir is not None)
    try:
        if (root / "tasks").is_dir() and len(frames) == 1:
            e, d = frames[0]
            return _experiment_report(e, d, out, opts, plans[e.path])
        return _several_reports(root, frames, out, opts, plans)
    except OSError as exc:
        raise UserError(f"cannot write the report to {out}: {exc}") from None


def _merge_pattern(pattern: str | None) -> re.Pattern | None:
    if pattern is None:
        return None
    try:
        rx = re.compile(pattern)
    except re.error as exc:
        raise UserError(f"--merge-datasets {pattern!r} is not a regular expression: {exc}"
                        ) from None
    if rx.groups != 1:
        raise UserError(f"--merge-datasets {pattern!r} needs exactly one (group) naming the "
                        f"merged data set; it has {rx.groups}")
    return rx


def _merged(rx: re.Pattern | None, label: str) -> str:
    """The name ``label`` is reported under (``--merge-datasets``)."""
    m = rx.fullmatch(label) if rx is not None else None
    return m.group(1) if m else label


def _plan(exp: Experiment, rows: pd.DataFrame) -> pd.DataFrame:
    """The methods of the experiment's config (``run.json``), else those of all its rows."""
    plan = exp.config_methods()
    return method_labels(rows) if plan is None else plan


def _several_reports(root: Path, frames: list[tuple[Experiment, pd.DataFrame]], out: Path,
                     opts: ReportOptions, plans: dict[Path, pd.DataFrame]) -> list[Path]:
    """One report per experiment in its own folder, and an index linking them."""
    names = output_names([e for e, _ in frames], root)
    index = ["# alprbf report", ""]
    written: list[Path] = []
    for (e, d), name in zip(frames, names, strict=True):
        written += _experiment_report(e, d, out / name, opts, plans[e.path])
        index.append(f"- [{e.name}]({name}/report.md) (`{e.path}`): "
                     f"{d['dataset'].nunique()} dataset(s), {len(method_labels(d))} method(s), "
                     f"{d['task_id'].nunique()} task(s)")
    top = out / "report.md"
    top.write_text("\n".join(index) + "\n")
    if "html" in opts.formats:
        page_files = [p for p in written if p.name == pages.PAGE]
        written.insert(0, pages.write_index(out, page_files, f"alprbf report: {root.name}"))
    return [top, *written]


def output_names(experiments: Sequence[Experiment], root: Path) -> list[str]:
    """Distinct output folder names: the experiment directory's name, or, where two share it,
    its path below ``root`` with ``/`` written ``__`` (a counter as a last resort)."""
    base = [_safe(e.path.name) for e in experiments]
    names = [b if base.count(b) == 1 else _safe("__".join(_relative_parts(e.path, root)))
             for b, e in zip(base, experiments, strict=True)]
    seen: dict[str, int] = {}
    out = []
    for n in names:
        seen[n] = seen.get(n, 0) + 1
        out.append(n if seen[n] == 1 else f"{n}-{seen[n]}")
    return out


def _relative_parts(path: Path, root: Path) -> tuple[str, ...]:
    try:
        parts = path.resolve().relative_to(root.resolve()).parts
    except ValueError:
        parts = path.parts
    return parts or (path.resolve().name,)


def _check_writable(out: Path, explicit: bool) -> None:
    """Create ``out`` and write a probe file in it, or raise a one-line UserError."""
    hint = "choose another --out" if explicit else "pass --out DIR to write the report elsewhere"
    if out.exists() and not out.is_dir():
        raise UserError(f"cannot write the report to {out}: it is a file, not a directory; "
                        f"{hint}")
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out, prefix=".alprbf-report-"):
            pass
    except OSError as exc:
        raise UserError(f"cannot write the report to {out}: {exc.strerror or exc}; {hint}"
                        ) from None


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
            raise unknown_name("report format", f, REPORT_FORMATS)
    if not 0.0 < alpha < 1.0:
        raise UserError(f"alpha must be between 0 and 1 (exclusive), got {alpha}")
    if q_alpha is not None and not q_alpha > 0:
        raise UserError(f"q_alpha must be positive, got {q_alpha}")
    if rp_measure not in RP_MEASURES:
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


def _planned_tasks(exp: Experiment, merge: re.Pattern | None,
                   labels: Sequence[str]) -> dict[str, int] | None:
    """Tasks per method that the config plans for each (merged) data set: folds (1 unless
    the test set is a fold) x repetitions, with a data set's own protocol fields; None
    without a readable config.  ``labels``: the data sets when the config lists none."""
    base = exp.config.get("protocol") or {}
    planned: dict[str, int] = {}
    try:
        for spec in exp.config.get("datasets") or [{"label": x} for x in labels]:
            proto = {**base, **(spec.get("protocol") or {})}
            folds = int(proto["folds"]) if proto.get("test", "folds") == "folds" else 1
            name = _merged(merge, spec["label"])
            planned[name] = planned.get(name, 0) + folds * int(proto.get("repetitions", 1))
    except (KeyError, TypeError, ValueError):
        return None
    return planned


def _incomplete_cells(exp: Experiment, df: pd.DataFrame, merge: re.Pattern | None) -> list[str]:
    """``dataset / method n/planned`` for grid cells with fewer tasks than planned (a run
    stopped early, or started with ``--only``)."""
    found = df.groupby(["dataset", "method"])["task_id"].nunique()
    originals = exp.config_datasets() or sorted(found.index.get_level_values(0).unique())
    planned = _planned_tasks(exp, merge, originals)
    if planned is None:
        return []
    return [f"{d} / {m} {n}/{planned[d]}" for (d, m), n in found.items()
            if d in planned and n < planned[d]]


def _database_sizes(exp: Experiment, merge: re.Pattern | None) -> dict[str, int]:
    """The database size ``rows`` of each (merged) data set that has one in the config."""
    sizes: dict[str, set[int]] = {}
    for spec in (exp.config or {}).get("datasets") or []:
        if isinstance(spec, dict) and spec.get("rows"):
            sizes.setdefault(_merged(merge, spec["label"]), set()).add(int(spec["rows"]))
    return {d: n.pop() for d, n in sizes.items() if len(n) == 1}


@dataclass
class _Parts:
    """What one experiment's report collects before it is written."""

    notes: list[str] = field(default_factory=list)
    tables: list[tables.Table] = field(default_factory=list)
    figures: list[tuple[str, list[Path]]] = field(default_factory=list)
    extra: list[Path] = field(default_factory=list)  # files written beside the tables
    curves: pd.DataFrame | None = None  # the learning curves drawn (mean, std per point)
    published: pd.DataFrame | None = None  # published endpoints drawn on them


def _experiment_report(exp: Experiment, rows: pd.DataFrame, out: Path, opts: ReportOptions,
                       plan: pd.DataFrame) -> list[Path]:
    """Write one experiment's report to ``out``; ``plan`` holds the config's methods."""
    out.mkdir(parents=True, exist_ok=True)
    df = add_method_column(rows)
    labels = method_labels(rows)
    parts = _Parts()
    merge = _merge_pattern(opts.merge_datasets)
    incomplete = _incomplete_cells(exp, df, merge)
    if incomplete:
        parts.notes.append("Incomplete cells (tasks found / planned; their means and stds use "
                           "the tasks found): " + ", ".join(incomplete) + ".")
    failed = read_failures(exp.path)
    if failed:
        parts.notes.append(f"{len(failed)} task(s) failed or timed out; see the table of "
                           "failed tasks.")
        parts.tables.append(tables.failures_table(failed, os.path.relpath(exp.path, out)))
    err = metrics.error_at_budget(df)
    scores = metrics.rp_scores(df, opts.rp_measure)
    cost = metrics.cost_summary(df)
    base, note = _choose_baseline(opts.baseline, labels)
    parts.notes.append(note)
    acc_curves = metrics.curve_stats(df, metrics.CURVE_ACCURACIES[opts.curve_accuracy])
    vb = _versus_baseline(acc_curves, base, opts.window, parts)
    rp = _rp_significance(scores, opts)
    cell_health = health.cell_health(health.task_health(df))
    cells, summary = _reference_cells(exp, df, labels, plan,
                                      _ours_long(err, scores, vb, cost, rp), opts, parts,
                                      cell_health)
    published = _published_errors(cells)

    _learning_curves(df, out, published, parts, opts.figures)
    parts.tables.append(tables.error_at_budget_table(err, published))
    if opts.error_at_fraction:
        _error_at_fractions(exp, df, merge, opts.error_at_fraction, parts)
    if opts.rank_by == "accuracy":
        _ranked_performance(scores, rp, out, opts, parts)
    else:
        ranked = metrics.rp_scores(df, opts.rp_measure, rank_by=opts.rank_by)
        _ranked_performance(ranked, _rp_significance(ranked, opts), out, opts, parts)
    if opts.rp_measure == "train_best" and df["train_accuracy"].isna().any():
        parts.notes.append("Some rows lack train_accuracy; RP ignores them (a curve without "
                           "any uses its last row).")
    if vb is not None:
        parts.tables += tables.versus_baseline_tables(vb, base, opts.curve_accuracy,
                                                      opts.window)
        parts.notes.append(f"Accuracy used: RP ranks test accuracies; AULC and DUR use the "
                           f"{_CURVE_WORDS[opts.curve_accuracy]}.")
    parts.tables.append(tables.health_table(cell_health, health.CONSTANT_SHARE))
    parts.tables.append(tables.cost_table(cost, _cost_notes(df)))
    parts.tables.append(tables.run_cost_table(metrics.run_cost(df), _machine(exp)))
    if cells is not None:
        parts.tables.append(tables.reference_table(cells, summary))
    if "tex" in opts.formats:
        paper = out / "error_at_budget_paper.tex"
        paper.write_text(tables.paper_latex(err))
        parts.extra.append(paper)

    written: list[Path] = []
    table_formats = [f for f in opts.formats if f in tables.FORMATS]
    for t in parts.tables:
        written += tables.write_table(t, out, table_formats)
    written += [p for _, ps in parts.figures for p in ps] + parts.extra
    index = out / "report.md"
    index.write_text(_index_md(exp, rows, labels, parts, table_formats, out))
    if "html" in opts.formats:
        ranks = rp[0].mean_ranks if isinstance(rp[0], stats.Ranking) else None
        methods = pages.method_summary(err, ranks, cell_health, cells)
        written.append(_html_page(exp, rows, df, labels, parts, out, cells, cell_health,
                                  methods, opts.figures))
    return [index, *written]


def _html_page(exp: Experiment, rows: pd.DataFrame, df: pd.DataFrame, labels: pd.DataFrame,
               parts: _Parts, out: Path, cells: pd.DataFrame | None,
               cell_health: pd.DataFrame, methods: list[dict], figures: bool = True) -> Path:
    """``out/report.html``: the experiment's self-contained page (:mod:`alprbf.report.html`)."""
    from . import plots  # matplotlib: loaded when a report draws, not before

    files = {p.name.removesuffix(".parquet"): p for p in task_files(exp.path)}
    ids = df.groupby(["dataset", "method"])["task_id"].unique()
    task_links = {(str(d), str(m)): [(files[t].name, pages.relative(files[t], out))
                                     for t in sorted(ts) if t in files]
                  for (d, m), ts in ids.items()}
    facts = _facts(exp, rows, labels)
    facts[0] = ("results", f'<a href="{pages.esc(pages.relative(exp.path, out))}/">'
                           f"{pages.esc(pages.relative(exp.path, out))}</a>")
    pngs = ({} if parts.curves is None or not figures else
            plots.learning_curve_pngs(parts.curves, published=parts.published))
    summary = {"kind": "experiment", "experiment": exp.name,
               "datasets": int(rows["dataset"].nunique()), "methods": len(labels),
               "tasks": int(rows["task_id"].nunique()), "cells": len(cell_health),
               "degenerate_cells": int((cell_health["degenerate"] > 0).sum()),
               "published": pages.summary_counts(cells), "method_summary": methods}
    path = out / pages.PAGE
    path.write_text(pages.experiment_page(exp.name, facts, parts.notes, parts.tables,
                                          parts.figures, pngs, task_links, out, summary),
                    encoding="utf-8")
    return path


_CURVE_WORDS = {"test": "test accuracy (held-out rows)",
                "train": "training-pool accuracy (labeled and unlabeled training rows with "
                         "their true labels, `train_accuracy`)"}


def _error_at_fractions(exp: Experiment, df: pd.DataFrame, merge: re.Pattern | None,
                        fractions: tuple[float, ...], parts: _Parts) -> None:
    sizes = _database_sizes(exp, merge)
    targets = {d: [(f"{100 * f:g} %", f * sizes[d]) for f in fractions]
               for d in df["dataset"].unique() if d in sizes}
    missing = sorted(set(df["dataset"].unique()) - set(targets))
    if missing:
        parts.notes.append("Error at fractions of the database skipped for "
                           + ", ".join(missing) + ": the config gives them no `rows`.")
    if targets:
        parts.tables.append(tables.error_at_labels_table(metrics.error_at_labels(df, targets)))


def _versus_baseline(acc_curves: pd.DataFrame, base: str | None, window: float,
                     parts: _Parts) -> pd.DataFrame | None:
    """AULC and DUR against ``base`` (None, with a note, when they do not apply)."""
    if base is None:
        return None
    if acc_curves.groupby(["dataset", "method"]).size().max() < 2:
        parts.notes.append("AULC and DUR skipped: the curves have a single point (no queries).")
        return None
    return metrics.versus_baseline(acc_curves, base, window)


def _summary_long(rp, vb: pd.DataFrame | None) -> list[pd.DataFrame]:
    """Summary cells (dataset ``all``): mean RP accuracy, mean rank and wins over the ranked
    data sets, Friedman chi-square and CD (method ``all``), mean DUR and AULC over the data
    sets where every method has a value (a DUR not reached enters with its bound)."""
    result = rp[0]
    out = []

    def per_method(values: pd.Series, metric: str) -> pd.DataFrame:
        return pd.DataFrame({"dataset": SUMMARY, "method": values.index, "metric": metric,
                             "mean": values.to_numpy(dtype=float), "std": np.nan})

    if isinstance(result, stats.Ranking):
        out += [per_method(result.scores.mean(), "mean_rp_accuracy"),
                per_method(result.mean_ranks, "mean_rank"), per_method(result.wins, "rp_wins")]
    if isinstance(result, stats.RankedComparison):
        out.append(pd.DataFrame({"dataset": SUMMARY, "method": SUMMARY,
                                 "metric": ["friedman_chi2", "cd"],
                                 "mean": [result.chi2, result.cd], "std": np.nan}))
    if vb is not None:
        dur = vb.assign(_v=vb["dur"].where(vb["dur_reached"], vb["dur_bound"]))
        for col, metric in (("_v", "mean_dur"), ("aulc", "mean_aulc")):
            wide = dur.pivot(index="dataset", columns="method", values=col).dropna()
            if len(wide):
                out.append(per_method(wide.mean(), metric))
    return out


def _ours_long(err: pd.DataFrame, scores: pd.DataFrame, vb: pd.DataFrame | None,
               cost: pd.DataFrame, rp=(None, "")) -> pd.DataFrame:
    """Our measures as one long frame ``dataset, method, metric, mean, std, flag``."""
    ours = [err.assign(metric="error_at_budget"),
            err.assign(metric="accuracy_at_budget", mean=100.0 - err["mean"]),
            scores.assign(metric="rp_accuracy"), *_summary_long(rp, vb)]
    if vb is not None:
        flag = ["" if r else "target not reached" for r in vb["dur_reached"]]
        for m in ("aulc", "dur", "dur_labels", "dur_target"):
            ours.append(vb.assign(metric=m, mean=vb[m], std=np.nan,
                                  flag=flag if m in ("dur", "dur_labels") else ""))
    for m in ("train_time_s", "total_time_s", "components", "components_presplit",
              "fit_seconds_per_query"):
        std = f"{m}_std"
        ours.append(cost.assign(metric=m, mean=cost[m],
                                std=cost[std] if std in cost else np.nan))
    cols = ["dataset", "method", "metric", "mean", "std", "flag"]
    return pd.concat([o.assign(flag=o["flag"] if "flag" in o else "")[cols] for o in ours],
                     ignore_index=True)


def _reference_cells(exp: Experiment, df: pd.DataFrame, labels: pd.DataFrame,
                     plan: pd.DataFrame, ours: pd.DataFrame, opts: ReportOptions,
                     parts: _Parts, cell_health: pd.DataFrame
                     ) -> tuple[pd.DataFrame | None, list[str]]:
    """Every published cell's readings with verdicts (degenerate cells marked as such, see
    :mod:`alprbf.report.health`) and the summary line of each published table (None and no
    lines without a reference file)."""
    ref = opts.reference
    if ref is None and exp.reference_path is not None:
        ref = load_reference(exp.reference_path)
        parts.notes.append(f"Published reference values from `{exp.reference_path.name}`.")
    if ref is None:
        return None, []
    present = set(map(tuple, df[["dataset", "method"]].drop_duplicates().to_numpy()))
    present |= {(SUMMARY, m) for m in ours.loc[ours["dataset"] == SUMMARY, "method"]}
    matched = match_reference(ref, labels, present, plan, exp.config_datasets(),
                              opts.selected, scaled=exp.scale != "full")
    cells = reference.mark_degenerate(reference.compare(ref, matched, ours), cell_health)
    cells = reference.mark_sanity(cells, lambda dataset, method: any(
        s.matches(exp.name, dataset, method) for s in opts.sanity))
    if (matched["our_dataset"] == SUMMARY).any():
        n = df["dataset"].nunique()
        parts.notes.append(f"Summary cells (dataset `all`: means, ranks, wins, chi2, CD) are "
                           f"computed over the {n} data set(s) of this report; the published "
                           "ones over the paper's whole table.")
    summary = reference.summary(cells)
    parts.notes += [f"Published values: {line}." for line in summary]
    unmapped = cells.loc[cells["verdict"] == "unmapped", "name"].unique()
    if len(unmapped):
        parts.notes.append("Reference names that match no method or dataset of the config "
                           "(`alprbf validate` refuses them): " + ", ".join(unmapped) + ".")
    return cells, summary


def _published_errors(cells: pd.DataFrame | None) -> pd.DataFrame | None:
    """Primary readings of published ``error_at_budget`` cells that have a result of ours."""
    if cells is None:
        return None
    hit = cells[cells["primary"] & (cells["metric"] == "error_at_budget")
                & (cells["our_method"] != "")]
    return hit.assign(method=hit["our_method"], mean=hit["ref_mean"], std=hit["ref_std"])


def _learning_curves(df: pd.DataFrame, out: Path, published: pd.DataFrame | None,
                     parts: _Parts, figures: bool = True) -> None:
    """The learning-curve figure of the cells with queries; notes for what it leaves out."""

    curves = metrics.curve_stats(df, "test_error")
    size = curves.groupby(["dataset", "method"])["queries"].transform("size")
    drawn = curves[size >= 2]
    if drawn.empty:
        parts.notes.append("Learning curves not drawn: no method queried a label (supervised "
                           "cross-validation, budget 0); see the error at the budget.")
        return
    left_out = sorted(set(curves["dataset"]) - set(drawn["dataset"]))
    if left_out:
        parts.notes.append("Learning curves leave out " + ", ".join(left_out)
                           + ": no method queried a label there.")
    parts.curves, parts.published = drawn, published
    if not figures:
        parts.notes.append(NO_FIGURES_NOTE)
        return
    from . import plots  # matplotlib: loaded when a report draws, not before

    title = "Learning curves (test error, mean ± 1 std over folds x repetitions"
    title += "; ★ published value)" if published is not None and len(published) else ")"
    parts.figures.append((title, plots.learning_curves(drawn, out / "learning_curves",
                                                       published=published)))


NO_FIGURES_NOTE = "Figures not drawn (--no-figures): the tables hold every number."


def _rp_significance(scores: pd.DataFrame, opts: ReportOptions):
    """``(result, skipped)`` of the test that fits the number of methods, on the RP scores of
    the data sets where every method has one."""
    wide = scores.pivot(index="dataset", columns="method", values="mean").dropna()
    return stats.significance(wide, metrics.RANK_BY[opts.rank_by][2], opts.alpha,
                              opts.q_alpha, opts.posthoc)


def _ranked_performance(scores: pd.DataFrame, rp, out: Path, opts: ReportOptions,
                        parts: _Parts) -> None:
    """RP tables, the test that fits the number of methods, and the CD diagram."""
    result, skipped = rp
    if skipped:
        parts.notes.append(f"Significance tests (Wilcoxon, or Friedman with Nemenyi and the "
                           f"CD diagram) skipped: {skipped}.")
    elif isinstance(result, stats.PairedComparison):
        parts.notes.append("Two methods: Wilcoxon signed-rank test instead of Friedman / "
                           "Nemenyi; no CD diagram.")
    if isinstance(result, stats.RankedComparison) and opts.figures:
        from . import plots  # matplotlib: loaded when a report draws, not before

        test = ("Wilcoxon–Holm" if result.wilcoxon_holm_p is not None
                else "critical difference")
        parts.figures.append((f"Critical-difference diagram (RP by {opts.rank_by}, {test}, "
                              f"α = {opts.alpha:g})",
                              plots.cd_diagram(result, out / "cd_diagram")))
    parts.tables += tables.rp_tables(scores, result, opts.rp_measure, skipped, opts.rank_by)


def _machine(exp: Experiment) -> str | None:
    """The CPU and kernel pinning that ``run.json`` records, in words (None if absent)."""
    k = exp.meta.get("kernels") or {}
    if not k.get("cpu"):
        return None
    pinned = "kernels pinned to AVX2" if k.get("pinned") else "native kernels"
    return f"{k['cpu']} ({k.get('machine', '?')}, {pinned})"


def _cost_notes(df: pd.DataFrame) -> list[str]:
    lacking = metrics.tasks_lacking(df, "eval_seconds")
    if not lacking:
        return []
    return [f"{len(lacking)} of {df['task_id'].nunique()} task file(s) record no evaluation "
            "time (written before alprbf recorded eval_seconds): their evaluation counts as "
            "0 s, so their eval and total times are too low."]


def _facts(exp: Experiment, rows: pd.DataFrame, labels: pd.DataFrame) -> list[tuple[str, str]]:
    """The header lines of a report (key, text with Markdown code spans); results first."""
    cfg = exp.config
    per_cell = rows.groupby(["dataset", "model", "strategy"])["task_id"].nunique().max()
    facts = [("results", f"`{exp.path}`"),
             ("datasets", ", ".join(sorted(rows["dataset"].unique()))),
             ("methods", ", ".join(f"`{x}`" + ("" if x == full else f" ({full})")
                                   for x, full in zip(labels["label"], labels["full"],
                                                      strict=True))),
             ("tasks", f"{rows['task_id'].nunique()}; folds x repetitions per cell: "
                       f"{per_cell}")]
    if cfg.get("protocol"):
        p = cfg["protocol"]
        facts.append(("protocol", ", ".join(f"{k}={p[k]}" for k in sorted(p)
                                            if not isinstance(p[k], dict))))
    facts.append(("definitions of the measures", "`alprbf/report/DEFINITIONS.md`"))
    return facts


def _index_md(exp: Experiment, rows: pd.DataFrame, labels: pd.DataFrame, parts: _Parts,
              formats, out: Path) -> str:
    lines = [f"# Report: {exp.name}", ""]
    lines += [f"- {k}: {v}" for k, v in _facts(exp, rows, labels)] + [""]
    if parts.notes:
        lines += ["## Notes", ""] + [f"- {n}" for n in parts.notes] + [""]
    for title, paths in parts.figures:
        png = [p for p in paths if p.suffix == ".png"]
        lines += [f"## {title}", ""]
        if png:
            lines.append(f"![{title}]({os.path.relpath(png[0], out)})")
        lines += ["", "Files: " + ", ".join(f"[{p.name}]({os.path.relpath(p, out)})"
                                            for p in paths), ""]
    for t in parts.tables:
        lines += [f"## {t.title}", "", tables.to_markdown(t.display).rstrip(), ""]
        lines += [n for n in t.notes] + [""] if t.notes else []
        if formats:
            lines += ["Files: " + ", ".join(f"[{t.name}.{f}]({t.name}.{f})" for f in formats),
                      ""]
    if parts.extra:
        lines += ["## Paper-style tables", "",
                  "Files: " + ", ".join(f"[{p.name}]({p.name})" for p in parts.extra), ""]
    return "\n".join(lines)
