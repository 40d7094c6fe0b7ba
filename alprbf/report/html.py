"""Self-contained HTML pages of a report: one per experiment (``report.html``) and an index
over several (``index.html``).

A page holds everything it shows: the tables as HTML (the same strings as the Markdown
tables), the figures as base64 PNG, a few lines of inline CSS and vanilla JavaScript (sortable
tables; no library, no network: the page works offline).  Links to task files and to the
figure files are relative, so a page moved together with its results still finds them.  A
page holds no time stamp and no absolute path: the same report gives the same bytes.

Interactive plots were considered: plotly and bokeh need their JavaScript bundle inline to
work offline (about 3.5 MB and 1 MB per page) and a new dependency, so the learning curves
are matplotlib figures, one per data set.

JavaScript errors (uncaught exceptions, ``console.error``, resources that fail to load) are
collected by the page into the element ``#js-errors`` (a JSON list), so that a headless
browser's ``--dump-dom`` shows them; ``?sort=<table>.<column>[.desc]`` in the URL sorts a
table on load.

Each page carries its summary as JSON (``<script id="alprbf-summary">``); :func:`write_index`
reads it back to list pages, so an index over any tree of pages
(:func:`index_over_tree`) needs no other file.
"""

from __future__ import annotations

import base64
import html
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from .tables import Table

PAGE = "report.html"
INDEX = "index.html"

#: Rows of a table that summarise the rows above them: they stay at the bottom when sorting.
SUMMARY_ROWS = ("Mean", "Rank", "Wins")

#: Tables with more rows than this get a filter box.
FILTER_ROWS = 25

_SUMMARY_ID = "alprbf-summary"
_SUMMARY_RE = re.compile(
    rf'<script type="application/json" id="{_SUMMARY_ID}">(.*?)</script>', re.S)

_CSS = """
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1b1f24}
header{background:#24292f;color:#fff;padding:.8em 1.5em}
header h1{margin:0;font-size:1.35em}header a{color:#9ecbff}
nav{position:sticky;top:0;background:#f6f8fa;border-bottom:1px solid #d0d7de;padding:.4em 1.5em;
z-index:2;font-size:.9em}nav a{margin-right:1em;white-space:nowrap}
main{padding:0 1.5em 2em}h2{margin-top:1.6em;border-bottom:1px solid #d0d7de}
.meta{margin:.6em 0;padding:0;list-style:none}.meta li{margin:.15em 0}
.scroll{overflow:auto;max-height:80vh;border:1px solid #d0d7de}
table{border-collapse:collapse;font-variant-numeric:tabular-nums;font-size:.88em}
th,td{padding:.25em .55em;border-bottom:1px solid #eaeef2;text-align:right;white-space:nowrap}
th{background:#f6f8fa;position:sticky;top:0;cursor:pointer;user-select:none;z-index:1}
th.text,td.text{text-align:left}td.wrap{white-space:normal;min-width:16em}
th[aria-sort=ascending]::after{content:" \\25B2"}th[aria-sort=descending]::after{content:" \\25BC"}
tbody tr:hover{background:#f3f6fa}tfoot td{font-weight:600;background:#fafbfc}
.v-ok{background:#dafbe1}.v-bad{background:#ffebe9}.v-deg{background:#fff1c2;font-weight:600}
.v-na{color:#6e7781}.notes{color:#424a53;font-size:.9em;max-width:75em}
figure{display:inline-block;margin:.5em 1em .5em 0;vertical-align:top}
figure img{max-width:100%;border:1px solid #eaeef2}
figure.curve{width:calc(50% - 1.2em);min-width:30em;max-width:760px}figure.curve img{width:100%}
input.filter{margin:.3em 0;padding:.2em .4em;width:20em}
details{margin:.15em 0}details:target{background:#fff8c5}details a{margin-right:.6em}
a{color:#0969da}:target{scroll-margin-top:3em}
"""

# Before anything else runs: collect errors into a list that the DOM shows (#js-errors).
_HEAD_JS = (
    "window.alprbfErrors=[];"
    "window.addEventListener('error',function(e){var t=e.target;"
    "alprbfErrors.push(t&&t!==window&&t.tagName?'failed to load '+t.tagName+' '"
    "+(t.src||t.href||''):String(e.message))},true);"
    "window.addEventListener('unhandledrejection',function(e){"
    "alprbfErrors.push('unhandled rejection: '+e.reason)});"
    "(function(c){var o=c.error;c.error=function(){"
    "alprbfErrors.push(Array.prototype.join.call(arguments,' '));"
    "return o.apply(c,arguments)}})(console);")

# Sorting (numbers by their leading value, n/a last either way), ?sort=, #anchors that open
# their <details>, and the error report.
_BODY_JS = r"""
(function(){
function num(t){t=t.trim().replace(/^[<>≥~]+\s*/,'').replace('\u2212','-');
var m=t.match(/^[-+]?\d+(\.\d+)?(e[-+]?\d+)?/i);return m?parseFloat(m[0]):null}
function sortTable(tb,col,desc){var body=tb.tBodies[0];if(!body)return;
var rows=Array.prototype.slice.call(body.rows),d=desc?-1:1;
rows.sort(function(a,b){var x=a.cells[col]?a.cells[col].textContent:'',
y=b.cells[col]?b.cells[col].textContent:'',p=num(x),q=num(y);
if(p!==null&&q!==null)return d*(p-q);if(p!==null)return -1;if(q!==null)return 1;
return d*x.localeCompare(y)});
rows.forEach(function(r){body.appendChild(r)});
Array.prototype.forEach.call(tb.tHead.rows[0].cells,function(h,i){
if(i===col)h.setAttribute('aria-sort',desc?'descending':'ascending');
else h.removeAttribute('aria-sort')})}
Array.prototype.forEach.call(document.querySelectorAll('table.sortable'),function(tb){
Array.prototype.forEach.call(tb.tHead.rows[0].cells,function(h,i){
h.title='sort';h.addEventListener('click',function(){
sortTable(tb,i,h.getAttribute('aria-sort')==='ascending')})})});
var s=/[?&]sort=([^&#]+)/.exec(location.search);
if(s){var a=decodeURIComponent(s[1]).split('.'),tb=document.getElementById('t-'+a[0]);
if(tb)sortTable(tb,parseInt(a[1],10),a[2]==='desc');
else alprbfErrors.push('?sort: no table '+a[0])}
Array.prototype.forEach.call(document.querySelectorAll('input.filter'),function(f){
var tb=document.getElementById(f.getAttribute('data-table'));
f.addEventListener('input',function(){var w=f.value.toLowerCase().split(/\s+/).filter(Boolean);
Array.prototype.forEach.call(tb.tBodies[0].rows,function(r){var t=r.textContent.toLowerCase();
r.hidden=!w.every(function(x){return t.indexOf(x)>=0})})})});
function openTarget(){var h=location.hash.slice(1),e=h&&document.getElementById(h);
if(e&&e.tagName==='DETAILS')e.open=true}
window.addEventListener('hashchange',openTarget);openTarget();
function report(){var e=document.getElementById('js-errors');
e.textContent=JSON.stringify(alprbfErrors);document.body.setAttribute('data-ready','1')}
report();window.addEventListener('load',report);
})();
"""


def esc(x) -> str:
    """HTML-escaped text."""
    return html.escape(str(x), quote=True)


def anchor(*parts: str) -> str:
    """A unique, valid HTML id for ``parts`` (characters other than letters, digits, ``-``
    and ``_`` written as ``.xx`` hex codes)."""
    return "--".join(re.sub(r"[^A-Za-z0-9_-]", lambda m: "." + m.group().encode().hex(), p)
                     for p in parts)


def png_img(data: bytes, alt: str) -> str:
    """An ``<img>`` that holds the PNG ``data``."""
    return (f'<img alt="{esc(alt)}" src="data:image/png;base64,'
            f'{base64.b64encode(data).decode("ascii")}">')


def relative(path: Path, start: Path) -> str:
    """``path`` relative to ``start`` as a URL path (``/`` separators)."""
    try:
        rel = os.path.relpath(Path(path).resolve(), Path(start).resolve())
    except ValueError:          # another drive (Windows): no relative path exists
        return Path(path).name
    return "/".join(Path(rel).parts)


# --------------------------------------------------------------------------- tables


def verdict_class(text: str) -> str:
    """CSS class of a verdict (published values) or a health count (``k of n``)."""
    t = str(text)
    if t.startswith("within"):
        return "v-ok"
    if t.startswith("outside"):
        return "v-bad"
    if t.startswith("degenerate") or (re.fullmatch(r"\d+ of \d+", t) and not t.startswith("0 ")):
        return "v-deg"
    if t.startswith(("no value", "no verdict", "not ", "unmapped", "n/a")):
        return "v-na"
    return ""


def _is_text_column(values: pd.Series) -> bool:
    shown = values.astype(str)
    shown = shown[shown != "n/a"]
    return bool(shown.str.match(r"^[A-Za-z]").any())


@dataclass
class CellLinks:
    """Links of one table's cells: ``(row, column) -> href`` and the columns whose cells get
    a verdict colour."""

    href: dict[tuple[int, str], str] = field(default_factory=dict)
    verdict_columns: tuple[str, ...] = ()


def table_html(t: Table, links: CellLinks | None = None) -> str:
    """A sortable ``<table id="t-<name>">`` of the table's display strings, its notes below.

    Rows named in :data:`SUMMARY_ROWS` (first column) go to the footer, out of the sort."""
    links = links or CellLinks()
    d = t.display
    cols = [str(c) for c in d.columns]
    text = {c: _is_text_column(d[c]) for c in d.columns}
    head = "".join(f'<th class="{"text" if text[c] else "num"}">{esc(c)}</th>'
                   for c in d.columns)
    body, foot = [], []
    for i, row in enumerate(d.itertuples(index=False)):
        cells = []
        for c, name, v in zip(d.columns, cols, row, strict=True):
            cls = ["text"] if text[c] else []
            if name in links.verdict_columns and (vc := verdict_class(v)):
                cls.append(vc)
            if name in ("other readings", "verdict") and len(str(v)) > 40:
                cls.append("wrap")
            inner = esc(v)
            href = links.href.get((i, name))
            if href:
                inner = f'<a href="{esc(href)}">{inner}</a>'
            attr = f' class="{" ".join(cls)}"' if cls else ""
            cells.append(f"<td{attr}>{inner}</td>")
        tr = "<tr>" + "".join(cells) + "</tr>"
        (foot if len(row) and str(row[0]) in SUMMARY_ROWS else body).append(tr)
    parts = []
    if len(body) > FILTER_ROWS:
        parts.append(f'<input type="search" class="filter" data-table="t-{esc(t.name)}" '
                     'placeholder="filter rows: words they contain" aria-label="filter rows">')
    parts += [f'<div class="scroll"><table class="sortable" id="t-{esc(t.name)}">',
             f"<thead><tr>{head}</tr></thead>", "<tbody>", *body, "</tbody>"]
    if foot:
        parts += ["<tfoot>", *foot, "</tfoot>"]
    parts.append("</table></div>")
    if t.notes:
        parts.append('<div class="notes">' + "".join(f"<p>{_inline(n)}</p>" for n in t.notes)
                     + "</div>")
    return "\n".join(parts)


def _inline(text: str) -> str:
    """Escaped text with Markdown ``code`` spans as ``<code>``."""
    return re.sub(r"`([^`]*)`", r"<code>\1</code>", esc(text))


def cell_links(t: Table, cells: Mapping[tuple[str, str], str],
               datasets: Mapping[str, str]) -> CellLinks:
    """Where each cell of ``t`` links: a (data set, method) cell to its task files
    (``cells``: anchor per pair), a data-set name to its learning curve (``datasets``).

    Tables with a ``method`` column link that column; wide tables (one column per method)
    link each method's column; the published-values table links ``ours`` through the data
    set and method each primary reading stands for.
    """
    d = t.display
    out = CellLinks(verdict_columns=("verdict", "degenerate"))
    if t.name == "reference":
        prim = t.data[t.data["primary"] & t.data["cell"].notna()].drop_duplicates("cell")
        prim = prim.sort_values("cell")
        for i, (ds, m) in enumerate(zip(prim["our_dataset"], prim["our_method"], strict=True)):
            if (ds, m) in cells:
                out.href[(i, "ours")] = "#" + cells[(ds, m)]
        return out
    if "dataset" not in d.columns:
        return out
    for i, ds in enumerate(d["dataset"].astype(str)):
        if ds in datasets:
            out.href[(i, "dataset")] = "#" + datasets[ds]
        if "method" in d.columns:
            m = str(d["method"].iloc[i])
            if (ds, m) in cells:
                out.href[(i, "method")] = "#" + cells[(ds, m)]
            continue
        for c in d.columns:
            if (ds, str(c)) in cells:
                out.href[(i, str(c))] = "#" + cells[(ds, str(c))]
    return out


# --------------------------------------------------------------------------- pages


@dataclass
class Section:
    """One titled part of a page (``body`` is HTML)."""

    id: str
    title: str
    body: str


def page(title: str, header: str, sections: Sequence[Section], summary: Mapping,
         intro: str = "") -> str:
    """A whole page: header, a navigation bar over the sections, the sections."""
    nav = "\n".join(f'<a href="#{esc(s.id)}">{esc(s.title)}</a>' for s in sections)
    data = json.dumps(summary, sort_keys=True, ensure_ascii=False).replace("</", "<\\/")
    body = "\n".join(f'<section id="{esc(s.id)}"><h2>{esc(s.title)}</h2>\n{s.body}\n</section>'
                     for s in sections)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{esc(title)}</title>
<script>{_HEAD_JS}</script>
<style>{_CSS}</style>
<script type="application/json" id="{_SUMMARY_ID}">{data}</script>
</head><body>
<header>{header}</header>
<nav>{nav}</nav>
<main>
{intro}
{body}
</main>
<pre id="js-errors" hidden></pre>
<script>{_BODY_JS}</script>
</body></html>
"""


def task_lists(task_links: Mapping[tuple[str, str], Sequence[tuple[str, str]]],
               cells: Mapping[tuple[str, str], str]) -> str:
    """One collapsed list per (data set, method): links to its task files."""
    out = []
    for key in sorted(task_links):
        files = task_links[key]
        links = " ".join(f'<a href="{esc(href)}">{esc(name)}</a>' for name, href in files)
        out.append(f'<details id="{esc(cells[key])}"><summary>{esc(key[0])} / {esc(key[1])}'
                   f" ({len(files)} task file{'s' if len(files) != 1 else ''})</summary>"
                   f"{links}</details>")
    return "\n".join(out)


def figures_html(pngs: Mapping[str, bytes], ids: Mapping[str, str]) -> str:
    """The learning curves, one figure per data set, with a line of links to each."""
    jump = " · ".join(f'<a href="#{esc(ids[d])}">{esc(d)}</a>' for d in pngs)
    figs = "\n".join(f'<figure class="curve" id="{esc(ids[d])}">'
                     f'{png_img(b, "learning curves " + d)}</figure>' for d, b in pngs.items())
    return f'<p class="notes">{jump}</p>\n{figs}'


def summary_counts(cells: pd.DataFrame | None) -> list[dict]:
    """Per published table: the primary readings' verdicts counted as within / outside /
    degenerate / other (for the index)."""
    if cells is None:
        return []
    prim = cells[cells["primary"] & cells["cell"].notna()].drop_duplicates("cell")
    out = []
    for table, g in prim.groupby("table", sort=True):
        kinds = [verdict_class(v) for v in g["verdict"]]
        out.append({"table": str(table), "cells": len(g),
                    "within": kinds.count("v-ok"), "outside": kinds.count("v-bad"),
                    "degenerate": kinds.count("v-deg"),
                    "other": len(g) - kinds.count("v-ok") - kinds.count("v-bad")
                    - kinds.count("v-deg")})
    return out


def method_summary(err: pd.DataFrame, ranks: pd.Series | None, cell_health: pd.DataFrame,
                   cells: pd.DataFrame | None) -> list[dict]:
    """Per method (for the index): the mean over data sets of its test error at the budget,
    its mean RP rank (None without a ranking), its cells with degenerate tasks, and the
    verdicts of the published cells it stands for."""
    prim = (None if cells is None else
            cells[cells["primary"] & cells["cell"].notna()].drop_duplicates("cell"))
    out = []
    for m in sorted(err["method"].unique()):
        h = cell_health[cell_health["method"] == m]
        kinds = ([] if prim is None else
                 [verdict_class(v) for v in prim.loc[prim["our_method"] == m, "verdict"]])
        rank = None if ranks is None or m not in ranks.index else float(ranks[m])
        mean = err.loc[err["method"] == m, "mean"].mean()
        out.append({"method": str(m), "mean_error": None if pd.isna(mean) else float(mean),
                    "rank": rank, "cells": len(h),
                    "degenerate_cells": int((h["degenerate"] > 0).sum()),
                    "published": len(kinds), "within": kinds.count("v-ok"),
                    "outside": kinds.count("v-bad"), "degenerate": kinds.count("v-deg")})
    return out


def read_summary(page_path: Path) -> dict | None:
    """The summary JSON a page carries (None for a file that is not such a page)."""
    try:
        m = _SUMMARY_RE.search(page_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return None
    if m is None:
        return None
    try:
        return json.loads(m.group(1).replace("<\\/", "</"))
    except json.JSONDecodeError:
        return None


def experiment_page(name: str, facts: Sequence[tuple[str, str]], notes: Sequence[str],
                    tables: Sequence[Table], figures: Sequence[tuple[str, list[Path]]],
                    curve_pngs: Mapping[str, bytes],
                    task_links: Mapping[tuple[str, str], Sequence[tuple[str, str]]],
                    out: Path, summary: Mapping) -> str:
    """One experiment's page.

    Parameters
    ----------
    name : str
        The experiment's name (page title).
    facts : sequence of (str, str)
        The header lines of ``report.md`` (key, Markdown-ish text).
    notes, tables, figures
        What ``report.md`` shows (figure files are linked; the CD diagram is embedded).
    curve_pngs : mapping
        Data set -> PNG bytes of its learning curves.
    task_links : mapping
        (data set, method) -> (file name, relative href) of each of its task files.
    out : Path
        The page's folder (figure links are relative to it).
    summary : mapping
        The page's summary for the index (:func:`write_index`).
    """
    cells = {key: anchor("tasks", *key) for key in task_links}
    curve_ids = {d: anchor("curves", d) for d in curve_pngs}
    by_name = {t.name: t for t in tables}
    facts_html = "".join(f"<li><b>{esc(k)}</b>: {v if k == 'results' else _inline(v)}</li>"
                         for k, v in facts)
    sections = []
    if notes:
        sections.append(Section("notes", "Notes", '<ul class="notes">' + "".join(
            f"<li>{_inline(n)}</li>" for n in notes) + "</ul>"))

    def add(table: str, short: str | None = None) -> None:
        t = by_name.pop(table, None)
        if t is not None:
            sections.append(Section(table, short or t.title,
                                    f"<h3>{esc(t.title)}</h3>" * (short is not None)
                                    + table_html(t, cell_links(t, cells, curve_ids))))

    add("reference", "Published values")
    add("health", "Health")
    add("error_at_budget", "Error at budget")
    add("error_at_fraction", "Error at fractions")
    if curve_pngs:
        files = [p for title, ps in figures if title.startswith("Learning curves") for p in ps]
        links = ", ".join(f'<a href="{esc(relative(p, out))}">{esc(p.name)}</a>' for p in files)
        title = next((t for t, _ in figures if t.startswith("Learning curves")),
                     "Learning curves")
        sections.append(Section("curves", "Learning curves", f"<p>{esc(title)}; all data "
                                f"sets in one figure: {links}.</p>"
                                + figures_html(curve_pngs, curve_ids)))
    for title, paths in figures:
        if title.startswith("Critical-difference"):
            png = [p for p in paths if p.suffix == ".png"]
            img = png_img(png[0].read_bytes(), title) if png else ""
            links = ", ".join(f'<a href="{esc(relative(p, out))}">{esc(p.name)}</a>'
                              for p in paths)
            sections.append(Section("cd", "CD diagram",
                                    f"<p>{esc(title)}. Files: {links}.</p><figure>{img}"
                                    "</figure>"))
    for table in ("rp", "rp_stats", "nemenyi", "aulc", "dur"):
        add(table)
    add("cost", "Cost")
    add("run_cost", "Run cost")
    for table in list(by_name):
        add(table)
    if task_links:
        sections.append(Section("tasks", "Task files",
                                "<p>The task files of each data set x method (links relative "
                                "to this page).</p>" + task_lists(task_links, cells)))
    header = (f"<h1>Report: {esc(name)}</h1>"
              f'<ul class="meta">{facts_html}</ul>')
    return page(f"alprbf report: {name}", header, sections, summary)


def write_index(out: Path, pages: Iterable[Path], title: str = "alprbf report") -> Path:
    """``out/index.html``: one row per published table of each page (one row for a page
    without published values), sortable, each linking to its page."""
    rows, method_rows = [], []
    for p in pages:
        s = read_summary(p)
        if s is None or s.get("kind") != "experiment":
            continue
        href = relative(p, out)
        method_rows += _method_rows(s, href, relative(p.parent, out))
        base = [f'<a href="{esc(href)}">{esc(s["experiment"])}</a>',
                esc(relative(p.parent, out)),
                str(s["datasets"]), str(s["methods"]), str(s["tasks"]),
                f'{s["degenerate_cells"]} of {s["cells"]}']
        published = s.get("published") or [None]
        for t in published:
            nums = (["n/a"] * 5 if t is None else
                    [str(t[k]) for k in ("cells", "within", "outside", "degenerate", "other")])
            cls = ["", "v-ok", "v-bad", "v-deg", ""]
            tds = [f"<td class=\"text\">{b}</td>" if i < 2 else f"<td>{b}</td>"
                   for i, b in enumerate(base)]
            tds.insert(6, f'<td class="text">{esc("none" if t is None else t["table"])}</td>')
            tds += [f'<td class="{c}">{n}</td>' if c and n not in ("0", "n/a") else f"<td>{n}</td>"
                    for c, n in zip(cls, nums, strict=True)]
            rows.append("<tr>" + "".join(tds) + "</tr>")
    head = ["experiment", "folder", "data sets", "methods", "tasks", "degenerate cells",
            "published table", "published cells", "within", "outside", "degenerate", "other"]
    ths = "".join(f'<th class="{"text" if i in (0, 1, 6) else "num"}">{esc(h)}</th>'
                  for i, h in enumerate(head))
    table = (f'<div class="scroll"><table class="sortable" id="t-index"><thead><tr>{ths}</tr>'
             "</thead><tbody>\n" + "\n".join(rows) + "\n</tbody></table></div>")
    notes = ('<div class="notes"><p>One row per published table of each experiment. '
             "Published cells: the cells of that table with a verdict; within: within the "
             "published std (or the tolerance where none is published); degenerate: cells "
             "whose learner is a constant predictor in some tasks (their number is not a "
             "reading of the paper); other: no value, not run, not comparable. Degenerate "
             "cells: data set x method cells of the experiment with degenerate tasks (the "
             "health checks). Click a column header to sort.</p></div>")
    sections = [Section("experiments", "Experiments", table + notes)]
    if method_rows:
        sections.append(Section("methods", "Methods", _methods_table(method_rows)))
    text = page(title, f"<h1>{esc(title)}</h1>", sections, {"kind": "index"})
    out.mkdir(parents=True, exist_ok=True)
    path = out / INDEX
    path.write_text(text, encoding="utf-8")
    return path


def _method_rows(s: Mapping, href: str, folder: str) -> list[str]:
    rows = []
    for m in s.get("method_summary") or []:
        def num(x, digits):
            return "n/a" if x is None else f"{x:.{digits}f}"
        deg = m["degenerate_cells"]
        pub = [str(m[k]) for k in ("published", "within", "outside", "degenerate")]
        cls = ["", "v-ok", "v-bad", "v-deg"]
        rows.append(
            "<tr>" + f'<td class="text"><a href="{esc(href)}">{esc(s["experiment"])}</a></td>'
            f'<td class="text">{esc(folder)}</td><td class="text">{esc(m["method"])}</td>'
            f"<td>{num(m['mean_error'], 2)}</td><td>{num(m['rank'], 2)}</td>"
            f'<td class="{"v-deg" if deg else ""}">{deg} of {m["cells"]}</td>'
            + "".join(f'<td class="{c}">{n}</td>' if c and n != "0" else f"<td>{n}</td>"
                      for c, n in zip(cls, pub, strict=True)) + "</tr>")
    return rows


def _methods_table(rows: list[str]) -> str:
    head = ["experiment", "folder", "method", "mean error at budget %", "mean RP rank",
            "degenerate cells", "published cells", "within", "outside", "degenerate"]
    ths = "".join(f'<th class="{"text" if i < 3 else "num"}">{esc(h)}</th>'
                  for i, h in enumerate(head))
    return (f'<input type="search" class="filter" data-table="t-methods" placeholder="filter '
            'rows: words they contain" aria-label="filter rows">'
            f'<div class="scroll"><table class="sortable" id="t-methods"><thead><tr>{ths}</tr>'
            "</thead><tbody>\n" + "\n".join(rows) + "\n</tbody></table></div>"
            '<div class="notes"><p>Per method of each experiment: its test error at the '
            "budget averaged over the data sets, its mean rank in the RP ranking (n/a: no "
            "ranking), its data set cells with degenerate tasks, and the verdicts of the "
            "published cells it stands for (primary readings).</p></div>")


def index_over_tree(root: Path, out: Path | None = None) -> Path:
    """``index.html`` over every experiment page (``report.html``) below ``root``; written to
    ``out`` (default ``root``)."""
    root = Path(root)
    # grouped by their top folder below root, a folder's own report before deeper ones
    pages = sorted((p for p in root.rglob(PAGE) if p.is_file()),
                   key=lambda p: (p.relative_to(root).parts[0], len(p.parts), p))
    return write_index(Path(out) if out is not None else root, pages,
                       f"alprbf reports under {root.name or root}")
