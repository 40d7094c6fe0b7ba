"""Report tables: numbers for CSV, formatted strings for Markdown and LaTeX.

Every table is a :class:`Table` holding a numeric frame (written to CSV, missing values as
``n/a``) and a display frame of strings (written to Markdown and LaTeX).  Missing values are
never printed as ``nan``: a measure that does not apply is ``n/a`` and a DUR target that was not
reached is ``>>`` followed by the lower bound, as in Reitmaier et al. 2016, Table 3.

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
from .metrics import RANK_BY

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
    """A number with ``digits`` decimals; ``n/a`` for a missing or infinite value."""
    if _bad(x) or math.isinf(float(x)):
        return NA
    return f"{float(x):.{digits}f}"


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


#: p-values below this are printed ``< 1e-16`` (the resolution of 1 - p in double precision).
P_FLOOR = 1e-16


def fmt_p(p) -> str:
    """A p-value: 4 decimals, scientific below 1e-4, ``< 1e-16`` below that (never 0)."""
    if _bad(p):
        return NA
    if p < P_FLOOR:
        return f"< {P_FLOOR:g}"
    return f"{p:.2e}" if p < 1e-4 else f"{p:.4f}"


# --------------------------------------------------------------------------- writers


def to_markdown(display: pd.DataFrame) -> str:
    """A GitHub-flavoured Markdown table of the string frame (index dropped)."""
    cols = [str(c) for c in display.columns]
    esc = [[str(v).replace("|", "\\|") for v in row] for row in display.itertuples(index=False)]
    # right-aligned: columns of numbers (cells "n/a" aside); text columns are left-aligned
    right = [not (display[c].astype(str).pipe(lambda s: s[s != NA]).str.match(r"^[A-Za-z]").any())
             for c in display.columns]
    lines = ["| " + " | ".join(c.replace("|", "\\|") for c in cols) + " |",
             "|" + "|".join("---:" if r else ":---" for r in right) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in esc]
    return "\n".join(lines) + "\n"


_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
        "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\^{}",
        "Δ": r"$\Delta$", "χ²": r"$\chi^2$", "α": r"$\alpha$", "≥": r"$\geq$",
        ">>": r"$\gg$", "±": r"$\pm$", "−": "-", "–": "--", "`": "", "š": r"\v{s}"}


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


def _latex(caption: str, label: str, header: list[str], rows: list[list[str]],
           footer: str = "", small: bool = False) -> str:
    """A ``table`` environment around a booktabs ``tabular`` (cells already LaTeX)."""
    lines = [r"\begin{table}[htbp]", r"\centering", *([r"\small"] if small else []),
             r"\caption{" + caption + "}", r"\label{tab:" + label + "}",
             r"\begin{tabular}{l" + "r" * (len(header) - 1) + "}", r"\toprule",
             " & ".join(header) + r" \\", r"\midrule"]
    lines += [" & ".join(row) + r" \\" for row in rows]
    lines += [r"\bottomrule", r"\end{tabular}"]
    if footer:
        lines.append(r"\par\smallskip\footnotesize " + footer)
    lines.append(r"\end{table}")
    return "\n".join(lines) + "\n"


def to_latex(table: Table) -> str:
    """A LaTeX ``table`` environment with a booktabs ``tabular`` of the display frame."""
    d = table.display
    return _latex(tex_escape(table.title), table.name.replace("_", "-"),
                  [tex_escape(str(c)) for c in d.columns],
                  [[tex_escape(str(v)) for v in row] for row in d.itertuples(index=False)],
                  tex_escape(" ".join(table.notes)))


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


def _matrix(long: pd.DataFrame, values: str, datasets, methods: list[str]) -> pd.DataFrame:
    """Datasets x methods frame of one column of a long frame, NaN where a cell is absent."""
    return long.pivot(index="dataset", columns="method", values=values).reindex(
        index=datasets, columns=methods)


def _wide(long: pd.DataFrame, cell, methods: list[str]) -> pd.DataFrame:
    """Datasets x methods frame of strings from a long frame, ``n/a`` where a cell is absent."""
    text = long.assign(_text=[cell(r) for _, r in long.iterrows()])
    wide = _matrix(text, "_text", sorted(long["dataset"].unique()), methods).fillna(NA)
    wide.columns.name = None
    return wide.reset_index()


# --------------------------------------------------------------------------- tables


def error_at_budget_table(err: pd.DataFrame, published: pd.DataFrame | None = None) -> Table:
    """Constantinopoulos & Likas 2008, Table 2 style: test error (%) at the budget, mean (std) over
    folds x repetitions.

    ``err`` comes from :func:`alprbf.report.metrics.error_at_budget`.  ``published`` holds the
    primary readings of the published ``error_at_budget`` cells (columns ``dataset,
    our_method, ref_mean, ref_std, source``, from :func:`alprbf.report.reference.compare`);
    for each method in it two columns follow its own: the published value and ``Δ`` = ours −
    published (percentage points).
    """
    refs = {} if published is None else {
        (r.dataset, r.our_method): r for r in published.itertuples(index=False)}
    methods = sorted(err["method"].unique())
    pick = [refs.get((d, m)) for d, m in zip(err["dataset"], err["method"], strict=True)]
    data = err.assign(ref_mean=[np.nan if r is None else r.ref_mean for r in pick],
                      ref_std=[np.nan if r is None else r.ref_std for r in pick],
                      ref_source=["" if r is None else r.source for r in pick])
    data["diff"] = data["mean"] - data["ref_mean"]
    with_ref = {m for (_, m) in refs}
    cols, rows = ["dataset", "labels"], []
    for m in methods:
        cols += [m] + ([f"{m} [paper]", f"{m} Δ"] if m in with_ref else [])
    for d in sorted(err["dataset"].unique()):
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
        notes.append("`[paper]`: published value beside the method that stands for it (the "
                     "primary reading; all readings and verdicts are in the reference table); "
                     "`Δ` = ours − published, percentage points.")
    return Table("error_at_budget", "Test error (%) at the budget", data,
                 pd.DataFrame(rows, columns=cols), notes)


def error_at_labels_table(err: pd.DataFrame) -> Table:
    """Test error (%) at fractions of the database (Nguyen & Smeulders 2004's Fig. 6 read at 1, 2,
    3.5 %), mean (std) over curves; from :func:`alprbf.report.metrics.error_at_labels`."""
    methods = sorted(err["method"].unique())
    order = list(dict.fromkeys(err["at"]))
    rows = []
    for d in sorted(err["dataset"].unique()):
        for at in order:
            sub = err[(err["dataset"] == d) & (err["at"] == at)].set_index("method")
            if sub.empty:
                continue
            row = [d, at, fmt(sub["target"].iloc[0], 1)]
            row += [f"{fmt(sub.loc[m, 'mean'], 2)} ({fmt(sub.loc[m, 'std'], 2)})"
                    if m in sub.index else NA for m in methods]
            rows.append(row)
    disp = pd.DataFrame(rows, columns=["dataset", "labeled", "labels", *methods])
    notes = ["Test error in % when the labeled set is the given fraction of the database "
             "(`labels` = fraction x rows; each curve's evaluated point nearest to it), mean "
             "(std) over curves (folds x repetitions x merged data sets)."]
    return Table("error_at_fraction", "Test error (%) at fractions of the database", err,
                 disp, notes)


def versus_baseline_tables(vb: pd.DataFrame, baseline: str,
                           accuracy: str = "test", window: float = 0.2) -> list[Table]:
    """AULC and DUR tables against ``baseline`` (from ``metrics.versus_baseline``).

    Bottom rows: ``Mean`` over datasets and ``Wins`` (shared on ties; highest AULC, fewest
    labels for DUR).  A DUR not reached enters the mean with its lower bound (as Table 3 of
    Reitmaier et al. 2016 does), the mean is then printed ``>>``; it never wins.  Datasets where
    a measure is n/a for some method are left out of that measure's mean and wins (a note says
    so).
    ``accuracy`` (``test`` or ``train``) names the accuracy the curves hold, and ``window``
    the DUR target's share of the budget, for the notes.
    """
    methods = sorted(vb["method"].unique())
    datasets = sorted(vb["dataset"].unique())
    out = []
    no_base = sorted(set(datasets) - set(vb.loc[vb["method"] == baseline, "dataset"]))
    why = ([f"n/a on {', '.join(no_base)}: the baseline has no results there."]
           if no_base else [])

    # ---- AULC
    aulc_w = _matrix(vb, "aulc", datasets, methods)
    complete = aulc_w.dropna()
    disp = _wide(vb, lambda r: fmt(r["aulc"], 3), methods)
    notes = [f"AULC against the baseline `{baseline}` on the {accuracy} accuracy: mean "
             "accuracy difference in percentage "
             "points per labeled sample over the common range of labeled-set sizes "
             "(see DEFINITIONS.md)."]
    disp = pd.concat([disp, _summary_rows(complete, lambda v: fmt(v, 3))],
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
    cells = vb.assign(_v=vb["dur"].where(vb["dur_reached"], vb["dur_bound"]),
                      _w=vb["dur_labels"].where(vb["dur_reached"], np.inf))
    val_w = _matrix(cells, "_v", datasets, methods)
    complete = val_w.dropna()
    win_w = _matrix(cells, "_w", complete.index, methods)
    reached = _matrix(cells, "dur_reached", complete.index, methods)
    mean_row = ["Mean", ""]
    for m in methods:
        if complete.empty:
            mean_row.append(NA)
        else:
            lower = "" if reached[m].astype(bool).all() else ">>"
            mean_row.append(lower + fmt(complete[m].mean(), 3))
    w = stats.wins(win_w, higher_is_better=False) if len(win_w) else None
    wins_row = ["Wins", ""] + [NA if w is None else fmt_wins(w[m]) for m in methods]
    disp = pd.concat([disp, pd.DataFrame([mean_row, wins_row], columns=disp.columns)],
                     ignore_index=True)
    notes = [f"DUR against the baseline `{baseline}` on the {accuracy} accuracy: labels a "
             "method needs for its mean accuracy curve to reach the target accuracy, divided "
             "by the baseline's; labels needed in parentheses. Target: the baseline's mean "
             f"accuracy over the last {100 * window:g} % of the budget. `>>`: target not "
             "reached within the budget (lower bound shown)."]
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


def _summary_rows(complete: pd.DataFrame, f, ranking: stats.Ranking | None = None
                  ) -> pd.DataFrame:
    """``Mean`` and ``Wins`` rows (higher values win) under a datasets x methods table, and a
    ``Rank`` row from ``ranking`` (the ranking of ``complete``) when given."""
    methods = list(complete.columns)
    if complete.empty:
        rows = [["Mean"] + [NA] * len(methods), ["Wins"] + [NA] * len(methods)]
    else:
        w = stats.wins(complete) if ranking is None else ranking.wins
        rows = [["Mean"] + [f(complete[m].mean()) for m in methods]]
        if ranking is not None:
            rows.append(["Rank"] + [fmt(ranking.mean_ranks[m], 3) for m in methods])
        rows.append(["Wins"] + [fmt_wins(w[m]) for m in methods])
    return pd.DataFrame(rows, columns=["dataset", *methods])


def rp_tables(scores: pd.DataFrame, result: stats.Ranking | None, measure: str,
              skipped: str = "", rank_by: str = "accuracy") -> list[Table]:
    """RP tables: accuracies with Mean / Rank / Wins rows (Reitmaier et al. 2016, Table 2), the test
    that fits (Wilcoxon for two methods, Friedman / Iman–Davenport for more) and Nemenyi p-values.

    Parameters
    ----------
    scores : DataFrame
        From :func:`alprbf.report.metrics.rp_scores`.
    result : Ranking or None
        From :func:`alprbf.report.stats.significance` on the complete datasets: a
        ``PairedComparison``, a ``RankedComparison``, or a plain ``Ranking`` when the tests
        were skipped (``skipped`` says why); None without a complete dataset.
    measure : str
        The RP measure used (for the notes).
    rank_by : str
        What is ranked (:data:`alprbf.report.metrics.RANK_BY`; for the notes).
    """
    methods = sorted(scores["method"].unique())
    disp = _wide(scores, lambda r: fmt(r["mean"], 2), methods)
    wide = _matrix(scores, "mean", sorted(scores["dataset"].unique()), methods)
    complete = wide.dropna()
    disp = pd.concat([disp, _summary_rows(complete, lambda v: fmt(v, 2), result)],
                     ignore_index=True)
    value = RANK_BY[rank_by][3]
    # the tracked reports print "seed 003" / "seed 001" (below): leave them until those tables
    # are re-recorded, then name the papers (Reitmaier et al. 2016, Constantinopoulos & Likas 2006)
    what = {"train_best": f"{value} at the iteration with the best training accuracy "
                          "(seed 003 RP)",
            "final": f"{value} at the last iteration"}[measure]
    notes = [f"Ranked: {what}, mean over folds x repetitions. Ranks: 1 = best, ties averaged; "
             "wins shared on ties."]
    notes += _dropped_note(wide, complete, "Ranks")
    data = wide.copy()
    if result is not None:  # a ranking of ``complete``, which has rows
        data.loc["Mean"] = complete.mean()
        data.loc["Rank"] = result.mean_ranks
        data.loc["Wins"] = result.wins
    data = data.reset_index().rename(columns={"index": "dataset"})
    data.columns.name = None
    if rank_by != "accuracy" and not RANK_BY[rank_by][2]:
        notes.append("Lower is better: rank 1 and the wins go to the lowest value (the Wins "
                     "row counts them).")
    title = "Ranked performance (RP)" + ("" if rank_by == "accuracy" else f" by {rank_by}")
    out = [Table("rp", title, data, disp, notes), _test_table(result, skipped)]
    if isinstance(result, stats.RankedComparison) and result.wilcoxon_holm_p is not None:
        p = result.wilcoxon_holm_p.loc[methods, methods]
        pdisp = p.map(fmt_p).reset_index().rename(columns={"index": "method"})
        pdisp.columns = ["method", *methods]
        out.append(Table("wilcoxon_holm", "Wilcoxon–Holm post-hoc p-values",
                         p.reset_index().rename(columns={"index": "method"}), pdisp,
                         ["Pairwise two-sided Wilcoxon signed-rank tests over the data sets "
                          "(scikit-posthocs posthoc_wilcoxon, zero differences split), "
                          "Holm-adjusted over the pairs; the Nemenyi p-values are not shown "
                          "(report with --posthoc nemenyi)."]))
    elif isinstance(result, stats.RankedComparison):
        p = result.nemenyi_p.loc[methods, methods]
        pdisp = p.map(fmt_p).reset_index().rename(columns={"index": "method"})
        pdisp.columns = ["method", *methods]
        out.append(Table("nemenyi", "Nemenyi post-hoc p-values",
                         p.reset_index().rename(columns={"index": "method"}), pdisp,
                         ["scikit-posthocs posthoc_nemenyi_friedman on the RP ranks."]))
    return out


def _test_table(result: stats.Ranking | None, skipped: str) -> Table:
    """The ``rp_stats`` table: the rows of the test that was run, or why none was."""
    title = "RP: significance test"
    if skipped or result is None:
        data = pd.DataFrame({"statistic": ["test"], "value": [np.nan], "note": [skipped]})
        return Table("rp_stats", title, data,
                     pd.DataFrame([("test", f"skipped: {skipped}")],
                                  columns=["statistic", "value"]),
                     [f"No significance test: {skipped}."])
    c = result
    stat = [("datasets N", c.n_datasets, str(c.n_datasets)), ("methods k", c.k, str(c.k)),
            ("alpha", c.alpha, fmt(c.alpha, 3))]
    if isinstance(c, stats.PairedComparison):
        stat_rows, notes = _wilcoxon_rows(c)
    else:
        stat_rows, notes = _friedman_rows(c)
    stat += stat_rows
    data = pd.DataFrame([(a, b) for a, b, _ in stat], columns=["statistic", "value"])
    disp = pd.DataFrame([(a, s) for a, _, s in stat], columns=["statistic", "value"])
    return Table("rp_stats", title, data, disp, notes)


def _wilcoxon_rows(c: stats.PairedComparison) -> tuple[list, list[str]]:
    a, b = c.scores.columns
    better = a if c.r_plus > c.r_minus else b if c.r_minus > c.r_plus else "neither"
    rows = [
        ("test", np.nan, "Wilcoxon signed-rank (two-sided; zero differences split)"),
        (f"R+ (ranks where {a} is better)", c.r_plus, fmt(c.r_plus, 1)),
        (f"R- (ranks where {b} is better)", c.r_minus, fmt(c.r_minus, 1)),
        ("W = min(R+, R-)", c.statistic, fmt(c.statistic, 1)),
        ("p-value", c.p, fmt_p(c.p)),
        ("rejects H0 (equal performance)", float(c.reject), "yes" if c.reject else "no"),
        ("better on the rank sums", np.nan, better),
    ]
    notes = ["Two methods: the Wilcoxon signed-rank test over the datasets (Demšar 2006), "
             "scipy.stats.wilcoxon; no Friedman test, Nemenyi test or CD diagram."]
    return rows, notes


def _friedman_rows(c: stats.RankedComparison) -> tuple[list, list[str]]:
    f_text = (fmt(c.f_id, 3) if not _bad(c.f_id)
              else "n/a (every dataset ranks the methods alike)")
    rows = [
        ("test", np.nan, "Friedman, Iman-Davenport, Nemenyi"),
        ("Friedman chi2 (tie-corrected, reported)", c.chi2, fmt(c.chi2, 3)),
        ("Friedman p-value", c.p_chi2, fmt_p(c.p_chi2)),
        ("Friedman chi2 from mean ranks (no tie correction)", c.chi2_ranks, fmt(c.chi2_ranks, 3)),
        (f"chi2 critical value (1 - alpha, {c.k - 1} dof)", c.chi2_critical,
         fmt(c.chi2_critical, 3)),
        ("Friedman rejects H0", float(c.reject), "yes" if c.reject else "no"),
        (f"Iman-Davenport F ({c.k - 1}, {(c.k - 1) * (c.n_datasets - 1)} dof)", c.f_id, f_text),
        ("Iman-Davenport p-value", c.p_f_id, fmt_p(c.p_f_id)),
        (f"q_alpha ({c.q_alpha_source})", c.q_alpha, fmt(c.q_alpha, 3)),
        ("critical difference CD", c.cd, fmt(c.cd, 3)),
    ]
    pairs = [f"{a} vs {b}" for i, a in enumerate(c.significant.index)
             for b in c.significant.columns[i + 1:] if c.significant.loc[a, b]]
    notes = ["Pairs whose mean ranks differ by at least CD: "
             + (", ".join(pairs) if pairs else "none") + ".",
             "p-values are never below the exact test's smallest, (k!)^(1-N) (all datasets "
             "ranking the methods alike)."]
    if not c.asymptotic_ok:
        notes.append(f"N = {c.n_datasets}, k = {c.k}: Demšar (2006) finds the chi-square "
                     f"approximation satisfactory for N > {stats.ASYMPTOTIC_N} and "
                     f"k > {stats.ASYMPTOTIC_K} only; read the p-values as rough.")
    return rows, notes


def cost_table(cost: pd.DataFrame, notes: list[str] | None = None) -> Table:
    """Timing and model size per dataset and method (serves Table III of
    Constantinopoulos & Likas 2006).

    ``cost`` comes from :func:`alprbf.report.metrics.cost_summary`; the column ``size before
    split`` is shown only when some model records it.  ``notes`` are appended (e.g. which
    task files lack the evaluation time).
    """
    cols = {
        "dataset": cost["dataset"], "method": cost["method"],
        "fit s / iteration": [fmt(v, 4) for v in cost["fit_seconds_per_query"]],
        "eval s / iteration": [fmt(v, 4) for v in cost["eval_seconds_per_query"]],
        "fit s / fold": _mean_std_column(cost, "train_time_s", 3),
        "total s / fold": _mean_std_column(cost, "total_time_s", 3),
        "query s / label": [fmt(v, 4) for v in cost["query_seconds_per_label"]],
        "size at budget": _mean_std_column(cost, "components", 1),
    }
    if cost["components_presplit"].notna().any():
        cols["size before split"] = _mean_std_column(cost, "components_presplit", 1)
    text = ("Wall-clock seconds on this machine: mean fit and evaluation time per evaluated "
            "iteration; fit time and total time (fit + queries + evaluation) of one fold's "
            "curve, mean (std) over folds x repetitions; query time per labeled sample. Size: "
            "components / support vectors of the last model, mean (std); n/a when the model "
            "reports none.")
    if "size before split" in cols:
        text += (" Size before split: components of the last model before its final split "
                 "(PRBF-split models; seed 001 does not say which count its Table III gives).")
    return Table("cost", "Timing and model size", cost.copy(), pd.DataFrame(cols),
                 [text, *(notes or [])])


def failures_table(failures: list[dict], log_dir: str) -> Table:
    """The tasks whose last attempt failed or timed out (the records of
    :func:`alprbf.store.results.read_failures`), one row each, with a link to its traceback
    (``log_dir``: the results directory relative to the report)."""
    data = pd.DataFrame(failures)
    disp = pd.DataFrame({
        "task": data["task_id"], "dataset": data["dataset"],
        "method": [f"{m} / {s}" for m, s in zip(data["model"], data["strategy"], strict=True)],
        "kind": data["kind"],
        "error": [f"{e}: {m}" for e, m in zip(data["error"], data["message"], strict=True)],
        "traceback": [NA if not log else f"[log]({log_dir}/{log})" for log in data["log"]],
    })
    notes = [f"{len(data)} task(s) did not finish: they raised (kind 'error') or ran past the "
             "run's --task-timeout ('timeout'). Their cells are incomplete: the other tables "
             "use the tasks that finished. `alprbf run` with the same config and directory "
             "retries them."]
    return Table("failed_tasks", "Failed tasks", data, disp, notes)


def health_table(cells: pd.DataFrame, constant_share: float) -> Table:
    """The health checks per cell (:func:`alprbf.report.health.cell_health`): every cell
    with a flag is shown, the CSV holds every cell."""
    chance = cells["at_chance"] if "at_chance" in cells else pd.Series(None, index=cells.index)
    flagged = cells[(cells["degenerate"] > 0) | (cells["flat"] > 0)
                    | (cells["grid_edge"].fillna(0) > 0) | (chance.fillna(0) > 0)]
    disp = pd.DataFrame({
        "dataset": flagged["dataset"], "method": flagged["method"],
        "degenerate": [f"{k} of {n}" for k, n in zip(flagged["degenerate"], flagged["tasks"],
                                                      strict=True)],
        "constant at end": flagged["final_constant"].astype(int),
        f"constant > {100 * constant_share:g} %": flagged["mostly_constant"].astype(int),
        "flat curve": flagged["flat"].astype(int),
        "grid edge": [NA if _bad(x) else str(int(x)) for x in flagged["grid_edge"]],
        "at chance": [NA if _bad(x) else str(int(x)) for x in chance[flagged.index]],
        "source": ["inferred" if x else "diagnostics" for x in flagged["inferred"]],
    })
    n_bad = int((cells["degenerate"] > 0).sum())
    notes = [
        f"{n_bad} of {len(cells)} cells have degenerate tasks; {len(flagged)} cells carry a "
        "flag (the others are not shown; the CSV lists every cell).",
        "Degenerate task: a constant predictor (one class on every training row) at its last "
        f"evaluation or at more than {100 * constant_share:g} % of its evaluations; such a "
        "cell's published-value verdict reads 'degenerate in k of n tasks'. Flat curve: test "
        "accuracy gains no more from the first to the last evaluation than the std of the "
        "cell's final accuracies. Grid edge: tasks whose last tuning chose a value at an end "
        "of its grid (n/a: the model records no tuning). At chance: tasks whose last test "
        "balanced accuracy is at most 1/K, what a constant predictor scores (n/a: files "
        "without balanced accuracy). Source 'inferred': files without "
        "diagnostics, judged from labeled, test and training-part accuracies (see "
        "docs/health.md)."]
    return Table("health", "Health checks", cells.copy(), disp.reset_index(drop=True), notes)


def run_cost_table(cost: dict[str, float], machine: str | None = None) -> Table:
    """The cost of the whole run: tasks, task-hours, the longest task and the projected wall
    time on 1, 2 and 16 workers (``cost`` from :func:`alprbf.report.metrics.run_cost`)."""
    walls = sorted((int(k.rsplit("_", 1)[1]), v) for k, v in cost.items()
                   if k.startswith("wall_h_"))
    data = pd.DataFrame([cost])
    display = pd.DataFrame({
        "tasks": [f"{int(cost['tasks'])}"],
        "task-hours": [fmt(cost["task_hours"], 2)],
        "longest task": [_duration(cost["longest_h"])],
        **{f"wall on {w} worker{'s' if w > 1 else ''}": [_duration(v)] for w, v in walls},
    })
    text = ("Task-hours: the sum of every task's fit, query and evaluation seconds as recorded "
            "(tasks that ran beside other processes carry that load). Wall on w workers: the "
            "recorded tasks scheduled longest first, each to the worker that frees up first "
            "(at most 4/3 of the best schedule); a record built over several runs has no "
            "single measured wall time.")
    if machine:
        text += f" Machine of the run: {machine}."
    return Table("run_cost", "Cost of the run", data, display, [text])


def _duration(hours: float) -> str:
    """A duration given in hours, in the unit that reads best: ``2.51 h``, ``12.3 min``,
    ``45 s``."""
    if _bad(hours):
        return NA
    if hours >= 1.0:
        return f"{hours:.2f} h"
    if hours * 60.0 >= 1.0:
        return f"{hours * 60.0:.1f} min"
    return f"{hours * 3600.0:.0f} s"


def _mean_std_column(frame: pd.DataFrame, name: str, digits: int) -> list[str]:
    return [fmt_mean_std(m, s, digits)
            for m, s in zip(frame[name], frame[f"{name}_std"], strict=True)]


def _value(mean, std) -> str:
    """``mean (std)`` with 3 decimals, or just the mean when there is no std."""
    return fmt(mean, 3) if _bad(std) else fmt_mean_std(mean, std, 3)


def _reader(r) -> str:
    """The method (and the reading of the metric, if any) that a reading stands for."""
    return (r.our_method or r.name) + (f" ({r.reading})" if r.reading else "")


def _reading_text(r) -> str:
    """One non-primary reading in a cell of the ``other readings`` column."""
    who = _reader(r)
    if _bad(r.ours_mean):
        return f"{who}: {r.verdict}"
    return f"{who}: {_value(r.ours_mean, r.ours_std)}, Δ {r.diff:+.3f}, {r.verdict}"


def _verdict_text(r) -> str:
    return f"{r.verdict}: {r.note}" if r.note and r.verdict in ("unmapped", "no value") \
        else r.verdict


def reference_table(cells: pd.DataFrame, summary: list[str]) -> Table:
    """Every published cell beside ours: Δ (ours − published) and the verdict.

    Parameters
    ----------
    cells : DataFrame
        From :func:`alprbf.report.reference.compare` (one row per reading; written to CSV as
        it is).
    summary : list of str
        One line per published table (:func:`alprbf.report.reference.summary`), printed under
        the table.
    """
    by_cell: dict = {}                # one pass over the rows (per-group frames are slow)
    for r in cells.itertuples(index=False):
        if not pd.isna(r.cell):
            by_cell.setdefault(r.cell, []).append(r)
    rows = []
    for cell in sorted(by_cell):
        g = by_cell[cell]
        p = next(r for r in g if r.primary)
        others = [_reading_text(r) for r in g if not r.primary and r.verdict != "not selected"]
        rows.append([p.table, p.dataset, p.published_as, p.metric, _value(p.ref_mean, p.ref_std),
                     _value(p.ours_mean, p.ours_std),
                     NA if _bad(p.diff) else f"{p.diff:+.3f}", _verdict_text(p), _reader(p),
                     "; ".join(others)])
    disp = pd.DataFrame(rows, columns=["table", "dataset", "published as", "metric",
                                       "published", "ours", "Δ (ours − published)", "verdict",
                                       "our method", "other readings"])
    units = "; ".join(f"{m}: {u}" for m, u in REFERENCE_METRICS.items()
                      if m in set(cells["metric"]))
    notes = [*summary,
             "Verdict of the primary reading (the reference file's `method` for the cell): "
             "within the published std, within a tolerance where none is published "
             "(1 pp for errors and accuracies), outside, not comparable (wall-clock time), or "
             "not run; other readings follow in the last column (see DEFINITIONS.md).",
             f"Units: {units}."]
    return Table("reference", "Published values beside ours", cells, disp, notes)


def short_labels(methods: list[str], max_len: int = 12) -> dict[str, str]:
    """Column headers for a compact table: the labels themselves when all are at most
    ``max_len`` characters long, else the letters A, B, ... (a key goes in the caption)."""
    if all(len(m) <= max_len for m in methods):
        return {m: m for m in methods}
    letters = [chr(ord("A") + i % 26) + ("" if i < 26 else str(i // 26))
               for i in range(len(methods))]
    return dict(zip(methods, letters, strict=True))


def paper_latex(err: pd.DataFrame, digits: int = 2) -> str:
    """A compact LaTeX table in the papers' style: test error at the budget.

    Data sets as rows, methods as columns (short labels, see :func:`short_labels`), cells
    ``mean (std)`` with the lowest mean of each row in bold (ties at the printed precision
    all bold), ``--`` where a method has no result.
    """
    methods = sorted(err["method"].unique())
    short = short_labels(methods)
    datasets = sorted(err["dataset"].unique())
    wide, sd = (_matrix(err, v, datasets, methods) for v in ("mean", "std"))
    rows = []
    for d, row in wide.iterrows():
        best = np.nanmin(np.round(row.to_numpy(dtype=float), digits)) if row.notna().any() \
            else np.nan
        cells = [tex_escape(str(d))]
        for m in methods:
            if _bad(row[m]):
                cells.append("--")
                continue
            mean = fmt(row[m], digits)
            cells.append((r"\textbf{" + mean + "}" if round(row[m], digits) == best else mean)
                         + f" ({fmt(sd.loc[d, m], digits)})")
        rows.append(cells)
    return _latex(tex_escape(_paper_caption(short)), "error-at-budget-paper",
                  ["data set"] + [tex_escape(short[m]) for m in methods], rows, small=True)


def _paper_caption(short: dict[str, str]) -> str:
    text = ("Test error (%) at the budget, mean (std) over folds x repetitions; "
            "best per data set in bold.")
    key = [f"{s}: {m}" for m, s in short.items() if s != m]
    return text + (" " + "; ".join(key) + "." if key else "")
