"""Warm-started semi-supervised PRBF learners for active learning (seed 000, §4.2 and §4.3).

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

``model_size`` is the number of nodes ``J`` of the unsplit network (the quantity the algorithm
grows); ``split_size_`` holds the number of components of the split network.
"""

from __future__ import annotations

import numpy as np

from ..errors import UserError, did_you_mean
from ..prbf._em import label_codes, log_proba_from_log_prob, predict_log_proba, prepare_data
from ..prbf._kdtree import SPLIT_POINTS
from ..prbf._params import COVARIANCE_TYPES
from ..prbf.active import CANDIDATE_ROWS, StepOptions, active_step, initial_network
from ..prbf.qbc import CommitteeOptions, committee_log_proba, train_committee
from .base import MODELS, Learner


def _check_choice(model: str, name: str, value, choices) -> None:
    if value not in choices:
        raise UserError(f"model '{model}': unknown {name} '{value}'"
                        f"{did_you_mean(str(value), choices)}; valid choices: "
                        + ", ".join(choices))


def _check_number(model: str, name: str, value, minimum: float, integer: bool = False) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value >= minimum
    if integer:
        ok = ok and isinstance(value, int)
    if not ok:
        kind = "an integer" if integer else "a number"
        raise UserError(f"model '{model}': {name} must be {kind} >= {minimum}, got {value!r}")


class ActivePRBFLearner(Learner):
    """Active PRBF learner of seed 000 §4.2 (warm-started; see the module docstring).

    Parameters
    ----------
    n_classes : int
    random_state : int or None
        Seed of the generator handed to the node addition (deterministic at present).
    covariance_type : {"full", "diag", "spherical"}, default="diag"
        Seed 000 does not state it; §4.3 treats the features as independent and takes each
        node's per-feature variances from the trained network, which reads most naturally as
        diagonal covariances (see :mod:`alprbf.prbf.active` for the history of this default).
    reg_covar : float, default=1e-3
        Covariance floor (added to every variance; the data are z-scored).  Larger than
        sklearn's 1e-6 because features with few distinct values (pen digits: integers 0-100,
        optical digits: 0-16) let components collapse onto repeated points: on pen digits fold
        0, 40 queries gave test error 0.197 with 1e-6 and 0.101 with 1e-3, with fits 2-4x
        faster; on three generated waveform sets the errors after 100 queries were
        0.155/0.193/0.320 (1e-6) and 0.250/0.182/0.210 (1e-3), i.e. no systematic change.
    em_tol : float, default=1e-4
        Semi-supervised EM stops when the joint log-likelihood per row changes by less.
    em_max_iter : int, default=200
    refit_current : bool, default=False
        Also re-run EM on the ``J``-node network after each new label (not in the paper).
    add_threshold : float, default=0.01
        Minimum total per-class likelihood increase of an added node (eq 37; paper: 0.01).
    kd_depth : int, default=3
        kd-tree levels below the root (14 candidates per node).
    split_point : {"mean", "median"}, default="mean"
    partial_max_iter : int, default=0
        Partial-EM steps refining each candidate node (``candidate_rows="labeled"`` only; seed
        000 uses none).
    split_min_mass : float, default=0.01
        Minimum joint-posterior mass of a subcomponent when splitting (paper: > 0; see
        :mod:`alprbf.prbf.active`).
    candidate_rows : {"labeled", "all"}, default="labeled"
        Rows whose kd-tree subsets give the candidate nodes: the labeled rows of each
        partition (eq 36, the paper's procedure) or all rows (a departure needed with full
        covariances, where labeled-only subsets are singular; see :mod:`alprbf.prbf.active`).
    candidate_reg_covar : float or None, default=None
        Covariance floor of the candidates (None: ``reg_covar``).

    Attributes
    ----------
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
    registered_name = "active_prbf"

    def __init__(self, n_classes: int, random_state: int | None = None, *,
                 covariance_type: str = "diag", reg_covar: float = 1e-3, em_tol: float = 1e-4,
                 em_max_iter: int = 200, refit_current: bool = False,
                 add_threshold: float = 0.01, kd_depth: int = 3, split_point: str = "mean",
                 partial_max_iter: int = 0, split_min_mass: float = 0.01,
                 candidate_rows: str = "labeled", candidate_reg_covar: float | None = None
                 ) -> None:
        super().__init__(n_classes, random_state)
        name = self.registered_name
        _check_choice(name, "covariance_type", covariance_type, COVARIANCE_TYPES)
        _check_choice(name, "split_point", split_point, SPLIT_POINTS)
        _check_number(name, "reg_covar", reg_covar, 0.0)
        _check_number(name, "em_tol", em_tol, 0.0)
        _check_number(name, "em_max_iter", em_max_iter, 0, integer=True)
        _check_number(name, "add_threshold", add_threshold, 0.0)
        _check_number(name, "kd_depth", kd_depth, 1, integer=True)
        _check_number(name, "partial_max_iter", partial_max_iter, 0, integer=True)
        _check_number(name, "split_min_mass", split_min_mass, 0.0)
        self.covariance_type = covariance_type
        self.reg_covar = reg_covar
        self.em_tol = em_tol
        self.em_max_iter = em_max_iter
        self.refit_current = refit_current
        self.add_threshold = add_threshold
        self.kd_depth = kd_depth
        self.split_point = split_point
        self.partial_max_iter = partial_max_iter
        self.split_min_mass = split_min_mass
        _check_choice(name, "candidate_rows", candidate_rows, CANDIDATE_ROWS)
        self.candidate_rows = candidate_rows
        if candidate_reg_covar is not None:
            _check_number(name, "candidate_reg_covar", candidate_reg_covar, 0.0)
        self.candidate_reg_covar = candidate_reg_covar

    def _options(self) -> StepOptions:
        return StepOptions(selection=self.selection, refit_current=bool(self.refit_current),
                           em_tol=float(self.em_tol), em_max_iter=int(self.em_max_iter),
                           reg_covar=float(self.reg_covar),
                           add_threshold=float(self.add_threshold), kd_depth=int(self.kd_depth),
                           split_point=self.split_point,
                           partial_max_iter=int(self.partial_max_iter),
                           split_min_mass=float(self.split_min_mass),
                           candidate_rows=self.candidate_rows,
                           candidate_reg_covar=self.candidate_reg_covar)

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
        log_prob = None
        if self._can_continue(X, codes):
            log_prob = self.estep_.log_prob      # the network's Gaussians on the same rows
        else:
            self.network_ = initial_network(X, codes, self.n_classes, self.covariance_type,
                                            self.reg_covar)
            self.rng_ = np.random.default_rng(self.random_state)
            self.n_steps_ = 0
            self.history_ = []
            self.X_ = X.copy()
        self.y_codes_ = codes.copy()
        self.data_ = prepare_data(self.X_, codes, self.n_classes, self.covariance_type)
        step = active_step(self.X_, codes, self.network_, self._options(), self.rng_,
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
        if X.shape != X_.shape or not np.array_equal(X, X_):
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
                               float(self.reg_covar), n_threads=n_threads)

    def committee_log_proba(self, X: np.ndarray, options: CommitteeOptions,
                            rng: np.random.Generator, n_threads: int = 1) -> np.ndarray:
        """The ``qbc_prbf`` protocol: members' log posteriors on ``X``, (n_members, n, K)."""
        return committee_log_proba(X, self.committee(options, rng, n_threads))


class IncrementalSSLPRBFLearner(ActivePRBFLearner):
    """The classifier of seed 000's QBC algorithm (§4.3): after each new label try to add one
    node; keep it whenever the addition succeeds (then semi-supervised EM); predict with the
    split network.  Parameters as :class:`ActivePRBFLearner`."""

    selection = "always_add"
    registered_name = "incremental_ssl_prbf"


MODELS.add("active_prbf", ActivePRBFLearner)
MODELS.add("incremental_ssl_prbf", IncrementalSSLPRBFLearner)
