"""Per-method measures computed from the result rows of one experiment.

All functions take the rows of one experiment with a ``method`` column (see
:func:`alprbf.report.io.add_method_column`).  A *curve* is the sequence of rows of one
(dataset, method, fold, repetition), indexed by ``n_labeled``; folds x repetitions are the
samples over which means and standard deviations are taken (``ddof=1`` by default).
Accuracies and errors are reported in percent.

Definitions (also in ``alprbf/report/DEFINITIONS.md``)
------------------------------------------------------
Mean curve.  Curves are aligned on what the protocol fixes: the number of queried labels
``q = n_labeled - n_0`` (``n_0`` the curve's initial labeled-set size, the ``n_labeled`` of its
first row), not on ``n_labeled`` itself, which differs between folds when the initial set does
(``initial: all`` labels the whole training part, whose size differs by one row between folds
of a data set that does not divide evenly).  For a (dataset, method), the mean (and std) of a
column over the curves at each ``q``; only ``q`` evaluated by every curve are kept, so a curve
that stopped early (an exhausted pool) does not bias the mean.  The point is placed at
``n = mean(n_0) + q`` labels (exactly ``n_0 + q`` when every fold starts from ``n_0`` labels).

Error at budget.  For each curve its last row (the largest ``n_labeled``); mean and std of
``100 * test_error`` over curves.

AULC (Reitmaier et al. 2016, §5.1.4).  Let ``a_m(n)`` and ``a_b(n)`` be the mean test-accuracy
curves (%) of a method and of the baseline, linearly interpolated between evaluated points, over the
common range ``[n_lo, n_hi]`` of labeled-set sizes (initial set to budget).  Then::

    AULC = 1 / (n_hi - n_lo) * integral_{n_lo}^{n_hi} (a_m(n) - a_b(n)) dn

computed with the trapezoid rule on the union of both evaluation grids.  It is the mean
accuracy advantage (percentage points) per actively selected sample; positive means the
method learns faster than the baseline; the baseline's own AULC is 0.  The normalisation by
the number of queries makes AULC independent of the budget and puts it on the scale of
Reitmaier et al. 2016, Table 4 (values of a few points).

DUR (Reitmaier et al. 2016, §5.1.4).  The target accuracy ``T`` is the baseline's mean test accuracy
(over curves) averaged over its evaluated points in the last ``window`` = 20 % of the budget, i.e.
the points whose number of queried labels ``q = n - n_0`` satisfies ``q >= (1 - window) * q_max``
(``n_0`` the initial labeled-set size, ``q_max`` the budget).  For any method,
``n_reach = min{ n : a(n) >= T }`` over its evaluated points (a tolerance of 1e-9 percentage
points absorbs round-off), counted in labels (``n_labeled``, which includes the initial set;
in Reitmaier et al. 2016 the labeled set starts empty, so labels and actively selected samples
coincide). Then ``DUR = n_reach(method) / n_reach(baseline)``; the baseline always reaches its own
target and has ``DUR = 1``.  A method that never reaches ``T`` gets ``DUR = NaN`` with
``reached = False`` and the lower bound ``n_max / n_reach(baseline)`` (printed ``>>`` like the
paper).

RP by another measure (``rank_by``).  The same row of each curve (``train_best`` or
``final``) gives its balanced accuracy, macro F1 (both in percent, higher is better) or
log-loss (nats, lower is better) instead of its test accuracy; a cell with a curve that lacks
the value (a task file written before the column existed, a model without probabilities for
log-loss) has none and leaves the ranking, like an incomplete data set.

RP accuracy (Reitmaier et al. 2016, §5.1.4).  ``measure="train_best"``: in each curve the iteration
with the highest ``train_accuracy`` (accuracy on the whole training part with its true labels; among
equal values the latest iteration), and its ``test_accuracy``; the mean over curves is ranked.
``measure="final"``: the test accuracy at the last iteration of each curve.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import unknown_name

#: One learning curve (with ``task_id`` where the rows have it: see :func:`curve_keys`).
CURVE = ["dataset", "method", "repetition", "fold"]
CELL = ["dataset", "method"]
RP_MEASURES = ("train_best", "final")
#: What RP can rank (``rank_by``): name -> (column, scale, higher is better, words).
RANK_BY = {
    "accuracy": ("test_accuracy", 100.0, True, "test accuracy (%)"),
    "balanced_accuracy": ("test_balanced_accuracy", 100.0, True, "balanced accuracy (%)"),
    "macro_f1": ("test_macro_f1", 100.0, True, "macro F1 (%)"),
    "log_loss": ("test_log_loss", 1.0, False, "log-loss (nats, lower is better)"),
}
#: Accuracy behind AULC and DUR: ``test`` (the held-out rows) or ``train`` (the whole training
#: part with its true labels, ``train_accuracy``: Reitmaier et al. 2016's DUR targets are above
#: every test accuracy it reports on 11 of its 20 data sets, so it must have used this one).
CURVE_ACCURACIES = {"test": "test_accuracy", "train": "train_accuracy"}

#: Tolerance (percentage points) when testing whether an accuracy reaches the DUR target.
REACH_TOL = 1e-9


def curve_keys(df: pd.DataFrame) -> list[str]:
    """The columns that identify a curve: :data:`CURVE` and ``task_id`` when present (it
    keeps curves apart when ``--merge-datasets`` gives several data sets one name; otherwise
    the other keys determine it)."""
    return CURVE + ["task_id"] if "task_id" in df.columns else CURVE


def last_rows(df: pd.DataFrame) -> pd.DataFrame:
    """The last evaluated row (largest iteration) of every curve."""
    idx = df.groupby(curve_keys(df), sort=True)["iteration"].idxmax()
    return df.loc[idx.to_numpy()].reset_index(drop=True)


def _summary(frame: pd.DataFrame, value: str, ddof: int, by=CELL) -> pd.DataFrame:
    g = frame.groupby(by, sort=True)[value]
    out = g.agg(mean="mean", n="count").reset_index()
    out["std"] = g.std(ddof=ddof).to_numpy() if len(out) else []
    return out


def curve_stats(df: pd.DataFrame, value: str = "test_accuracy", scale: float = 100.0,
                ddof: int = 1) -> pd.DataFrame:
    """Mean curve of ``scale * value`` for each (dataset, method), aligned on queries.

    Returns
    -------
    pandas.DataFrame
        Columns ``dataset, method, queries, n_labeled, mean, std, n``: one row per number of
        queried labels evaluated by every curve of the cell, sorted; ``n_labeled`` is the mean
        initial labeled-set size over the cell's curves plus ``queries`` (see the module
        docstring).
    """
    n0 = df.groupby(curve_keys(df), sort=True)["n_labeled"].min()
    first = df.join(n0.rename("_n0"), on=curve_keys(df))["_n0"]
    d = df.assign(_v=scale * df[value].astype(float), queries=df["n_labeled"] - first)
    out = _summary(d, "_v", ddof, by=CELL + ["queries"])
    cells = n0.groupby(CELL).agg(_curves="size", _n0="mean").reset_index()
    out = out.merge(cells, on=CELL)
    out = out[out["n"] == out["_curves"]]
    out = out.assign(n_labeled=out["_n0"] + out["queries"])
    return out[CELL + ["queries", "n_labeled", "mean", "std", "n"]].reset_index(drop=True)


def error_at_budget(df: pd.DataFrame, ddof: int = 1) -> pd.DataFrame:
    """Test error (%) at the last iteration of each curve: mean and std over curves.

    Returns
    -------
    pandas.DataFrame
        Columns ``dataset, method, n_labeled, mean, std, n`` (``n_labeled``: the largest final
        labeled-set size among the curves).
    """
    last = last_rows(df).assign(_e=lambda d: 100.0 * d["test_error"])
    out = _summary(last, "_e", ddof)
    out["n_labeled"] = last.groupby(CELL, sort=True)["n_labeled"].max().to_numpy()
    return out[CELL + ["n_labeled", "mean", "std", "n"]]


def error_at_labels(df: pd.DataFrame, targets: dict[str, list[tuple[str, float]]],
                    ddof: int = 1) -> pd.DataFrame:
    """Test error (%) of each curve at given labeled-set sizes: mean and std over curves.

    ``targets`` maps a dataset to ``(column name, labeled-set size)`` pairs (e.g. ``("1 %",
    12.5)``).  Each curve contributes its evaluated point nearest to the size (the larger one
    on a tie); a curve whose points all lie more than one label away contributes nothing.

    Returns
    -------
    pandas.DataFrame
        Columns ``dataset, method, at, target, n_labeled, mean, std, n``.
    """
    out = []
    for dataset, points in targets.items():
        d = df[df["dataset"] == dataset]
        for name, target in points:
            gap = (d["n_labeled"] - target).abs() - 1e-9 * d["n_labeled"]   # larger on a tie
            nearest = d.loc[gap.groupby([d[c] for c in curve_keys(d)]).idxmin()]
            nearest = nearest[(nearest["n_labeled"] - target).abs() <= 1.0]
            if nearest.empty:
                continue
            s = _summary(nearest.assign(_e=100.0 * nearest["test_error"]), "_e", ddof)
            sizes = nearest.groupby(CELL, sort=True)["n_labeled"].mean().to_numpy()
            out.append(s.assign(at=name, target=target, n_labeled=sizes))
    cols = CELL + ["at", "target", "n_labeled", "mean", "std", "n"]
    return pd.concat(out, ignore_index=True)[cols] if out else pd.DataFrame(columns=cols)


# --------------------------------------------------------------------------- AULC and DUR


def aulc(x: np.ndarray, acc: np.ndarray, x_base: np.ndarray, acc_base: np.ndarray) -> float:
    """Area between a mean accuracy curve and the baseline's, per labeled sample.

    Parameters
    ----------
    x, acc : ndarray of shape (n_points,)
        Labeled-set sizes (increasing) and the method's mean accuracy (%) there.
    x_base, acc_base : ndarray of shape (n_base_points,)
        The same for the baseline.

    Returns
    -------
    float
        ``(1 / (hi - lo)) * integral_lo^hi (acc(n) - acc_base(n)) dn`` over the common range
        ``[lo, hi]``, trapezoid rule on the union of both grids with linear interpolation;
        NaN when the common range is a single point or empty (no active learning).
    """
    x, acc, x_base, acc_base = (np.asarray(v, dtype=float) for v in (x, acc, x_base, acc_base))
    lo, hi = max(x[0], x_base[0]), min(x[-1], x_base[-1])
    if not hi > lo:
        return float("nan")
    grid = np.union1d(x, x_base)
    grid = grid[(grid >= lo) & (grid <= hi)]
    diff = np.interp(grid, x, acc) - np.interp(grid, x_base, acc_base)
    return float(np.trapezoid(diff, grid) / (hi - lo))


def dur_target(x_base: np.ndarray, acc_base: np.ndarray, window: float = 0.2) -> float:
    """Mean of the baseline's mean accuracy over the points in the last ``window`` of the budget.

    Points with ``x - x[0] >= (1 - window) * (x[-1] - x[0])`` are averaged (``x`` counts
    labels, ``x[0]`` is the initial labeled-set size).
    """
    if not 0.0 < window <= 1.0:
        raise ValueError(f"window must be in (0, 1], got {window}")
    x_base = np.asarray(x_base, dtype=float)
    q = x_base - x_base[0]
    sel = q >= (1.0 - window) * q[-1] - 1e-12
    return float(np.mean(np.asarray(acc_base, dtype=float)[sel]))


def labels_to_reach(x: np.ndarray, acc: np.ndarray, target: float) -> float:
    """Smallest ``x`` whose accuracy reaches ``target`` (within :data:`REACH_TOL`), else NaN."""
    hit = np.flatnonzero(np.asarray(acc, dtype=float) >= target - REACH_TOL)
    return float(np.asarray(x, dtype=float)[hit[0]]) if hit.size else float("nan")


@dataclass(frozen=True)
class DURResult:
    """DUR of one method against the baseline on one dataset (see module docstring)."""

    dur: float          # NaN when not reached
    labels: float       # labels needed; NaN when not reached
    labels_base: float  # labels the baseline needs
    target: float       # target accuracy, %
    reached: bool
    bound: float        # x_max / labels_base: DUR is larger than this when not reached


def dur(x: np.ndarray, acc: np.ndarray, x_base: np.ndarray, acc_base: np.ndarray,
        window: float = 0.2) -> DURResult:
    """Data utilisation ratio of a mean accuracy curve against the baseline's.

    Parameters
    ----------
    x, acc : ndarray of shape (n_points,)
        Labeled-set sizes (increasing) and the method's mean test accuracy (%).
    x_base, acc_base : ndarray of shape (n_base_points,)
        The same for the baseline.
    window : float
        Fraction of the budget at its end over which the target accuracy is averaged.
    """
    target = dur_target(x_base, acc_base, window)
    n_base = labels_to_reach(x_base, acc_base, target)
    n = labels_to_reach(x, acc, target)
    reached = bool(np.isfinite(n))
    return DURResult(dur=n / n_base if reached else float("nan"), labels=n, labels_base=n_base,
                     target=target, reached=reached, bound=float(np.asarray(x)[-1]) / n_base)


def versus_baseline(curves: pd.DataFrame, baseline: str, window: float = 0.2) -> pd.DataFrame:
    """AULC and DUR of every method against ``baseline``, per dataset.

    Parameters
    ----------
    curves : DataFrame
        Mean test-accuracy curves (%) from ``curve_stats(df, "test_accuracy")``.
    baseline : str
        The baseline's method label.
    window : float
        See :func:`dur`.

    Returns
    -------
    pandas.DataFrame
        Columns ``dataset, method, aulc, dur, dur_labels, dur_labels_base, dur_target,
        dur_reached, dur_bound, n_points``; for datasets the baseline did not run, or curves with
        a single point (no queries), all measures are NaN (``n_points`` tells why).
    """
    rows = []
    for (dataset, method), c in curves.groupby(CELL, sort=True):
        b = curves[(curves["dataset"] == dataset) & (curves["method"] == baseline)]
        rec = {"dataset": dataset, "method": method, "aulc": np.nan, "dur": np.nan,
               "dur_labels": np.nan, "dur_labels_base": np.nan, "dur_target": np.nan,
               "dur_reached": False, "dur_bound": np.nan, "n_points": len(c)}
        if len(b) >= 2 and len(c) >= 2:
            x, a = c["n_labeled"].to_numpy(), c["mean"].to_numpy()
            xb, ab = b["n_labeled"].to_numpy(), b["mean"].to_numpy()
            r = dur(x, a, xb, ab, window)
            rec.update(aulc=aulc(x, a, xb, ab), dur=r.dur, dur_labels=r.labels,
                       dur_labels_base=r.labels_base, dur_target=r.target,
                       dur_reached=r.reached, dur_bound=r.bound)
        rows.append(rec)
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- RP


def rp_rows(df: pd.DataFrame, measure: str = "train_best") -> pd.DataFrame:
    """The row of each curve whose test accuracy the RP measure uses.

    ``"train_best"``: the row with the highest ``train_accuracy`` (latest among ties; rows with
    a missing ``train_accuracy`` are ignored, and a curve without any falls back to its last
    row); ``"final"``: the last row.
    """
    if measure not in RP_MEASURES:
        raise unknown_name("RP measure", measure, RP_MEASURES)
    if measure == "final":
        return last_rows(df)
    d = df.assign(_t=df["train_accuracy"].astype(float).fillna(-np.inf))
    # latest iteration among ties: sort so the wanted row is last, take the last of each curve
    d = d.sort_values(curve_keys(d) + ["_t", "iteration"], kind="stable")
    return d.groupby(curve_keys(d), sort=True).tail(1).drop(columns="_t").reset_index(drop=True)


def rp_scores(df: pd.DataFrame, measure: str = "train_best", ddof: int = 1,
              rank_by: str = "accuracy") -> pd.DataFrame:
    """Mean (over curves) test accuracy (%) used by the RP ranking, per (dataset, method), or
    the measure ``rank_by`` names (:data:`RANK_BY`) at the same rows.

    Returns
    -------
    pandas.DataFrame
        Columns ``dataset, method, mean, std, n, n_labeled`` (``n_labeled``: mean size of the
        labeled set at the chosen rows); ``mean`` is NaN in a cell where a curve lacks the
        value.
    """
    if rank_by not in RANK_BY:
        raise unknown_name("rank-by measure", rank_by, RANK_BY)
    column, scale = RANK_BY[rank_by][:2]
    rows = rp_rows(df, measure).assign(_a=lambda d: scale * d[column].astype(float))
    out = _summary(rows, "_a", ddof)
    curves = rows.groupby(CELL, sort=True).size().to_numpy()
    out.loc[out["n"].to_numpy() < curves, "mean"] = np.nan
    out["n_labeled"] = rows.groupby(CELL, sort=True)["n_labeled"].mean().to_numpy()
    return out[CELL + ["mean", "std", "n", "n_labeled"]]


# --------------------------------------------------------------------------- cost


def tasks_lacking(df: pd.DataFrame, column: str) -> list[str]:
    """Task ids none of whose rows has a value in ``column`` (written before it existed; the
    reader, :func:`alprbf.store.results.read_results`, fills such a column with nulls)."""
    have = df[column].notna().groupby(df["task_id"]).any()
    return sorted(have.index[~have.to_numpy()])


def lpt_makespan(durations, workers: int) -> float:
    """Wall time of running tasks of the given ``durations`` on ``workers`` workers, each
    task on one worker, longest first, each to the worker that frees up first.

    This longest-processing-time list schedule is what a runner that hands the longest
    tasks out first achieves; its makespan is at most 4/3 of the best schedule's (Graham
    1969), and it always lies between ``max(sum / workers, longest)`` and
    ``sum / workers + longest``.  0 without tasks.
    """
    if workers < 1:
        raise ValueError(f"lpt_makespan: invalid workers={workers!r}; valid: an int >= 1")
    loads = [0.0] * workers
    for d in sorted((float(x) for x in durations), reverse=True):
        heapq.heapreplace(loads, loads[0] + d)
    return max(loads)


RUN_COST_WORKERS = (1, 2, 16)
"""Worker counts of the projected wall times in :func:`run_cost`: one core, the project's
2-core machine, a 16-worker dask cluster."""


def run_cost(df: pd.DataFrame, workers=RUN_COST_WORKERS) -> dict[str, float]:
    """Cost of a whole run from its rows: the number of tasks, the task-hours (every row's
    fit + query + evaluation seconds; a missing ``eval_seconds`` counts 0), the longest task
    and, per worker count ``w``, ``wall_h_w``: the wall time of the tasks scheduled by
    :func:`lpt_makespan` on ``w`` workers, in hours.  The times are those recorded, under
    whatever load the tasks ran."""
    ev = df["eval_seconds"].astype(float).fillna(0.0)
    total = (df["fit_seconds"].astype(float) + df["query_seconds"].astype(float) + ev)
    per_task = total.groupby(df["task_id"], sort=True).sum().to_numpy() / 3600.0
    out = {"tasks": float(len(per_task)), "task_hours": float(per_task.sum()),
           "longest_h": float(per_task.max()) if len(per_task) else 0.0}
    for w in workers:
        out[f"wall_h_{w}"] = lpt_makespan(per_task, w)
    return out


def cost_summary(df: pd.DataFrame, ddof: int = 1) -> pd.DataFrame:
    """Timing and model size per (dataset, method).

    A missing ``eval_seconds`` (task files written before it was recorded: null, see
    :data:`alprbf.store.results.OPTIONAL_COLUMNS`) counts as 0 s, so the totals of such tasks leave
    the evaluation out (the report says so in a note).

    Returns
    -------
    pandas.DataFrame
        ``fit_seconds_per_query`` / ``eval_seconds_per_query``: mean ``fit_seconds`` /
        ``eval_seconds`` over all evaluated rows; ``train_time_s`` / ``train_time_s_std``: mean
        / std over curves of the total fit time of a curve; ``total_time_s`` /
        ``total_time_s_std``: the same for fit + query + evaluation time;
        ``query_seconds_per_label``: total ``query_seconds`` / total labels queried (NaN
        without queries); ``components`` / ``components_std``: mean / std over curves of
        ``model_size`` at the last row (NaN when the model reports no size);
        ``components_presplit`` / ``components_presplit_std``: the same for
        ``n_components_presplit`` (components before the final split; NaN where not
        meaningful or not recorded).
    """
    ev = df["eval_seconds"].astype(float).fillna(0.0)
    d = df.assign(_eval=ev, _total=df["fit_seconds"] + df["query_seconds"] + ev,
                  _n=df["queried"].map(lambda v: 0 if v is None else len(v)))
    g = d.groupby(CELL, sort=True)
    out = g[["fit_seconds", "_eval"]].mean().reset_index().rename(columns={
        "fit_seconds": "fit_seconds_per_query", "_eval": "eval_seconds_per_query"})
    per_curve = d.groupby(curve_keys(d), sort=True)[["fit_seconds", "_total"]].sum().reset_index()
    for col, name in (("fit_seconds", "train_time_s"), ("_total", "total_time_s")):
        s = _summary(per_curve, col, ddof)
        out[name], out[f"{name}_std"] = s["mean"].to_numpy(), s["std"].to_numpy()
    q = g[["query_seconds", "_n"]].sum()
    out["query_seconds_per_label"] = np.where(q["_n"].to_numpy() > 0,
                                              q["query_seconds"].to_numpy()
                                              / np.maximum(q["_n"].to_numpy(), 1), np.nan)
    last = last_rows(d)
    last = last.assign(_s=last["model_size"].astype(float),
                       _p=last["n_components_presplit"].astype(float))
    for col, name in (("_s", "components"), ("_p", "components_presplit")):
        s = _summary(last, col, ddof)
        out[name], out[f"{name}_std"] = s["mean"].to_numpy(), s["std"].to_numpy()
    return out
