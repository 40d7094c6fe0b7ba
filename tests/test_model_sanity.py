"""Model sanity suite: every registered model learns in the easiest case (issue 49).

With every training row labeled, on small standard data sets, each model predicts every class
and comes within a margin, stated here before the suite was first run, of a plain reference
learner of its family (docs/sanity.md gives the protocol, the margins and the allow-list).
Second, the RBF SVM with uncertainty sampling under the table-003 protocol reaches 95 % test
accuracy by 200 labels on two moons and concentric circles.

A case that fails today is a strict ``xfail`` naming the issue that fixes it and the figure
measured, so the fix turns it into a failure that forces the allow-list to be updated.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
import yaml
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.linear_model import LogisticRegression
from sklearn.mixture import GaussianMixture
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

import alprbf.svm_kernels.svm as kernel_svm_module
from alprbf.datasets import DATASETS
from alprbf.datasets.fetch import is_available
from alprbf.engine.config import load_config, parse_config
from alprbf.engine.protocol import run_task
from alprbf.engine.runner import load_datasets, plan
from alprbf.models import MODELS
from alprbf.report.health import load_sanity_failures
from alprbf.svm_kernels.svm import DEFAULT_GRID

from .session_cache import computed_once, once_per_session

ROOT = Path(__file__).resolve().parents[1]

# ------------------------------------------------------------------ margins (a priori)

#: Percentage points a model's pooled out-of-fold accuracy may trail its reference's.
MARGINS = {
    "svm": 2.0,       # kernel SVMs vs a tuned RBF SVC (issue 49's figure)
    "label": 3.0,     # label models vs logistic regression
    "prbf": 3.0,      # PRBF / mixture family vs one full Gaussian per class (QDA)
    "sklearn": 0.0,   # sklearn wrappers vs the estimator they wrap: identical predictions
}
#: Test accuracy the RBF SVM with uncertainty sampling reaches by 200 labels (table-003 protocol).
CURVE_TARGET, CURVE_LABELS = 0.95, 200

FOLDS = 5
SEED = 49


@dataclass(frozen=True)
class Case:
    """One registered model with the parameters a shipped config runs it with."""

    id: str
    model: str
    family: str
    params: dict = field(default_factory=dict)


_W = {"alpha": None, "beta": None}          # configs/table_003.yaml: weights searched if any
CORRECTED_003 = ROOT / "configs" / "experiments" / "reitmaier2016_corrected.yaml"


def _corrected(label: str) -> dict:
    """The parameters the corrected table-003 config (decisions 0301-0311) gives the model
    labelled ``label``, read by the loader every run uses."""
    return next(model.params for model, _ in load_config(CORRECTED_003).methods
                if model.label == label)


#: Every registered model (test_every_model_has_a_case checks it); parameters as the shipped
#: configs run them (docs/sanity.md), else the defaults.
CASES = [
    # kernel SVMs: configs/table_003.yaml, configs/table_001.yaml
    Case("kernel_svm-rbf", "kernel_svm", "svm", {"kernel": "rbf", "refine": True, **_W}),
    Case("kernel_svm-rwm", "kernel_svm", "svm", {"kernel": "rwm", "refine": True, **_W}),
    Case("kernel_svm-gmm", "kernel_svm", "svm", {"kernel": "gmm", "refine": True, **_W}),
    Case("kernel_svm-lap", "kernel_svm", "svm", {"kernel": "lap", **_W}),
    # the RWM SVM as the corrected pipeline runs it (issue 50's acceptance: with all labels
    # near the RBF SVM on iris, wine, seeds)
    Case("kernel_svm-rwm-corrected", "kernel_svm", "svm", _corrected("rwm")),
    # the other kernels as the corrected pipeline runs them: sanity before the verdict
    Case("kernel_svm-gmm-corrected", "kernel_svm", "svm", _corrected("gmm")),
    Case("kernel_svm-lap-corrected", "kernel_svm", "svm", _corrected("lap")),
    Case("kernel_svm-rbf-corrected", "kernel_svm", "svm", _corrected("rbf")),
    Case("tuned_svc", "tuned_svc", "svm",
         {"gamma_range": [-15, 3], "C_range": [-5, 15], "inner_folds": 9, "cv_seed": 0}),
    # label models: configs/table_004.yaml
    Case("preclustering", "preclustering", "label"),
    Case("linear_svm", "linear_svm", "label"),
    # PRBF / mixture family: configs/table_001.yaml, table_002.yaml, table_000*.yaml
    Case("prbf", "prbf", "prbf", {"n_components": 10, "covariance_type": "full", "n_init": 3}),
    Case("constrained_prbf", "constrained_prbf", "prbf",
         {"n_components": 10, "covariance_type": "full", "n_init": 3}),
    Case("prbf_split", "prbf_split", "prbf"),
    # table_001's smoke-scale search: its full search costs a minute of CPU per fold
    Case("prbf_split_selected", "prbf_split_selected", "prbf",
         {"max_components": 4, "covariance_types": ["diag"], "inner_folds": 3, "n_init": 2}),
    Case("incremental_prbf_split", "incremental_prbf_split", "prbf",
         {"covariance_type": "full", "reg_covar": 1e-3}),
    Case("incremental_prbf_split_selected", "incremental_prbf_split_selected", "prbf",
         {"max_components": 30, "covariance_types": ["spherical", "diag", "full"],
          "inner_folds": 9, "cv_seed": 0, "add_threshold": 0.01, "kd_depth": 3}),
    Case("ssl_prbf", "ssl_prbf", "prbf"),
    Case("active_prbf", "active_prbf", "prbf",
         {"covariance_type": "diag", "candidate_rows": "labeled", "reg_covar": 1e-3}),
    Case("incremental_ssl_prbf", "incremental_ssl_prbf", "prbf",
         {"covariance_type": "diag", "candidate_rows": "labeled", "reg_covar": 1e-3}),
    Case("cmm_sha", "cmm_sha", "prbf"),
    Case("cmm_sep", "cmm_sep", "prbf"),
    # sklearn wrappers: configs/table_003.yaml, table_004.yaml, table_000_passive.yaml
    Case("svc", "svc", "sklearn"),
    Case("logistic_regression", "logistic_regression", "sklearn"),
    Case("gaussian_nb", "gaussian_nb", "sklearn"),
    Case("random_forest", "random_forest", "sklearn", {"n_estimators": 20}),
]

#: Warm-started learners that grow their network by one step per ``fit`` (the loop refits them
#: after every query): fitted again on the same labels until a fit leaves their size unchanged,
#: at most ``MAX_GROWTH_FITS`` times.  One fit is only the first step from the one-node network.
GROWING = {"active_prbf", "incremental_ssl_prbf"}
MAX_GROWTH_FITS = 20

_VS_GAUSS = "vs per-class Gaussian"
_I50_DENSITY = "issue 50: the VI density model (fragmented, stopped early or unconverged)"
_I51_EM = ("issue 51: Titsias & Likas 2001's EM start (k-means on the pooled classes) and 1e-6 "
           "covariance floor, beaten by its own special case")
#: (case id, data set) -> reason: the cases that fail today (docs/sanity.md, allow-list), with
#: the pooled accuracy measured against the reference's.
ALLOWED_FAILURES: dict[tuple[str, str], str] = {
    ("kernel_svm-rwm", "wine"): f"{_I50_DENSITY} behind the RWM kernel: 95.5 % vs RBF SVC 97.8 %",
    ("preclustering", "iris"): ("issue 51: Nguyen & Smeulders 2004's scale (sigma0 = 2.2 d in "
                                "0..255 units; no shrink with every label, 22 clusters): 92.0 % vs "
                                "logistic regression 95.3 %"),
    ("preclustering", "wine"): ("issue 51: Nguyen & Smeulders 2004's scale (sigma0 = 2.2 d in "
                                "0..255 units; no shrink with every label, 25 clusters): 92.1 % vs "
                                "logistic regression 97.8 %"),
    ("prbf", "iris"): f"{_I51_EM} (M = 10, full): 94.0 % {_VS_GAUSS} 97.3 %",
    ("prbf", "wine"): (f"{_I51_EM} (M = 10, full): 64.6 % {_VS_GAUSS} 99.4 %, two folds "
                       "predict two classes"),
    ("constrained_prbf", "wine"): (f"{_I51_EM} (M = 10, full): 64.6 % {_VS_GAUSS} 99.4 %, "
                                   "two folds predict two classes"),
    ("constrained_prbf", "seeds"): f"{_I51_EM} (M = 10, full): 89.5 % {_VS_GAUSS} 94.8 %",
    ("ssl_prbf", "wine"): f"{_I51_EM} (defaults: M = 5, full): 92.1 % {_VS_GAUSS} 99.4 %",
    ("ssl_prbf", "seeds"): f"{_I51_EM} (defaults: M = 5, full): 89.5 % {_VS_GAUSS} 94.8 %",
    ("incremental_prbf_split", "wine"): ("issue 51: Constantinopoulos & Likas 2008's "
                                         "incremental PRBF-split (full, floor 1e-3; cause not "
                                         f"isolated): 91.0 % {_VS_GAUSS} 99.4 %"),
    ("incremental_prbf_split_selected", "wine"): ("issue 49: Constantinopoulos & Likas 2006's "
                                                  "incremental PRBF-split (no fix issue yet; "
                                                  f"cause not isolated): 96.1 % {_VS_GAUSS} "
                                                  "99.4 %"),
    ("cmm_sha", "iris"): f"{_I50_DENSITY}: 78.7 % {_VS_GAUSS} 97.3 %",
    ("cmm_sha", "wine"): f"{_I50_DENSITY}: 88.2 % {_VS_GAUSS} 99.4 %",
    ("cmm_sha", "seeds"): f"{_I50_DENSITY}: 89.5 % {_VS_GAUSS} 94.8 %",
    ("cmm_sep", "wine"): (f"{_I50_DENSITY}: 71.3 % {_VS_GAUSS} 99.4 %, two folds predict "
                          "one class"),
}
#: Cases too slow for the default run (docs/sanity.md, run time; CI runs them): the density
#: models of the RWM/GMM kernels and CMM, LAP's search, the line searches over inner folds,
#: and the table-003 curves ("curve").
SLOW: set[str] = {"kernel_svm-rbf", "kernel_svm-rwm", "kernel_svm-rwm-corrected", "kernel_svm-gmm",
                  "kernel_svm-lap", "kernel_svm-gmm-corrected", "kernel_svm-lap-corrected",
                  "kernel_svm-rbf-corrected", "tuned_svc",
                  "incremental_prbf_split_selected", "cmm_sha", "cmm_sep", "curve"}

MIRRORED = {"seeds"}
DATASET_NAMES = ("iris", "wine", "seeds")


# ------------------------------------------------------------------ data and references

def _mirror_marks(name: str) -> list:
    if name not in MIRRORED:
        return []
    return [pytest.mark.mirror,
            pytest.mark.skipif(not os.environ.get("ALPRBF_DATA_MIRROR"),
                               reason="ALPRBF_DATA_MIRROR is not set")]


@functools.cache
def dataset(name: str) -> tuple[np.ndarray, np.ndarray]:
    cls = DATASETS[name]
    if name in MIRRORED:
        if not all(is_available(cls.folder, f) for f in cls.files):
            pytest.skip(f"{name} is not in the mirror")
        ds = cls().load_files(allow_download=False, progress=False)
    else:
        ds = cls().load()
    return ds.X.astype(np.float64), ds.y.astype(np.int64)


@functools.cache
def folds(name: str) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """Seeded stratified folds, features z-scored on each training part:
    (X_train, y_train, X_test, test row indices)."""
    X, y = dataset(name)
    out = []
    for train, test in StratifiedKFold(FOLDS, shuffle=True, random_state=SEED).split(X, y):
        scaler = StandardScaler().fit(X[train])
        out.append((scaler.transform(X[train]), y[train], scaler.transform(X[test]), test))
    return out


def tuned_rbf_svc(fold: int) -> GridSearchCV:
    """RBF SVC with C and gamma searched over kernel_svm's grid by stratified 4-fold CV."""
    inner = StratifiedKFold(4, shuffle=True, random_state=SEED + fold)
    return GridSearchCV(SVC(kernel="rbf"), {"C": list(DEFAULT_GRID),
                                            "gamma": list(DEFAULT_GRID)}, cv=inner)


class PerClassGaussian(ClassifierMixin, BaseEstimator):
    """One full-covariance Gaussian per class (sklearn's ``GaussianMixture`` with one component,
    its default covariance floor 1e-6) and the class shares as priors: QDA, which sklearn's
    ``QuadraticDiscriminantAnalysis`` refuses on seeds (a class covariance it deems
    rank-deficient: compactness is a function of area and perimeter)."""

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        self.gaussians_ = [GaussianMixture(1, covariance_type="full").fit(X[y == k])
                           for k in self.classes_]
        self.log_prior_ = np.log(np.bincount(y)[self.classes_] / len(y))
        return self

    def predict(self, X):
        joint = np.column_stack([g.score_samples(X) for g in self.gaussians_]) + self.log_prior_
        return self.classes_[np.argmax(joint, axis=1)]


REFERENCES = {
    "svm": tuned_rbf_svc,
    "label": lambda fold: LogisticRegression(C=1.0, max_iter=1000),
    "prbf": lambda fold: PerClassGaussian(),
}


def _reference_predictions(family: str, name: str) -> np.ndarray:
    y = dataset(name)[1]
    pred = np.empty_like(y)
    for f, (Xtr, ytr, Xte, test) in enumerate(folds(name)):
        pred[test] = REFERENCES[family](f).fit(Xtr, ytr).predict(Xte)
    return pred


@functools.cache
def reference_predictions(family: str, name: str, directory: Path) -> np.ndarray:
    """The reference's out-of-fold predictions, computed once per session: the tuned RBF SVC
    (720 SVC fits a data set) is the reference of six cases a data set, which ``make test``
    spreads over both xdist workers."""
    return computed_once(directory, f"sanity-reference-{family}-{name}",
                         lambda: _reference_predictions(family, name))


@pytest.fixture
def pool_density_once(session_cache_dir, monkeypatch):
    """The density model of the pool (RWM and GMM kernels) fitted once per session for each
    training part, options and seed.

    The RWM and GMM SVMs of a data set and fold fit the same model (the same rows, options and
    seed, ``KernelSVC._pool_density``): the first case to need it fits it, the other reads the
    fitted model back (a pure function of those inputs: the same values to the bit).
    """
    def key(X, categorical=None, options=None, **kwargs):
        seed = kwargs.get("random_state")
        if set(kwargs) != {"random_state"} or not isinstance(seed, int | np.integer):
            return None
        return (np.asarray(X, dtype=np.float64),
                None if categorical is None else np.asarray(categorical), options, int(seed))

    monkeypatch.setattr(kernel_svm_module, "fit_density",
                        once_per_session(session_cache_dir, "sanity-density",
                                         kernel_svm_module.fit_density, key))


def fitted_learner(case: Case, Xtr: np.ndarray, ytr: np.ndarray, fold: int, K: int):
    learner = MODELS[case.model](n_classes=K, random_state=SEED + fold, **case.params)
    y = ytr.astype(np.float64)
    learner.fit(Xtr, y)
    if case.model in GROWING:
        for _ in range(MAX_GROWTH_FITS - 1):
            size = learner.model_size()
            if learner.fit(Xtr, y).model_size() == size:
                break
    return learner


def wrapped_estimator(learner, fold: int):
    """The sklearn estimator a wrapper learner holds, unfitted, with the learner's seed."""
    est = clone(learner.estimator)
    if "random_state" in est.get_params():
        est.set_params(random_state=SEED + fold)
    return est


# ------------------------------------------------------------------ the sanity cases

def _case_params():
    for case in CASES:
        for name in DATASET_NAMES:
            marks = _mirror_marks(name)
            if case.id in SLOW:
                marks.append(pytest.mark.slow)
            reason = ALLOWED_FAILURES.get((case.id, name))
            if reason is not None:
                marks.append(pytest.mark.xfail(strict=True, reason=reason))
            yield pytest.param(case, name, marks=marks, id=f"{case.id}-{name}")


def test_every_model_has_a_case():
    assert {c.model for c in CASES} == set(MODELS)
    assert len({c.id for c in CASES}) == len(CASES)
    assert {k[0] for k in ALLOWED_FAILURES} | (SLOW - {"curve"}) <= {c.id for c in CASES}


@pytest.mark.parametrize(("case", "name"), list(_case_params()))
def test_model_with_every_label_matches_its_reference(case: Case, name: str,
                                                      session_cache_dir: Path,
                                                      pool_density_once):
    check_case(case, name, session_cache_dir, every_fold=True)


def check_case(case: Case, name: str, session_cache_dir: Path, *, every_fold: bool) -> None:
    """Fit ``case`` on each fold of ``name`` with every training row labeled; assert that it
    predicts every class (on every fold's test rows, or with ``every_fold=False`` pooled over
    the folds, every class of at least ``FOLDS`` rows that the reference predicts right at
    least once) and comes within the margin of its family's reference (the sklearn wrappers:
    identical predictions)."""
    X, y = dataset(name)
    K = int(y.max()) + 1
    pred = np.empty_like(y)
    for f, (Xtr, ytr, Xte, test) in enumerate(folds(name)):
        learner = fitted_learner(case, Xtr, ytr, f, K)
        pred[test] = learner.predict(Xte)
        missing = sorted(set(range(K)) - set(pred[test].tolist()))
        assert not (every_fold and missing), \
            f"{case.id} on {name} fold {f}: never predicts class {missing}"
    if not every_fold:
        # the classes a sanity check can demand: of at least FOLDS rows, and recognised by the
        # reference at least once (glass's class 2, 17 rows: the tuned RBF SVC predicts it 4
        # times, all wrong)
        ref = reference_predictions(case.family, name, session_cache_dir)
        counts = np.bincount(y, minlength=K)
        known = set(np.flatnonzero(counts >= FOLDS).tolist()) & set(y[ref == y].tolist())
        missing = sorted(known - set(pred.tolist()))
        assert not missing, f"{case.id} on {name}: never predicts class {missing}"
        if case.family == "sklearn":
            ref = wrapped_estimator(learner, f).fit(Xtr, ytr).predict(Xte)
            np.testing.assert_array_equal(pred[test], ref,
                                          err_msg=f"{case.id} on {name} fold {f}")
    if case.family == "sklearn":
        return
    acc = 100 * np.mean(pred == y)
    ref = 100 * np.mean(reference_predictions(case.family, name, session_cache_dir) == y)
    margin = MARGINS[case.family]
    assert acc >= ref - margin, (f"{case.id} on {name}: {acc:.1f} % vs reference "
                                 f"{ref:.1f} % (margin {margin} points)")


# ------------------------------------------------------------------ table-003 data sets

#: Table 003's data sets beyond the standard three on which the corrected kernels of
#: Reitmaier et al. 2016 are checked (docs/sanity.md): small, continuous, and with classes
#: of a few rows (ecoli: two classes of 2 rows), so "every class" is pooled over the folds
#: and means the classes of at least ``FOLDS`` rows that the reference recognises.
DATASETS_003 = ("glass", "ecoli", "pima", "vehicle", "vowel", "yeast")
MIRRORED |= set(DATASETS_003)
CORRECTED_CASES = ("kernel_svm-rbf-corrected", "kernel_svm-rwm-corrected",
                   "kernel_svm-gmm-corrected", "kernel_svm-lap-corrected")
#: Left out for cost only: LAP's search on pima's 614 training rows takes about 2 minutes (and
#: more on vehicle's 677 and vowel's 792); every yeast case takes 45-90 s and its reference
#: about a minute, so yeast's RWM and GMM figures below were measured once, outside the suite.
SKIPPED_003 = {("kernel_svm-lap-corrected", "pima"), ("kernel_svm-lap-corrected", "vehicle"),
               ("kernel_svm-lap-corrected", "vowel"),
               *((f"kernel_svm-{k}-corrected", "yeast") for k in ("rbf", "rwm", "gmm", "lap"))}
_I50_003 = ("issue 50: the corrected {kernel} SVM with every label: {acc} % vs the tuned RBF "
            "SVC's {ref} % (the corrected RBF SVM: {rbf} %); not the refinement's dispute "
            "rule, changed by decision 0311 (docs/sanity.md)")
#: (kernel, data set) -> (its pooled accuracy, the reference's, the corrected RBF SVM's), %,
#: under decision 0311's dispute rule.
_MEASURED_003 = {("rwm", "glass"): (65.0, 69.2, 70.6), ("gmm", "glass"): (63.1, 69.2, 70.6),
                 ("rwm", "ecoli"): (83.3, 86.9, 86.9), ("gmm", "ecoli"): (83.0, 86.9, 86.9),
                 ("rwm", "pima"): (73.4, 77.1, 75.8), ("gmm", "pima"): (74.1, 77.1, 75.8),
                 ("rwm", "vowel"): (95.5, 98.9, 99.1), ("gmm", "vowel"): (95.3, 98.9, 99.1),
                 ("gmm", "yeast"): (57.7, 60.8, 60.6)}
#: (case id, data set) -> reason, as ``ALLOWED_FAILURES``.
ALLOWED_FAILURES_003: dict[tuple[str, str], str] = {
    (f"kernel_svm-{kernel}-corrected", name): _I50_003.format(kernel=kernel.upper(), acc=acc,
                                                             ref=ref, rbf=rbf)
    for (kernel, name), (acc, ref, rbf) in _MEASURED_003.items()}


def _case_params_003():
    for cid in CORRECTED_CASES:
        case = next(c for c in CASES if c.id == cid)
        for name in DATASETS_003:
            if (cid, name) in SKIPPED_003:
                continue
            marks = [*_mirror_marks(name), pytest.mark.slow]
            reason = ALLOWED_FAILURES_003.get((cid, name))
            if reason is not None:
                marks.append(pytest.mark.xfail(strict=True, reason=reason))
            yield pytest.param(case, name, marks=marks, id=f"{cid}-{name}")


def test_sanity_list_names_exactly_the_failing_corrected_kernels():
    """results/sanity-failures.yaml, which withholds the verdicts of `alprbf report --sanity`,
    names a corrected table-003 kernel's cells exactly where its case is a strict xfail."""
    entries = load_sanity_failures(ROOT / "results" / "sanity-failures.yaml")
    config = load_config(CORRECTED_003)
    strategies = {}
    for model, strategy in config.methods:
        strategies.setdefault(model.label, []).append(strategy.label)
    for cid in CORRECTED_CASES:
        kernel = cid.split("-")[1]
        for name in (*DATASET_NAMES, *DATASETS_003):
            failing = (cid, name) in ALLOWED_FAILURES or (cid, name) in ALLOWED_FAILURES_003
            for strategy in strategies[kernel]:
                listed = any(e.matches(config.name, name,
                                       f"{kernel} / {strategy}") for e in entries)
                assert listed == failing, (cid, name, strategy)


@pytest.mark.parametrize(("case", "name"), list(_case_params_003()))
def test_corrected_kernel_on_table_003_data(case: Case, name: str, session_cache_dir: Path,
                                            pool_density_once):
    check_case(case, name, session_cache_dir, every_fold=False)


# ------------------------------------------------------------------ table-003 learning curve

CURVE_FOLDS = (0, 1)
CURVE_DATASETS = ("two_moons", "concentric")
#: (data set, fold) -> reason: curve cases that fail today (docs/sanity.md, allow-list).
ALLOWED_CURVE_FAILURES: dict[tuple[str, int], str] = {
    ("two_moons", 0): ("issue 50: Reitmaier et al. 2016's RBF-US (tuning on the initial set, "
                       "five queries per round): 80.6 % at 200 labels, a one-class predictor "
                       "at 58-108"),
    ("two_moons", 1): ("issue 50: Reitmaier et al. 2016's RBF-US (tuning on the initial set, "
                       "five queries per round): 86.3 % at 200 labels"),
}


@functools.cache
def table_003_curve_config():
    """configs/table_003.yaml restricted to the curve's data sets and the RBF-US method, to
    ``CURVE_LABELS`` labels; its protocol (folds, initial set, batch size, seed) as is."""
    path = ROOT / "configs" / "table_003.yaml"
    data = yaml.safe_load(path.read_text())
    data["dataset"] = [d for d in data["dataset"] if d["name"] in CURVE_DATASETS]
    data["methods"] = [m for m in data["methods"]
                       if isinstance(m["model"], dict) and m["model"].get("label") == "rbf"
                       and m["strategy"] == "uncertainty_svm"]
    data["protocol"]["labels"] = CURVE_LABELS
    data.pop("reference", None)
    data.pop("scales", None)
    return parse_config(data, source=str(path), base_dir=path.parent)


@functools.cache
def curve_datasets():
    return load_datasets(table_003_curve_config())


def _curve_params():
    for name in CURVE_DATASETS:
        for fold in CURVE_FOLDS:
            marks = [pytest.mark.slow] if "curve" in SLOW else []
            reason = ALLOWED_CURVE_FAILURES.get((name, fold))
            if reason is not None:
                marks.append(pytest.mark.xfail(strict=True, reason=reason))
            yield pytest.param(name, fold, marks=marks, id=f"{name}-f{fold}")


def test_curve_config_is_table_003s_rbf_us():
    cfg = table_003_curve_config()
    assert sorted(d.name for d in cfg.datasets) == sorted(CURVE_DATASETS)
    assert [(m.label, s.name) for m, s in cfg.methods] == [("rbf", "uncertainty_svm")]
    assert cfg.protocol.batch_size == 5 and cfg.protocol.initial.method == "density"


@pytest.mark.parametrize(("name", "fold"), list(_curve_params()))
def test_rbf_uncertainty_sampling_reaches_target_by_200_labels(name: str, fold: int):
    cfg = table_003_curve_config()
    task = next(t for t in plan(cfg) if t.dataset.name == name and t.fold == fold)
    ds = curve_datasets()[task.dataset.label]
    rows = run_task(task, ds, cfg.protocol_for(task.dataset))
    last = rows.iloc[-1]
    assert last["n_labeled"] == CURVE_LABELS
    assert last["test_accuracy"] >= CURVE_TARGET, (
        f"RBF-US on {name} fold {fold}: {100 * last['test_accuracy']:.1f} % at "
        f"{CURVE_LABELS} labels (target {100 * CURVE_TARGET:.0f} %)")
