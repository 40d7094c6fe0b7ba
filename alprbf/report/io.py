"""Reading result files and published reference values.

The report only reads files: the runner's Parquet task files (read by :mod:`alprbf.store.results`),
its ``run.json`` metadata and an optional reference CSV.  Nothing here imports the models,
strategies, protocol or runner.

Results layout
--------------
``<root>/<experiment>/tasks/<task_id>.parquet``
    One file per task, one row per evaluated active-learning iteration; columns as in
    :data:`alprbf.store.results.SCHEMA`.
``<root>/<experiment>/run.json``
    Run metadata, at least ``{"experiment": name, "config": {...}}``.
``<root>/<experiment>/reference.csv``
    Optional copy of the config's ``reference`` file (see below).

``root`` may be a single experiment directory (it contains ``tasks/``) or a directory holding
several experiment directories.

Methods
-------
A *method* is a (model, strategy) pair of one experiment.  Its display label is chosen per
experiment so that it stays short: the model label when the experiment has a single strategy,
the strategy label when it has a single model, and ``"model / strategy"`` otherwise.

Reference CSV format
--------------------
A UTF-8 CSV file with a header and these columns (extra columns are ignored; ``std``,
``other_readings``, ``table``, ``published_as`` and ``source`` may be empty or absent)::

    dataset,method,metric,mean,std,other_readings,table,published_as,source
    waveform,active_prbf_literal,error_at_budget,19.0,0.5,active_prbf,seed 000 Table 2,,

One row is one *published cell*.

``dataset``
    A dataset label of the config.
``method``
    The method of the config that stands for the published one: its *primary reading*, whose
    verdict the summary counts.  Matched as described below.
``other_readings``
    Further methods of the config that stand for it under other readings of the paper,
    separated by ``;`` (e.g. the covariance types a paper leaves open); printed beside the
    primary reading with their own verdicts.
``metric``
    One of :data:`REFERENCE_METRICS` (units as listed there; errors and accuracies in %).
``mean``, ``std``
    The published value and its published standard deviation (same unit as the metric).
``table``
    The published table the cell belongs to (e.g. ``seed 001 Table II``); the report prints
    one summary line per table.  Default: ``source`` up to its first ``(``.
``published_as``
    The paper's name for the method (default: the first name of ``method``).
``source``
    Free text (paper, table, protocol), printed beside the value.

Matching.  Names are compared after *normalisation*: lower case, with runs of spaces, ``_``,
``-`` and ``/`` collapsed (so ``"Pen-based digits"`` matches ``pen_based_digits`` and
``"svm/random"`` matches ``"svm / random"``).  A reference ``dataset`` must equal a dataset
label.  A method name matches, in this order of priority,

1. a method whose full label ``"model / strategy"`` or display label equals it;
2. otherwise the single method whose model label equals it;
3. otherwise the single method whose strategy label equals it.

Names are matched against the methods and datasets of the config (``run.json``), so a cell
of a method that a partial run (``--only``) did not reach is *not run*, not an error; a name
that matches no method of the config is *unmapped* (:func:`check_reference` refuses it, for
``alprbf validate``).  Without ``run.json`` the methods of the results stand for the config.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import UserError
from ..store.results import TASKS_DIR, read_results, task_files

#: Metrics a reference file may name, with their unit (used in the comparison table).
REFERENCE_METRICS: dict[str, str] = {
    "error_at_budget": "test error at the last n_labeled, %",
    "accuracy_at_budget": "test accuracy at the last n_labeled, %",
    "rp_accuracy": "test accuracy used for ranking (RP measure), %",
    "aulc": "area under the learning curve minus the baseline's, accuracy %",
    "dur": "data utilisation ratio vs the baseline",
    "dur_labels": "labels needed to reach the DUR target accuracy",
    "dur_target": "DUR target accuracy (baseline), %",
    "train_time_s": "total fit time of one curve (one fold), s",
    "total_time_s": "total fit + query + evaluation time of one curve (one fold), s",
    "fit_seconds_per_query": "mean fit time per evaluated iteration, s",
    "components": "model size (components / support vectors) at the last n_labeled",
    # summary cells: dataset "all" (over the data sets of the RP ranking)
    "mean_rp_accuracy": "mean over the data sets of the RP accuracy, %",
    "mean_rank": "mean Friedman rank of the RP accuracies",
    "rp_wins": "RP wins (ties shared)",
    "mean_dur": "mean DUR over the data sets (a bound where the target is not reached)",
    "mean_aulc": "mean AULC over the data sets",
    # experiment-level cells: dataset "all", method "all"
    "friedman_chi2": "Friedman chi-square of the RP ranking",
    "cd": "Nemenyi critical difference of the mean ranks",
}

#: Dataset name (and, for experiment-level metrics, method name) of a summary cell.
SUMMARY = "all"

REFERENCE_COLUMNS = ("dataset", "method", "metric", "mean", "std", "other_readings", "table",
                     "published_as", "source")

#: Columns a reference file must have (the others may be absent).
REQUIRED_REFERENCE_COLUMNS = ("dataset", "method", "metric", "mean")

METHOD_SEP = " / "

#: Separates the methods of ``other_readings`` in a reference file.
READINGS_SEP = ";"


def normalise_name(name: str) -> str:
    """Lower-case ``name`` and collapse runs of spaces, ``_``, ``-`` and ``/`` to one space."""
    return re.sub(r"[\s_\-/]+", " ", str(name).strip().lower()).strip()


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class Experiment:
    """One experiment directory: its name, path and run metadata."""

    name: str
    path: Path
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def reference_path(self) -> Path | None:
        """``reference.csv`` beside the results, else the config's reference file if it exists."""
        local = self.path / "reference.csv"
        if local.is_file():
            return local
        ref = self.config.get("reference")
        if ref and Path(ref).is_file():
            return Path(ref)
        return None

    @property
    def config(self) -> dict[str, Any]:
        """The config as run (``run.json``), or ``{}``."""
        return self.meta.get("config") or {}

    def config_methods(self) -> pd.DataFrame | None:
        """The config's methods as :func:`method_labels` rows; None without ``run.json``."""
        try:
            pairs = [(m[0]["label"], m[1]["label"]) for m in self.config["methods"]]
        except (KeyError, TypeError, IndexError):
            return None
        return _labels_of_pairs(pairs)

    @property
    def scale(self) -> str:
        """The scale the config was run at (``full`` without ``run.json``)."""
        return str((self.config or {}).get("scale") or "full")

    def config_datasets(self) -> list[str] | None:
        """The config's dataset labels (of the scale run); None without ``run.json``."""
        try:
            return [d["label"] for d in self.config["datasets"]]
        except (KeyError, TypeError):
            return None


def find_experiments(root: str | Path) -> list[Experiment]:
    """Experiment directories at or below ``root`` (those with ``tasks/*.parquet`` files).

    Raises
    ------
    UserError
        If ``root`` does not exist or holds no result files.
    """
    root = Path(root)
    if not root.exists():
        raise UserError(f"results directory not found: {root}")
    if not root.is_dir():
        raise UserError(f"results path is not a directory: {root}")
    dirs = sorted(t.parent for t in root.glob(f"**/{TASKS_DIR}") if task_files(t.parent))
    if not dirs:
        raise UserError(f"no result files (<experiment>/tasks/*.parquet) found under {root}; "
                        "run `alprbf run CONFIG.yaml` first or pass the results directory")
    out = []
    for d in dirs:
        meta: dict[str, Any] = {}
        run_json = d / "run.json"
        if run_json.is_file():
            try:
                meta = json.loads(run_json.read_text())
            except json.JSONDecodeError as exc:
                raise UserError(f"invalid run metadata {run_json}: {exc.msg}") from None
        out.append(Experiment(name=str(meta.get("experiment") or d.name), path=d, meta=meta))
    return out


def load_experiment(exp: Experiment) -> pd.DataFrame:
    """The rows of one experiment's task files (empty frame when it has none)."""
    df = read_results(exp.path)
    keys = ["experiment", "dataset", "model", "strategy", "repetition", "fold", "iteration"]
    return df.sort_values(keys, kind="stable").reset_index(drop=True)


def load_results(root: str | Path) -> pd.DataFrame:
    """Load every task file of every experiment at or below ``root`` into one DataFrame.

    Parameters
    ----------
    root : path
        A results directory (``<root>/<experiment>/tasks/*.parquet``) or one experiment directory.

    Returns
    -------
    pandas.DataFrame
        The rows of all task files with the columns of :data:`alprbf.store.results.COLUMNS`,
        sorted by experiment, dataset, model, strategy, repetition, fold and iteration.

    Raises
    ------
    UserError
        If there are no result files or rows, or a file is unreadable or lacks schema columns.
    """
    df = pd.concat([load_experiment(e) for e in find_experiments(root)], ignore_index=True)
    if df.empty:
        raise UserError(f"the result files under {root} contain no rows")
    return df


def method_labels(df: pd.DataFrame) -> pd.DataFrame:
    """The methods of one experiment's rows with their labels.

    Returns
    -------
    pandas.DataFrame
        One row per (model, strategy) with columns ``model``, ``strategy``, ``full``
        (``"model / strategy"``) and ``label`` (the display label, see the module docstring),
        in sorted order.
    """
    pairs = df[["model", "strategy"]].drop_duplicates().sort_values(["model", "strategy"])
    pairs = pairs.reset_index(drop=True)
    full = pairs["model"] + METHOD_SEP + pairs["strategy"]
    if pairs["strategy"].nunique() == 1:
        label = pairs["model"]
    elif pairs["model"].nunique() == 1:
        label = pairs["strategy"]
    else:
        label = full
    return pairs.assign(full=full, label=label)


def add_method_column(df: pd.DataFrame) -> pd.DataFrame:
    """Return ``df`` (one experiment) with a ``method`` column holding the display label."""
    labels = method_labels(df)
    return df.merge(labels[["model", "strategy", "label"]], on=["model", "strategy"],
                    how="left").rename(columns={"label": "method"})


def resolve_method(name: str, labels: pd.DataFrame) -> tuple[str | None, str]:
    """Match ``name`` against the methods in ``labels`` (from :func:`method_labels`).

    Returns
    -------
    (label, reason)
        The display label of the matched method, or ``None`` and a one-line reason.
    """
    key = normalise_name(name)
    # priority 1: display or full label; 2: model; 3: strategy
    for group in (("label", "full"), ("model",), ("strategy",)):
        hit = set()
        for col in group:
            hit |= set(labels.loc[labels[col].map(normalise_name) == key, "label"])
        if len(hit) == 1:
            return hit.pop(), ""
        if len(hit) > 1:
            return None, f"'{name}' is ambiguous: it matches {', '.join(sorted(hit))}"
    return None, (f"'{name}' matches no method; methods: " + ", ".join(labels["label"]))


# --------------------------------------------------------------------------- references


def load_reference(path: str | Path) -> pd.DataFrame:
    """Read a reference CSV (format in the module docstring) and validate it.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`REFERENCE_COLUMNS` (``std`` NaN when not published, ``table`` and
        ``published_as`` filled with their defaults, ``source`` ``""`` when empty) and
        ``readings``, the list of method names of each row.

    Raises
    ------
    UserError
        Missing file or columns, unknown metric, an empty method list, or a non-numeric
        ``mean``/``std``.
    """
    path = Path(path)
    if not path.is_file():
        raise UserError(f"reference file not found: {path}")
    try:
        ref = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise UserError(f"unreadable reference file {path}: {exc}") from None
    missing = [c for c in REQUIRED_REFERENCE_COLUMNS if c not in ref.columns]
    if missing:
        raise UserError(f"reference file {path} lacks columns {', '.join(missing)}; "
                        f"expected columns: {', '.join(REFERENCE_COLUMNS)}")
    for col in REFERENCE_COLUMNS:
        if col not in ref.columns:
            ref[col] = ""
    bad = sorted(set(ref["metric"]) - set(REFERENCE_METRICS))
    if bad:
        raise UserError(f"reference file {path}: unknown metric '{bad[0]}'; valid metrics: "
                        + ", ".join(REFERENCE_METRICS))
    for col in ("mean", "std"):
        try:
            ref[col] = pd.to_numeric(ref[col].replace({"": None, "n/a": None, "NA": None})
                                     ).astype(float)
        except (ValueError, TypeError):
            raise UserError(f"reference file {path}: column '{col}' must be numeric") from None
    others = ref["other_readings"].map(
        lambda m: [x.strip() for x in m.split(READINGS_SEP)] if m.strip() else [])
    readings = [[m.strip(), *o] for m, o in zip(ref["method"], others, strict=True)]
    for col, bad_rows in (("mean", ref["mean"].isna()),
                          ("method", pd.Series([not all(r) for r in readings], dtype=bool))):
        if bad_rows.any():
            raise UserError(f"reference file {path}: line {int(ref.index[bad_rows][0]) + 2} "
                            f"has no '{col}' value" + (" (or an empty name in other_readings)"
                                                       if col == "method" else ""))
    ref["table"] = ref["table"].where(ref["table"] != "",
                                      ref["source"].str.split("(").str[0].str.strip())
    ref["published_as"] = ref["published_as"].where(ref["published_as"] != "",
                                                    ref["method"])
    return ref[list(REFERENCE_COLUMNS)].assign(readings=readings).reset_index(drop=True)


def _resolve_dataset(name: str, datasets: list[str]) -> str | None:
    by_norm = {normalise_name(d): d for d in datasets}
    return by_norm.get(normalise_name(name))


def _resolve_reading(dataset: str, name: str, config_labels: pd.DataFrame,
                     config_datasets: list[str]) -> tuple[str | None, str | None, str]:
    """(our dataset, ``"model / strategy"``, "") of one reading, or Nones and the reason.

    A summary cell has dataset :data:`SUMMARY` (``all``), and an experiment-level one also
    method ``all``."""
    if normalise_name(dataset) == SUMMARY:
        if normalise_name(name) == SUMMARY:
            return SUMMARY, SUMMARY, ""
        label, why = resolve_method(name, config_labels)
        if label is None:
            return SUMMARY, None, why
        return SUMMARY, config_labels.loc[config_labels["label"] == label, "full"].iloc[0], ""
    d = _resolve_dataset(dataset, config_datasets)
    if d is None:
        return None, None, f"dataset '{dataset}' is not in the config"
    label, why = resolve_method(name, config_labels)
    if label is None:
        return d, None, why
    return d, config_labels.loc[config_labels["label"] == label, "full"].iloc[0], ""


def check_reference(reference_path: str | Path, method_labels: Sequence[str],
                    datasets: Sequence[str] | None = None) -> pd.DataFrame:
    """Refuse a reference file with a row that maps to no method (or dataset) of a config.

    A row passes when one of its readings (``method`` or ``other_readings``) maps: a file may
    be shared by configs that run some of its readings only.

    For ``alprbf validate``.  Pure: reads the file, imports nothing of the config layer.

    Parameters
    ----------
    reference_path : path
        The config's reference CSV (format in the module docstring).
    method_labels : sequence of str
        The config's methods as ``"model / strategy"`` labels (model and strategy labels
        joined by ``" / "``); reference names may be these, or a model or strategy label that
        identifies one method.
    datasets : sequence of str, optional
        The config's dataset labels; when given, every reference dataset must be one of them.

    Returns
    -------
    pandas.DataFrame
        The reference (as :func:`load_reference` returns it).

    Raises
    ------
    UserError
        One line naming the file, the line and the name that maps to nothing (or an invalid
        file, see :func:`load_reference`).
    """
    ref = load_reference(reference_path)
    pairs = [m.split(METHOD_SEP, 1) if METHOD_SEP in m else (m, "") for m in method_labels]
    labels = _labels_of_pairs(pairs)
    for i, row in enumerate(ref.itertuples(index=False)):
        reasons = []
        for name in row.readings:
            d, full, why = _resolve_reading(row.dataset, name, labels,
                                            list(datasets) if datasets is not None
                                            else [row.dataset])
            if full is None:
                reasons.append(why)
        if len(reasons) == len(row.readings):
            raise UserError(f"reference file {reference_path}, line {i + 2}: {reasons[0]}")
    return ref


def _labels_of_pairs(pairs) -> pd.DataFrame:
    return method_labels(pd.DataFrame(list(pairs), columns=["model", "strategy"]))


def match_reference(ref: pd.DataFrame, labels: pd.DataFrame, cells: set[tuple[str, str]],
                    config_labels: pd.DataFrame | None = None,
                    config_datasets: list[str] | None = None,
                    selected: Callable[[str], bool] | None = None,
                    scaled: bool = False) -> pd.DataFrame:
    """One row per reading of each reference row, with its status in this report.

    A data set the config lacks is *unmapped*, or *not run* when ``scaled`` (a smaller scale
    of the config keeps fewer data sets; ``alprbf validate`` checks the names against the
    full config).

    Parameters
    ----------
    ref : DataFrame
        From :func:`load_reference`.
    labels : DataFrame
        From :func:`method_labels` for the experiment's reported rows.
    cells : set of (dataset, display label)
        The (dataset, method) pairs with results.
    config_labels, config_datasets : optional
        The config's methods (:meth:`Experiment.config_methods`) and datasets; default: the
        results' own.
    selected : callable, optional
        Whether a ``"model / strategy"`` label was selected for the report (``--methods``).

    Returns
    -------
    pandas.DataFrame
        Columns ``ref_row`` (index into ``ref``), ``reading`` (0 = primary), ``name``,
        ``our_dataset``, ``our_method`` (display label, None unless the cell has results),
        ``status`` (``"ok"``, ``"not run"``, ``"not selected"`` or ``"unmapped"``) and
        ``note`` (the reason when unmapped).
    """
    if config_labels is None:
        config_labels = labels
    if config_datasets is None:
        config_datasets = sorted({d for d, _ in cells})
    display = dict(zip(labels["full"], labels["label"], strict=True))
    display[SUMMARY] = SUMMARY
    rows = []
    for i, r in enumerate(ref.itertuples(index=False)):
        for j, name in enumerate(r.readings):
            d, full, why = _resolve_reading(r.dataset, name, config_labels, config_datasets)
            ours = display.get(full)
            if d is None and scaled:
                status, why = "not run", "data set not in this scale's run"
            elif full is None:
                status = "unmapped"
            elif selected is not None and full != SUMMARY and not selected(full):
                status = "not selected"
            elif ours is None or (d, ours) not in cells:
                status = "not run"
            else:
                status = "ok"
            rows.append({"ref_row": i, "reading": j, "name": name, "our_dataset": d,
                         "our_method": ours if status == "ok" else None, "status": status,
                         "note": why})
    return pd.DataFrame(rows, columns=["ref_row", "reading", "name", "our_dataset",
                                       "our_method", "status", "note"])
