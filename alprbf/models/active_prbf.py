"""Warm-started semi-supervised PRBF learners for active learning (Constantinopoulos & Likas 2008,
§4.2 and §4.3).

``active_prbf``
    The active PRBF of §4.2 (``S = 1``): after every new label, try to add one node, train it by
    semi-supervised EM, split the networks with ``J`` and ``J + 1`` nodes and keep the one whose
    split network has the larger joint likelihood (eq 17).  Predicts with the split network.
``incremental_ssl_prbf``
    The classifier the QBC algorithm of §4.3 keeps between queries: the node is kept whenever the
    addition succeeds; predicts with the split network.

Both carry their network from one ``fit`` to the next (the active-learning loop re-fits the same
object after each query with the same ``X`` and one more label), so nothing is refitted from
scratch.  A ``fit`` whose ``X`` differs from the previous one, or whose labels are not a
superset of the previous labels, restarts from the one-node network.  Each ``fit`` is one step
of :func:`alprbf.prbf.active.active_step`; the first ``fit`` starts from the one-node network.

Both implement the committee protocol of the ``qbc_prbf`` strategy
(:meth:`ActivePRBFLearner.committee_log_proba`): members are sampled from the posteriors of the
current *unsplit* network (eqs 40-49) and trained by semi-supervised EM on all rows of the last
``fit``.

``unlabeled_rows: ignore`` (an ablation, not in the paper) trains every step on the labeled
rows only; the network still carries over between fits (see
:class:`alprbf.prbf.active.StepOptions`).

``model_size`` is the number of nodes ``J`` of the unsplit network (the quantity the algorithm
grows); ``split_size_`` holds the number of components of the split network.
"""

from __future__ import annotations

import numpy as np

from ..prbf import label_codes, log_proba_from_log_prob, predict_log_proba, prepare_data
from ..prbf.active import StepOptions, active_step, initial_network
from ..prbf.qbc import CommitteeOptions, committee_log_proba, train_committee
from .base import Learner


class ActivePRBFLearner(Learner):
    """Active PRBF learner of Constantinopoulos & Likas 2008, §4.2 (warm-started; module docstring).

    Parameters
    ----------
    n_classes : int
    random_state : int or None
        Unused: the algorithm is deterministic (the committee draws from the strategy's
        generator).
    **params
        The fields of :class:`alprbf.prbf.active.StepOptions` (covariance type, covariance
        floor, EM stopping rule, node-addition settings, candidate rows), held as ``options``.

    Attributes
    ----------
    options : StepOptions
    network_ : PRBFParams
        Current unsplit network.
    split_ : PRBFParams
        Its split network (used for prediction).
    n_steps_ : int
        Steps taken since the last restart.
    history_ : list of dict
        One record per step: n_labeled, nodes, split_size, added, attempted, joint_loglik,
        rejected_loglik, em_iter.
    """

    semi_supervised = True
    selection = "split_likelihood"
    params_from = StepOptions

    def __init__(self, n_classes: int, random_state: int | None = None, **params) -> None:
        super().__init__(n_classes, random_state)
        self.options = StepOptions(**params)

    def _can_continue(self, X: np.ndarray, codes: np.ndarray) -> bool:
        """Same rows as the previous fit and every previous label unchanged."""
        prev_X = getattr(self, "X_", None)
        if prev_X is None or prev_X.shape != X.shape:
            return False
        prev = self.y_codes_
        was = prev >= 0
        return bool(np.array_equal(codes[was], prev[was]) and np.array_equal(prev_X, X))

    def fit(self, X: np.ndarray, y: np.ndarray) -> ActivePRBFLearner:
        """One step of the algorithm (restarting from one node if the data changed).

        Parameters
        ----------
        X : ndarray of shape (n, d)
            Labeled and unlabeled rows.
        y : ndarray of shape (n,)
            Class codes, ``nan`` for unlabeled rows.
        """
        X = np.asarray(X, dtype=np.float64)
        codes = label_codes(y)
        if np.any(codes >= self.n_classes):
            raise ValueError(f"class codes must be < n_classes={self.n_classes}")
        continues = self._can_continue(X, codes)
        if not continues:
            self.X_ = X.copy()
            self.n_steps_ = 0
            self.history_ = []
        self.y_codes_ = codes.copy()
        # the rows the step trains on: all of them, or the labeled ones (unlabeled_rows="ignore")
        rows = np.flatnonzero(codes >= 0) if self.options.unlabeled_rows == "ignore" else None
        X_fit, codes_fit = (self.X_, codes) if rows is None else (self.X_[rows], codes[rows])
        log_prob = None
        if not continues:
            self.network_ = initial_network(X_fit, codes_fit, self.n_classes,
                                            self.options.covariance_type, self.options.reg_covar)
        elif rows is None:
            log_prob = self.estep_.log_prob      # the network's Gaussians on the same rows
        self.data_ = prepare_data(X_fit, codes_fit, self.n_classes, self.options.covariance_type)
        step = active_step(X_fit, codes_fit, self.network_, self.options, self.selection,
                           data=self.data_, log_prob=log_prob)
        self.network_, self.estep_, self.split_ = step.network, step.estep, step.split
        self._split_log_prob = step.split_estep.log_prob
        self._fitted_log_proba = None
        self.n_steps_ += 1
        self.history_.append({
            "n_labeled": int(np.sum(codes >= 0)), "nodes": self.network_.n_components,
            "split_size": self.split_.n_components, "added": step.added,
            "attempted": step.attempted, "joint_loglik": step.joint_loglik,
            "rejected_loglik": step.rejected_loglik, "em_iter": step.em_iter})
        return self

    def _check_fitted(self) -> None:
        if getattr(self, "split_", None) is None:
            raise RuntimeError(f"{type(self).__name__} is not fitted; call fit first")

    def _log_proba_of_fitted_rows(self, X: np.ndarray) -> np.ndarray | None:
        """Log posteriors of every row of the last fit's ``X`` if ``X`` is those rows, else None.

        The step already evaluated the split network's Gaussians on those rows (for eq 17), so
        the posteriors of the training part (train accuracy, pool scores) cost one small matrix
        product; they are computed once per fit.
        """
        X_ = self.X_
        if (self.options.unlabeled_rows == "ignore"     # the step saw the labeled rows only
                or X.shape != X_.shape or not np.array_equal(X, X_)):
            return None
        if self._fitted_log_proba is None:
            self._fitted_log_proba = log_proba_from_log_prob(self._split_log_prob, self.split_)
        return self._fitted_log_proba

    def predict_log_proba(self, X: np.ndarray) -> np.ndarray:
        """Log posteriors of the split network, exact in log space, shape (n, K)."""
        self._check_fitted()
        X = np.asarray(X, dtype=np.float64)
        cached = self._log_proba_of_fitted_rows(X)
        if cached is not None:
            return cached.copy()
        return predict_log_proba(X, self.split_)

    def predict_log_proba_rows(self, X: np.ndarray, rows: np.ndarray) -> np.ndarray:
        self._check_fitted()
        X = np.asarray(X, dtype=np.float64)
        cached = self._log_proba_of_fitted_rows(X)
        if cached is not None:
            return cached[rows]
        return predict_log_proba(X[rows], self.split_)

    def predict_proba_rows(self, X: np.ndarray, rows: np.ndarray) -> np.ndarray:
        return np.exp(self.predict_log_proba_rows(X, rows))

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        return np.exp(self.predict_log_proba(X))

    def model_size(self) -> int | None:
        net = getattr(self, "network_", None)
        return None if net is None else int(net.n_components)

    def presplit_size(self) -> int | None:
        """Nodes of the unsplit network (the same as :meth:`model_size`)."""
        return self.model_size()

    @property
    def split_size_(self) -> int:
        self._check_fitted()
        return int(self.split_.n_components)

    def committee(self, options: CommitteeOptions, rng: np.random.Generator,
                  n_threads: int = 1):
        """Committee members (diagonal PRBFs) sampled around the current unsplit network;
        ``n_threads`` members are trained at a time (the members do not depend on it)."""
        self._check_fitted()
        return train_committee(self.data_, self.network_, self.estep_, options, rng,
                               float(self.options.reg_covar), n_threads=n_threads)

    def committee_log_proba(self, X: np.ndarray, options: CommitteeOptions,
                            rng: np.random.Generator, n_threads: int = 1) -> np.ndarray:
        """The ``qbc_prbf`` protocol: members' log posteriors on ``X``, (n_members, n, K)."""
        return committee_log_proba(X, self.committee(options, rng, n_threads))


class IncrementalSSLPRBFLearner(ActivePRBFLearner):
    """The classifier of Constantinopoulos & Likas 2008's QBC algorithm (§4.3): after each new label
    try to add one node; keep it whenever the addition succeeds (then semi-supervised EM); predict
    with the split network.  Parameters as :class:`ActivePRBFLearner`."""

    selection = "always_add"
