"""Report tables: numbers for CSV, formatted strings for Markdown and LaTeX.

Every table is a :class:`Table` holding a numeric frame (written to CSV, missing values as
``n/a``) and a display frame of strings (written to Markdown and LaTeX).  Missing values are
never printed as ``nan``: a measure that does not apply is ``n/a`` and a DUR target that was not
reached is ``>>`` followed by the lower bound, as in seed 003 Table 3.

LaTeX is written by :func:`to_latex` here (a ``tabular`` with booktabs rules; add
``\\usepackage{booktabs}``), so pandas' jinja2-based ``to_latex`` is not needed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from . import stats
from .io import REFERENCE_METRICS

NA = "n/a"
FORMATS = ("md", "csv", "tex")


@dataclass
class Table:
    """One output table (see the module docstring)."""

    name: str
    title: str
    data: pd.DataFrame
    display: pd.DataFrame
    notes: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- formatting


def _bad(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x)) or x is pd.NA


def fmt(x, digits: int = 2) -> str:
    """A number with ``digits`` decimals; ``n/a`` for missing, ``inf`` for infinity."""
    if _bad(x):
        return NA
    x = float(x)
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.{digits}f}"


def fmt_mean_std(mean, std, digits: int = 2) -> str:
    """``"mean (std)"``; ``n/a`` for a missing mean, ``(n/a)`` for a missing std."""
    if _bad(mean):
        return NA
    return f"{fmt(mean, digits)} ({fmt(std, digits)})"


def fmt_wins(w) -> str:
    """Wins: one decimal for halves (``4.5``), two otherwise (a three-way tie gives ``0.33``)."""
    if _bad(w):
        return NA
    return fmt(w, 1) if abs(2 * w - round(2 * w)) < 1e-9 else fmt(w, 2)


def fmt_p(p) -> str:
    """A p-value: 4 significant digits, scientific below 1e-4."""
    if _bad(p):
        return NA
    return f"{p:.2e}" if p < 1e-4 else f"{p:.4f}"


# --------------------------------------------------------------------------- writers


def to_markdown(display: pd.DataFrame) -> str:
    """A GitHub-flavoured Markdown table of the string frame (index dropped)."""
    cols = [str(c) for c in display.columns]
    esc = [[str(v).replace("|", "\\|") for v in row] for row in display.itertuples(index=False)]
    right = [not (display[c].astype(str).str.match(r"^[A-Za-z]").any()) for c in display.columns]
    lines = ["| " + " | ".join(c.replace("|", "\\|") for c in cols) + " |",
             "|" + "|".join("---:" if r else ":---" for r in right) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in esc]
    return "\n".join(lines) + "\n"


_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
        "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\^{}",
        "Δ": r"$\Delta$", "χ²": r"$\chi^2$", "α": r"$\alpha$", "≥": r"$\geq$",
        ">>": r"$\gg$", "±": r"$\pm$", "−": "-", "–": "--", "`": ""}


def tex_escape(text: str) -> str:
    """Escape LaTeX special characters and map the few symbols the tables use."""
    out, i = [], 0
    keys = sorted(_TEX, key=len, reverse=True)
    while i < len(text):
        for k in keys:
            if text.startswith(k, i):
                out.append(_TEX[k])
                i += len(k)
                break
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def to_latex(table: Table) -> str:
    """A LaTeX ``table`` environment with a booktabs ``tabular`` of the display frame."""
    d = table.display
    align = "l" + "r" * (d.shape[1] - 1)
    lines = [r"\begin{table}[htbp]", r"\centering",
             r"\caption{" + tex_escape(table.title) + "}",
             r"\label{tab:" + table.name.replace("_", "-") + "}",
             r"\begin{tabular}{" + align + "}", r"\toprule",
             " & ".join(tex_escape(str(c)) for c in d.columns) + r" \\", r"\midrule"]
    lines += [" & ".join(tex_escape(str(v)) for v in row) + r" \\"
              for row in d.itertuples(index=False)]
    lines += [r"\bottomrule", r"\end{tabular}"]
    if table.notes:
        lines.append(r"\par\smallskip\footnotesize " + tex_escape(" ".join(table.notes)))
    lines.append(r"\end{table}")
    return "\n".join(lines) + "\n"


def write_table(table: Table, out_dir: Path, formats=FORMATS) -> list[Path]:
    """Write ``table`` as ``<out_dir>/<name>.<fmt>`` for each format; returns the paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for f in formats:
        p = out_dir / f"{table.name}.{f}"
        if f == "csv":
            table.data.to_csv(p, index=False, na_rep=NA, float_format="%.6g")
        elif f == "md":
            notes = "".join(f"\n{n}\n" for n in table.notes)
            p.write_text(f"## {table.title}\n\n{to_markdown(table.display)}{notes}")
        elif f == "tex":
            p.write_text(to_latex(table))
        else:
            raise ValueError(f"unknown table format {f!r}")
        paths.append(p)
    return paths


# --------------------------------------------------------------------------- helpers


def _ref_lookup(ref: pd.DataFrame | None, metric: str) -> dict[tuple[str, str], pd.Series]:
    if ref is None or ref.empty:
        return {}
    hits = ref[(ref["metric"] == metric) & ref["our_method"].notna()]
    return {(r.our_dataset, r.our_method): r for _, r in hits.iterrows()}


def _wide(long: pd.DataFrame, cell, methods: list[str]) -> pd.DataFrame:
    """Datasets x methods frame of strings from a long frame, ``n/a`` where a cell is absent."""
    datasets = sorted(long["dataset"].unique())
    rows = []
    for d in datasets:
        sub = long[long["dataset"] == d].set_index("method")
        rows.append([d] + [cell(sub.loc[m]) if m in sub.index else NA for m in methods])
    return pd.DataFrame(rows, columns=["dataset"] + methods)


# --------------------------------------------------------------------------- tables


def error_at_budget_table(err: pd.DataFrame, ref: pd.DataFrame | None = None) -> Table:
    """Seed 000 Table 2 style: test error (%) at the budget, mean (std) over folds x repetitions.

    ``err`` comes from :func:`alprbf.report.metrics.error_at_budget`.  For each method with a
    matched ``error_at_budget`` reference, two columns follow its own: the published value and
    ``Δ`` = ours − published (percentage points).
    """
    refs = _ref_lookup(ref, "error_at_budget")
    methods = sorted(err["method"].unique())
    data = err.copy()
    data["ref_mean"] = [refs[(d, m)]["mean"] if (d, m) in refs else np.nan
                        for d, m in zip(data["dataset"], data["method"], strict=True)]
    data["ref_std"] = [refs[(d, m)]["std"] if (d, m) in refs else np.nan
                       for d, m in zip(data["dataset"], data["method"], strict=True)]
    data["ref_source"] = [refs[(d, m)]["source"] if (d, m) in refs else ""
                          for d, m in zip(data["dataset"], data["method"], strict=True)]
    data["diff"] = data["mean"] - data["ref_mean"]
    with_ref = {m for (_, m) in refs}
    datasets = sorted(err["dataset"].unique())
    cols, rows = ["dataset", "labels"], []
    for m in methods:
        cols.append(m)
        if m in with_ref:
            cols += [f"{m} [paper]", f"{m} Δ"]
    for d in datasets:
        sub = data[data["dataset"] == d].set_index("method")
        row = [d, fmt(sub["n_labeled"].max(), 0)]
        for m in methods:
            r = sub.loc[m] if m in sub.index else None
            row.append(NA if r is None else fmt_mean_std(r["mean"], r["std"]))
            if m in with_ref:
                has = r is not None and not _bad(r["ref_mean"])
                row.append(fmt_mean_std(r["ref_mean"], r["ref_std"]) if has else NA)
                row.append(f"{r['diff']:+.2f}" if has else NA)
        rows.append(row)
    notes = ["Test error in % at the last evaluated labeled-set size (column `labels`), mean "
             "(std) over folds x repetitions."]
    if with_ref:
        notes.append("`[paper]`: published value; `Δ` = ours − published, percentage points.")
    return Table("error_at_budget", "Test error (%) at the budget", data,
                 pd.DataFrame(rows, columns=cols), notes)


def versus_baseline_tables(vb: pd.DataFrame, baseline: str) -> list[Table]:
    """AULC and DUR tables against ``baseline`` (from ``metrics.versus_baseline``).

    Bottom rows: ``Mean`` over datasets and ``Wins`` (shared on ties; highest AULC, fewest
    labels for DUR).  A DUR not reached enters the mean with its lower bound (as seed 003
    Table 3 does), the mean is then printed ``>>``; it never wins.  Datasets where a measure is
    n/a for some method are left out of that measure's mean and wins (a note says so).
    """
    methods = sorted(vb["method"].unique())
    datasets = sorted(vb["dataset"].unique())
    out = []
    no_base = sorted(set(datasets) - set(vb.loc[vb["method"] == baseline, "dataset"]))
    why = ([f"n/a on {', '.join(no_base)}: the baseline has no results there."]
           if no_base else [])

    # ---- AULC
    aulc_w = vb.pivot(index="dataset", columns="method", values="aulc").reindex(
        index=datasets, columns=methods)
    complete = aulc_w.dropna()
    disp = _wide(vb, lambda r: fmt(r["aulc"], 3), methods)
    notes = [f"AULC against the baseline `{baseline}`: mean accuracy difference in percentage "
             "points per labeled sample over the common range of labeled-set sizes "
             "(see DEFINITIONS.md)."]
    disp = pd.concat([disp, _summary_rows(complete, True, lambda v: fmt(v, 3), None)],
                     ignore_index=True)
    notes += why + _dropped_note(aulc_w, complete, "AULC")
    out.append(Table("aulc", f"AULC against {baseline}", vb[[
        "dataset", "method", "aulc", "n_points"]].copy(), disp, notes))

    # ---- DUR
    def dur_cell(r) -> str:
        if _bad(r["dur_target"]):
            return NA
        if r["dur_reached"]:
            return f"{r['dur']:.3f} ({r['dur_labels']:.0f})"
        return f">>{r['dur_bound']:.3f} (>>{r['dur_bound'] * r['dur_labels_base']:.0f})"

    disp = _wide(vb, dur_cell, methods)
    target = vb.groupby("dataset")["dur_target"].max().reindex(datasets)
    disp.insert(1, "target acc. %", [fmt(t, 2) for t in target])
    value = vb["dur"].where(vb["dur_reached"], vb["dur_bound"])
    wins_val = vb["dur_labels"].where(vb["dur_reached"], np.inf)
    val_w = vb.assign(_v=value).pivot(index="dataset", columns="method", values="_v").reindex(
        index=datasets, columns=methods)
    win_w = vb.assign(_w=wins_val).pivot(index="dataset", columns="method",
                                         values="_w").reindex(index=datasets, columns=methods)
    complete = val_w.dropna()
    reached = vb.pivot(index="dataset", columns="method", values="dur_reached").reindex(
        index=complete.index, columns=methods)
    mean_row = ["Mean", ""]
    for m in methods:
        if complete.empty:
            mean_row.append(NA)
        else:
            lower = "" if reached[m].astype(bool).all() else ">>"
            mean_row.append(lower + fmt(complete[m].mean(), 3))
    win_complete = win_w.loc[complete.index]
    w = stats.wins(win_complete, higher_is_better=False) if len(win_complete) else None
    wins_row = ["Wins", ""] + [NA if w is None else fmt_wins(w[m]) for m in methods]
    disp = pd.concat([disp, pd.DataFrame([mean_row, wins_row], columns=disp.columns)],
                     ignore_index=True)
    notes = [f"DUR against the baseline `{baseline}`: labels a method needs for its mean "
             "accuracy curve to reach the target accuracy, divided by the baseline's; labels "
             "needed in parentheses. Target: the baseline's mean accuracy over the last 20 % "
             "of the budget. `>>`: target not reached within the budget (lower bound shown)."]
    notes += why + _dropped_note(val_w, complete, "DUR")
    out.append(Table("dur", f"DUR against {baseline}", vb[[
        "dataset", "method", "dur", "dur_reached", "dur_bound", "dur_labels", "dur_labels_base",
        "dur_target"]].copy(), disp, notes))
    return out


def _dropped_note(full: pd.DataFrame, complete: pd.DataFrame, what: str) -> list[str]:
    dropped = sorted(set(full.index) - set(complete.index))
    if not dropped:
        return []
    return [f"{what} mean and wins leave out datasets where a method has no value (n/a): "
            + ", ".join(map(str, dropped)) + "."]


def _summary_rows(complete: pd.DataFrame, higher: bool, f, ranks: pd.Series | None
                  ) -> pd.DataFrame:
    """``Mean`` (and ``Rank``) and ``Wins`` rows under a datasets x methods table."""
    methods = list(complete.columns)
    if complete.empty:
        rows = [["Mean"] + [NA] * len(methods), ["Wins"] + [NA] * len(methods)]
    else:
        w = stats.wins(complete, higher)
        rows = [["Mean"] + [f(complete[m].mean()) for m in methods]]
        if ranks is not None:
            rows.append(["Rank"] + [fmt(ranks[m], 3) for m in methods])
        rows.append(["Wins"] + [fmt_wins(w[m]) for m in methods])
    return pd.DataFrame(rows, columns=["dataset", *methods])


def rp_tables(scores: pd.DataFrame, comparison: stats.RankedComparison | None,
              measure: str, skipped: str = "") -> list[Table]:
    """RP tables: accuracies with Mean / Rank / Wins rows (seed 003 Table 2), test statistics and
    Nemenyi p-values.

    Parameters
    ----------
    scores : DataFrame
        From :func:`alprbf.report.metrics.rp_scores`.
    comparison : RankedComparison or None
        From :func:`alprbf.report.stats.compare` on the complete datasets; None when the tests
        were skipped (``skipped`` says why).
    measure : str
        The RP measure used (for the notes).
    """
    methods = sorted(scores["method"].unique())
    disp = _wide(scores, lambda r: fmt(r["mean"], 2), methods)
    wide = scores.pivot(index="dataset", columns="method", values="mean").reindex(
        columns=methods)
    complete = wide.dropna()
    ranks = comparison.mean_ranks if comparison is not None else (
        stats.mean_ranks(complete) if len(complete) else None)
    disp = pd.concat([disp, _summary_rows(complete, True, lambda v: fmt(v, 2), ranks)],
                     ignore_index=True)
    what = {"train_best": "test accuracy (%) at the iteration with the best training accuracy "
                          "(seed 003 RP)",
            "final": "test accuracy (%) at the last iteration"}[measure]
    notes = [f"Ranked: {what}, mean over folds x repetitions. Ranks: 1 = best, ties averaged; "
             "wins shared on ties."]
    notes += _dropped_note(wide, complete, "Ranks")
    data = wide.copy()
    if len(complete):
        data.loc["Mean"] = complete.mean()
        if ranks is not None:
            data.loc["Rank"] = ranks
        data.loc["Wins"] = stats.wins(complete)
    data = data.reset_index().rename(columns={"index": "dataset"})
    data.columns.name = None
    tables = [Table("rp", "Ranked performance (RP)", data, disp, notes)]

    if comparison is None:
        stat_rows = [("Friedman test", f"skipped: {skipped}")]
        data = pd.DataFrame({"statistic": ["friedman"], "value": [np.nan], "note": [skipped]})
        tables.append(Table("rp_stats", "RP: Friedman / Iman–Davenport / Nemenyi", data,
                            pd.DataFrame(stat_rows, columns=["statistic", "value"]),
                            [f"Friedman test skipped: {skipped}."]))
        return tables
    c = comparison
    stat = [
        ("datasets N", c.n_datasets, str(c.n_datasets)),
        ("methods k", c.k, str(c.k)),
        ("alpha", c.alpha, fmt(c.alpha, 3)),
        ("Friedman chi2 (tie-corrected, reported)", c.chi2, fmt(c.chi2, 3)),
        ("Friedman p-value", c.p_chi2, fmt_p(c.p_chi2)),
        ("Friedman chi2 from mean ranks (no tie correction)", c.chi2_ranks, fmt(c.chi2_ranks, 3)),
        (f"chi2 critical value (1 - alpha, {c.k - 1} dof)", c.chi2_critical,
         fmt(c.chi2_critical, 3)),
        ("Friedman rejects H0", float(c.reject), "yes" if c.reject else "no"),
        (f"Iman-Davenport F ({c.k - 1}, {(c.k - 1) * (c.n_datasets - 1)} dof)", c.f_id,
         fmt(c.f_id, 3)),
        ("Iman-Davenport p-value", c.p_f_id, fmt_p(c.p_f_id)),
        (f"q_alpha ({c.q_alpha_source})", c.q_alpha, fmt(c.q_alpha, 3)),
        ("critical difference CD", c.cd, fmt(c.cd, 3)),
    ]
    data = pd.DataFrame([(a, b) for a, b, _ in stat], columns=["statistic", "value"])
    disp = pd.DataFrame([(a, s) for a, _, s in stat], columns=["statistic", "value"])
    pairs = [f"{a} vs {b}" for i, a in enumerate(c.significant.index)
             for b in c.significant.columns[i + 1:] if c.significant.loc[a, b]]
    notes = ["Pairs whose mean ranks differ by at least CD: "
             + (", ".join(pairs) if pairs else "none") + "."]
    tables.append(Table("rp_stats", "RP: Friedman / Iman–Davenport / Nemenyi", data, disp, notes))
    p = c.nemenyi_p.loc[methods, methods]
    pdisp = p.map(fmt_p).reset_index().rename(columns={"index": "method"})
    pdisp.columns = ["method", *methods]
    tables.append(Table("nemenyi", "Nemenyi post-hoc p-values",
                        p.reset_index().rename(columns={"index": "method"}), pdisp,
                        ["scikit-posthocs posthoc_nemenyi_friedman on the RP ranks."]))
    return tables


def cost_table(cost: pd.DataFrame) -> Table:
    """Timing and model size per dataset and method (serves seed 001 Table III)."""
    disp = pd.DataFrame({
        "dataset": cost["dataset"], "method": cost["method"],
        "fit s / iteration": [fmt(v, 4) for v in cost["fit_seconds_per_query"]],
        "total fit s / fold": [fmt_mean_std(m, s, 3) for m, s in
                               zip(cost["train_time_s"], cost["train_time_s_std"], strict=True)],
        "query s / label": [fmt(v, 4) for v in cost["query_seconds_per_label"]],
        "size at budget": [fmt_mean_std(m, s, 1) for m, s in
                           zip(cost["components"], cost["components_std"], strict=True)],
    })
    notes = ["Wall-clock seconds on this machine: mean fit time per evaluated iteration; total "
             "fit time of one fold's curve, mean (std) over folds x repetitions; query time per "
             "labeled sample. Size: components / support vectors of the last model, mean (std); "
             "n/a when the model reports none."]
    return Table("cost", "Timing and model size", cost.copy(), disp, notes)


def _value(mean, std) -> str:
    """``mean (std)`` with 3 decimals, or just the mean when there is no std."""
    return fmt(mean, 3) if _bad(std) else fmt_mean_std(mean, std, 3)


def reference_table(ref: pd.DataFrame, ours: pd.DataFrame) -> Table:
    """Every reference value beside ours with the difference (ours − published).

    Parameters
    ----------
    ref : DataFrame
        From :func:`alprbf.report.io.match_reference`.
    ours : DataFrame
        Long frame with columns ``dataset, method, metric, mean, std`` of our measures.
    """
    key = ours.set_index(["dataset", "method", "metric"])
    rows, data = [], []
    for r in ref.itertuples(index=False):
        k = (r.our_dataset, r.our_method, r.metric)
        unmatched = _bad(r.our_method) or r.our_method is None
        have = not unmatched and k in key.index
        m = key.loc[k, "mean"] if have else np.nan
        s = key.loc[k, "std"] if have else np.nan
        flag = key.loc[k, "flag"] if have and "flag" in key.columns else ""
        diff = m - r.mean if have else np.nan
        if unmatched:
            status = f"unmatched: {r.match_note}"
        elif not have:
            status = "no value of ours for this metric"
        elif _bad(m):
            status = f"ours n/a{(': ' + flag) if flag else ''}"
        else:
            status = flag or ""
        data.append({"dataset": r.dataset, "method": r.method,
                     "our_method": "" if unmatched else r.our_method,
                     "metric": r.metric, "ours_mean": m, "ours_std": s, "ref_mean": r.mean,
                     "ref_std": r.std, "diff": diff, "source": r.source, "status": status})
        rows.append([r.dataset, r.method, r.metric, _value(m, s), _value(r.mean, r.std),
                     NA if _bad(diff) else f"{diff:+.3f}",
                     r.source or "", status])
    disp = pd.DataFrame(rows, columns=["dataset", "method", "metric", "ours", "published",
                                       "Δ (ours − published)", "source", "status"])
    units = "; ".join(f"{m}: {u}" for m, u in REFERENCE_METRICS.items()
                      if m in set(ref["metric"]))
    return Table("reference", "Published values beside ours", pd.DataFrame(data), disp,
                 [f"Units: {units}."])
