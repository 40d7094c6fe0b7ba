"""``alprbf datasets ...``: list, describe, fetch and verify the data sets.

Mounted by :mod:`alprbf.cli.commands` as a sub-command; also runnable on its own with
``python -m alprbf.cli.datasets``.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Annotated

import typer

from ..errors import UserError
from .common import run_app, user_errors

datasets_app = typer.Typer(no_args_is_help=True, help="List, describe, fetch and verify data sets.")

# The variables of alprbf.datasets.fetch (ENV_HOME, ENV_MIRROR), spelt out here so that `--help`
# need not import the data sets (pandas, sklearn); tests/test_datasets_cli.py checks they agree.
HOME_VAR, MIRROR_VAR = "ALPRBF_DATA_HOME", "ALPRBF_DATA_MIRROR"

HomeOpt = Annotated[Path | None, typer.Option("--data-home", help=f"Cache directory (default: "
                                              f"${HOME_VAR} or the user cache dir).")]
MirrorOpt = Annotated[Path | None, typer.Option("--mirror", help=f"Read-only local mirror "
                                                f"(default: ${MIRROR_VAR}).")]


def _registry():
    """The data set registry (imported when a command runs, not with ``--help``)."""
    from ..datasets import DATASETS

    return DATASETS


def _paper(cls) -> tuple[str, int, int, int, str] | None:
    """(tables, n, d, K, note) as the papers print a data set class, or None if they do not."""
    if not cls.papers:
        return None
    n, d, k = cls.paper_shape or cls.expected
    return cls.papers, n, d, k, cls.paper_note


@functools.cache
def paper_shapes() -> dict[str, tuple[str, int, int, int, str]]:
    """Shapes printed in the papers' data tables: name -> (table, n, d, K, note on any
    difference), as the data set classes declare them (``papers``, ``paper_shape`` or
    ``expected``, ``paper_note``)."""
    datasets = _registry()
    return {name: row for name in datasets if (row := _paper(datasets[name])) is not None}


def _published(cls) -> bool:
    from ..datasets.published import PublishedDataset

    return issubclass(cls, PublishedDataset)


def _origin(cls) -> str:
    if _published(cls):
        return "file"
    return getattr(cls, "source", "") or "generated"


def _availability(cls, home, mirror) -> str:
    from ..datasets.fetch import is_available

    if not _published(cls):
        return "n/a"
    places = [is_available(cls.folder, f, home=home, mirror=mirror) for f in cls.files]
    if all(p == "cache" for p in places):
        return "cache"
    if all(p is not None for p in places):
        return "mirror" if all(p == "mirror" for p in places) else "cache+mirror"
    return "partial" if any(places) else "no"


def _shape(cls) -> tuple[str, str, str]:
    exp = getattr(cls, "expected", None)
    if exp is None:
        return "?", "?", "?"
    return tuple(str(v) for v in exp)  # type: ignore[return-value]


@datasets_app.command("list")
@user_errors
def list_cmd(data_home_: HomeOpt = None, mirror: MirrorOpt = None) -> None:
    """Every registered data set: shape, source and whether its files are at hand."""
    from rich.console import Console
    from rich.table import Table

    from ..datasets.fetch import data_home, mirror_dir

    mirror_dir(mirror)  # refuse a bad mirror path early
    datasets = _registry()
    table = Table(title=f"data sets (cache: {data_home(data_home_)})")
    for col in ("name", "n", "d", "K", "source", "cached?", "description"):
        table.add_column(col, justify="right" if col in ("n", "d", "K") else "left")
    for name in datasets:
        cls = datasets[name]
        n, d, k = _shape(cls)
        table.add_row(name, n, d, k, _origin(cls), _availability(cls, data_home_, mirror),
                      getattr(cls, "description", ""))
    Console(width=160).print(table)


@datasets_app.command("info")
@user_errors
def info_cmd(name: Annotated[str, typer.Argument(help="Registered data set name.")],
             data_home_: HomeOpt = None, mirror: MirrorOpt = None) -> None:
    """Description, citation, licence, parameters and files of one data set."""
    from ..datasets.fetch import is_available
    from ..registry import parameters_of

    cls = _registry()[name]
    doc = (cls.__doc__ or "").strip()
    lines = [f"{name}: {getattr(cls, 'description', '')}", "", doc, ""]
    n, d, k = _shape(cls)
    lines.append(f"expected shape: n={n} d={d} K={k}")
    if name in paper_shapes():
        t, pn, pd_, pk, note = paper_shapes()[name]
        lines.append(f"paper ({t}): n={pn} d={pd_} K={pk}" + (f" - {note}" if note else ""))
    for attr in ("citation", "licence", "homepage"):
        if getattr(cls, attr, ""):
            lines.append(f"{attr}: {getattr(cls, attr)}")
    params = parameters_of(cls)
    lines.append("parameters: " + (", ".join(f"{k}={v!r}" for k, v in params.items()) or "none"))
    if _published(cls):
        counts = ", ".join(f"{c}: {v}" for c, v in cls.class_counts.items())
        lines.append(f"class counts (all rows): {counts}")
        lines.append(f"files (folder '{cls.folder}' in the cache / mirror):")
        for f in cls.files:
            where = is_available(cls.folder, f, home=data_home_, mirror=mirror) or "not at hand"
            comp = f" (served as .{f.compression}, decompressed)" if f.compression else ""
            member = f" (member {f.member} of the archive)" if f.member else ""
            lines.append(f"  {f.name}  sha256 {f.sha256}  [{where}]")
            lines.append(f"      {f.url}{comp}{member}")
    typer.echo("\n".join(lines))


@datasets_app.command("fetch")
@user_errors
def fetch_cmd(name: Annotated[str | None, typer.Argument(help="Data set name.")] = None,
              all_: Annotated[bool, typer.Option("--all", help="Every file-backed data set.")]
              = False,
              data_home_: HomeOpt = None, mirror: MirrorOpt = None) -> None:
    """Make a data set's files available: cache, else mirror, else download (verified)."""
    if all_ == (name is not None):
        raise UserError("give a data set NAME or --all (not both); see 'alprbf datasets list'")
    from ..datasets.fetch import resolve

    datasets = _registry()
    names = [n for n in datasets if _published(datasets[n])] if all_ else [name]
    failed = 0
    for n in names:
        cls = datasets[n]
        if not _published(cls):
            typer.echo(f"{n}: generated or bundled, nothing to fetch")
            continue
        for f in cls.files:
            try:
                path, origin = resolve(n, cls.folder, f, home=data_home_, mirror=mirror)
                typer.echo(f"{n}/{f.name}: {origin} {path}")
            except UserError as exc:
                if not all_:
                    raise
                failed += 1
                typer.echo(f"error: {exc}", err=True)
    if failed:
        raise typer.Exit(1)


def verify_one(name: str, home=None, mirror=None, allow_download: bool = False) -> dict:
    """Load one data set and check it; returns a row for the verify table."""
    import numpy as np

    cls = _registry()[name]
    row = {"name": name, "status": "ok", "n": "", "d": "", "K": "", "source": "", "detail": ""}
    if name in paper_shapes():
        t, pn, pd_, pk, note = paper_shapes()[name]
        row["paper"] = f"{pn} x {pd_} x {pk} ({t})"
        row["detail"] = note
    if name == "file":
        row.update(status="skipped", detail="your own file: needs params path and target")
        return row
    if name == "openml":
        row.update(status="skipped", detail="any OpenML id: needs params data_id")
        return row
    try:
        if _published(cls):
            if not allow_download and _availability(cls, home, mirror) in ("no", "partial"):
                row["status"] = "missing"
                row["detail"] = "files not in cache or mirror (alprbf datasets fetch " + name + ")"
                return row
            ds = cls().load_files(home=home, mirror=mirror, allow_download=allow_download,
                                  progress=False)
        else:
            ds = cls().load(np.random.SeedSequence(0))
            exp = getattr(cls, "expected", None)
            if exp is not None and (ds.n_samples, ds.n_features, ds.n_classes) != tuple(exp):
                raise UserError(f"generated {ds.X.shape} with {ds.n_classes} classes, "
                                f"expected {exp}")
        row.update(n=str(ds.n_samples), d=str(ds.n_features), K=str(ds.n_classes),
                   source=ds.source)
    except UserError as exc:
        row.update(status="FAIL", detail=str(exc))
    return row


@datasets_app.command("verify")
@user_errors
def verify_cmd(names: Annotated[list[str] | None, typer.Argument(help="Data sets (default: all).")]
               = None,
               data_home_: HomeOpt = None, mirror: MirrorOpt = None,
               download: Annotated[bool, typer.Option(help="Download files that are missing.")]
               = False) -> None:
    """Load each available data set; check checksums, shape, class counts (exit 1 on failure)."""
    from rich.console import Console
    from rich.table import Table

    from ..datasets.fetch import mirror_dir

    mirror_dir(mirror)
    datasets = _registry()
    for n in names or []:
        datasets[n]  # unknown names -> UserError with the valid choices
    rows = [verify_one(n, data_home_, mirror, download) for n in (names or list(datasets))]
    table = Table(title="dataset verification")
    for col in ("name", "status", "n", "d", "K", "paper n x d x K (table)", "source", "detail"):
        table.add_column(col, overflow="fold")
    for r in rows:
        style = {"ok": "green", "FAIL": "bold red", "missing": "yellow",
                 "skipped": "dim"}[r["status"]]
        table.add_row(r["name"], f"[{style}]{r['status']}[/]", r["n"], r["d"], r["K"],
                      r.get("paper", ""), r["source"], r["detail"])
    Console(width=200).print(table)
    n_fail = sum(r["status"] == "FAIL" for r in rows)
    n_ok = sum(r["status"] == "ok" for r in rows)
    n_missing = sum(r["status"] == "missing" for r in rows)
    n_skip = sum(r["status"] == "skipped" for r in rows)
    typer.echo(f"{n_ok} ok, {n_fail} failed, {n_missing} not available, {n_skip} skipped")
    if n_fail:
        raise typer.Exit(1)


def main() -> None:
    run_app(datasets_app)


if __name__ == "__main__":
    main()
