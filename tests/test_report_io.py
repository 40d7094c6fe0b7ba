"""Loading results and references; method labels and reference matching."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from alprbf.errors import UserError
from alprbf.report import io
from tests.report_fixtures import curve_rows, synthetic_experiment, write_checksum, write_task


def test_load_results_concatenates_experiments(tmp_path):
    synthetic_experiment(tmp_path, "one", datasets=("a",), folds=2)
    synthetic_experiment(tmp_path, "two", datasets=("a", "b"), folds=2)
    df = io.load_results(tmp_path)
    assert set(df["experiment"]) == {"one", "two"}
    assert len(df) == (1 * 3 * 2 + 2 * 3 * 2) * 6
    assert list(df.columns[:6]) == ["experiment", "dataset", "model", "strategy", "fold",
                                    "repetition"]
    # a single experiment directory works too
    assert set(io.load_results(tmp_path / "two")["experiment"]) == {"two"}


def test_missing_and_empty_results_are_user_errors(tmp_path):
    with pytest.raises(UserError, match="not found"):
        io.load_results(tmp_path / "nope")
    with pytest.raises(UserError, match="no result files"):
        io.load_results(tmp_path)


def test_invalid_task_file_names_the_missing_columns(tmp_path):
    (tmp_path / "e" / "tasks").mkdir(parents=True)
    path = tmp_path / "e/tasks/t.parquet"
    pq.write_table(pa.table({"dataset": ["x"], "fold": [0]}), path)
    with pytest.raises(UserError, match="has no checksum file"):
        io.load_results(tmp_path)
    write_checksum(path)
    with pytest.raises(UserError, match="lacks columns experiment"):
        io.load_results(tmp_path)
    path.write_text("not parquet")
    write_checksum(path)
    with pytest.raises(UserError, match="unreadable result file"):
        io.load_results(tmp_path)


def test_hidden_temporary_files_are_ignored(tmp_path):
    write_task(tmp_path / "e", curve_rows("e", "d", "m", "s", 0, 0, [0.5, 0.6]))
    (tmp_path / "e/tasks/.tmp-x.parquet").write_text("partial")
    assert len(io.load_results(tmp_path)) == 2


def _labels(pairs):
    return io.method_labels(pd.DataFrame(pairs, columns=["model", "strategy"]))


def test_method_labels_are_short_when_possible():
    assert list(_labels([("svm", "random"), ("nb", "random")])["label"]) == ["nb", "svm"]
    assert list(_labels([("svm", "random"), ("svm", "margin")])["label"]) == ["margin", "random"]
    assert list(_labels([("svm", "random"), ("nb", "margin")])["label"]) == [
        "nb / margin", "svm / random"]


def test_resolve_method_priorities_and_ambiguity():
    lab = _labels([("svm", "random"), ("svm", "margin"), ("nb", "margin")])
    assert io.resolve_method("SVM/Random", lab)[0] == "svm / random"
    assert io.resolve_method("nb", lab)[0] == "nb / margin"           # unique model
    assert io.resolve_method("random", lab)[0] == "svm / random"     # unique strategy
    label, why = io.resolve_method("svm", lab)
    assert label is None and "ambiguous" in why
    label, why = io.resolve_method("qbc", lab)
    assert label is None and "matches no method" in why and "nb / margin" in why


def _write_ref(tmp_path, text):
    p = tmp_path / "ref.csv"
    p.write_text(text)
    return p


def test_load_reference_and_errors(tmp_path):
    ok = _write_ref(tmp_path, "dataset,method,metric,mean,std,source\n"
                              "Pen-based digits,QBC,error_at_budget,15.0,4.6,seed 000\n"
                              "wine,svm,components,88.4,,seed 001\n")
    ref = io.load_reference(ok)
    assert ref["mean"].tolist() == [15.0, 88.4]
    assert pd.isna(ref.loc[1, "std"])
    with pytest.raises(UserError, match="unknown metric 'error'.*valid metrics"):
        io.load_reference(_write_ref(tmp_path, "dataset,method,metric,mean\nx,y,error,1\n"))
    with pytest.raises(UserError, match="lacks columns metric"):
        io.load_reference(_write_ref(tmp_path, "dataset,method,mean\nx,y,1\n"))
    with pytest.raises(UserError, match="'mean' must be numeric"):
        io.load_reference(_write_ref(tmp_path,
                                     "dataset,method,metric,mean\nx,y,aulc,high\n"))
    with pytest.raises(UserError, match="not found"):
        io.load_reference(tmp_path / "missing.csv")


def test_match_reference_normalises_names(tmp_path):
    ref = io.load_reference(_write_ref(
        tmp_path, "dataset,method,metric,mean,std,source\n"
                  "Pen-based digits,QBC,error_at_budget,15.0,4.6,s\n"
                  "waveform,qbc,error_at_budget,21.2,2.4,s\n"
                  "pen_based_digits,svm,error_at_budget,1,,s\n"))
    lab = _labels([("prbf", "qbc"), ("prbf", "posterior_ratio")])
    m = io.match_reference(ref, lab, {("pen_based_digits", "qbc"),
                                      ("pen_based_digits", "posterior_ratio")})
    assert m["our_dataset"].tolist()[0] == "pen_based_digits"
    assert m["our_method"].tolist()[0] == "qbc"
    assert m["status"].tolist() == ["ok", "unmapped", "unmapped"]
    assert "not in the config" in m["note"][1]
    assert "matches no method" in m["note"][2]


def test_shipped_reference_files_are_valid():
    refs = sorted((Path(__file__).resolve().parents[1] / "configs" / "references").glob("*.csv"))
    assert refs, "configs/references should ship published values"
    for p in refs:
        ref = io.load_reference(p)  # raises UserError on a malformed file
        assert len(ref) > 0 and ref["source"].str.startswith("seed").all(), p.name


def test_report_imports_no_models_strategies_or_engine():
    import subprocess
    import sys

    code = ("import sys, alprbf.report; "
            "print(','.join(sorted(m for m in sys.modules if m.startswith('alprbf'))))")
    mods = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip().split(",")
    forbidden = ("alprbf.models", "alprbf.strategies", "alprbf.engine", "alprbf.prbf",
                 "alprbf.datasets", "alprbf.svm_kernels", "alprbf.preclustering")
    assert [m for m in mods if m.startswith(forbidden)] == []
    assert "alprbf.store.results" in mods


def test_a_data_set_a_smaller_scale_left_out_is_not_run(tmp_path):
    ref = io.load_reference(_write_ref(
        tmp_path, "dataset,method,metric,mean,std,source\n"
                  "waveform,qbc,error_at_budget,21.2,2.4,s\n"
                  "pendigits,qbc,error_at_budget,15.0,4.6,s\n"))
    lab = _labels([("prbf", "qbc")])
    args = (ref, lab, {("waveform", lab["label"].iloc[0])}, lab, ["waveform"])
    assert io.match_reference(*args)["status"].tolist() == ["ok", "unmapped"]
    scaled = io.match_reference(*args, scaled=True)
    assert scaled["status"].tolist() == ["ok", "not run"]
    assert "not in this scale's run" in scaled["note"][1]
