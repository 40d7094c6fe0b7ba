"""One active-learning task: a grid cell (dataset x model x strategy) on one fold of one repetition.

The loop (pool-based active learning):

1. split the data into folds (shared by every method of the experiment: the split depends only on
   the config seed, the dataset label and the repetition);
2. draw the initial labeled set ``L`` from the training part (depends on seed, dataset,
   repetition and fold only, so every method starts from the same labels); the rest is the pool
   ``U``; the held-out fold is the test set ``T``;
3. each iteration: fit the model on ``L`` (semi-supervised models also see ``U``), evaluate it on
   ``T``, on ``L u U`` with the true labels (``train_accuracy``) and on ``L``
   (``labeled_accuracy``), record a row, ask the strategy for a batch, reveal its labels.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.model_selection import KFold, StratifiedKFold

from .checkpoint import Checkpoint
from .config import Component, DatasetSpec, Initial, Protocol
from .datasets import Dataset
from .errors import UserError
from .models import MODELS
from .prbf._gaussian import estimate_log_gaussian_prob
from .schema import COLUMNS
from .seeding import derive_seed, seed_int
from .strategies import STRATEGIES


@dataclass(frozen=True)
class Task:
    """Identity of one unit of work."""

    experiment: str
    dataset: DatasetSpec
    model: Component
    strategy: Component
    repetition: int
    fold: int

    @property
    def task_id(self) -> str:
        safe = [_safe(x) for x in (self.dataset.label, self.model.label, self.strategy.label)]
        return "__".join(safe) + f"__r{self.repetition}__f{self.fold}"


def _safe(label: str) -> str:
    return "".join(c if c.isalnum() or c in "-_.=" else "-" for c in label)


# --------------------------------------------------------------------------- folds and initial set


def make_folds(y: np.ndarray, n_folds: int, stratified: bool,
               seed: np.random.SeedSequence) -> list[np.ndarray]:
    """Test-row indices of each fold (shuffled, stratified by class when asked)."""
    if n_folds > len(y):
        raise UserError(f"protocol.folds = {n_folds} exceeds the {len(y)} rows of the data set")
    rs = seed_int(seed)
    if stratified:
        smallest = np.bincount(y).min()
        if smallest < n_folds:
            raise UserError(f"protocol.folds = {n_folds} with stratified: true needs at least "
                            f"{n_folds} rows per class; the smallest class has {smallest} "
                            "(lower folds or set stratified: false)")
        splitter = StratifiedKFold(n_folds, shuffle=True, random_state=rs)
    else:
        splitter = KFold(n_folds, shuffle=True, random_state=rs)
    return [test for _, test in splitter.split(np.zeros(len(y)), y)]


def density_initial(X: np.ndarray, size: int, rng: np.random.Generator,
                    n_components: int | None = None, top_fraction: float = 0.1) -> np.ndarray:
    """Density-based initial selection (seed 003, Algorithm 2).

    A mixture model is fitted by variational inference to the unlabeled pool (sklearn's
    ``BayesianGaussianMixture``, full covariances).  Until ``size`` rows are chosen: draw a
    component not visited in the current sweep, rank the pool by ``p(x | component)`` and pick a
    random row from the top ``top_fraction`` not yet chosen; a sweep ends when every component
    was visited.  ``n_components`` defaults to ``size`` (capped at 20): the paper leaves the
    number of components J to the VI fit.  The paper draws ``r`` from ``[0, J]``; we read that as
    the J component indices ``0 .. J-1``.
    """
    from sklearn.mixture import BayesianGaussianMixture

    J = int(n_components or min(size, 20))
    J = max(1, min(J, len(X)))
    vi = BayesianGaussianMixture(n_components=J, covariance_type="full", max_iter=200,
                                 reg_covar=1e-6, random_state=seed_int_from_rng(rng))
    vi.fit(X)
    # log N(x | mu_r, Sigma_r) for every component (same precision-Cholesky convention as sklearn)
    log_dens = estimate_log_gaussian_prob(X, vi.means_, vi.precisions_cholesky_, "full")
    chosen: list[int] = []
    taken = np.zeros(len(X), bool)
    visited: set[int] = set()
    while len(chosen) < size:
        if len(visited) == J:
            visited.clear()
        r = int(rng.choice([j for j in range(J) if j not in visited]))
        visited.add(r)
        order = np.argsort(-log_dens[:, r], kind="stable")
        order = order[~taken[order]]
        top = order[: max(1, int(np.ceil(top_fraction * len(order))))]
        pick = int(rng.choice(top))
        taken[pick] = True
        chosen.append(pick)
    return np.asarray(chosen, dtype=np.int64)


def seed_int_from_rng(rng: np.random.Generator) -> int:
    return int(rng.integers(2**31 - 1))


def initial_labeled(X: np.ndarray, y: np.ndarray, initial: Initial, n_classes: int,
                    rng: np.random.Generator) -> np.ndarray:
    """Indices (into ``X``) of the initial labeled set drawn from a fold's training part."""
    n = len(y)
    if initial.method == "all":
        return np.arange(n)
    if initial.method == "random":
        if initial.size > n:
            raise UserError(f"protocol.initial.size = {initial.size} exceeds the {n} training rows "
                            "of a fold")
        return np.sort(rng.choice(n, size=initial.size, replace=False))
    if initial.method == "per_class":
        picks = []
        for k in range(n_classes):
            rows = np.flatnonzero(y == k)
            if len(rows) < initial.size:
                raise UserError(f"protocol.initial.size = {initial.size} per class, but class {k} "
                                f"has only {len(rows)} training rows in a fold")
            picks.append(rng.choice(rows, size=initial.size, replace=False))
        return np.sort(np.concatenate(picks))
    if initial.method == "density":
        if initial.size > n:
            raise UserError(f"protocol.initial.size = {initial.size} exceeds the {n} training rows "
                            "of a fold")
        return np.sort(density_initial(X, initial.size, rng))
    raise UserError(f"unknown initial method '{initial.method}'")  # guarded by config parsing


# --------------------------------------------------------------------------- the loop


def _accuracy(model, X: np.ndarray, y: np.ndarray) -> float:
    if len(y) == 0:
        return 0.0
    return float(np.mean(model.predict(X) == y))


def check_budget(n_train: int, n_initial: int, protocol: Protocol) -> None:
    """Refuse budgets larger than the pool."""
    pool = n_train - n_initial
    if protocol.budget > pool:
        raise UserError(f"protocol.budget = {protocol.budget} exceeds the pool: a fold has "
                        f"{n_train} training rows, {n_initial} initially labeled, so at most "
                        f"{pool} can be queried")


def task_seeds(task: Task, protocol: Protocol) -> dict[str, object]:
    """Every seed a task uses, derived from the config seed and the task's identity.

    Folds depend on (dataset, repetition); the initial labeled set on (dataset, repetition,
    fold); the model and strategy streams on the whole identity.
    """
    root, dl = protocol.seed, task.dataset.label
    method = derive_seed(root, "method", dl, task.model.label, task.strategy.label,
                         task.repetition, task.fold)
    model_seq, strategy_seq = method.spawn(2)
    return {
        "folds_seed": seed_int(derive_seed(root, "folds", dl, task.repetition)),
        "initial_spawn_key": list(derive_seed(root, "initial", dl, task.repetition,
                                              task.fold).spawn_key),
        "model_random_state": seed_int(model_seq),
        "strategy_seed": strategy_seq,
    }


def run_task(task: Task, ds: Dataset, protocol: Protocol,
             on_query: Callable[[int], None] | None = None,
             checkpoint: Checkpoint | None = None, threads: int = 1) -> pd.DataFrame:
    """Run one task and return its rows (schema: :data:`alprbf.schema.SCHEMA`).

    Parameters
    ----------
    task : Task
    ds : Dataset
        After global preprocessing.
    protocol : Protocol
    on_query : callable, optional
        Called with the number of labels queried after each round (progress reporting); on a
        resume, called once first with the number of queries the checkpoint already holds.
    checkpoint : Checkpoint, optional
        Save the loop state there every ``checkpoint.every_seconds`` and resume from it when it
        holds this task (see :mod:`alprbf.checkpoint`).  The caller deletes it once the rows
        are written.
    threads : int
        Threads the strategy may use inside one query (today the QBC committee; see
        :attr:`alprbf.strategies.base.QueryStrategy.threads`).  The rows do not depend on it.
    """
    root = protocol.seed
    dl = task.dataset.label
    folds = make_folds(ds.y, protocol.folds, protocol.stratified,
                       derive_seed(root, "folds", dl, task.repetition))
    test = folds[task.fold]
    train = np.setdiff1d(np.arange(ds.n_samples), test)
    transform = task.dataset.preprocessing.fit_fold(ds.X[train], ds.categorical)
    X_train, X_test = transform(ds.X[train]), transform(ds.X[test])
    y_train, y_test = ds.y[train], ds.y[test]
    K = ds.n_classes

    init_rng = np.random.default_rng(derive_seed(root, "initial", dl, task.repetition, task.fold))
    labeled = initial_labeled(X_train, y_train, protocol.initial, K, init_rng)
    check_budget(len(train), len(labeled), protocol)

    seeds = task_seeds(task, protocol)
    model = MODELS[task.model.name](n_classes=K, random_state=seeds["model_random_state"],
                                    **task.model.params)
    strategy = STRATEGIES[task.strategy.name](**task.strategy.params)
    rng = np.random.default_rng(seeds["strategy_seed"])

    y_obs = np.full(len(train), np.nan)
    y_obs[labeled] = y_train[labeled]
    new_rows, query_seconds = labeled, 0.0
    rows = []
    n_rounds = protocol.n_iterations
    remaining = protocol.budget
    start = 0
    state = checkpoint.load() if checkpoint is not None else None
    if state is not None and state.get("task_id") == task.task_id:
        start = state["next_iteration"]
        model, strategy, rng = state["model"], state["strategy"], state["rng"]
        y_obs, rows, new_rows = state["y_obs"], state["rows"], state["new_rows"]
        query_seconds, remaining = state["query_seconds"], state["remaining"]
        if on_query is not None and protocol.budget > remaining:
            on_query(protocol.budget - remaining)
    strategy.threads = threads
    last_save = time.perf_counter()
    for it in range(start, n_rounds + 1):
        t0 = time.perf_counter()
        model.fit(X_train, y_obs)
        fit_seconds = time.perf_counter() - t0
        is_labeled = ~np.isnan(y_obs)
        last = it == n_rounds
        if it % protocol.evaluate_every == 0 or last:
            test_acc = _accuracy(model, X_test, y_test)
            rows.append({
                "experiment": task.experiment, "dataset": dl, "model": task.model.label,
                "strategy": task.strategy.label, "fold": task.fold,
                "repetition": task.repetition, "iteration": it,
                "n_labeled": int(is_labeled.sum()),
                "test_error": 1.0 - test_acc, "test_accuracy": test_acc,
                "train_accuracy": _accuracy(model, X_train, y_train),
                "labeled_accuracy": _accuracy(model, X_train[is_labeled], y_train[is_labeled]),
                "model_size": model.model_size(),
                "fit_seconds": fit_seconds, "query_seconds": query_seconds,
                "queried": train[new_rows].astype(np.int64),
                "queried_labels": y_train[new_rows].astype(np.int64),
                "task_id": task.task_id,
            })
            new_rows, query_seconds = np.empty(0, np.int64), 0.0
        if last:
            break
        batch = min(protocol.batch_size, remaining)
        t0 = time.perf_counter()
        picked = np.asarray(strategy.query(X_train, y_obs.copy(), model, batch, rng), np.int64)
        query_seconds += time.perf_counter() - t0
        _check_query(picked, y_obs, batch, task)
        y_obs[picked] = y_train[picked]
        new_rows = np.concatenate([new_rows, picked])
        remaining -= batch
        if checkpoint is not None and time.perf_counter() - last_save >= checkpoint.every_seconds:
            checkpoint.save({"task_id": task.task_id, "next_iteration": it + 1, "model": model,
                             "strategy": strategy, "rng": rng, "y_obs": y_obs, "rows": rows,
                             "new_rows": new_rows, "query_seconds": query_seconds,
                             "remaining": remaining})
            last_save = time.perf_counter()
        if on_query is not None:
            on_query(batch)
    df = pd.DataFrame(rows, columns=list(COLUMNS))
    _check_finite(df, task)
    return df


def _check_query(picked: np.ndarray, y_obs: np.ndarray, batch: int, task: Task) -> None:
    if (len(picked) != batch or len(np.unique(picked)) != batch
            or np.any(picked < 0) or np.any(picked >= len(y_obs))
            or not np.all(np.isnan(y_obs[picked]))):
        raise RuntimeError(f"strategy '{task.strategy.label}' returned an invalid batch "
                           f"{picked.tolist()[:10]} (want {batch} distinct pool rows)")


def _check_finite(df: pd.DataFrame, task: Task) -> None:
    cols = ["test_error", "test_accuracy", "train_accuracy", "labeled_accuracy",
            "fit_seconds", "query_seconds"]
    if not np.isfinite(df[cols].to_numpy(dtype=float)).all():
        raise RuntimeError(f"task {task.task_id} produced a non-finite metric; not written")
