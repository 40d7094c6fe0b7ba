"""The switch ALPRBF_FAST: the reference path (alprbf.prbf.reference) and the fast paths
(alprbf.prbf.fast) give the same bits on the PRBF estimators, every covariance type,
supervised, semi-supervised and constrained."""

from __future__ import annotations

from dataclasses import fields, is_dataclass

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_digits
from threadpoolctl import threadpool_limits

import alprbf.prbf.fast as fast
import alprbf.prbf.fast.blocked as blk
import alprbf.prbf.fast.far_rows as fr
import alprbf.prbf.fast.normalize as nz
import alprbf.prbf.fast.sparse_variance as sv
from alprbf.prbf import (
    PRBF,
    ConstrainedPRBF,
    IncrementalPRBFSplit,
    PRBFSplit,
    SemiSupervisedPRBF,
    e_step,
    fit_em,
    m_step,
    prepare_data,
    reference,
)
from tests.pinned import pinned_json, x86_only

CTS = ("full", "diag", "spherical")


@pytest.fixture(autouse=True)
def _one_blas_thread():
    # as every task runs (alprbf.engine.execution); the blocked E-step needs it
    with threadpool_limits(limits=1):
        yield


def _bits(value, path="") -> dict[str, bytes]:
    """Every array, number and nested parameter of a fitted estimator, as bytes by path."""
    out: dict[str, bytes] = {}
    if isinstance(value, np.ndarray):
        a = np.ascontiguousarray(value)
        out[path] = a.dtype.str.encode() + str(a.shape).encode() + a.tobytes()
    elif isinstance(value, float | int | np.floating | np.integer | bool | str):
        out[path] = repr(value).encode()
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            out.update(_bits(v, f"{path}[{i}]"))
    elif isinstance(value, dict):
        for k, v in value.items():
            out.update(_bits(v, f"{path}.{k}"))
    elif is_dataclass(value):
        for f in fields(value):
            if f.name != "last_estep":     # an EM loop's own (None arrays where it was blocked)
                out.update(_bits(getattr(value, f.name), f"{path}.{f.name}"))
    return out


def _fitted(est) -> dict[str, bytes]:
    """The fitted attributes (``name_``) but the wall times."""
    return {k: v for name, val in vars(est).items() if name.endswith("_") and "time" not in name
            for k, v in _bits(val, name).items()}


def _digits(unlabeled: float, seed: int = 0):
    """sklearn's digits (1 797 x 64, constant pixels: nearly collapsed components and far
    rows), z-scored, a fraction of the labels hidden."""
    X, y = load_digits(return_X_y=True)
    X = (X - X.mean(axis=0)) / np.where(X.std(axis=0) > 0, X.std(axis=0), 1.0)
    y = y.astype(float)
    y[np.random.default_rng(seed).random(len(y)) < unlabeled] = np.nan
    return X, y


def _cancer(unlabeled: float, seed: int = 0):
    """sklearn's breast cancer (569 x 30), z-scored (for "full": 465 design columns)."""
    X, y = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    y = y.astype(float)
    y[np.random.default_rng(seed).random(len(y)) < unlabeled] = np.nan
    return X, y


def _data(ct, unlabeled):
    return _cancer(unlabeled) if ct == "full" else _digits(unlabeled)


def _assert_same(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    differ = [k for k in a if a[k] != b[k]]
    assert not differ, f"reference and fast paths differ in {differ}"


def _estimators(ct: str) -> dict:
    """The estimators compared, by name, each with its training data."""
    full = ct == "full"
    X0, y0 = _data(ct, 0.0)
    X8, y8 = _data(ct, 0.8)
    out = {
        "PRBF": (PRBF(n_components=12, covariance_type=ct, random_state=3), X0, y0),
        "SemiSupervisedPRBF (split)": (SemiSupervisedPRBF(
            n_components=20, covariance_type=ct, split=True, random_state=5), X8, y8),
        "ConstrainedPRBF": (ConstrainedPRBF(n_components=10, covariance_type=ct,
                                            random_state=7), X0, y0),
    }
    if not full:
        out["PRBFSplit"] = (PRBFSplit(n_components=6, covariance_type=ct, n_init=2,
                                      random_state=1), X0[:700], y0[:700])
        out["IncrementalPRBFSplit"] = (IncrementalPRBFSplit(
            max_components=8, covariance_type=ct, random_state=2), X0[:700], y0[:700])
    return out


PIECES = {"blocked E-step": (blk, "normalize_with_offsets"),
          "sparse moments": (blk, "moments_add"),
          "compacted exponentials": (nz, "_compacted_block"),
          "far rows": (fr, "write_far"),
          "sparse variance": (sv, "weighted_squared_deviations")}


def switch_report(ct: str) -> dict:
    """Per estimator, whether its fitted attributes and predicted probabilities have the same
    bits with the switch off and on; and how often each fast piece ran (with it on)."""
    blk.BLOCKED_MIN_ENTRIES = 0                  # blocked E-steps on these small arrays too
    counts = dict.fromkeys(PIECES, 0)

    def counting(piece, f):
        def counted(*args):
            counts[piece] += fast.ENABLED
            return f(*args)
        return counted

    for piece, (module, name) in PIECES.items():
        setattr(module, name, counting(piece, getattr(module, name)))
    same = {}
    for name, (est, X, y) in _estimators(ct).items():
        runs = []
        for on in (False, True):
            fast.ENABLED = on
            est.fit(X, y)
            runs.append((_fitted(est), est.predict_proba(X).tobytes()))
        fast.ENABLED = True
        (ref, p_ref), (fst, p_fst) = runs
        same[name] = sorted(k for k in ref.keys() | fst.keys() if ref.get(k) != fst.get(k))
        if p_ref != p_fst:
            same[name].append("predict_proba")
    return {"differ": same, "pieces": counts}


@x86_only
@pytest.mark.parametrize("ct", [pytest.param(ct, marks=() if ct == "full" else pytest.mark.slow)
                                for ct in CTS])
def test_the_switch_changes_no_bit_of_the_estimators(ct):
    """Under the kernels every alprbf command pins (where every fast piece applies), each
    estimator's fitted attributes and probabilities have the same bits off and on."""
    got = pinned_json("test_prbf_switch", f"t.switch_report({ct!r})")
    assert got["differ"] == {name: [] for name in got["differ"]}
    ran = {p for p, k in got["pieces"].items() if k}
    want = {"diag": set(PIECES), "spherical": set(PIECES) - {"compacted exponentials",
                                                              "sparse moments"},
            "full": {"blocked E-step", "compacted exponentials", "sparse moments"}}[ct]
    assert ran >= want, f"fast pieces not exercised: {want - ran}"


@pytest.mark.parametrize("ct", CTS)
def test_one_e_step_and_m_step_are_the_reference_bit_for_bit(ct, monkeypatch):
    """The E-step (every field) and the M-step after it, with a collapsed component whose
    covariance the M-step recomputes directly and whose far rows are evaluated directly."""
    X, y = _data(ct, 0.5)
    X = X.copy()
    X[:40] = 12.0 + 1e-7 * np.random.default_rng(0).normal(size=(40, X.shape[1]))
    data = prepare_data(X, y, 10 if ct != "full" else 2, ct)
    p0 = fit_em(data, 15, max_iter=4, reg_covar=1e-9, random_state=0).params
    monkeypatch.setattr(fast, "ENABLED", True)
    est = e_step(data, p0)
    new = m_step(data, est, p0, reg_covar=1e-9)
    ref = reference.e_step(data, p0)
    _assert_same(_bits(ref), _bits(est))
    _assert_same(_bits(reference.m_step(data, ref, p0, reg_covar=1e-9)), _bits(new))


def test_the_switch_is_read_from_the_environment(monkeypatch):
    for value, want in (("0", False), ("1", True), (" 1\n", True)):
        monkeypatch.setenv("ALPRBF_FAST", value)
        assert fast._read_switch() is want
    monkeypatch.delenv("ALPRBF_FAST")
    assert fast._read_switch() is True                      # the default
    monkeypatch.setenv("ALPRBF_FAST", "yes")
    with pytest.raises(ValueError, match="ALPRBF_FAST must be 0"):
        fast._read_switch()
