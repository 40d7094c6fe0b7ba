"""One active-learning task: a grid cell (dataset x model x strategy) on one fold of one repetition.

The loop (pool-based active learning):

1. split the data into folds (shared by every method of the experiment: the split depends only on
   the config seed, the dataset label and the repetition); ``protocol.test`` may instead take
   the data set's published test rows (``split``) or no held-out rows at all (``unlabeled``:
   ``T`` is then the part of ``U`` still unlabeled at each evaluation), see :func:`split_rows`;
2. draw the initial labeled set ``L`` from the training part (depends on seed, dataset,
   repetition and fold only, so every method starts from the same labels); the rest is the pool
   ``U``; the held-out fold is the test set ``T``;
3. each iteration: fit the model on ``L`` (semi-supervised models also see ``U``), evaluate it on
   ``T``, on ``L u U`` with the true labels (``train_accuracy``) and on ``L``
   (``labeled_accuracy``), record a row, ask the strategy for a batch, reveal its labels.
"""

from __future__ import annotations

import copy
import hashlib
import json
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import partial

import numpy as np
import pandas as pd
from sklearn.model_selection import KFold, StratifiedKFold

from ..datasets import Dataset
from ..errors import UserError
from ..models import MODELS
from ..store.results import COLUMNS, METRIC_COLUMNS, model_state_json
from ..strategies import STRATEGIES
from .checkpoint import Checkpoint, LoopState
from .config import Component, DatasetSpec, Protocol
from .initial import initial_labeled
from .seeding import derive_seed, seed_int


class TaskTimeout(BaseException):
    """A task ran past its time limit (:mod:`alprbf.engine.execution`).  A ``BaseException``, so
    that a model's own ``except Exception`` does not swallow it."""


def _check_deadline(deadline: float | None) -> None:
    """Stop the task (:class:`TaskTimeout`) when the clock is past ``deadline``."""
    if deadline is not None and time.perf_counter() > deadline:
        raise TaskTimeout("ran past its time limit (checked between rounds)")


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


def task_digest(task: Task, protocol: Protocol) -> str:
    """Hash of everything that determines one task's rows: its data set, model and strategy
    (labels and parameters), the protocol it runs under (the data set's own, see
    :meth:`~alprbf.engine.config.Config.protocol_for`), its repetition and fold.

    Unlike the config digest it does not change when data sets or methods are added to the
    config, so a task's checkpoint survives such an extension.
    """
    proto = asdict(protocol)
    if not proto["initial"]["density"]:   # added later: a task without it keeps its digest
        del proto["initial"]["density"]
    model = asdict(task.model)
    if model.get("seed_scope") == "method":   # added later: a task without it keeps its digest
        del model["seed_scope"]
    blob = json.dumps({"experiment": task.experiment, "dataset": asdict(task.dataset),
                       "model": model, "strategy": asdict(task.strategy),
                       "protocol": proto, "repetition": task.repetition,
                       "fold": task.fold}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _safe(label: str) -> str:
    return "".join(c if c.isalnum() or c in "-_.=" else "-" for c in label)


#: Longest task id (bytes): the task file, its checksum and their temporary files
#: (``.<id>.parquet.sha256.<random>.tmp``) must fit the usual 255-byte file-name limit.
MAX_TASK_ID_BYTES = 200


def check_task_ids(tasks: list[Task]) -> None:
    """Refuse task ids that are too long for a file name or that two tasks share.

    Labels are made file-safe by replacing characters (``"a/b"`` and ``"a-b"`` both become
    ``a-b``), so two distinct labels can give one task file; one would overwrite the other.
    """
    seen: dict[str, Task] = {}
    for t in tasks:
        tid = t.task_id
        if len(tid.encode()) > MAX_TASK_ID_BYTES:
            raise UserError(f"task id '{tid[:40]}...' is {len(tid.encode())} bytes long, more "
                            f"than {MAX_TASK_ID_BYTES} for its file name: give dataset "
                            f"'{t.dataset.label}', model '{t.model.label}' or strategy "
                            f"'{t.strategy.label}' a shorter label")
        prev = seen.setdefault(tid, t)
        if prev is not t:
            pairs = [(a, b) for a, b in ((prev.dataset.label, t.dataset.label),
                                         (prev.model.label, t.model.label),
                                         (prev.strategy.label, t.strategy.label)) if a != b]
            a, b = pairs[0] if pairs else (tid, tid)
            raise UserError(f"labels '{a}' and '{b}' give the same task file name "
                            f"'{_safe(a)}' (only letters, digits and -_.= are kept): rename one")


def check_data(label: str, ds: Dataset) -> None:
    """Refuse data the loop cannot learn from: a single class, or infinite feature values."""
    if ds.n_classes < 2:
        only = ds.classes[0] if ds.classes else "none"
        raise UserError(f"dataset '{label}' has a single class ({only!r}); classification "
                        "needs at least two")
    inf = np.isinf(ds.X)
    if inf.any():
        j = int(np.flatnonzero(inf.any(axis=0))[0])
        raise UserError(f"dataset '{label}': feature '{ds.feature_names[j]}' holds infinite "
                        f"values in {int(inf[:, j].sum())} rows; replace them (an empty cell "
                        "is read as a missing value)")


# --------------------------------------------------------------------------- folds and feasibility


def make_folds(y: np.ndarray, n_folds: int, stratified: bool,
               seed: np.random.SeedSequence,
               allow_small_classes: bool = False) -> list[np.ndarray]:
    """Test-row indices of each fold (shuffled, stratified by class when asked).

    A class with fewer rows than folds is refused, unless ``allow_small_classes``: its rows
    then go to as many folds as it has rows (sklearn's ``StratifiedKFold``), and the other
    folds test without it (Reitmaier et al. 2016 runs 5-fold CV on ecoli, whose smallest classes
    have 2).
    """
    if n_folds > len(y):
        raise UserError(f"protocol.folds = {n_folds} exceeds the {len(y)} rows of the data set")
    rs = seed_int(seed)
    if stratified:
        counts = np.bincount(y)
        smallest = counts[counts > 0].min()
        if smallest < n_folds and (not allow_small_classes or counts.max() < n_folds):
            raise UserError(f"protocol.folds = {n_folds} with stratified: true needs at least "
                            f"{n_folds} rows per class; the smallest class has {smallest} "
                            "(lower folds, set stratified: false or allow_small_classes: true)")
        splitter = StratifiedKFold(n_folds, shuffle=True, random_state=rs)
    else:
        splitter = KFold(n_folds, shuffle=True, random_state=rs)
    with warnings.catch_warnings():   # "the least populated class has only ... members"
        warnings.filterwarnings("ignore", "The least populated class", UserWarning)
        return [test for _, test in splitter.split(np.zeros(len(y)), y)]


def feasible_folds(y: np.ndarray, n_classes: int, protocol: Protocol,
                   seed: np.random.SeedSequence, check: int | None = None) -> list[np.ndarray]:
    """The folds of one repetition, checked to be feasible (``protocol.test == "folds"``).

    The folds must fit the data (:func:`make_folds`); the training part of a fold must hold
    the initial labeled set (``per_class``: ``size`` rows of every class) and leave a pool of
    at least the task's queries (:meth:`Protocol.queries`).

    Parameters
    ----------
    y : ndarray of shape (n_samples,)
        Class codes of the whole data set.
    n_classes : int
    protocol : Protocol
    seed : numpy.random.SeedSequence
        The folds' seed (dataset and repetition).
    check : int, optional
        Check the training part of this fold only (default: of every fold).

    Returns
    -------
    list of ndarray
        Test-row indices of each fold (:func:`make_folds`).

    Raises
    ------
    UserError
        One line naming the protocol field and the numbers that do not fit.
    """
    folds = make_folds(y, protocol.folds, protocol.stratified, seed,
                       protocol.allow_small_classes)
    for f in range(len(folds)) if check is None else [check]:
        check_training_part(np.delete(y, folds[f]), n_classes, protocol)
    return folds


def split_rows(ds: Dataset, protocol: Protocol, seed: np.random.SeedSequence,
               fold: int | None = None) -> list[tuple[np.ndarray, np.ndarray | None]]:
    """The (training rows, test rows) of each fold of one repetition, checked to be feasible:
    the one check of a protocol against the data, made by :func:`alprbf.engine.runner.validate`
    before a run and by :func:`run_task` for its fold.

    ``protocol.test`` decides: ``folds``, a cross-validation (:func:`feasible_folds`);
    ``split``, the data set's published ``train``/``test`` rows; ``unlabeled``, every row is
    a training row and the test rows are chosen at each evaluation (None here).

    Parameters
    ----------
    ds : Dataset
    protocol : Protocol
    seed : numpy.random.SeedSequence
        The folds' seed (dataset and repetition).
    fold : int, optional
        Check this fold only (default: every fold).
    """
    K = ds.n_classes
    everything = np.arange(ds.n_samples)
    if protocol.test == "folds":
        folds = feasible_folds(ds.y, K, protocol, seed, check=fold)
        return [(np.setdiff1d(everything, test), test) for test in folds]
    if protocol.test == "split":
        names = set() if ds.split is None else set(np.unique(ds.split).tolist())
        if not {"train", "test"} <= names:
            has = "no split" if ds.split is None else "only " + ", ".join(sorted(names))
            raise UserError(f"protocol.test = split needs the published train and test rows; "
                            f"'{ds.name}' as loaded has {has} (load it with subset: all, or "
                            "use test: folds)")
        train, test = np.flatnonzero(ds.split == "train"), np.flatnonzero(ds.split == "test")
        check_training_part(ds.y[train], K, protocol)
        return [(train, test)]
    queries = check_training_part(ds.y, K, protocol)
    if ds.n_samples - protocol.initial.n_rows(ds.n_samples, K) - queries < 1:
        raise UserError(f"protocol.test = unlabeled evaluates on the rows left unlabeled, but "
                        f"the initial set and {queries} queries label all {ds.n_samples} rows; "
                        "lower the budget")
    return [(everything, None)]


def check_training_part(y_train: np.ndarray, n_classes: int, protocol: Protocol) -> int:
    """Refuse a training part too small for the initial labeled set plus the queries;
    returns the task's number of queries (:meth:`Protocol.queries`)."""
    initial, n_train = protocol.initial, len(y_train)
    if initial.method == "per_class":
        counts = np.bincount(y_train, minlength=n_classes)
        short = np.flatnonzero(counts < initial.size)
        if len(short):
            raise UserError(f"protocol.initial.size = {initial.size} per class, but class "
                            f"{short[0]} has only {counts[short[0]]} training rows in a fold")
    elif initial.method != "all":
        n_initial = initial.n_rows(n_train, n_classes)
        if 0 < n_initial < n_classes:
            raise UserError(f"protocol.initial holds {n_initial} row"
                            f"{'s' if n_initial > 1 else ''}, fewer than the {n_classes} "
                            "classes: it cannot start with every class (use method: per_class "
                            "to label each class)")
        if n_initial > n_train:
            what = (f"size_per_class = {initial.size_per_class} ({n_initial} rows)"
                    if initial.size_per_class else f"size = {initial.size}")
            raise UserError(f"protocol.initial.{what} exceeds the {n_train} training rows of a "
                            "fold")
    try:
        return protocol.queries(n_train, n_classes)
    except ValueError as exc:
        raise UserError(str(exc)) from None


# --------------------------------------------------------------------------- the loop


def _hit_rate(predicted: np.ndarray, y: np.ndarray) -> float:
    """Share of ``predicted == y`` (0 when there is no row)."""
    return float(np.mean(predicted == y)) if len(y) else 0.0


def _accuracy(model, X: np.ndarray, y: np.ndarray) -> float:
    return _hit_rate(model.predict(X), y) if len(y) else 0.0


def _rows_accuracy(model, X: np.ndarray, y: np.ndarray, rows: np.ndarray | None = None
                   ) -> float:
    """Accuracy on ``X[rows]`` (all of ``X`` when None) through ``model.predict_rows``, which
    lets a learner answer from what its fit on ``X`` already computed."""
    y = y if rows is None else y[rows]
    return _hit_rate(model.predict_rows(X, rows), y) if len(y) else 0.0


def prediction_diagnostics(test_predicted: np.ndarray, pool_predicted: np.ndarray
                           ) -> dict[str, object]:
    """What a model predicts, for the health checks
    (:data:`alprbf.store.results.DIAGNOSTIC_COLUMNS`): the number of distinct classes predicted
    on the tested rows and on the training part, and the largest share of one predicted class
    on each (1.0: a constant predictor)."""
    out: dict[str, object] = {}
    for where, predicted in (("test", test_predicted), ("pool", pool_predicted)):
        counts = np.unique_counts(np.asarray(predicted)).counts if len(predicted) else []
        out[f"n_pred_classes_{where}"] = int(len(counts))
        out[f"max_pred_share_{where}"] = (float(np.max(counts)) / len(predicted)
                                          if len(predicted) else 0.0)
    return out


#: Log-loss clips the probability given to the true class to at least this (a certain wrong
#: answer costs -log(1e-15) = 34.5 nats instead of infinity), so a result file never holds inf.
LOG_LOSS_CLIP = 1e-15


def class_scores(predicted: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """Balanced accuracy and macro F1 of the predictions of the tested rows
    (:data:`alprbf.store.results.METRIC_COLUMNS`), as sklearn defines them.

    Balanced accuracy: the mean over the classes present in ``y`` of their recall.  Macro F1:
    the mean over the classes present in ``y`` or predicted of ``2 tp / (support +
    predicted)`` (a class predicted but absent from ``y`` scores 0).  Both 0 without a row.
    Counted with ``bincount`` (the same values as ``sklearn.metrics``; tested), because they
    are computed at every evaluation.
    """
    if not len(y):
        return {"test_balanced_accuracy": 0.0, "test_macro_f1": 0.0}
    _, codes = np.unique(np.concatenate([y, predicted]), return_inverse=True)
    truth, pred = codes[:len(y)], codes[len(y):]
    k = int(codes.max()) + 1
    hits = np.bincount(truth[truth == pred], minlength=k)
    support, n_pred = np.bincount(truth, minlength=k), np.bincount(pred, minlength=k)
    present = support > 0
    return {"test_balanced_accuracy": float(np.mean(hits[present] / support[present])),
            "test_macro_f1": float(np.mean(2.0 * hits / (support + n_pred)))}


def clipped_log_loss(proba: np.ndarray, y: np.ndarray) -> float | None:
    """Mean negative log of the probability ``proba`` gives each row's true class, clipped
    to at least :data:`LOG_LOSS_CLIP`; None without a row or when a probability is not
    finite (the column is null there, never NaN or inf)."""
    if not len(y):
        return None
    p = np.asarray(proba, dtype=float)[np.arange(len(y)), y]
    if not np.isfinite(p).all():
        return None
    return float(-np.mean(np.log(np.clip(p, LOG_LOSS_CLIP, 1.0))))


def _test_log_loss(proba: Callable[[], np.ndarray], y: np.ndarray) -> float | None:
    """:func:`clipped_log_loss` of the model's probabilities ``proba()`` of the tested rows;
    None for a model that gives none (sklearn's SVC without ``probability``)."""
    try:
        return clipped_log_loss(proba(), y)
    except (NotImplementedError, AttributeError):
        return None


def _test_scores(predicted: np.ndarray, y: np.ndarray, denominator: str,
                 n_train: int) -> tuple[float, float]:
    """``(test_error, test_accuracy)`` of the predictions of the tested rows: misclassified
    rows over the tested rows (``"tested"``) or over the training part's rows
    (``"training"``, see :class:`~alprbf.engine.config.Protocol`); the accuracy is one minus the
    error."""
    if denominator == "tested":
        accuracy = _hit_rate(predicted, y)
        return 1.0 - accuracy, accuracy
    error = float(np.count_nonzero(predicted != y)) / n_train
    return error, 1.0 - error


def model_params(model: Component, categorical: np.ndarray) -> dict[str, object]:
    """The learner's parameters for one task: the config's, plus the fold's ``categorical``
    mask for learners that use one (:attr:`~alprbf.models.base.Learner.uses_categorical`)
    when the data has categorical columns and the config does not set it."""
    params = dict(model.params)
    mask = np.asarray(categorical, bool)
    if (MODELS[model.name].uses_categorical and "categorical" not in params
            and mask.any()):
        params["categorical"] = mask.tolist()
    return params


def model_seed_key(task: Task) -> str:
    """The model's name in every seed derivation: its ``seed_key``
    (:class:`~alprbf.engine.config.ModelSpec`) if it has one, else its label."""
    return getattr(task.model, "seed_key", "") or task.model.label


def task_seeds(task: Task, protocol: Protocol) -> dict[str, object]:
    """Every seed a task uses, derived from the config seed and the task's identity.

    Folds depend on (dataset, repetition); the initial labeled set on (dataset, repetition,
    fold); the model and strategy streams on the whole identity, where the model is named by
    its ``seed_key`` if it has one (:class:`~alprbf.engine.config.ModelSpec`: models compared paired
    share their draws), else by its label.  A model with ``seed_scope: fold`` draws its seed
    from (dataset, repetition, fold, key) alone: the same for every strategy it runs with.
    """
    root, dl = protocol.seed, task.dataset.label
    method = derive_seed(root, "method", dl, model_seed_key(task), task.strategy.label,
                         task.repetition, task.fold)
    model_seq, strategy_seq = method.spawn(2)
    if getattr(task.model, "seed_scope", "method") == "fold":
        model_seq = derive_seed(root, "model", dl, model_seed_key(task), task.repetition,
                                task.fold)
    return {
        "folds_seed": seed_int(derive_seed(root, "folds", dl, task.repetition)),
        "initial_spawn_key": list(derive_seed(root, "initial", dl, task.repetition,
                                              task.fold).spawn_key),
        "model_random_state": seed_int(model_seq),
        "strategy_seed": strategy_seq,
    }


def run_task(task: Task, ds: Dataset, protocol: Protocol,
             on_query: Callable[[int], None] | None = None,
             checkpoint: Checkpoint | None = None, threads: int = 1,
             deadline: float | None = None) -> pd.DataFrame:
    """Run one task and return its rows (schema: :data:`alprbf.store.results.SCHEMA`).

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
        holds this task (see :mod:`alprbf.engine.checkpoint`).  The caller deletes it once the rows
        are written.
    threads : int
        Threads the strategy may use inside one query (today the QBC committee; see
        :attr:`alprbf.strategies.base.QueryStrategy.threads`).  The rows do not depend on it.
    deadline : float, optional
        ``time.perf_counter()`` value past which the task stops with :class:`TaskTimeout`,
        checked after every fit and every query (the rows of a task that finishes in time
        do not depend on it).
    """
    root = protocol.seed
    dl = task.dataset.label
    K = ds.n_classes
    train, test = split_rows(ds, protocol, derive_seed(root, "folds", dl, task.repetition),
                             fold=task.fold)[task.fold]
    transform = task.dataset.preprocessing.fit_fold(ds.X[train], ds.categorical)
    X_train, y_train = transform(ds.X[train]), ds.y[train]
    fixed_test = None if test is None else (transform(ds.X[test]), ds.y[test])
    queries = protocol.queries(len(train), K)

    init_rng = np.random.default_rng(derive_seed(root, "initial", dl, task.repetition, task.fold))
    labeled = initial_labeled(X_train, y_train, protocol.initial, K, init_rng,
                              transform.categorical)

    seeds = task_seeds(task, protocol)
    strategy_params = dict(task.strategy.params)
    selected = None
    if getattr(task.strategy, "select", None):
        selected = select_strategy_param(task, protocol, X_train, y_train, K,
                                         transform.categorical, seeds["model_random_state"])
        strategy_params[selected["param"]] = selected["value"]
    model = MODELS[task.model.name](n_classes=K, random_state=seeds["model_random_state"],
                                    **model_params(task.model, transform.categorical))
    strategy = STRATEGIES[task.strategy.name](**strategy_params)
    rng = np.random.default_rng(seeds["strategy_seed"])

    y_obs = np.full(len(train), np.nan)
    y_obs[labeled] = y_train[labeled]
    new_rows, query_seconds = labeled, 0.0
    rows = []
    batch_size = getattr(task.strategy, "batch_size", 0) or protocol.batch_size
    n_rounds = protocol.n_iterations(queries, batch_size)
    remaining = queries
    start = 0
    saved = checkpoint.load() if checkpoint is not None else None
    if saved is not None and saved.task_id == task.task_id:
        start = saved.next_iteration
        model, strategy, rng = saved.model, saved.strategy, saved.rng
        y_obs, rows, new_rows = saved.y_obs, saved.rows, saved.new_rows
        query_seconds, remaining = saved.query_seconds, saved.remaining
        if on_query is not None and queries > remaining:
            on_query(queries - remaining)
    strategy.threads = threads
    last_state = next((r["model_state"] for r in reversed(rows) if r.get("model_state")), None)
    last_save = time.perf_counter()
    for it in range(start, n_rounds + 1):
        t0 = time.perf_counter()
        model.fit(X_train, y_obs)
        fit_seconds = time.perf_counter() - t0
        _check_deadline(deadline)
        is_labeled = ~np.isnan(y_obs)
        last = it == n_rounds
        if it % protocol.evaluate_every == 0 or last:
            t0 = time.perf_counter()
            if fixed_test is None:    # the unlabeled rest of the training part
                tested = np.flatnonzero(~is_labeled)
                predicted, y_test = model.predict_rows(X_train, tested), y_train[tested]
                log_loss = _test_log_loss(partial(model.predict_proba_rows, X_train, tested),
                                          y_test)
            else:
                X_test, y_test = fixed_test
                predicted = model.predict(X_test)
                log_loss = _test_log_loss(partial(model.predict_proba, X_test), y_test)
            test_error, test_acc = _test_scores(predicted, y_test, protocol.error_denominator,
                                                len(train))
            scores = class_scores(predicted, y_test)
            pool_predicted = model.predict_rows(X_train, None)
            train_acc = _hit_rate(pool_predicted, y_train) if len(y_train) else 0.0
            labeled_acc = _rows_accuracy(model, X_train, y_train, np.flatnonzero(is_labeled))
            eval_seconds = time.perf_counter() - t0
            state = model_state_json(model.diagnostics())
            rows.append({
                "experiment": task.experiment, "dataset": dl, "model": task.model.label,
                "strategy": task.strategy.label, "fold": task.fold,
                "repetition": task.repetition, "iteration": it,
                "n_labeled": int(is_labeled.sum()),
                "test_error": test_error, "test_accuracy": test_acc,
                "train_accuracy": train_acc, "labeled_accuracy": labeled_acc,
                "model_size": model.model_size(),
                "n_components_presplit": model.presplit_size(),
                "fit_seconds": fit_seconds, "query_seconds": query_seconds,
                "eval_seconds": eval_seconds,
                "queried": train[new_rows].astype(np.int64),
                "queried_labels": y_train[new_rows].astype(np.int64),
                "task_id": task.task_id,
                **prediction_diagnostics(predicted, pool_predicted),
                "model_state": None if state == last_state else state,
                **scores, "test_log_loss": log_loss,
            })
            new_rows, query_seconds = np.empty(0, np.int64), 0.0
            last_state = state
        if last:
            break
        batch = min(batch_size, remaining)
        t0 = time.perf_counter()
        picked = np.asarray(strategy.query(X_train, y_obs.copy(), model, batch, rng), np.int64)
        query_seconds += time.perf_counter() - t0
        _check_deadline(deadline)
        _check_query(picked, y_obs, batch, task)
        y_obs[picked] = y_train[picked]
        new_rows = np.concatenate([new_rows, picked])
        remaining -= batch
        if checkpoint is not None and time.perf_counter() - last_save >= checkpoint.every_seconds:
            checkpoint.save(LoopState(task.task_id, it + 1, model, strategy, rng, y_obs, rows,
                                      new_rows, query_seconds, remaining))
            last_save = time.perf_counter()
        if on_query is not None:
            on_query(batch)
    df = pd.DataFrame(rows, columns=list(COLUMNS))
    _check_finite(df, task)
    if selected is not None:
        df.attrs["selected"] = selected
    return df


def select_strategy_param(task: Task, protocol: Protocol, X_train: np.ndarray,
                          y_train: np.ndarray, n_classes: int, categorical, model_seed: int
                          ) -> dict:
    """Choose the value of one strategy parameter by inner cross-validation of whole active
    learning runs on the task's training part (``StrategySpec.select``).

    Reitmaier et al. 2016 chooses 4DS's lambda "by 5-fold CV on the training data" and says no more;
    this is the reading used.  The training part (already transformed by the fold's preprocessing)
    is split into ``folds`` stratified inner folds (fewer when a class has fewer rows; with fewer
    than two the first value is taken unscored).  For every value and inner fold, the task's
    loop runs on the inner training rows: the protocol's initial-set method, the task's
    queries (capped at the inner pool), the task's batch size, a fresh model with the task's
    model seed; after every round its accuracy on the inner validation rows is taken.  A
    value's score is the mean of those accuracies over the rounds and the inner folds (the area
    under the inner learning curves: lambda acts on the whole curve, not on its end).  The
    highest score wins, ties to the first value listed.  Inner seeds derive from the task's
    identity ("select"), so the outer run's seeds are those of the same task without the
    selection.  Cost: values x folds inner runs, each on (folds - 1) / folds of the rows; the
    initial set and the first fit of an inner fold (the density model and the tuning, for
    Reitmaier et al. 2016's SVMs) are computed once and shared by every value (a copy of the fitted
    model).

    Returns
    -------
    dict
        ``{"param", "value", "scores": {str(value): score}}``.
    """
    spec = task.strategy.select
    root, dl = protocol.seed, task.dataset.label
    base = derive_seed(root, "select", dl, model_seed_key(task), task.strategy.label,
                       task.repetition, task.fold)
    counts = np.bincount(y_train, minlength=n_classes)
    n_splits = min(spec["folds"], int(counts[counts > 0].min()))
    if n_splits < 2:
        return {"param": spec["param"], "value": spec["values"][0], "scores": {}}
    inner = list(StratifiedKFold(n_splits, shuffle=True, random_state=seed_int(base))
                 .split(X_train, y_train))
    batch_size = task.strategy.batch_size or protocol.batch_size
    queries = protocol.queries(len(y_train), n_classes)
    curves: dict[str, list] = {str(v): [] for v in spec["values"]}
    for k, (tr, va) in enumerate(inner):
        seq = derive_seed(root, "select", dl, model_seed_key(task), task.strategy.label,
                          task.repetition, task.fold, k)
        init_seq, strategy_seq = seq.spawn(2)
        X, y = X_train[tr], y_train[tr]
        # the initial set and the first fit depend on the inner fold only: once for all values
        labeled = initial_labeled(X, y, protocol.initial, n_classes,
                                  np.random.default_rng(init_seq), categorical)
        y_obs = np.full(len(y), np.nan)
        y_obs[labeled] = y[labeled]
        first = MODELS[task.model.name](n_classes=n_classes, random_state=model_seed,
                                        **model_params(task.model, categorical))
        first.fit(X, y_obs)
        start = _accuracy(first, X_train[va], y_train[va])
        for value in spec["values"]:
            strategy = STRATEGIES[task.strategy.name](
                **{**task.strategy.params, spec["param"]: value})
            curves[str(value)].append([start, *_inner_rounds(
                task, copy.deepcopy(first), strategy, X, y, X_train[va], y_train[va],
                y_obs.copy(), min(queries, len(y) - len(labeled)), batch_size,
                np.random.default_rng(strategy_seq))])
    scores = {v: float(np.mean([np.mean(c) for c in cs])) for v, cs in curves.items()}
    best = max(range(len(spec["values"])), key=lambda i: (scores[str(spec["values"][i])], -i))
    return {"param": spec["param"], "value": spec["values"][best], "scores": scores}


def _inner_rounds(task: Task, model, strategy, X: np.ndarray, y: np.ndarray,
                  X_val: np.ndarray, y_val: np.ndarray, y_obs: np.ndarray, remaining: int,
                  batch_size: int, rng: np.random.Generator) -> list[float]:
    """Validation accuracy after every round after the first fit of one inner run of
    :func:`select_strategy_param` (``model`` fitted on ``y_obs`` already)."""
    out = []
    while remaining > 0:
        batch = min(batch_size, remaining)
        picked = np.asarray(strategy.query(X, y_obs.copy(), model, batch, rng), np.int64)
        _check_query(picked, y_obs, batch, task)
        y_obs[picked] = y[picked]
        remaining -= batch
        model.fit(X, y_obs)
        out.append(_accuracy(model, X_val, y_val))
    return out


def _check_query(picked: np.ndarray, y_obs: np.ndarray, batch: int, task: Task) -> None:
    if (len(picked) != batch or len(np.unique(picked)) != batch
            or np.any(picked < 0) or np.any(picked >= len(y_obs))
            or not np.all(np.isnan(y_obs[picked]))):
        raise RuntimeError(f"strategy '{task.strategy.label}' returned an invalid batch "
                           f"{picked.tolist()[:10]} (want {batch} distinct pool rows)")


def _check_finite(df: pd.DataFrame, task: Task) -> None:
    """Refuse rows with a NaN or infinite core value, or an infinite class-balanced measure.
    Those may be missing (null) in the rows of a task resumed from a checkpoint that an
    alprbf before them saved, whose rows lack them."""
    cols = ["test_error", "test_accuracy", "train_accuracy", "labeled_accuracy",
            "fit_seconds", "query_seconds"]
    later = df[list(METRIC_COLUMNS)].to_numpy(dtype=float)
    if not np.isfinite(df[cols].to_numpy(dtype=float)).all() or np.isinf(later).any():
        raise RuntimeError(f"task {task.task_id} produced a non-finite metric; not written")
