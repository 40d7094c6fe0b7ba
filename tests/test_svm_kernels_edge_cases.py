"""Reitmaier et al. 2016's models through the active-learning loop on the edge cases of issue 18.

Acceptance point: no NaN/inf in any result file across an edge-case set (1 label per class,
duplicate rows, a constant feature, d > n_labeled, a categorical-only data set), for CMM_sha
(with and without the refinement), CMM_sep and the SVM on every kernel (RWM also with the
refinement), with the random and the uncertainty strategies.  The runner refuses to write a
task whose metrics are not finite, so a task file per task is itself the check; the test reads
every file back and also checks the posteriors and the SVM's decision values of the learners on
the same data.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from alprbf.cli import app
from alprbf.models import MODELS
from alprbf.strategies.svm import svm_margin

runner = CliRunner()

N_ROWS = 36      # 12 per class; 2 folds: training parts of 18 rows


def _frame(case: str) -> tuple[pd.DataFrame, list[str]]:
    """The data set of one edge case (three classes) and its categorical columns."""
    rng = np.random.default_rng(5)
    y = np.repeat([0, 1, 2], N_ROWS // 3)
    centres = np.array([[0.0, 0.0], [2.5, 0.0], [0.0, 2.5]])
    X = centres[y] + rng.normal(size=(N_ROWS, 2))
    categorical: list[str] = []
    if case == "duplicates":            # every row three times
        X = np.repeat(X[::3], 3, axis=0)
    elif case == "constant":
        X = np.column_stack([X, np.full(N_ROWS, 7.0)])
    elif case == "wide":                # d = 20 > the labeled rows (3 to 7)
        X = np.column_stack([X, rng.normal(size=(N_ROWS, 18))])
    elif case == "categorical_only":
        codes = rng.integers(0, 3, size=(N_ROWS, 3))
        codes[: 2 * N_ROWS // 3, 0] = y[: 2 * N_ROWS // 3]      # one informative attribute
        X = np.array([["abc"[c] for c in row] for row in codes])
        categorical = ["a0", "a1", "a2"]
    df = pd.DataFrame(X, columns=[f"a{j}" for j in range(X.shape[1])])
    df["y"] = np.array(["u", "v", "w"])[y]
    return df, categorical


CASES = ("one_label_per_class", "duplicates", "constant", "wide", "categorical_only")
SVM_SMALL = {"C_grid": [0.1, 10.0], "gamma_grid": [0.1, 1.0], "gamma_I_grid": [0.1, 10.0],
             "gamma_A_grid": [0.01, 1.0], "n_components": 4, "n_neighbors": 3}
CMM_SMALL = {"n_components": 4, "n_mc": 200}


def _models(categorical: bool) -> list[dict]:
    mask = {"categorical": [True, True, True]} if categorical else {}
    out = [{"name": "kernel_svm", "label": f"svm_{k}", "params": {"kernel": k, **SVM_SMALL,
                                                                   **mask}}
           for k in ("rbf", "rwm", "gmm", "lap")]
    out.append({"name": "kernel_svm", "label": "svm_rwm_refined",
                "params": {"kernel": "rwm", "refine": True, "refine_neighbors": 2, **SVM_SMALL,
                           **mask}})
    out += [{"name": "cmm_sha", "params": {**CMM_SMALL, **mask}},
            {"name": "cmm_sha", "label": "cmm_sha_refined",
             "params": {**CMM_SMALL, **mask, "refine": True, "n_neighbors": 2}},
            {"name": "cmm_sep", "params": {**CMM_SMALL, **mask}}]
    return out


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES)
def test_no_nan_or_inf_in_any_result_file(case, tmp_path):
    df, categorical = _frame(case)
    data = tmp_path / f"{case}.csv"
    df.to_csv(data, index=False)
    cfg = {
        "name": f"edge_{case}",
        "dataset": {"name": "file", "label": case,
                    "params": {"path": str(data), "target": "y", "categorical": categorical},
                    "preprocessing": {"standardize": "per_fold"}},
        "model": _models(bool(categorical)),
        "strategy": ["random", {"name": "uncertainty", "params": {"measure": "margin"},
                                "label": "margin"}],
        "protocol": {"folds": 2, "seed": 3, "budget": 4, "batch_size": 1,
                     "initial": {"method": "per_class", "size": 1}},
    }
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(cfg))
    out = tmp_path / "out"
    result = runner.invoke(app, ["run", str(path), "-q", "--out", str(out)])
    assert result.exit_code == 0, result.output
    files = sorted(out.glob("tasks/*.parquet"))
    assert len(files) == 8 * 2 * 2
    for f in files:
        rows = pd.read_parquet(f)
        assert len(rows) == 5                                   # initial set + 4 queries
        numeric = rows.select_dtypes("number").drop(columns=["n_components_presplit"])
        assert np.isfinite(numeric.to_numpy(dtype=float)).all(), f.name
        assert rows["model_size"].notna().all(), f.name


@pytest.mark.parametrize("case", CASES)
def test_posteriors_and_decision_values_finite(case):
    """The learners on a training part of the case with one label per class (the loop's first
    fit): posteriors finite and summing to 1 over all classes, SVM margins finite."""
    df, categorical = _frame(case)
    X = df.drop(columns="y").to_numpy()
    if categorical:
        X = np.searchsorted(np.array(list("abc")), X).astype(float)
    else:
        X = X.astype(float)
        std = X.std(axis=0)
        X = (X - X.mean(axis=0)) / np.where(std > 0, std, 1.0)
    y = np.searchsorted(np.array(list("uvw")), df["y"].to_numpy())
    y_obs = np.full(len(y), np.nan)
    for k in range(3):
        y_obs[np.flatnonzero(y == k)[0]] = k
    for spec in _models(bool(categorical)):
        learner = MODELS[spec["name"]](n_classes=3, random_state=0, **spec["params"])
        P = learner.fit(X, y_obs).predict_proba(X)
        assert np.isfinite(P).all() and np.allclose(P.sum(axis=1), 1.0), spec
        if spec["name"] == "kernel_svm":
            est = learner.estimator_
            scores, pairwise = est.decision_values(X)
            assert np.isfinite(svm_margin(scores, pairwise)).all(), spec
            f = est.scores(X)
            assert np.isfinite(f).all(), spec          # every class labeled: no -inf column
