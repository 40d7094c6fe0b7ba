"""Published values beside ours (issue 17 item 2): one row and one verdict per published cell,
a summary line per published table, cells not run as "not run", and check_reference."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from alprbf.engine.config import load_config
from alprbf.errors import UserError
from alprbf.report import check_reference, reference
from tests.report_fixtures import curve_rows, report_ok, write_run_json, write_task

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ("table_000", "table_001", "table_002", "table_003")
#: report arguments of a table's make target that its published cells need (Makefile)
BASELINES = {"table_003": ("--baseline", "rbf / uncertainty_svm")}
VERDICTS = ("within std", "within 1 pp", "within 1 component", "within 1 label", "within 0.1",
            "within 1 win", "within 0.25 rank", "within 3", "within 0.05",
            "outside", "not comparable", "not run",
            "no value")   # summary cells (chi2, CD) when the ranking cannot run


# ------------------------------------------------------------------------------ verdict rule


@pytest.mark.parametrize(("diff", "std", "metric", "want"), [
    (1.9, 2.0, "error_at_budget", "within std"),
    (-2.0, 2.0, "error_at_budget", "within std"),
    (2.1, 2.0, "error_at_budget", "outside"),
    (0.9, math.nan, "error_at_budget", "within 1 pp"),
    (-1.2, math.nan, "rp_accuracy", "outside"),
    (0.5, math.nan, "components", "within 1 component"),
    (30.0, math.nan, "train_time_s", "not comparable"),
    (math.nan, 1.0, "aulc", "no value"),
])
def test_verdict_rule(diff, std, metric, want):
    assert reference.verdict(diff, std, metric) == want


# ----------------------------------------------------------------- one row per published cell


def _three_readings(tmp_path: Path, folds_done=(0, 1)) -> Path:
    """Two datasets; the paper's method is run under three readings, plus a baseline; the
    reference file maps each published cell to the three readings (primary first)."""
    exp = tmp_path / "t000"
    methods = [("lit", "pr"), ("diag", "pr"), ("full", "pr"), ("lit", "random")]
    final = {"lit": 0.80, "diag": 0.85, "full": 0.70, "random": 0.75}
    for d in ("seg", "wave"):
        for model, strategy in methods:
            for f in folds_done:
                if d == "wave" and model == "lit" and strategy == "pr" and f == 1:
                    continue
                acc = final["random" if strategy == "random" else model]
                write_task(exp, curve_rows("t000", d, model, strategy, f, 0,
                                           [0.5, 0.6, acc + 0.01 * f]))
    write_run_json(exp, "t000", budget=4, methods=methods, datasets=("seg", "wave", "opt"))
    (exp / "reference.csv").write_text(
        "dataset,method,metric,mean,std,other_readings,table,published_as,source\n"
        "seg,lit / pr,error_at_budget,19.0,1.0,diag / pr; full / pr,seed X Table 2,Active,s\n"
        "wave,lit / pr,error_at_budget,10.0,,diag / pr; full / pr,seed X Table 2,Active,s\n"
        "opt,lit / pr,error_at_budget,10.0,2.0,diag / pr; full / pr,seed X Table 2,Active,s\n"
        "seg,lit / random,error_at_budget,30.0,1.0,,seed X Table 3,Random,s\n")
    return exp


@pytest.mark.slow
def test_each_published_cell_is_one_row_with_its_verdict(tmp_path):
    exp = _three_readings(tmp_path)
    report_ok(exp)
    out = exp / "report"
    md = (out / "reference.md").read_text()
    rows = [ln for ln in md.splitlines() if ln.startswith("| seed X")]
    assert len(rows) == 4  # one per published cell, not one per reading
    seg = next(r for r in rows if "| seg | Active |" in r).split(" | ")
    # ours (lit: error 100 - 80.5 = 19.5), published, Δ, verdict, the primary method
    assert seg[4:9] == ["19.000 (1.000)", "19.500 (0.707)", "+0.500", "within std", "lit / pr"]
    assert "diag / pr: 14.500 (0.707), Δ -4.500, outside" in seg[9]
    assert "full / pr: 29.500 (0.707), Δ +10.500, outside" in seg[9]
    # no published std: within 1 pp or outside; a data set of the config not run: not run
    wave = next(r for r in rows if "| wave | Active |" in r)
    assert "| outside |" in wave and "not run" not in wave
    opt = next(r for r in rows if "| opt | Active |" in r)
    assert "| n/a | n/a | not run |" in opt and "unmatched" not in md
    # one summary line per published table
    assert ("seed X Table 2: 1 of 3 cells within the published std (1 pp where none is "
            "given); 1 outside; 1 not run") in md
    assert "seed X Table 3: 0 of 1 cells within the published std; 1 outside; 0 not run" in md
    index = (out / "report.md").read_text()
    assert "Published values: seed X Table 2: 1 of 3 cells" in index
    # the CSV keeps every reading, with the primary flagged
    csv = pd.read_csv(out / "reference.csv")
    assert len(csv) == 3 * 3 + 1 and csv["primary"].sum() == 4
    # the error table shows the paper beside the primary reading only
    err = (out / "error_at_budget.md").read_text()
    assert "lit / pr [paper]" in err and "diag / pr [paper]" not in err


def test_partial_run_lists_cells_not_run_without_failure_messages(tmp_path):
    exp = _three_readings(tmp_path, folds_done=(0,))
    for p in list((exp / "tasks").glob("seg-*")):
        p.unlink()
    report_ok(exp)
    md = (exp / "report" / "reference.md").read_text()
    assert "unmatched" not in md and "match no" not in md
    assert ("seed X Table 2: 0 of 3 cells within the published std (1 pp where none is "
            "given); 1 outside; 2 not run") in md
    assert "seed X Table 3: 0 of 1 cells within the published std; 0 outside; 1 not run" in md


def test_constantinopoulos2006_components_are_given_before_and_after_the_final_split(tmp_path):
    exp = tmp_path / "t001"
    for f in range(2):
        write_task(exp, curve_rows("t001", "bupa", "incremental_prbf_split", "random", f, 0,
                                   [0.7], model_size=8, presplit=4))
        write_task(exp, curve_rows("t001", "bupa", "svm", "random", f, 0, [0.7],
                                   model_size=200))
    write_run_json(exp, "t001", budget=0,
                   methods=[("incremental_prbf_split", "random"), ("svm", "random")],
                   datasets=["bupa"])
    (exp / "reference.csv").write_text(
        "dataset,method,metric,mean,std,source\n"
        "bupa,incremental_prbf_split,components,4.5,,seed 001 Table III (x)\n"
        "bupa,svm,components,224.0,,seed 001 Table III (x)\n"
        "bupa,svm,train_time_s,39.7,,seed 001 Table III (x)\n")
    report_ok(exp)
    md = (exp / "report" / "reference.md").read_text()
    prbf = next(ln for ln in md.splitlines() if "| incremental_prbf_split |" in ln)
    assert "| 8.000 (0.000) | +3.500 | outside | incremental_prbf_split (after the final split)" \
        in prbf
    assert ("incremental_prbf_split (before the final split): 4.000 (0.000), Δ -0.500, "
            "within 1 component") in prbf
    svm = [ln for ln in md.splitlines() if "| svm |" in ln]
    assert "before the final split" not in svm[0]  # no split, no second reading
    assert "| not comparable |" in svm[1]
    assert ("seed 001 Table III: 0 of 3 cells within the published std (1 component where "
            "none is given); 2 outside; 0 not run; 1 not comparable") in md
    cost = (exp / "report" / "cost.md").read_text()
    assert "size before split" in cost and "| 4.0 (0.0) |" in cost


# ------------------------------------------------------------------ the shipped references


def _config_labels(name: str):
    cfg = load_config(ROOT / "configs" / f"{name}.yaml")
    return cfg, [f"{m.label} / {s.label}" for m, s in cfg.methods], [d.label
                                                                      for d in cfg.datasets]


@pytest.mark.parametrize("name", CONFIGS)
def test_every_shipped_reference_row_maps_to_its_config(name):
    cfg, methods, datasets = _config_labels(name)
    ref = check_reference(cfg.reference, methods, datasets)
    assert len(ref) and ref["table"].str.startswith("seed").all()


@pytest.mark.slow   # left out of make test-quick; make test and CI run it
@pytest.mark.parametrize("name", CONFIGS)
def test_every_published_cell_gets_a_verdict(tmp_path, name):
    """A partial run of each papers' config (fold 0 of half its methods): every published
    cell gets a verdict or "not run", and each appears once."""
    cfg, methods, datasets = _config_labels(name)
    exp = tmp_path / name
    budget = cfg.protocol.budget or cfg.protocol.labels
    for i, (m, s) in enumerate(cfg.methods):
        if i % 2:
            continue
        for d in datasets:
            acc = [0.6] if budget == 0 else [0.5, 0.6, 0.7]
            write_task(exp, curve_rows(name, d, m.label, s.label, 0, 0, acc, model_size=5,
                                       presplit=3))
    (exp / "run.json").write_text(json.dumps({"experiment": name, "config": cfg.to_dict()}))
    (exp / "reference.csv").write_bytes(Path(cfg.reference).read_bytes())
    report_ok(exp, *BASELINES.get(name, ()), "--no-figures")
    cells = pd.read_csv(exp / "report" / "reference.csv")
    primary = cells[cells["primary"]]
    ref = pd.read_csv(cfg.reference)
    assert len(primary) == len(ref)
    assert set(primary["verdict"]) <= set(VERDICTS), set(primary["verdict"])
    assert (primary["verdict"] == "not run").any()
    md = (exp / "report" / "reference.md").read_text()
    for table in ref["table"].unique():
        assert f"{table}: " in md and " not run" in md


def test_check_reference_names_the_unmapped_row(tmp_path):
    p = tmp_path / "ref.csv"
    p.write_text("dataset,method,metric,mean,other_readings\n"
                 "iris,svm,error_at_budget,3.3,\n"
                 "iris,svm,error_at_budget,3.3,nb; qbc\n"
                 "iris,lda,error_at_budget,3.3,qbc\n")
    with pytest.raises(UserError) as e:
        check_reference(p, ["svm / random", "nb / random"])
    msg = str(e.value)
    # line 3 passes (its readings svm and nb map; qbc may be another config's method)
    assert "\n" not in msg and f"{p}, line 4" in msg and "'lda' matches no method" in msg
    with pytest.raises(UserError, match="line 2: dataset 'iris' is not in the config"):
        check_reference(p, ["svm / random"], datasets=["wine"])
    ok = tmp_path / "ok.csv"
    ok.write_text("dataset,method,metric,mean\niris,svm,error_at_budget,3.3\n")
    assert len(check_reference(ok, ["svm / random"], ["iris"])) == 1


def test_summary_cells_compare_means_ranks_and_the_friedman_test(tmp_path):
    """Dataset ``all`` cells: per-method means and mean ranks over the data sets, and the
    experiment's chi2 and CD (method ``all``), against values computed here by hand."""
    from tests.report_fixtures import synthetic_experiment

    exp = synthetic_experiment(tmp_path)
    (exp / "reference.csv").write_text(
        "dataset,method,metric,mean,std,source\n"
        "all,svm / random,mean_rank,2.0,,seed x summary\n"
        "all,nb / uncertainty,mean_rp_accuracy,80.0,,seed x summary\n"
        "all,all,friedman_chi2,10.0,,seed x text\n"
        "all,all,cd,1.0,,seed x text\n")
    report_ok(exp, "--methods", "svm / *,nb / *", "--no-figures")
    cells = pd.read_csv(exp / "report" / "reference.csv").set_index("metric")
    wide = pd.read_csv(exp / "report" / "rp.csv").set_index("dataset")
    wide = wide.loc[~wide.index.isin(["Mean", "Rank", "Wins"]), :].astype(float)
    ranks = wide.rank(axis=1, ascending=False).mean()
    assert cells.loc["mean_rank", "ours_mean"] == pytest.approx(ranks["svm / random"], abs=1e-3)
    assert cells.loc["mean_rp_accuracy", "ours_mean"] == pytest.approx(
        wide["nb / uncertainty"].mean(), abs=1e-3)
    from scipy.stats import friedmanchisquare
    chi2 = friedmanchisquare(*[wide[c] for c in wide.columns]).statistic
    assert cells.loc["friedman_chi2", "ours_mean"] == pytest.approx(chi2, abs=1e-3)
    assert cells.loc["cd", "verdict"] != "not selected" and cells.loc["cd", "ours_mean"] > 0
    assert "computed over the 5 data set(s)" in (exp / "report" / "report.md").read_text()


@pytest.mark.parametrize("path", [
    pytest.param(p, marks=pytest.mark.slow) if p.stem in ("table_003", "reitmaier2016_corrected")
    else p for p in sorted((ROOT / "configs").rglob("*.yaml"))], ids=lambda p: p.stem)
def test_every_shipped_config_passes_the_reference_check_at_every_scale(path):
    """What `alprbf run` / `validate` check before loading data (pen_digits_qbc shares seed
    000's reference file but runs one of its data sets)."""
    from alprbf.cli import _check_reference

    full = load_config(path)
    for scale in [None, *full.scales]:
        _check_reference(full.with_scale(scale), full)


def test_a_misspelt_reference_data_set_is_still_refused(tmp_path):
    from alprbf.cli import _check_reference
    from alprbf.errors import UserError

    cfg = load_config(ROOT / "configs" / "pen_digits_qbc.yaml")
    ref = tmp_path / "ref.csv"
    text = Path(cfg.reference).read_text().splitlines()
    ref.write_text("\n".join([text[0], text[1].replace("segmentation", "segmantation", 1)]))
    with pytest.raises(UserError, match="segmantation"):
        _check_reference(replace(cfg, reference=str(ref)))
