"""The result files: their schema, how a task file is written and read, how two runs compare.

One Parquet file per task, one row per evaluated iteration, and beside it the SHA-256 of the
file's bytes::

    <out>/tasks/<task_id>.parquet
    <out>/tasks/<task_id>.parquet.sha256

A task that failed (raised, or ran past its time limit) has no task file but a failure
record (:func:`write_failure`, :func:`read_failures`) until a later run finishes it::

    <out>/failures/<task_id>.json   machine-readable: task identity, kind, error, message
    <out>/failures/<task_id>.log    the full traceback

The runner writes them (:func:`write_task`: the Parquet file, then its checksum, each
atomically); the report and the tests read them (:func:`read_task`, :func:`read_results`),
which refuse a file whose checksum is missing or wrong and a directory whose task files come
from another config than its ``run.json``; :func:`task_problem` tells the runner which
finished tasks to run again; :func:`compare_results` checks that two runs wrote the same
rows.  This module imports nothing from the models, the protocol or the runner, so
that the report can use it.
"""

from __future__ import annotations

import hashlib
import json
import math
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..errors import UserError
from .fileio import write_atomic

#: Columns that identify a learning curve.
KEY_COLUMNS = ("experiment", "dataset", "model", "strategy", "fold", "repetition")

#: Columns that hold wall-clock measurements (excluded from determinism comparisons).
TIMING_COLUMNS = ("fit_seconds", "query_seconds", "eval_seconds")

#: Health diagnostics (see :func:`alprbf.engine.protocol.prediction_diagnostics`): what the model
#: predicts at each evaluation and, whenever they change, the model's own choices.  They
#: observe a run and never feed back into it; records written before them lack them.
DIAGNOSTIC_COLUMNS = ("n_pred_classes_test", "n_pred_classes_pool", "max_pred_share_test",
                      "max_pred_share_pool", "model_state")

#: Class-balanced measures of the tested rows at each evaluation (see
#: :func:`alprbf.engine.protocol.class_scores`,
#: :func:`alprbf.engine.protocol.clipped_log_loss`; log-loss is null for a model without
#: probabilities).  Like the diagnostics, records written before them lack them and are not
#: compared on them.
METRIC_COLUMNS = ("test_balanced_accuracy", "test_macro_f1", "test_log_loss")

#: Columns that a record may predate: :func:`compare_results` leaves one out when either file
#: lacks it (all null there).
LATER_COLUMNS = (*DIAGNOSTIC_COLUMNS, *METRIC_COLUMNS)

#: Columns added after the first task files were written: read as nulls where absent.
OPTIONAL_COLUMNS = ("eval_seconds", "n_components_presplit", *LATER_COLUMNS)

SCHEMA = pa.schema([
    ("experiment", pa.string()),      # config name (plus "-<scale>" for non-full scales)
    ("dataset", pa.string()),         # dataset label
    ("model", pa.string()),           # model label
    ("strategy", pa.string()),        # strategy label
    ("fold", pa.int32()),             # 0-based test fold
    ("repetition", pa.int32()),       # 0-based repetition of the cross-validation
    ("iteration", pa.int32()),        # query round (0 = initial labeled set)
    ("n_labeled", pa.int32()),        # |L| when the model of this row was fitted
    ("test_error", pa.float64()),     # 1 - test_accuracy, on the test fold
    ("test_accuracy", pa.float64()),
    ("train_accuracy", pa.float64()), # accuracy on the whole training part L u U, true labels
    ("labeled_accuracy", pa.float64()),  # accuracy on L
    ("model_size", pa.int64()),       # components / support vectors; null if not meaningful
    ("n_components_presplit", pa.int64()),  # components before the final split; null if none
    ("fit_seconds", pa.float64()),    # wall time of this row's fit
    ("query_seconds", pa.float64()),  # wall time of the queries that added `queried`
    ("eval_seconds", pa.float64()),   # wall time of this row's evaluation (test, train, L)
    ("queried", pa.list_(pa.int64())),         # rows (dataset indices) labeled since last row
    ("queried_labels", pa.list_(pa.int64())),  # their class codes
    ("task_id", pa.string()),
    ("n_pred_classes_test", pa.int32()),   # distinct classes predicted on the tested rows
    ("n_pred_classes_pool", pa.int32()),   # ... on the whole training part (L u U)
    ("max_pred_share_test", pa.float64()), # largest predicted-class share on the tested rows
    ("max_pred_share_pool", pa.float64()), # ... on the training part
    ("model_state", pa.string()),          # JSON of Learner.diagnostics(); null: unchanged
    ("test_balanced_accuracy", pa.float64()),  # mean recall over the classes of the tested rows
    ("test_macro_f1", pa.float64()),           # mean F1 over the classes tested or predicted
    ("test_log_loss", pa.float64()),   # -mean log P(true class), clipped; null: no probabilities
])

COLUMNS = tuple(SCHEMA.names)

TASKS_DIR = "tasks"
"""Sub-directory of a results directory that holds the task files."""

EXECUTION_KEY = b"alprbf.execution"
"""Parquet key-value metadata of a task file: JSON of how the task ran (see :func:`write_task`)."""

SELECTED_KEY = b"alprbf.selected"
"""Parquet key-value metadata of a task file: JSON of a strategy parameter chosen by inner CV
(``df.attrs["selected"]`` of :func:`alprbf.engine.protocol.run_task`)."""

CONFIG_DIGEST_KEY = b"alprbf.config_digest"
"""Parquet key-value metadata of a task file: digest of the config that wrote it."""

CHECKSUM_SUFFIX = ".sha256"
"""A task file's checksum file is the task file's name plus this suffix."""

FAILURES_DIR = "failures"
"""Sub-directory of a results directory that holds the records of failed tasks."""

#: Keys of a failure record (:func:`write_failure`), in the order they are written.
FAILURE_KEYS = ("task_id", "dataset", "model", "strategy", "repetition", "fold", "kind",
                "error", "message", "seconds", "finished_at", "config_digest", "log")


def model_state_json(state: dict) -> str:
    """The ``model_state`` column's text for a learner's diagnostics: JSON with sorted keys
    (so the same state gives the same bytes), numpy scalars and arrays as plain values."""
    return json.dumps(state, sort_keys=True, default=_json_value)


def _json_value(value: object) -> object:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"diagnostics value of type {type(value).__name__} is not JSON")


# --------------------------------------------------------------------------- files


def task_file(out: str | Path, task_id: str) -> Path:
    """The task file of task ``task_id`` in results directory ``out``."""
    return Path(out) / TASKS_DIR / f"{task_id}.parquet"


def task_files(out: str | Path) -> list[Path]:
    """The task files of results directory ``out``, sorted by name (temporary files aside)."""
    return sorted(p for p in (Path(out) / TASKS_DIR).glob("*.parquet")
                  if not p.name.startswith("."))


def checksum_file(path: str | Path) -> Path:
    """The checksum file of task file ``path``."""
    path = Path(path)
    return path.with_name(path.name + CHECKSUM_SUFFIX)


def write_task(df: pd.DataFrame, path: Path, execution: dict | None = None,
               config_digest: str | None = None) -> None:
    """Write one task's rows atomically as Parquet, then its checksum file.

    Parameters
    ----------
    df : pandas.DataFrame
        The task's rows, columns as in :data:`SCHEMA`.
    path : Path
        The task file (:func:`task_file`); its directory must exist.
    execution : dict, optional
        How the task ran (workers, backend, threads per task), stored in the file's key-value
        metadata under ``alprbf.execution``: it explains the timing columns, and unlike
        ``run.json``, which the last invocation rewrites, it stays with the task's rows.
    config_digest : str, optional
        Digest of the config that produced the rows (metadata ``alprbf.config_digest``), so
        that a reader can refuse a directory that mixes the task files of two configs.

    A strategy parameter chosen by inner CV (``df.attrs["selected"]``, from
    :func:`alprbf.engine.protocol.run_task`) goes to the metadata ``alprbf.selected`` (JSON).
    """
    table = pa.Table.from_pandas(df, schema=SCHEMA, preserve_index=False)
    meta = dict(table.schema.metadata or {})
    if execution is not None:
        meta[EXECUTION_KEY] = json.dumps(execution, sort_keys=True).encode()
    if config_digest is not None:
        meta[CONFIG_DIGEST_KEY] = config_digest.encode()
    if df.attrs.get("selected"):
        meta[SELECTED_KEY] = json.dumps(df.attrs["selected"], sort_keys=True).encode()
    _write_bytes(path, _compact_bytes(table.replace_schema_metadata(meta)))


def failure_file(out: str | Path, task_id: str) -> Path:
    """The failure record (JSON) of task ``task_id`` in results directory ``out``; its
    traceback is the same name with ``.log``."""
    return Path(out) / FAILURES_DIR / f"{task_id}.json"


def write_failure(out: str | Path, record: dict, traceback: str) -> Path:
    """Write the record of a failed task: its traceback to ``failures/<task_id>.log``, then
    the JSON record (:data:`FAILURE_KEYS`; ``log`` is set to the log's path relative to
    ``out``), each atomically.  Returns the log's path."""
    path = failure_file(out, record["task_id"])
    path.parent.mkdir(parents=True, exist_ok=True)
    log = path.with_suffix(".log")
    write_atomic(log, traceback.encode())
    rec = {k: record.get(k) for k in FAILURE_KEYS}
    rec["log"] = f"{FAILURES_DIR}/{log.name}"
    write_atomic(path, (json.dumps(rec, indent=1) + "\n").encode())
    return log


def clear_failure(out: str | Path, task_id: str) -> None:
    """Forget an earlier failure of ``task_id`` (it has finished now); the failures
    directory goes when it is left empty."""
    path = failure_file(out, task_id)
    path.unlink(missing_ok=True)
    path.with_suffix(".log").unlink(missing_ok=True)
    try:
        path.parent.rmdir()
    except OSError:
        pass


def read_failures(out: str | Path) -> list[dict]:
    """The failure records of results directory ``out`` (sorted by task id) whose task has
    no valid task file: a record left beside a finished task (a later run finished it) is
    not a failure.  A record that is not valid JSON is reported with kind ``"unreadable"``."""
    out = Path(out)
    found = []
    for path in sorted((out / FAILURES_DIR).glob("*.json")):
        if path.name.startswith("."):
            continue
        task_id = path.stem
        if task_file(out, task_id).exists() and task_problem(task_file(out, task_id)) is None:
            continue
        try:
            rec = json.loads(path.read_text())
            if not isinstance(rec, dict):
                raise ValueError("not a JSON object")
        except (OSError, ValueError) as exc:
            rec = {"task_id": task_id, "kind": "unreadable", "message": str(exc)}
        found.append({k: rec.get(k) for k in FAILURE_KEYS} | {"task_id": task_id})
    return found


def _compact_bytes(table: pa.Table) -> bytes:
    """The table as a Parquet file in the compact layout (:func:`compact_task_files`)."""
    meta = {k: v for k, v in (table.schema.metadata or {}).items() if k != b"pandas"}
    sink = pa.BufferOutputStream()
    pq.write_table(table.replace_schema_metadata(meta), sink, compression="zstd",
                   write_statistics=False)
    return sink.getvalue().to_pybytes()


def _write_bytes(path: Path, data: bytes) -> None:
    """A task file's bytes, then its checksum file (each atomically)."""
    write_atomic(path, data)
    write_atomic(checksum_file(path), f"{hashlib.sha256(data).hexdigest()}  {path.name}\n"
                 .encode())


def _compression(data: bytes) -> str | None:
    """Codec of the first column chunk of a Parquet file's bytes (None without rows)."""
    meta = pq.ParquetFile(pa.BufferReader(data)).metadata
    return meta.row_group(0).column(0).compression if meta.num_row_groups else None


def compact_task_files(out: str | Path) -> tuple[int, int, int]:
    """Rewrite a results directory's task files in the compact layout, rows unchanged.

    The compact layout (what :func:`write_task` writes since it was introduced) drops the
    pandas metadata (the schema is :data:`SCHEMA`, so readers do not need it) and the column
    statistics, and compresses with zstd: about half the bytes of the former default layout,
    which matters for the tracked reproduction record.  Each file's checksum is verified
    first, the rewritten table must equal the original (values, types and the alprbf
    metadata), and the checksum file is rewritten with it.

    Returns
    -------
    (files rewritten, bytes before, bytes after)

    Raises
    ------
    UserError
        A task file whose checksum fails (it is left as it is).
    """
    n = before = after = 0
    for path in task_files(out):
        data = path.read_bytes()
        problem = _checksum_problem(path, data)
        if problem:
            raise UserError(f"task file {path} {problem}; not rewritten")
        table = pq.read_table(pa.BufferReader(data))
        meta = table.schema.metadata or {}
        if b"pandas" not in meta and _compression(data) == "ZSTD":
            continue
        compact = _compact_bytes(table)
        new = pq.read_table(pa.BufferReader(compact))
        kept = {k: v for k, v in meta.items() if k != b"pandas"}
        if not (new.equals(table.replace_schema_metadata(kept))
                and (new.schema.metadata or {}) == kept):   # checked before the file changes
            raise AssertionError(f"{path}: the compact rewrite would change the rows")
        _write_bytes(path, compact)
        n, before, after = n + 1, before + len(data), after + len(compact)
    return n, before, after


def _checksum_problem(path: Path, data: bytes) -> str | None:
    """Why ``data`` (the bytes of task file ``path``) cannot be trusted, or None."""
    try:
        expected = checksum_file(path).read_text().split()[0]
    except (OSError, IndexError):
        return "has no checksum file"
    if hashlib.sha256(data).hexdigest() != expected:
        return "does not match its checksum (damaged or edited)"
    return None


def task_problem(path: str | Path) -> str | None:
    """Why the task file ``path`` cannot be trusted, or None when its checksum holds.

    A file fails when its checksum file is missing (a run died between the two writes, or an
    older alprbf wrote it) or does not match the file's bytes (a damaged or edited file).
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    return _checksum_problem(path, data)


def _read_table(path: Path, verify: bool = False,
                expected_digests: Sequence[str] | None = None) -> pa.Table:
    """The rows of one task file as an Arrow table with exactly the columns of :data:`SCHEMA`.

    The file is read once; with ``verify`` its bytes are checked against the checksum file
    and its recorded config digest (if any) against ``expected_digests`` (if given; the
    first is the directory's current config).
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UserError(f"unreadable result file {path}: {exc}") from None
    if verify:                                     # before parsing: damage can break either
        problem = _checksum_problem(path, data)
        if problem:
            raise UserError(f"task file {path} {problem}; run the experiment again into "
                            f"{path.parent.parent} (alprbf run) to redo that task, or delete "
                            "the file")
    try:
        table = pq.read_table(pa.BufferReader(data))
    except pa.ArrowException as exc:
        raise UserError(f"unreadable result file {path}: {exc}") from None
    if verify:
        digest = (table.schema.metadata or {}).get(CONFIG_DIGEST_KEY)
        if expected_digests and digest is not None \
                and digest.decode() not in expected_digests:
            raise UserError(f"{path.parent.parent} mixes the results of two configs: "
                            f"{path.name} was written by config {digest.decode()}, run.json is "
                            f"of config {expected_digests[0]}; keep one experiment per "
                            "directory")
    for c in OPTIONAL_COLUMNS:
        if c not in table.column_names:
            table = table.append_column(c, pa.nulls(table.num_rows, SCHEMA.field(c).type))
    missing = [c for c in COLUMNS if c not in table.column_names]
    if missing:
        raise UserError(f"result file {path} lacks columns {', '.join(missing)}; "
                        f"expected the alprbf results schema: {', '.join(COLUMNS)}")
    try:
        return table.select(list(COLUMNS)).cast(SCHEMA)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise UserError(f"result file {path} does not match the results schema: {exc}") from None


def read_task(path: str | Path) -> pd.DataFrame:
    """The rows of one task file, columns as in :data:`COLUMNS` (not verified).

    Raises
    ------
    UserError
        If the file is unreadable, lacks columns of the schema or does not match it.
    """
    return _read_table(Path(path)).to_pandas()


def task_seconds(path: str | Path) -> float:
    """Summed wall-clock seconds of one task file's rows (its :data:`TIMING_COLUMNS`; a
    column an older file lacks, or a null, counts 0).  Reads only those columns."""
    pf = pq.ParquetFile(path)
    cols = [c for c in TIMING_COLUMNS if c in pf.schema_arrow.names]
    table = pf.read(columns=cols)
    return float(sum(pc.sum(table[c]).as_py() or 0.0 for c in cols))


def task_config_digest(path: str | Path) -> str | None:
    """The digest of the config that wrote a task file (metadata ``alprbf.config_digest``;
    None for a file that records none).  Reads only the file's footer."""
    try:
        meta = pq.read_schema(path).metadata or {}
    except (OSError, pa.ArrowException) as exc:
        raise UserError(f"unreadable result file {path}: {exc}") from None
    digest = meta.get(CONFIG_DIGEST_KEY)
    return None if digest is None else digest.decode()


def run_digest(out: str | Path) -> str | None:
    """The config digest of a results directory's ``run.json`` (None without one)."""
    return run_metadata(out).get("config_digest")


def run_metadata(out: str | Path) -> dict:
    """The ``run.json`` of a results directory as a dict (empty without one)."""
    path = Path(out) / "run.json"
    if not path.is_file():
        return {}
    try:
        meta = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise UserError(f"invalid run metadata {path}: {exc}") from None
    if not isinstance(meta, dict):
        raise UserError(f"invalid run metadata {path}: not a JSON object")
    return meta


def run_digests(out: str | Path) -> tuple[str, ...]:
    """The config digests whose task files a results directory may hold: its ``run.json``'s,
    then those of the configs it extends (``extends``: data sets or methods were added to
    the grid, :meth:`alprbf.engine.config.Config.extends`).  Empty without a ``run.json``."""
    meta = run_metadata(out)
    if meta.get("config_digest") is None:   # no run.json, or one that records no digest
        return ()
    try:
        return (str(meta["config_digest"]), *map(str, meta.get("extends", [])))
    except TypeError as exc:
        raise UserError(f"invalid run metadata {Path(out) / 'run.json'}: {exc!r}") from None


def read_results(out: str | Path, verify: bool = True) -> pd.DataFrame:
    """All task rows of one results directory, task file after task file.

    Parameters
    ----------
    out : path
        A results directory.
    verify : bool, default=True
        Refuse a task file whose checksum is missing or wrong, and a directory whose task
        files record another config digest than its ``run.json``'s or one of the configs it
        extends (:func:`run_digests`; two configs mixed).

    Returns
    -------
    pandas.DataFrame
        Columns as in :data:`COLUMNS`; no rows when ``out`` holds no task file.
    """
    expected = (run_digests(out) or None) if verify else None
    tables = [_read_table(p, verify, expected) for p in task_files(out)]
    if not tables:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in COLUMNS})
    # one conversion of the concatenated tables (same schema): a DataFrame per file and
    # pandas' concat cost about a third of reading a record of thousands of files
    return pa.concat_tables(tables).to_pandas()


# --------------------------------------------------------------------------- comparison


@dataclass(frozen=True)
class Difference:
    """How one task differs between two results directories."""

    task_id: str
    what: str

    def __str__(self) -> str:
        return f"{self.task_id}: {self.what}"


def compare_results(dir_a: str | Path, dir_b: str | Path, ignore: Sequence[str] = (),
                    tasks: Iterable[str] | None = None, prefix: bool = False
                    ) -> list[Difference]:
    """Compare two results directories task file by task file, timing columns aside.

    Both directories must hold the same task ids; the files of a task must have the same
    number of rows and equal values in every column but :data:`TIMING_COLUMNS`.  Values are
    compared exactly: floats bit for bit (a NaN equals a NaN), lists element by element.

    Parameters
    ----------
    dir_a, dir_b : path
        Results directories (each with a ``tasks/`` folder).
    ignore : sequence of str
        Further columns to leave out (e.g. a column that the older run did not write yet).
    tasks : iterable of str, optional
        Compare only these task ids (each must be in both directories); default: every task
        of either directory.
    prefix : bool, default=False
        ``dir_b`` holds the first queries of ``dir_a``'s tasks (a shorter budget): compare
        each of its files with as many first rows of ``dir_a``'s.  Its last row is left out
        unless ``dir_a``'s row at that place has the same ``iteration`` and ``n_labeled``: a
        shorter budget evaluates its last round even off the ``evaluate_every`` grid, and
        its last batch may be partial.

    Returns
    -------
    list of Difference
        One per task that differs or exists in one directory only, sorted by task id; empty
        when the two runs wrote the same rows.

    Raises
    ------
    UserError
        If a directory is not a results directory or a task file is unreadable.
    """
    files_a, files_b = _task_files_by_id(dir_a), _task_files_by_id(dir_b)
    ids = files_a.keys() | files_b.keys() if tasks is None else set(tasks)
    out = []
    for task_id in sorted(ids):
        if task_id not in files_a and task_id not in files_b:
            out.append(Difference(task_id, "in neither directory"))
        elif task_id not in files_b:
            out.append(Difference(task_id, f"only in {dir_a}"))
        elif task_id not in files_a:
            out.append(Difference(task_id, f"only in {dir_b}"))
        else:
            a, b = _read_table(files_a[task_id]), _read_table(files_b[task_id])
            if prefix:
                a, b = _first_rows(a, b)
            what = _table_difference(a, b, ignore)
            if what:
                out.append(Difference(task_id, what))
    return out


def _task_files_by_id(out: str | Path) -> dict[str, Path]:
    if not (Path(out) / TASKS_DIR).is_dir():
        raise UserError(f"{out} is not a results directory (it has no {TASKS_DIR}/ folder)")
    return {p.stem: p for p in task_files(out)}


def _first_rows(a: pa.Table, b: pa.Table) -> tuple[pa.Table, pa.Table]:
    """``a`` and ``b`` cut to the rows that a prefix run ``b`` of ``a`` must share with it
    (see :func:`compare_results`); a ``b`` longer than ``a`` is left whole (and differs)."""
    n = b.num_rows
    if n == 0 or n > a.num_rows:
        return a, b
    last = n - 1
    if any(a.column(c)[last].as_py() != b.column(c)[last].as_py()
           for c in ("iteration", "n_labeled")):
        n = last
    return a.slice(0, n), b.slice(0, n)


def _table_difference(a: pa.Table, b: pa.Table, ignore: Sequence[str] = ()) -> str:
    """What differs between two task tables ("" when nothing does, timing columns aside)."""
    if a.num_rows != b.num_rows:
        return f"{a.num_rows} rows vs {b.num_rows}"
    cols = [c for c in COLUMNS if c not in TIMING_COLUMNS and c not in ignore
            and not _absent_in_either(a, b, c)
            and not all(map(_same, a.column(c).to_pylist(), b.column(c).to_pylist()))]
    return f"columns differ: {', '.join(cols)}" if cols else ""


def _absent_in_either(a: pa.Table, b: pa.Table, column: str) -> bool:
    """A diagnostic or metric column that one of the two files predates (all null there): not
    compared, so that a record written before those columns existed still checks against a
    new run (:data:`LATER_COLUMNS`)."""
    return column in LATER_COLUMNS and (a.column(column).null_count == a.num_rows
                                             or b.column(column).null_count == b.num_rows)


def _same(x: object, y: object) -> bool:
    """Exact equality of two cell values: floats bit for bit or both NaN, lists elementwise."""
    if isinstance(x, float) and isinstance(y, float):
        return (math.isnan(x) and math.isnan(y)) or struct.pack("<d", x) == struct.pack("<d", y)
    if isinstance(x, list) and isinstance(y, list):
        return len(x) == len(y) and all(map(_same, x, y))
    return type(x) is type(y) and x == y
