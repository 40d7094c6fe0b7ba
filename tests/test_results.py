"""Result files: write, read back, and compare two results directories (`alprbf compare`)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from alprbf.cli import app
from alprbf.errors import UserError
from alprbf.store.results import (
    COLUMNS,
    EXECUTION_KEY,
    compare_results,
    read_results,
    read_task,
    run_digest,
    run_digests,
    task_file,
    write_task,
)

TASKS = ("iris__svc__random__r0__f0", "iris__svc__random__r0__f1")


def _rows(task_id: str, n: int = 3) -> pd.DataFrame:
    fold = int(task_id[-1])
    return pd.DataFrame({
        "experiment": "x", "dataset": "iris", "model": "svc", "strategy": "random",
        "fold": fold, "repetition": 0, "iteration": range(n), "n_labeled": range(6, 6 + n),
        "test_error": [0.1, 0.2, float("nan")][:n], "test_accuracy": [0.9, 0.8, float("nan")][:n],
        "train_accuracy": 0.5, "labeled_accuracy": 1.0, "model_size": [None, 3, 4][:n],
        "fit_seconds": 0.01, "query_seconds": 0.02,
        "queried": [np.array([1, 2], np.int64), np.array([7], np.int64),
                    np.array([], np.int64)][:n],
        "queried_labels": [np.array([0, 1], np.int64), np.array([2], np.int64),
                           np.array([], np.int64)][:n],
        "task_id": task_id,
    }, columns=list(COLUMNS))


def _results(root, frames: dict[str, pd.DataFrame]):
    task_file(root, "t").parent.mkdir(parents=True)
    for task_id, df in frames.items():
        write_task(df, task_file(root, task_id), {"jobs": 1})
    return root


@pytest.fixture
def two_runs(tmp_path):
    a = _results(tmp_path / "a", {t: _rows(t) for t in TASKS})
    b = _results(tmp_path / "b", {t: _rows(t) for t in TASKS})
    return a, b


def test_written_rows_read_back_with_their_execution(two_runs):
    a, _ = two_runs
    df = read_results(a)
    assert tuple(df.columns) == COLUMNS and len(df) == 2 * 3
    assert df["model_size"].isna().tolist() == [True, False, False] * 2
    assert df["queried"].map(list).tolist()[:3] == [[1, 2], [7], []]
    assert pq.read_schema(task_file(a, TASKS[0])).metadata[EXECUTION_KEY] == b'{"jobs": 1}'
    assert read_results(a.parent / "empty").empty


def test_unreadable_or_foreign_task_file_is_a_user_error(tmp_path):
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"not parquet")
    with pytest.raises(UserError, match="unreadable result file"):
        read_task(bad)
    pd.DataFrame({"a": [1]}).to_parquet(bad)
    with pytest.raises(UserError, match="lacks columns"):
        read_task(bad)


def test_identical_runs_compare_equal(two_runs):
    assert compare_results(*two_runs) == []


def test_a_changed_float_is_a_difference(two_runs):
    a, b = two_runs
    df = _rows(TASKS[1])
    df.loc[0, "test_error"] = np.nextafter(0.1, 1.0)   # one ulp
    write_task(df, task_file(b, TASKS[1]))
    diffs = compare_results(a, b)
    assert [(d.task_id, d.what) for d in diffs] == [(TASKS[1], "columns differ: test_error")]


def test_a_changed_list_or_zero_sign_is_a_difference(two_runs):
    a, b = two_runs
    df = _rows(TASKS[0])
    df["queried"] = [np.array(v, np.int64) for v in ([1, 2], [8], [])]
    df.loc[0, "train_accuracy"] = -0.0
    write_task(df, task_file(a, TASKS[0]))
    df = _rows(TASKS[0])
    df.loc[0, "train_accuracy"] = 0.0
    write_task(df, task_file(b, TASKS[0]))
    [d] = compare_results(a, b)
    assert d.what == "columns differ: train_accuracy, queried"


def test_a_missing_task_or_row_is_a_difference(two_runs):
    a, b = two_runs
    task_file(b, TASKS[0]).unlink()
    write_task(_rows(TASKS[1], n=2), task_file(b, TASKS[1]))
    diffs = [str(d) for d in compare_results(a, b)]
    assert diffs == [f"{TASKS[0]}: only in {a}", f"{TASKS[1]}: 3 rows vs 2"]


def test_timing_columns_do_not_count(two_runs):
    a, b = two_runs
    df = _rows(TASKS[0])
    df["fit_seconds"] = 99.0
    df["query_seconds"] = float("nan")
    write_task(df, task_file(b, TASKS[0]), {"jobs": 4})
    assert compare_results(a, b) == []


def test_compare_command(two_runs, tmp_path):
    a, b = two_runs
    runner = CliRunner()
    res = runner.invoke(app, ["compare", str(a), str(b)])
    assert res.exit_code == 0, res.output
    assert res.stdout.strip() == "identical: 2 task files (timing columns aside)"
    task_file(a, TASKS[1]).unlink()
    res = runner.invoke(app, ["compare", str(a), str(b)])
    assert res.exit_code == 1
    assert res.stdout.strip().splitlines() == [f"{TASKS[1]}: only in {b}"]
    res = runner.invoke(app, ["compare", str(a), str(tmp_path / "nothing")])
    assert res.exit_code == 2
    assert res.stderr.strip() == (f"error: {tmp_path / 'nothing'} is not a results directory "
                                  "(it has no tasks/ folder)")


def _legacy(root, task_id, df):
    """A task file as alprbf wrote it before the compact layout (pandas metadata, column
    statistics, snappy), with its checksum."""
    import hashlib
    import json

    import pyarrow as pa

    from alprbf.store.results import SCHEMA, checksum_file

    table = pa.Table.from_pandas(df, schema=SCHEMA, preserve_index=False)
    meta = {**table.schema.metadata, EXECUTION_KEY: json.dumps({"jobs": 2}).encode(),
            b"alprbf.config_digest": b"abc"}
    path = task_file(root, task_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table.replace_schema_metadata(meta), path)
    checksum_file(path).write_text(f"{hashlib.sha256(path.read_bytes()).hexdigest()}  "
                                   f"{path.name}\n")
    return path


def test_write_task_uses_the_compact_layout(two_runs):
    a, _ = two_runs
    f = pq.ParquetFile(task_file(a, TASKS[0]))
    assert b"pandas" not in f.schema_arrow.metadata
    col = f.metadata.row_group(0).column(0)
    assert col.compression == "ZSTD" and not col.is_stats_set


def test_compact_rewrites_legacy_files_with_the_same_rows(tmp_path):
    rows = {t: _rows(t, n=3) for t in TASKS}
    paths = [_legacy(tmp_path / "r", t, df) for t, df in rows.items()]
    before = read_results(tmp_path / "r", verify=True)
    res = CliRunner().invoke(app, ["compact", str(tmp_path / "r")])
    assert res.exit_code == 0 and "2 task files rewritten" in res.output, res.output
    after = read_results(tmp_path / "r", verify=True)      # checksums renewed
    pd.testing.assert_frame_equal(before, after)
    assert compare_results(tmp_path / "r", _results(tmp_path / "w", rows)) == []
    meta = pq.ParquetFile(paths[0]).schema_arrow.metadata
    assert meta[EXECUTION_KEY] == b'{"jobs": 2}' and b"pandas" not in meta
    again = CliRunner().invoke(app, ["compact", str(tmp_path / "r")])
    assert "0 task files rewritten" in again.output


def test_compact_refuses_a_damaged_file_and_an_empty_directory(tmp_path):
    path = _legacy(tmp_path / "r", TASKS[0], _rows(TASKS[0]))
    path.write_bytes(path.read_bytes()[:-1] + b"x")
    res = CliRunner().invoke(app, ["compact", str(tmp_path / "r")])
    assert res.exit_code == 2 and "does not match its checksum" in res.output
    empty = CliRunner().invoke(app, ["compact", str(tmp_path)])
    assert empty.exit_code == 2 and "holds no task files" in empty.output


@pytest.mark.parametrize("text", ["[1, 2]", "{not json", '{"config_digest": "a", "extends": 3}'])
def test_invalid_run_metadata_is_a_one_line_user_error(tmp_path, text):
    (tmp_path / "run.json").write_text(text)
    with pytest.raises(UserError, match="invalid run metadata"):
        run_digests(tmp_path)
    if not text.startswith('{"config_digest"'):       # that one has a valid digest
        with pytest.raises(UserError, match="invalid run metadata"):
            run_digest(tmp_path)


def test_run_metadata_without_a_digest_or_file_has_no_digests(tmp_path):
    assert run_digests(tmp_path) == () and run_digest(tmp_path) is None
    (tmp_path / "run.json").write_text('{"experiment": "x"}')
    assert run_digests(tmp_path) == () and run_digest(tmp_path) is None
    (tmp_path / "run.json").write_text('{"config_digest": "b", "extends": ["a"]}')
    assert run_digests(tmp_path) == ("b", "a") and run_digest(tmp_path) == "b"
