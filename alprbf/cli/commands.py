"""The ``alprbf`` commands: thin commands over library functions.

Importing this module pins the CPU kernels first (:mod:`alprbf.cli` does, before NumPy loads).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from ..errors import UserError
from .common import check_choice, run_app, user_errors

#: Exit code of ``alprbf run`` when every task ran but some failed or timed out (1 is taken
#: by the check commands' "differences found", 2 by a user error, 130 by an interrupt).
FAILED_TASKS_EXIT = 3

app = typer.Typer(no_args_is_help=True, add_completion=False,
                  help="Reproducible pool-based active-learning benchmarks for PRBF networks.",
                  pretty_exceptions_enable=False)


def _check_reference(cfg, full=None) -> None:
    """Every row of the config's reference file must map to a method of it and to one of its
    data sets (of the unscaled config ``full``: a scale may keep fewer) or a registered data
    set (a reference file may be shared by configs that run a part of its table, as
    ``pen_digits_qbc`` shares Constantinopoulos & Likas 2008's); a misspelt data set is refused."""
    if cfg.reference:
        from ..datasets import DATASETS
        from ..report.io import check_reference

        full = full or cfg
        check_reference(cfg.reference, [f"{m.label} / {s.label}" for m, s in full.methods],
                        [d.label for d in full.datasets] + list(DATASETS))


def _check_names(config: Path) -> None:
    """Refuse a misspelt data set, model, strategy or parameter name from the catalogue, in a
    fraction of a second, before the config parser imports every registry (seconds); the
    parser checks it all again (YAML it cannot read is left to it as well)."""
    import yaml

    from . import catalogue

    try:
        data = yaml.safe_load(config.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return
    catalogue.check_names(data)


def _check_scale(full, scale: str, results: Path | None) -> None:
    """Name the scale when ``results`` holds a run of this config at another scale than
    ``scale`` (the usual reason for a digest mismatch)."""
    from ..engine.config import SCALES
    from ..store.results import run_digest

    digest = run_digest(results) if results is not None else None
    if digest is None or digest == full.with_scale(scale).digest():
        return
    for other in dict.fromkeys((*SCALES, *full.scales)):
        if other != scale and full.with_scale(other).digest() == digest:
            raise UserError(f"{results} holds the {other}-scale run of {full.name}, not the "
                            f"{scale}-scale one; add --scale {other}")


@app.command()
@user_errors
def run(
    config: Annotated[Path, typer.Argument(help="Experiment YAML file.")],
    jobs: Annotated[int, typer.Option("--jobs", "-j", help="Parallel workers.")] = 1,
    backend: Annotated[str, typer.Option(help="loky (local processes) or dask.")] = "loky",
    scheduler: Annotated[str | None, typer.Option(
        help="Dask scheduler address (tcp://host:8786); default: start a LocalCluster.")] = None,
    out: Annotated[Path | None, typer.Option(help="Results directory.")] = None,
    force: Annotated[bool, typer.Option(help="Discard finished tasks and run all again.")] = False,
    rerun_changed: Annotated[bool, typer.Option(
        help="The results directory holds another config's results: keep the tasks both "
             "configs define alike, delete and re-run the others (changed data sets or "
             "methods). The changed tasks of the whole directory are deleted, also those "
             "--only leaves out.")] = False,
    scale: Annotated[str, typer.Option(help="smoke or full (or a scale the config defines).")]
    = "full",
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
    only: Annotated[list[str] | None, typer.Option(
        help="Run only tasks whose id matches this pattern ('*__f0', 'pendigits__*'); "
             "repeatable.")] = None,
    checkpoint_every: Annotated[float, typer.Option(
        help="Seconds between checkpoints of a task in flight (a rerun resumes it there); "
             "0: after every query.")] = 300.0,
    no_checkpoints: Annotated[bool, typer.Option(
        "--no-checkpoints", help="Do not save or resume mid-task checkpoints.")] = False,
    task_threads: Annotated[int | None, typer.Option(
        help="Threads per task inside a query (QBC trains its committee members in "
             "parallel); results do not depend on it.  Default: CPUs / jobs.")] = None,
    task_timeout: Annotated[float | None, typer.Option(
        help="Seconds a task may run; a task past it is stopped and recorded as timed out "
             "(like a failed task).  Default: no limit.")] = None,
) -> None:
    """Run (or resume) an experiment and write one Parquet file per task.

    A task that fails or times out is recorded in RESULTS/failures/ (its traceback in a .log
    file), named on one line, and the other tasks go on; the run then ends with exit code
    3 (FAILED_TASKS_EXIT).  Running the same command again retries the failed tasks.
    """
    from ..engine.config import load_config
    from ..engine.execution import BACKENDS
    from ..engine.runner import run_experiment

    check_choice(backend, BACKENDS, "--backend")
    full = load_config(config)
    cfg = full.with_scale(scale)
    _check_reference(cfg, full)
    try:
        summary = run_experiment(cfg, out, jobs=jobs, backend=backend, scheduler=scheduler,
                                 force=force, progress=not quiet, only=only,
                                 checkpoint_every=None if no_checkpoints else checkpoint_every,
                                 task_threads=task_threads, rerun_changed=rerun_changed,
                                 task_timeout=task_timeout)
    except KeyboardInterrupt:
        typer.echo("interrupted: finished tasks and checkpoints are saved; run the same command "
                   "again to resume", err=True)
        raise typer.Exit(130) from None
    if summary.dropped is not None:
        typer.echo(f"kept the tasks that config {summary.extended} defines alike; deleted "
                   f"{summary.dropped} task files of its changed data sets or methods")
    elif summary.extended:
        typer.echo(f"extended the results of config {summary.extended} (this config adds data "
                   "sets or methods to it)")
    failed = f"{len(summary.failures)} failed, " if summary.failures else ""
    typer.echo(f"{summary.n_done} tasks run, {failed}{summary.n_skipped} already done, "
               f"{summary.seconds:.1f} s -> {summary.out_dir}")
    if summary.failures:
        timed_out = sum(f["kind"] == "timeout" for f in summary.failures)
        typer.echo(f"{len(summary.failures)} tasks failed"
                   + (f" ({timed_out} of them timed out)" if timed_out else "")
                   + f"; tracebacks in {summary.out_dir / 'failures'}/; run the same command "
                   "again to retry them", err=True)
        raise typer.Exit(FAILED_TASKS_EXIT)


@app.command()
@user_errors
def report(
    results: Annotated[Path, typer.Argument(help="Results directory (searched recursively).")],
    baseline: Annotated[str | None, typer.Option(
        help="Method for AULC/DUR, e.g. 'svc / uncertainty'.")] = None,
    out: Annotated[Path | None, typer.Option(help="Report directory.")] = None,
    format: Annotated[str, typer.Option("--format", help=(
        "Comma-separated: md,csv,tex (tables) and html (a self-contained page report.html per "
        "experiment, index.html over several), e.g. md,csv,tex,html."))]
    = "md,csv,tex",
    alpha: Annotated[float, typer.Option(help="Significance level for Nemenyi/CD.")] = 0.10,
    q_alpha: Annotated[float | None, typer.Option(
        help="Override the Nemenyi critical value q_alpha.")] = None,
    rp_measure: Annotated[str, typer.Option(
        help="RP accuracy: train_best (Reitmaier et al. 2016) or final.")] = "train_best",
    window: Annotated[float, typer.Option(
        help="DUR target window: last fraction of the budget.")] = 0.2,
    methods: Annotated[str | None, typer.Option(
        help="Comma-separated shell patterns on 'model / strategy': report only these "
             "methods, e.g. '*_literal / posterior_ratio,*_literal / qbc_prbf'.")] = None,
    curve_accuracy: Annotated[str, typer.Option(
        help="Accuracy behind AULC and DUR: test (held-out rows) or train (the training "
             "pool with true labels, Reitmaier et al. 2016's reading).")] = "test",
    merge_datasets: Annotated[str | None, typer.Option(
        help="Regex with one (group): data sets it matches are reported as one named by the "
             "group, e.g. 'mnist-(n[0-9]+)-[0-9]' (Nguyen & Smeulders 2004's digits per "
             "size).")] = None,
    error_at_fraction: Annotated[str | None, typer.Option(
        help="Comma-separated fractions of the database size (the config's rows) at which "
             "to tabulate the test error, e.g. 0.01,0.02,0.035.")] = None,
    rank_by: Annotated[str, typer.Option(
        help="What RP ranks: accuracy, balanced_accuracy, macro_f1 or log_loss (at the rows "
             "--rp-measure chooses).")] = "accuracy",
    posthoc: Annotated[str, typer.Option(
        help="Post-hoc test after Friedman: nemenyi or wilcoxon-holm.")] = "nemenyi",
    figures: Annotated[bool, typer.Option(
        help="Draw the figures (learning curves, CD diagram); --no-figures writes the tables "
             "alone, in a fraction of the time.")] = True,
    sanity: Annotated[Path | None, typer.Option(
        help="YAML list of the cells whose model fails the sanity suite (key 'fail', entries "
             "as in the health allow-list, e.g. results/sanity-failures.yaml): their "
             "published values get no verdict.")] = None,
) -> None:
    """Tables and plots from the Parquet results (never re-runs anything)."""
    formats = tuple(f.strip() for f in format.split(",") if f.strip())
    patterns = [m.strip() for m in methods.split(",") if m.strip()] if methods else None
    for f in formats:
        check_choice(f, ("md", "csv", "tex", "html"), "--format")
    if not results.is_dir():
        raise UserError(f"results directory not found: {results}")
    from ..report import build_report

    written = build_report(results, out_dir=out, baseline=baseline, formats=formats,
                           alpha=alpha, q_alpha=q_alpha, rp_measure=rp_measure, window=window,
                           methods=patterns, curve_accuracy=curve_accuracy,
                           merge_datasets=merge_datasets,
                           error_at_fraction=_fractions(error_at_fraction),
                           rank_by=rank_by, posthoc=posthoc, figures=figures,
                           sanity=sanity)
    for p in written:
        typer.echo(str(p))


@app.command("report-index")
@user_errors
def report_index(
    reports: Annotated[Path, typer.Argument(
        help="Directory searched recursively for report.html pages (alprbf report --format "
             "html).")],
    out: Annotated[Path | None, typer.Option(
        help="Where to write index.html (default: REPORTS).")] = None,
) -> None:
    """index.html over every HTML report below a directory (e.g. the five paper tables'
    reports written by `make html`): one sortable row per published table, linked."""
    if not reports.is_dir():
        raise UserError(f"reports directory not found: {reports}")
    from ..report.html import PAGE, index_over_tree

    if not any(reports.rglob(PAGE)):
        raise UserError(f"no {PAGE} below {reports}; write them first with `alprbf report "
                        "RESULTS --format html --out DIR`")
    typer.echo(str(index_over_tree(reports, out)))


@app.command("check-health")
@user_errors
def check_health(
    results: Annotated[list[Path], typer.Argument(
        help="Results directories (each searched recursively).")],
    allow: Annotated[Path | None, typer.Option(
        help="Allow-list YAML of degenerate cells kept on purpose, each with its reason "
             "(docs/health.md).")] = None,
) -> None:
    """Fail (exit 1) when a cell has degenerate tasks (constant predictors) that the
    allow-list does not explain; list them one line each, and the cells with tasks at chance
    (a flag that does not fail: balanced accuracy at most 1/K at the end)."""
    for r in results:
        if not r.is_dir():
            raise UserError(f"results directory not found: {r}")
    import pandas as pd

    from ..report.health import check_health as check
    from ..report.health import load_allow_list, stale_entries

    allowed = load_allow_list(allow) if allow is not None else []
    found = [check(r, allowed) for r in results]
    cells = pd.concat([c for c, _ in found], ignore_index=True)
    tasks = pd.concat([t for _, t in found], ignore_index=True)
    bad = cells[cells["degenerate"] > 0]
    failing = bad[bad["allowed"] == ""]
    reasons = list(dict.fromkeys(bad["allowed"][bad["allowed"] != ""]))
    for r in bad.itertuples(index=False):
        where = f"{r.experiment}: {r.dataset} / {r.method}: {r.degenerate} of {r.tasks} tasks"
        if r.allowed:
            typer.echo(f"allowed [{reasons.index(r.allowed) + 1}]: {where}")
            continue
        ids = tasks.loc[(tasks["experiment"] == r.experiment) & (tasks["dataset"] == r.dataset)
                        & (tasks["method"] == r.method) & tasks["degenerate"], "task_id"]
        typer.echo(f"DEGENERATE: {where} ({', '.join(ids)})")
    for i, reason in enumerate(reasons, 1):
        typer.echo(f"[{i}] {reason}")
    chance = cells[cells["at_chance"].fillna(0) > 0]
    for r in chance.itertuples(index=False):
        ids = tasks.loc[(tasks["experiment"] == r.experiment) & (tasks["dataset"] == r.dataset)
                        & (tasks["method"] == r.method) & (tasks["at_chance"] == True),  # noqa: E712
                        "task_id"]
        typer.echo(f"at chance (flag): {r.experiment}: {r.dataset} / {r.method}: "
                   f"{int(r.at_chance)} of {r.tasks} tasks ({', '.join(ids)})")
    stale = stale_entries(cells, allowed)
    for entry in stale:
        typer.echo(f"STALE allow-list entry (excuses no degenerate cell; remove it): {entry}")
    typer.echo(f"{len(cells)} cells checked; {len(bad)} with degenerate tasks, "
               f"{len(bad) - len(failing)} of them allow-listed; {len(stale)} stale entries; "
               f"{len(chance)} with tasks at chance (a flag)")
    if len(failing) or stale:
        raise typer.Exit(1)


def _fractions(text: str | None) -> tuple[float, ...]:
    if not text:
        return ()
    try:
        return tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise UserError(f"--error-at-fraction expects numbers separated by commas, e.g. "
                        f"0.01,0.02,0.035; got {text!r}") from None


@app.command()
@user_errors
def compare(
    dir_a: Annotated[Path, typer.Argument(metavar="DIR_A",
                                          help="Results directory (with tasks/).")],
    dir_b: Annotated[Path, typer.Argument(metavar="DIR_B",
                                          help="Results directory to compare it with.")],
    ignore: Annotated[list[str] | None, typer.Option(
        help="Also leave out this column (repeatable), e.g. one an older run did not "
             "write.")] = None,
) -> None:
    """Check that two runs wrote the same rows (timing columns aside).

    Task file by task file; exit 1 and list the tasks that differ or exist on one side only.
    """
    from ..store.results import compare_results, task_files

    differences = compare_results(dir_a, dir_b, ignore or ())
    for d in differences:
        typer.echo(str(d))
    if differences:
        raise typer.Exit(1)
    typer.echo(f"identical: {len(task_files(dir_a))} task files (timing columns aside)")


@app.command()
@user_errors
def compact(
    results: Annotated[Path, typer.Argument(metavar="RESULTS_DIR",
                                            help="Results directory (with tasks/).")],
) -> None:
    """Rewrite a results directory's task files in the compact layout (rows unchanged).

    Files written by alprbf before the compact layout take about twice the bytes; each file's
    checksum is verified, the rewrite is checked to hold the same rows, and the checksum file
    is renewed.
    """
    from ..store.results import compact_task_files, task_files

    if not task_files(results):
        raise UserError(f"{results} holds no task files (expected {results}/tasks/*.parquet)")
    n, before, after = compact_task_files(results)
    typer.echo(f"{results}: {n} task files rewritten, {before / 1e6:.2f} MB -> "
               f"{after / 1e6:.2f} MB")


@app.command("check-record")
@user_errors
def check_record(
    config: Annotated[Path, typer.Argument(help="The config the record was made with.")],
    record: Annotated[Path, typer.Argument(help="The recorded results directory.")],
    only: Annotated[list[str], typer.Option(
        help="Re-run the recorded tasks whose id matches this pattern; repeatable.")],
    scale: Annotated[str, typer.Option(help="The scale the record was made at.")] = "full",
    jobs: Annotated[int, typer.Option("--jobs", "-j", help="Parallel workers.")] = 1,
    queries: Annotated[int | None, typer.Option(
        help="Re-run only each task's first N queries and compare those rows (for tasks too "
             "slow to re-run whole).")] = None,
    first_fold: Annotated[bool, typer.Option(
        "--first-fold", help="Re-run only the matching tasks of repetition 0, fold 0.")] = False,
) -> None:
    """Re-run some recorded tasks and compare them bit for bit with the record.

    Exit 1 and list the tasks whose rows changed (timing columns aside).
    """
    from ..engine.config import load_config
    from ..engine.record import check_record as check

    full = load_config(config)
    _check_scale(full, scale, record)
    checked, differences = check(full.with_scale(scale), record, only, jobs=jobs,
                                 queries=queries, first_fold=first_fold)
    if not checked and not differences:
        typer.echo(f"{record}: none of the tasks matching {' '.join(only)} is recorded yet "
                   "(nothing to check)")
        return
    for d in differences:
        typer.echo(f"changed: {d}")
    if differences:
        typer.echo(f"{len(differences)} of {len(checked)} re-run tasks differ from {record}; "
                   "fix the change or re-record the table (README: reproduction record)")
        raise typer.Exit(1)
    part = ("" if queries is None
            else f" over their first {queries} queries (all of a task with fewer)")
    typer.echo(f"{record}: {len(checked)} re-run tasks identical to the record{part}")


@app.command()
@user_errors
def status(
    config: Annotated[Path, typer.Argument(help="Experiment YAML file.")],
    out: Annotated[Path | None, typer.Option(
        help="Results directory (default: the one `alprbf run` writes to).")] = None,
    scale: Annotated[str, typer.Option(help="smoke or full (or a scale the config defines).")]
    = "full",
    only: Annotated[list[str] | None, typer.Option(
        help="Count only tasks whose id matches this pattern; repeatable.")] = None,
) -> None:
    """How far a run has got: tasks finished, in flight and to do per cell (read only).

    With the task-hours of the finished tasks and a projection of the rest from them.
    """
    from rich.console import Console
    from rich.table import Table

    from ..engine.config import load_config
    from ..engine.status import run_status

    full = load_config(config)
    _check_scale(full, scale, out)
    st = run_status(full.with_scale(scale), out, only)

    def hours(s: float | None) -> str:
        return "?" if s is None else f"{s / 3600:.2f}"

    table = Table(title=f"{st.out}", show_footer=True)
    table.add_column("data set", "total", no_wrap=True)
    table.add_column("method", no_wrap=True)
    table.add_column("finished", f"{st.total('finished')}/{st.total('planned')}",
                     justify="right")
    table.add_column("in flight", str(st.total("in_flight")), justify="right")
    table.add_column("failed", str(st.total("n_failed")), justify="right")
    table.add_column("task-h", hours(st.total("seconds")), justify="right")
    table.add_column("to do, h", hours(st.projected_seconds), justify="right")
    for c in st.cells:
        done = f"{c.finished}/{c.planned}" + (f" ({c.damaged} damaged)" if c.damaged else "")
        table.add_row(c.dataset, c.method, done, str(c.in_flight or ""), str(c.n_failed or ""),
                      hours(c.seconds), hours(c.projected_seconds) if c.to_do else "")
    console = Console()
    if not console.is_terminal:   # a pipe or a file: no 80-column wrapping
        console = Console(width=160)
    console.print(table)
    typer.echo("to do, h: projected from the finished tasks of the same cell (?: none "
               "finished yet)")
    for c in st.cells:
        for task_id, p in c.progress.items():
            saved = time.strftime("%Y-%m-%d %H:%M", time.localtime(p.saved))
            typer.echo(f"in flight: {task_id}: {p.n_labeled} of {p.target} labels at its "
                       f"checkpoint ({saved})")
    for c in st.cells:
        for task_id, f in c.failed.items():
            what = "timed out" if f.get("kind") == "timeout" else "failed"
            typer.echo(f"{what}: {task_id}: {f.get('error')}: {f.get('message')} "
                       f"({st.out / (f.get('log') or 'failures')})")
    typer.echo(f"held by: {st.holder}" if st.holder
               else "no run holds this directory now")


@app.command("list")
@user_errors
def list_(kind: Annotated[str | None, typer.Argument(
        help="papers, datasets, models or strategies.")] = None) -> None:
    """The papers reproduced, and the registered names with their parameters."""
    from rich.console import Console
    from rich.table import Table

    from ..papers import PAPERS
    from . import catalogue

    check_choice(kind, ("papers", *catalogue.KINDS), "kind")
    console = Console()
    if kind in (None, "papers"):
        table = Table(title="papers", show_lines=False,
                      caption="make table-<key> runs make table-NNN (table NNN: the number of "
                              "the paper's file, results/table-NNN-full/)")
        for column in ("key", "table", "paper", "page", "recorded configs"):
            table.add_column(column, style="bold" if column == "key" else None)
        for p in PAPERS.values():
            table.add_row(p.key, p.number, f"{p.authors} {p.year}, {p.title} ({p.venue})",
                          p.page, ", ".join(p.configs))
        console.print(table)
        if kind:
            return
    rows = catalogue.load()   # what the registries hold, without importing them (seconds)
    for name in [kind] if kind else catalogue.KINDS:
        table = Table(title=name, show_lines=False)
        table.add_column("name", style="bold")
        table.add_column("parameters (default)")
        table.add_column("description")
        for row in rows[name]:
            table.add_row(*row)
        console.print(table)


@app.command()
@user_errors
def validate(
    config: Annotated[Path, typer.Argument(help="Experiment YAML file.")],
    scale: Annotated[str, typer.Option(help="smoke or full.")] = "full",
) -> None:
    """Check a config (names, parameters, data, budgets) without running it."""
    _check_names(config)
    from ..engine.config import load_config
    from ..engine.runner import load_datasets, plan
    from ..engine.runner import validate as check

    full = load_config(config)
    cfg = full.with_scale(scale)
    _check_reference(cfg, full)
    datasets = load_datasets(cfg)
    queries = sorted(set(check(cfg, datasets).values()))
    tasks = plan(cfg)
    p = cfg.protocol
    each = (f"{queries[0]} queries each" if len(queries) == 1
            else f"{queries[0]} to {queries[-1]} queries per task")
    typer.echo(f"{config}: ok ({len(cfg.datasets)} datasets x {len(cfg.methods)} methods x "
               f"{p.repetitions} repetitions x {p.n_folds} folds = {len(tasks)} tasks, "
               f"{each})")


def _mount_subapps() -> None:
    try:
        from .datasets import datasets_app
    except ImportError:  # the datasets CLI is optional while it is being built
        return
    app.add_typer(datasets_app, name="datasets", help="List, fetch and verify data sets.")


_mount_subapps()


def main() -> None:
    run_app(app)


if __name__ == "__main__":
    main()
