"""The HTML report (``alprbf report --format html``, ``alprbf report-index``): self-contained,
reproducible pages whose tables hold the Markdown tables' strings, and, where Chromium is
installed, the same pages opened in a real headless browser (no JavaScript error, the tables
as rendered, sorting, a screenshot kept as a CI artefact in ``$ALPRBF_SCREENSHOT_DIR``)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from alprbf.report import build_report
from alprbf.report import html as pages
from tests.report_fixtures import invoke_report, report_ok, synthetic_experiment

#: pages built from whole reports and opened in headless Chromium: left out of `make test-quick`
pytestmark = pytest.mark.slow

REFERENCE = ("dataset,method,metric,mean,std,source\n"
             "alpha,nb,error_at_budget,20.0,1.0,made-up table\n"
             "beta,svm / uncertainty,rp_accuracy,90.0,,made-up table\n"
             "zeta,nb,dur,1.0,,made-up table\n")


class _Tables(HTMLParser):
    """Cell texts of every ``<table id=...>`` (header, body and footer rows in document
    order), the ``href`` of every link, and the text of ``#js-errors``."""

    def __init__(self):
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.hrefs: list[str] = []
        self.srcs: list[str] = []
        self.errors: str | None = None
        self.ready = False
        self._table = self._cell = None
        self._in_errors = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table" and a.get("id"):
            self._table = self.tables.setdefault(a["id"], [])
        elif tag == "tr" and self._table is not None:
            self._table.append([])
        elif tag in ("td", "th") and self._table is not None:
            self._cell = []
        elif tag == "a" and "href" in a:
            self.hrefs.append(a["href"])
        elif tag in ("img", "script") and a.get("src"):
            self.srcs.append(a["src"])
        elif tag == "pre" and a.get("id") == "js-errors":
            self._in_errors, self.errors = True, ""
        elif tag == "body":
            self.ready = a.get("data-ready") == "1"

    def handle_endtag(self, tag):
        if tag == "table":
            self._table = None
        elif tag in ("td", "th") and self._cell is not None:
            self._table[-1].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "pre":
            self._in_errors = False

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)
        if self._in_errors:
            self.errors += data


def parse(text: str) -> _Tables:
    p = _Tables()
    p.feed(text)
    return p


def markdown_table(path: Path) -> list[list[str]]:
    """The rows of the Markdown table in ``path`` (header first, the ``---`` line dropped)."""
    rows = []
    for line in path.read_text().splitlines():
        if line.startswith("|") and not re.fullmatch(r"\|[-:|]+\|", line):
            cells = re.split(r"(?<!\\) \| ", line[2:-2])
            rows.append([c.replace("\\|", "|") for c in cells])
    return rows


@pytest.fixture(scope="module")
def experiment(tmp_path_factory):
    exp = synthetic_experiment(tmp_path_factory.mktemp("html") / "results")
    (exp / "reference.csv").write_text(REFERENCE)
    return exp


@pytest.fixture(scope="module")
def report(experiment):
    """The report with every format, in the experiment's default folder (built once)."""
    build_report(experiment, formats=("md", "csv", "tex", "html"))
    return experiment / "report"


def test_page_tables_hold_the_markdown_tables(report):
    page = parse((report / "report.html").read_text())
    for md in sorted(report.glob("*.md")):
        if md.name == "report.md":
            continue
        assert page.tables[f"t-{md.stem}"] == markdown_table(md), md.name


def test_page_is_self_contained_and_relative(report, experiment):
    text = (report / "report.html").read_text()
    page = parse(text)
    assert str(experiment.parent) not in text and "file://" not in text
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", text), "a network reference"
    assert all(s.startswith("data:image/png;base64,") for s in page.srcs)
    tasks = [h for h in page.hrefs if h.endswith(".parquet")]
    assert len(tasks) == len(list((experiment / "tasks").glob("*.parquet")))
    for h in tasks:
        assert (report / h).resolve().is_file(), h
    anchors = set(re.findall(r'id="([^"]+)"', text))
    local = [h[1:] for h in page.hrefs if h.startswith("#")]
    assert local and set(local) <= anchors
    # a cell of the error table links to the task files of its data set and method
    cell = pages.anchor("tasks", "alpha", "nb / uncertainty")
    assert f'<a href="#{cell}">1.00 (0.00)</a>' in text
    assert f'<details id="{cell}">' in text


def test_verdicts_and_health_are_marked(report):
    text = (report / "report.html").read_text()
    assert 'id="t-reference"' in text and 'id="t-health"' in text
    for verdict in re.findall(r'<td class="text (v-[a-z]+)', text):
        assert verdict in ("v-ok", "v-bad", "v-deg", "v-na")


@pytest.mark.parametrize(("text", "cls"), [
    ("within std", "v-ok"), ("within 1 pp", "v-ok"), ("outside", "v-bad"),
    ("degenerate in 2 of 5 tasks", "v-deg"), ("2 of 5", "v-deg"), ("0 of 5", ""),
    ("no value: target not reached", "v-na"), ("not run", "v-na"), ("12.5", "")])
def test_verdict_class(text, cls):
    assert pages.verdict_class(text) == cls


def test_anchors_are_unique_and_valid():
    names = ["a b", "a_b", "a.b", "a/b", "a-b", "a--b", "ä"]
    ids = [pages.anchor("tasks", n, "m") for n in names]
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"[A-Za-z0-9_.-]+", i) for i in ids)


def test_other_outputs_are_unchanged_by_html(report, experiment):
    """Markdown, CSV, LaTeX and the figures are byte for byte those of a report without
    HTML; ``--format html`` alone gives the same page (same folder depth) and no tables."""
    plain = build_report(experiment, out_dir=experiment / "plain")
    for p in plain:
        assert p.read_bytes() == (report / p.name).read_bytes(), p.name
    assert {p.name for p in report.iterdir()} == {p.name for p in plain} | {"report.html"}
    only = build_report(experiment, out_dir=experiment / "only-html", formats=("html",))
    page = experiment / "only-html" / "report.html"
    assert page in only and page.read_bytes() == (report / "report.html").read_bytes()
    assert not list(page.parent.glob("error_at_budget.*"))
    assert "Files: [error_at_budget" not in (page.parent / "report.md").read_text()


def test_index_over_several_experiments_and_tree(tmp_path):
    root = tmp_path / "results"
    for i, name in enumerate(("one", "two")):
        synthetic_experiment(root, name=name, datasets=("alpha", "beta"), seed=i)
    written = build_report(root, formats=("html",))
    index = root / "report" / "index.html"
    assert index in written
    page = parse(index.read_text())
    rows = page.tables["t-index"][1:]
    assert [r[0] for r in rows] == ["one", "two"]
    assert [r[2:5] for r in rows] == [["2", "3", "12"], ["2", "3", "12"]]
    methods = page.tables["t-methods"][1:]
    assert [(r[0], r[2]) for r in methods] == [
        (e, m) for e in ("one", "two") for m in ("nb / uncertainty", "svm / random",
                                                 "svm / uncertainty")]
    assert all(r[5] == "0 of 2" for r in methods)
    assert {h for h in page.hrefs if not h.startswith("#")} == {"one/report.html",
                                                                "two/report.html"}
    # an index over a tree of reports (two report folders) by the command line
    report_ok("--format", "html", root / "one", "--out", tmp_path / "html" / "one")
    res = invoke_report_index(tmp_path / "html")
    assert res.exit_code == 0, res.output
    tree = parse((tmp_path / "html" / "index.html").read_text())
    assert [r[0] for r in tree.tables["t-index"][1:]] == ["one"]


def invoke_report_index(*args):
    from typer.testing import CliRunner

    from alprbf.cli import app
    return CliRunner().invoke(app, ["report-index", *map(str, args)])


def test_report_index_without_pages_is_a_user_error(tmp_path):
    res = invoke_report_index(tmp_path)
    assert res.exit_code == 2 and "no report.html below" in res.output
    res = invoke_report_index(tmp_path / "missing")
    assert res.exit_code == 2 and "not found" in res.output


def test_unknown_format_names_html(experiment):
    res = invoke_report(experiment, "--format", "pdf")
    assert res.exit_code == 2 and "html" in res.output


# --------------------------------------------------------------------------- real browser


def _chromium() -> str | None:
    return os.environ.get("ALPRBF_CHROMIUM") or shutil.which("chromium") or shutil.which(
        "chromium-browser")


CHROMIUM = _chromium()
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")


def browse(url: str, tmp_path: Path, *extra: str) -> subprocess.CompletedProcess:
    """Headless Chromium on ``url`` with a fresh profile, no network services."""
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
    profile.mkdir()
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
           "--no-first-run", "--disable-background-networking", "--disable-component-update",
           "--disable-sync", "--disable-dev-shm-usage", f"--user-data-dir={profile}",
           "--enable-logging=stderr", "--v=0", *extra, url]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=False)


def dump(url: str, tmp_path: Path) -> tuple[_Tables, str]:
    res = browse(url, tmp_path, "--dump-dom")
    assert res.returncode == 0, res.stderr[-2000:]
    return parse(res.stdout), res.stderr


def console_messages(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


@needs_chromium
def test_browser_page_renders_tables_without_errors(report, tmp_path):
    url = (report / "report.html").resolve().as_uri()
    page, stderr = dump(url, tmp_path)
    assert page.ready, "the page's script did not run to its end"
    assert page.errors == "[]", page.errors
    assert not console_messages(stderr)
    for md in sorted(report.glob("*.md")):
        if md.name != "report.md":
            assert page.tables[f"t-{md.stem}"] == markdown_table(md), md.name
    shots = Path(os.environ.get("ALPRBF_SCREENSHOT_DIR") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    shot = shots / "report-html.png"
    res = browse(url, tmp_path, "--window-size=1280,2000", f"--screenshot={shot}")
    assert res.returncode == 0 and shot.read_bytes()[:4] == b"\x89PNG"
    index = tmp_path / "index-check"
    build_report(report.parent.parent, out_dir=index, formats=("html",))
    page, stderr = dump((index / "index.html").resolve().as_uri(), tmp_path)
    assert page.ready and page.errors == "[]" and not console_messages(stderr)
    assert [r[0] for r in page.tables["t-index"][1:]] == ["demo"]
    browse((index / "index.html").resolve().as_uri(), tmp_path, "--window-size=1280,600",
           f"--screenshot={shots / 'index-html.png'}")


@needs_chromium
def test_browser_sorts_tables(report, tmp_path):
    """``?sort=error_at_budget.2``: the rows in increasing order of the first method's
    error; ``.desc``: decreasing."""
    url = (report / "report.html").resolve().as_uri()
    md = markdown_table(report / "error_at_budget.md")
    col = 2
    values = sorted(float(r[col].split()[0]) for r in md[1:])
    for suffix, expect in (("", values), (".desc", values[::-1])):
        page, _ = dump(f"{url}?sort=error_at_budget.{col}{suffix}", tmp_path)
        assert page.errors == "[]", page.errors
        shown = [float(r[col].split()[0]) for r in page.tables["t-error_at_budget"][1:]]
        assert shown == expect
    page, _ = dump(f"{url}?sort=no_such_table.1", tmp_path)
    assert "no table no_such_table" in page.errors


@needs_chromium
def test_browser_reports_a_planted_error(report, tmp_path):
    """The error collector sees an uncaught exception and a failed image: the check above
    can fail."""
    bad = report / "bad.html"
    text = (report / "report.html").read_text()
    bad.write_text(text.replace("</main>", '<img src="missing.png"><script>'
                                          "no_such_function()</script></main>"))
    page, stderr = dump(bad.resolve().as_uri(), tmp_path)
    assert "no_such_function" in page.errors and "failed to load IMG" in page.errors
    assert any("no_such_function" in line for line in console_messages(stderr))
