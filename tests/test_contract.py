"""The one contract template: every registered model and strategy meets the loop's contract.

The tests are parametrised over the registries, so a model or strategy registered later is
covered with no new test code.  ``CHEAP`` only shrinks the search grids of the slow models.
"""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest

from alprbf.models import MODELS, Learner
from alprbf.store.results import model_state_json
from alprbf.strategies import STRATEGIES, QueryStrategy

K = 4            # classes of the task; class 3 is never labeled
N_PER = 24       # rows per class

#: Cheaper settings for models whose defaults search large grids (the contract, not accuracy).
CHEAP = {
    "incremental_prbf_split": {"max_components": 4},
    "incremental_prbf_split_selected": {"max_components": 3, "covariance_types": ["diag"],
                                        "inner_folds": 3},
    "prbf_split_selected": {"max_components": 2, "covariance_types": ["diag"],
                            "inner_folds": 3, "n_init": 1},
    "tuned_svc": {"gamma_range": [-2, 0], "C_range": [0, 2], "inner_folds": 3},
    "random_forest": {"n_estimators": 20},
    "kernel_svm": {"C_grid": [1.0, 10.0], "gamma_grid": [0.1, 1.0], "n_components": 4},
}


def make_learner(name: str, seed: int = 0) -> Learner:
    return MODELS[name](n_classes=K, random_state=seed, **CHEAP.get(name, {}))


def task_data(seed: int = 0):
    """Four Gaussian blobs in 3-d (z-scored scale); labels of classes 0-2 on a third of the
    rows, class 3 never labeled."""
    rng = np.random.default_rng(seed)
    centers = np.array([[0, 0, 0], [3, 0, 0], [0, 3, 0], [0, 0, 3]], dtype=float)
    X = np.concatenate([rng.normal(c, 0.7, size=(N_PER, 3)) for c in centers])
    y = np.repeat(np.arange(K), N_PER)
    y_obs = np.full(len(y), np.nan)
    show = np.flatnonzero((y < 3) & (rng.random(len(y)) < 0.35))
    y_obs[show] = y[show]
    return X, y, y_obs


def assert_posteriors(learner: Learner, X: np.ndarray) -> np.ndarray:
    P = learner.predict_proba(X)
    assert P.shape == (len(X), K)
    assert np.all(np.isfinite(P)) and np.all(P >= 0)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-9)
    lp = learner.predict_log_proba(X)
    assert lp.shape == (len(X), K) and not np.any(np.isnan(lp))
    np.testing.assert_allclose(np.exp(lp), P, atol=1e-9)
    rows = np.arange(0, len(X), 3)
    np.testing.assert_allclose(learner.predict_proba_rows(X, rows), P[rows], atol=1e-12)
    np.testing.assert_allclose(np.exp(learner.predict_log_proba_rows(X, rows)), P[rows],
                               atol=1e-9)
    size = learner.model_size()
    assert size is None or (isinstance(size, (int, np.integer)) and size >= 0)
    return P


def check_model_contract(name: str) -> None:
    """Run the registered model ``name`` through everything the loop asks of a model."""
    X, y, y_obs = task_data()
    labeled_classes = np.unique(y_obs[~np.isnan(y_obs)]).astype(int)

    # fit on partly labeled data; all K posteriors; the unseen class is never predicted
    learner = make_learner(name).fit(X, y_obs)
    assert_posteriors(learner, X)
    assert set(np.unique(learner.predict(X))) <= set(labeled_classes)
    assert np.mean(learner.predict(X)[y < 3] == y[y < 3]) > 0.6

    # diagnostics (health checks): a JSON-able dict that only observes the fitted model
    before = learner.predict_proba(X)
    state = learner.diagnostics()
    assert isinstance(state, dict)
    json.loads(model_state_json(state))
    np.testing.assert_array_equal(learner.predict_proba(X), before)

    # determinism under a seed: a second learner with the same seed gives the same posteriors
    twin = make_learner(name).fit(X, y_obs)
    np.testing.assert_array_equal(twin.predict_proba(X), learner.predict_proba(X))

    # pickling (checkpoints) mid-task, then a warm refit after a query: the unpickled copy and
    # the original continue identically
    copy = pickle.loads(pickle.dumps(learner))
    np.testing.assert_array_equal(copy.predict_proba(X), learner.predict_proba(X))
    pool = np.flatnonzero(np.isnan(y_obs) & (y < 3))
    y_next = y_obs.copy()
    y_next[pool[:2]] = y[pool[:2]]
    learner.fit(X, y_next)
    copy.fit(X, y_next)
    assert_posteriors(learner, X)
    np.testing.assert_array_equal(copy.predict_proba(X), learner.predict_proba(X))

    # one labeled class: every prediction is that class
    y_one = np.full(len(y), np.nan)
    y_one[np.flatnonzero(y == 1)[:5]] = 1
    one = make_learner(name).fit(X, y_one)
    assert_posteriors(one, X)
    assert np.all(one.predict(X) == 1)

    # no label at all: still K finite posteriors
    assert_posteriors(make_learner(name).fit(X, np.full(len(y), np.nan)), X)


@pytest.mark.parametrize("name", list(MODELS))
def test_model_contract(name):
    check_model_contract(name)


# ---------------------------------------------------------------------------- strategies

def model_for(strategy_name: str) -> str:
    """The first registered model that offers what the strategy needs."""
    needs = STRATEGIES[strategy_name].required_model_methods
    return next(n for n in MODELS if all(hasattr(MODELS[n], m) for m in needs))


def check_strategy_contract(name: str) -> None:
    X, y, y_obs = task_data(1)
    model = make_learner(model_for(name)).fit(X, y_obs)
    strategy: QueryStrategy = STRATEGIES[name]()
    pool = np.flatnonzero(np.isnan(y_obs))

    # scores: one per pool row (strategies that score rows)
    if type(strategy).score is not QueryStrategy.score:
        s = strategy.score(X, pool, model)
        assert s.shape == (len(pool),) and not np.any(np.isnan(s))

    # a batch of distinct pool rows, reproducible under the generator's seed
    picked = strategy.query(X, y_obs.copy(), model, 5, np.random.default_rng(3))
    assert len(picked) == 5 and len(np.unique(picked)) == 5
    assert np.all(np.isnan(y_obs[picked]))
    again = strategy.query(X, y_obs.copy(), model, 5, np.random.default_rng(3))
    np.testing.assert_array_equal(again, picked)

    # ties: identical pool rows get identical scores; the batch is still distinct pool rows
    X_tied = X.copy()
    X_tied[pool] = X[pool[0]]
    tied_model = make_learner(model_for(name)).fit(X_tied, y_obs)
    picks = [strategy.query(X_tied, y_obs.copy(), tied_model, 3, np.random.default_rng(s))
             for s in range(6)]
    for p in picks:
        assert len(np.unique(p)) == 3 and np.all(np.isin(p, pool))
    assert len({tuple(sorted(p)) for p in picks}) > 1   # ties are broken at random

    # a batch larger than the pool: the whole pool, once each
    y_small = y.astype(float)
    y_small[[0, 30, 60]] = np.nan
    small_model = make_learner(model_for(name)).fit(X, y_small)
    whole = strategy.query(X, y_small.copy(), small_model, 10, np.random.default_rng(0))
    assert sorted(whole) == [0, 30, 60]


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_strategy_contract(name):
    check_strategy_contract(name)


# ---------------------------------------------------- a new model costs one class + one line

class NearestCentroidLearner(Learner):
    """A throw-away model: posteriors from distances to the labeled class centroids."""

    def __init__(self, n_classes, random_state=None, temperature: float = 1.0):
        super().__init__(n_classes, random_state)
        self.temperature = temperature

    def fit(self, X, y):
        lab = ~np.isnan(y)
        self.centroids_ = {int(k): X[lab][y[lab] == k].mean(axis=0) for k in np.unique(y[lab])}
        return self

    def predict_log_proba(self, X):
        logits = np.full((len(X), self.n_classes), -np.inf)
        if not self.centroids_:
            return np.full((len(X), self.n_classes), -np.log(self.n_classes))
        for k, c in self.centroids_.items():
            logits[:, k] = -np.sum((X - c) ** 2, axis=1) / self.temperature
        top = logits.max(axis=1, keepdims=True)
        return logits - top - np.log(np.exp(logits - top).sum(axis=1, keepdims=True))

    def predict_proba(self, X):
        return np.exp(self.predict_log_proba(X))


@pytest.fixture
def nearest_centroid():
    MODELS.add("nearest_centroid", NearestCentroidLearner)   # the one registry line
    yield "nearest_centroid"
    MODELS.remove("nearest_centroid")


def test_a_new_model_is_covered_by_the_template_and_runs(nearest_centroid, tmp_path):
    check_model_contract(nearest_centroid)
    from alprbf.engine.config import parse_config
    from alprbf.engine.runner import run_experiment
    from alprbf.store.results import read_results

    cfg = parse_config({
        "name": "nc", "dataset": {"name": "two_moons", "params": {"n_samples": 80}},
        "model": {"name": nearest_centroid, "params": {"temperature": 0.5}},
        "strategy": ["random", "uncertainty"],
        "protocol": {"folds": 2, "seed": 1, "initial": {"method": "random", "size": 6},
                     "budget": 4}})
    run_experiment(cfg, tmp_path / "nc", progress=False)
    rows = read_results(tmp_path / "nc")
    assert set(rows["model"]) == {"nearest_centroid"} and len(rows) == 2 * 2 * 5
