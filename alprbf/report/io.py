"""Reading result files and published reference values.

The report only reads files: the runner's Parquet task files (read by :mod:`alprbf.results`),
its ``run.json`` metadata and an optional reference CSV.  Nothing here imports the models,
strategies, protocol or runner.

Results layout
--------------
``<root>/<experiment>/tasks/<task_id>.parquet``
    One file per task, one row per evaluated active-learning iteration; columns as in
    :data:`alprbf.results.SCHEMA`.
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
A UTF-8 CSV file with a header and these columns (extra columns are ignored; ``std`` and
``source`` may be empty or absent)::

    dataset,method,metric,mean,std,source
    waveform,posterior_ratio,error_at_budget,19.0,0.5,seed 000 Table 2

``dataset``
    A dataset label of the results.
``method``
    Names one method of the results, see *matching* below.
``metric``
    One of :data:`REFERENCE_METRICS` (units as listed there; errors and accuracies in %).
``mean``, ``std``
    The published value and its published standard deviation (same unit as the metric).
``source``
    Free text (paper and table), printed beside the value.

Matching.  Names are compared after *normalisation*: lower case, with runs of spaces, ``_``,
``-`` and ``/`` collapsed (so ``"Pen-based digits"`` matches ``pen_based_digits`` and
``"svm/random"`` matches ``"svm / random"``).  A reference ``dataset`` must equal a dataset
label.  A reference ``method`` matches, in this order of priority,

1. a method whose full label ``"model / strategy"`` or display label equals it;
2. otherwise the single method whose model label equals it;
3. otherwise the single method whose strategy label equals it.

A reference row that matches no method (or matches several at the same priority) is not
dropped silently: the report lists it as unmatched, with the reason.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import UserError
from ..results import read_results

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
    "fit_seconds_per_query": "mean fit time per evaluated iteration, s",
    "components": "model size (components / support vectors) at the last n_labeled",
}

REFERENCE_COLUMNS = ("dataset", "method", "metric", "mean", "std", "source")

METHOD_SEP = " / "


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
        ref = (self.meta.get("config") or {}).get("reference")
        if ref and Path(ref).is_file():
            return Path(ref)
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
    dirs = sorted({p.parent.parent for p in root.glob("**/tasks/*.parquet")
                   if not p.name.startswith(".")})
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
        The rows of all task files with the columns of :data:`alprbf.results.COLUMNS`, sorted by
        experiment, dataset, model, strategy, repetition, fold and iteration.

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
    rules = (("label", labels["label"]), ("full", labels["full"]),
             ("model", labels["model"]), ("strategy", labels["strategy"]))
    # priority 1: display or full label; 2: model; 3: strategy
    groups = ((rules[0], rules[1]), (rules[2],), (rules[3],))
    for group in groups:
        hit = set()
        for _, col in group:
            hit |= set(labels.loc[col.map(normalise_name) == key, "label"])
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
        Columns ``dataset, method, metric, mean, std, source`` (``std`` NaN when not published,
        ``source`` ``""`` when empty).

    Raises
    ------
    UserError
        Missing file or columns, unknown metric, or a non-numeric ``mean``/``std``.
    """
    path = Path(path)
    if not path.is_file():
        raise UserError(f"reference file not found: {path}")
    try:
        ref = pd.read_csv(path, dtype={"dataset": str, "method": str, "metric": str,
                                       "source": str}, keep_default_na=False,
                          na_values={"mean": ["", "n/a", "NA"], "std": ["", "n/a", "NA"]})
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise UserError(f"unreadable reference file {path}: {exc}") from None
    missing = [c for c in REFERENCE_COLUMNS[:4] if c not in ref.columns]
    if missing:
        raise UserError(f"reference file {path} lacks columns {', '.join(missing)}; "
                        f"expected columns: {', '.join(REFERENCE_COLUMNS)}")
    if "std" not in ref.columns:
        ref["std"] = float("nan")
    if "source" not in ref.columns:
        ref["source"] = ""
    bad = sorted(set(ref["metric"]) - set(REFERENCE_METRICS))
    if bad:
        raise UserError(f"reference file {path}: unknown metric '{bad[0]}'; valid metrics: "
                        + ", ".join(REFERENCE_METRICS))
    for col in ("mean", "std"):
        try:
            ref[col] = pd.to_numeric(ref[col]).astype(float)
        except (ValueError, TypeError):
            raise UserError(f"reference file {path}: column '{col}' must be numeric") from None
    if ref["mean"].isna().any():
        row = int(ref.index[ref["mean"].isna()][0]) + 2
        raise UserError(f"reference file {path}: line {row} has no 'mean' value")
    return ref[list(REFERENCE_COLUMNS)].reset_index(drop=True)


def match_reference(ref: pd.DataFrame, labels: pd.DataFrame,
                    datasets: list[str]) -> pd.DataFrame:
    """Attach our dataset and method labels to each reference row.

    Parameters
    ----------
    ref : DataFrame
        From :func:`load_reference`.
    labels : DataFrame
        From :func:`method_labels` for the experiment.
    datasets : list of str
        The experiment's dataset labels.

    Returns
    -------
    pandas.DataFrame
        ``ref`` plus columns ``our_dataset``, ``our_method`` (None when unmatched) and
        ``match_note`` (the reason when unmatched, else ``""``).
    """
    by_norm = {normalise_name(d): d for d in datasets}
    our_d, our_m, notes = [], [], []
    for row in ref.itertuples(index=False):
        d = by_norm.get(normalise_name(row.dataset))
        if d is None:
            our_d.append(None)
            our_m.append(None)
            notes.append(f"dataset '{row.dataset}' is not in the results")
            continue
        m, why = resolve_method(row.method, labels)
        our_d.append(d)
        our_m.append(m)
        notes.append(why)
    return ref.assign(our_dataset=our_d, our_method=our_m, match_note=notes)
