"""What the active-learning loop needs from a model, and an adapter for sklearn classifiers.

A *learner* is created once per task as ``MODELS[name](n_classes=K, random_state=seed, **params)``
(``MODELS`` is the registry in :mod:`alprbf.models`)
and then, at every iteration, receives ``fit(X, y)`` where ``X`` is the whole training part of the
fold (labeled and pool rows) and ``y`` is float with ``nan`` for unlabeled rows and class codes
``0 .. K-1`` elsewhere.  Supervised learners use the labeled rows only; semi-supervised ones use
all of them; learners that carry state from one iteration to the next (warm start) may do so,
because the same object is fitted again after each query.

``predict_proba(X)`` must return shape ``(n, K)`` over *all* ``K`` classes, even the ones with no
label yet.  Strategies ask for the pool rows through ``predict_proba_rows(X, rows)`` (or
``predict_log_proba_rows``) so a learner that already holds the posteriors of its training rows
can return them.  ``model_size()`` returns the number of components / support vectors, or None;
``presplit_size()`` the number of components before a final split (PRBF-split models), or None.
A learner with ``uses_categorical = True`` receives the fold's categorical-column mask as its
``categorical`` parameter when the data has such columns and the config does not set it.

A learner's config parameters are the keyword parameters of its ``__init__`` or, when it
forwards them, of its ``params_from`` (an estimator factory or an options dataclass) or its
``estimator_class``; ``alprbf list models`` shows them.  A learner must pickle (checkpoints
save it mid-task) and give the same predictions for the same ``random_state`` and data
(``tests/test_contract.py`` checks every registered learner).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from sklearn.base import clone

from ..labels import labeled_rows


def labeled_mask(y: np.ndarray) -> np.ndarray:
    """True where ``y`` (float, ``nan`` = unlabeled) holds a label."""
    return labeled_rows(np.asarray(y, dtype=float))


class Learner:
    """Base class of registered models (see the module docstring for the contract)."""

    semi_supervised: bool = False
    #: The loop passes the fold's categorical-column mask as the ``categorical`` parameter
    #: (when the data has such columns and the config does not set it).
    uses_categorical: bool = False

    def __init__(self, n_classes: int, random_state: int | None = None) -> None:
        self.n_classes = n_classes
        self.random_state = random_state

    def fit(self, X: np.ndarray, y: np.ndarray) -> Learner:
        raise NotImplementedError

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def predict_log_proba(self, X: np.ndarray) -> np.ndarray:
        """Log posteriors; subclasses with log-space models should override for accuracy."""
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def predict(self, X: np.ndarray) -> np.ndarray:
        return np.argmax(self.predict_log_proba(X), axis=1)

    def predict_rows(self, X: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """``predict(X[rows])`` (``predict(X)`` when ``rows`` is None): the loop's evaluation
        on the training part.  Learners that keep the posteriors of the rows they were fitted
        on override this to skip the recomputation."""
        return self.predict(X if rows is None else X[rows])

    def predict_log_proba_rows(self, X: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """``predict_log_proba(X[rows])``; learners that keep the posteriors of the rows they
        were fitted on (``X`` of the last ``fit``) override this to skip the recomputation."""
        return self.predict_log_proba(X[rows])

    def predict_proba_rows(self, X: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """``predict_proba(X[rows])`` (see :meth:`predict_log_proba_rows`)."""
        return self.predict_proba(X[rows])

    def model_size(self) -> int | None:
        return None

    def check_training_size(self, n_rows: int) -> None:
        """Raise ``ValueError`` (one line naming the parameter) if this learner cannot be
        fitted on a training part of ``n_rows`` rows.  :func:`alprbf.engine.runner.validate` asks it
        of every model before any task runs, with the smallest training part of the folds, so
        a limit that depends on the data fails as a one-line error, not mid-run.  Default:
        any size."""

    def presplit_size(self) -> int | None:
        """Components of the network before its final split (None for models without one)."""
        return None

    def diagnostics(self) -> dict[str, Any]:
        """The model's own choices after the last ``fit``, for the health checks: tuned
        hyper-parameters with the tuning grid's scores and its number of tied optima, the
        density model's size and convergence, pre-clustering's scale, ...  A JSON-able dict
        (numpy scalars and arrays allowed), stored in the task file whenever it changes
        (column ``model_state``); it observes the model and must not change it.  Default:
        nothing to report."""
        return {}


def grid_choice(values: np.ndarray, scores: np.ndarray, chosen: float,
                lower_is_better: bool = True) -> dict[str, Any]:
    """Diagnostics of one hyper-parameter chosen on a grid (:meth:`Learner.diagnostics`):
    the grid, its scores, the number of grid points tied with the best score and whether the
    chosen value is an end of the grid (a search that may have wanted to go further)."""
    values, scores = np.asarray(values, float), np.asarray(scores, float)
    best = np.min(scores) if lower_is_better else np.max(scores)
    return {"grid": values.tolist(), "scores": scores.tolist(),
            "tied_optima": int(np.count_nonzero(scores == best)),
            "at_edge": bool(len(values) > 1 and chosen in (values.min(), values.max()))}


class EstimatorLearner(Learner):
    """Adapter of an estimator of this project whose ``fit(X, y)`` takes ``y = nan`` on
    unlabeled rows and whose ``classes`` parameter names every class of the task.

    Subclasses set ``estimator_class``; its parameters are the learner's config parameters
    (``random_state`` comes from the task seed, ``classes`` from the task).  Values are checked
    when the learner is made (the estimator's ``validate_params``, ``ValueError``), so a bad
    config fails before any task runs.  Every ``fit`` fits a clone with the task's classes
    (:meth:`fit_estimator`; with ``warm_start_from_previous = True`` it also hands the estimator
    the previous fit to warm-start from); with no labeled row at all the learner predicts the
    uniform distribution.
    """

    estimator_class: type
    warm_start_from_previous: bool = False
    """Opt-in: hand every ``fit`` of the estimator the previous fit (``fit(X, y, previous=)``)."""
    previous_ = None      # the last fitted estimator (with warm_start_from_previous)

    def __init__(self, n_classes: int, random_state: int | None = None, **params: Any) -> None:
        super().__init__(n_classes, random_state)
        self.params = params
        self.estimator = self.estimator_class(**params)
        self.estimator.validate_params()
        self.estimator_ = None

    def fit(self, X, y):
        y = np.asarray(y, dtype=np.float64)
        self.estimator_ = None
        if np.all(np.isnan(y)):
            return self
        est = clone(self.estimator).set_params(classes=np.arange(self.n_classes),
                                               random_state=self.random_state)
        self.estimator_ = self.fit_estimator(est, X, y)
        return self

    def fit_estimator(self, estimator, X, y):
        """Fit the fresh clone ``estimator`` on this fit's data; returns it fitted.

        With ``warm_start_from_previous`` the estimator's ``fit`` also gets the learner's
        previous fit as ``previous`` (the estimator reuses what did not change, e.g. a density
        model of the same rows)."""
        if not self.warm_start_from_previous:
            return estimator.fit(X, y)
        self.previous_ = estimator.fit(X, y, previous=self.previous_)
        return self.previous_

    def check_training_size(self, n_rows: int) -> None:
        """The estimator's ``check_training_size(n_rows)``, if it has one (see
        :meth:`Learner.check_training_size`)."""
        check = getattr(self.estimator, "check_training_size", None)
        if check is not None:
            check(n_rows)

    def predict_log_proba(self, X):
        if self.estimator_ is None:
            return np.full((np.shape(X)[0], self.n_classes), -np.log(self.n_classes))
        return self.estimator_.predict_log_proba(X)

    def predict_proba(self, X):
        p = np.exp(self.predict_log_proba(X))
        return p / p.sum(axis=1, keepdims=True)


class SklearnLearner(Learner):
    """Any sklearn classifier with ``predict_proba``, trained on the labeled rows only.

    Subclasses set ``params_from``: a factory whose keyword parameters are the learner's config
    parameters and which returns the (unfitted) estimator.  While fewer than two classes are
    labeled, the learner predicts the labeled class (or the uniform distribution with no label
    at all): sklearn classifiers refuse one-class data.

    Parameters
    ----------
    n_classes : int
    random_state : int or None
        Set on the estimator when it has a ``random_state`` parameter.
    **params
        Passed to ``params_from``.
    """

    params_from: Callable[..., Any]

    def __init__(self, n_classes: int, random_state: int | None = None, **params: Any) -> None:
        super().__init__(n_classes, random_state)
        self.params = params
        self.estimator = type(self).params_from(**params)

    def fit(self, X, y):
        mask = labeled_mask(y)
        Xl, yl = X[mask], np.asarray(y)[mask].astype(np.int64)
        self.present_ = np.unique(yl)
        if len(self.present_) < 2:
            self.estimator_ = None
            return self
        est = clone(self.estimator)
        if "random_state" in est.get_params():
            est.set_params(random_state=self.random_state)
        self.estimator_ = est.fit(Xl, yl)
        return self

    def predict_proba(self, X):
        out = np.zeros((X.shape[0], self.n_classes))
        if self.estimator_ is None:
            if len(self.present_):
                out[:, self.present_[0]] = 1.0
            else:
                out[:] = 1.0 / self.n_classes
            return out
        out[:, self.estimator_.classes_] = self.estimator_.predict_proba(X)
        return out

    def predict(self, X):
        """The estimator's own decision (for SVC this is the decision function, not Platt)."""
        if self.estimator_ is None:
            return np.argmax(self.predict_proba(X), axis=1)
        return self.estimator_.predict(X)

    def model_size(self):
        est = self.estimator_
        if est is not None and hasattr(est, "n_support_"):
            return int(np.sum(est.n_support_))
        return None
