"""scikit-learn estimators for the PRBF network: PRBF, PRBFSplit, SemiSupervisedPRBF.

Thin wrappers around the pure functions of :mod:`alprbf.prbf._em` and :mod:`alprbf.prbf._split`.
``__init__`` only stores parameters; ``fit`` validates, encodes the labels and sets the fitted
attributes (ending in ``_``).
"""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ..validation import check_params
from ._base import PRBFClassifierBase
from ._data import prepare_data
from ._em import INIT_METHODS, fit_em
from ._params import COVARIANCE_TYPES
from ._split import split_params


def check_em_params(estimator: PRBFClassifierBase, **choices: tuple) -> None:
    """Raise ``ValueError`` naming the first invalid parameter of an EM-trained PRBF with a
    fixed number of components (``n_components``, ``covariance_type``, ``tol``,
    ``reg_covar``, ``max_iter``, ``n_init``, ``init_params``); ``choices`` adds the estimator's
    own choice parameters (name -> valid values)."""
    check_params(type(estimator).__name__, estimator.get_params(),
                 choices={"covariance_type": COVARIANCE_TYPES, "init_params": INIT_METHODS,
                          **choices},
                 ints={"n_components": 1, "max_iter": 0, "n_init": 1},
                 reals={"tol": 0.0, "reg_covar": 0.0})


class _EMClassifier(PRBFClassifierBase):
    """EM-trained PRBF with a fixed number of components, optionally split afterwards."""

    _split: bool = False

    def _validate(self) -> None:
        check_em_params(self)

    def _fit_codes(self, X, codes, n_classes):
        """Fit on integer codes (``-1`` = unlabeled) for ``n_classes`` classes.

        The number of components is capped at the number of rows.
        """
        data = prepare_data(X, codes, n_classes, self.covariance_type)
        res = fit_em(data, min(self.n_components, X.shape[0]), tol=self.tol,
                     max_iter=self.max_iter, reg_covar=self.reg_covar, n_init=self.n_init,
                     init_params=self.init_params, random_state=self.random_state)
        self.em_params_ = res.params
        self.loglik_history_ = res.loglik_history
        self.n_iter_ = res.n_iter
        self.converged_ = res.converged
        self.loglik_ = res.loglik
        self.restart_ = res.restart
        self.restart_logliks_ = np.asarray(res.restart_logliks)
        if self._do_split():
            sp = split_params(data, res.params, res.estep, reg_covar=self.reg_covar,
                              min_mass=self.split_min_mass)
            self.params_ = sp.params
            self.parent_ = sp.parent
            self.component_class_ = sp.component_class
        else:
            self.params_ = res.params
        return self

    def _do_split(self) -> bool:
        return self._split

    @property
    def n_components_(self) -> int:
        """Number of Gaussian components of the fitted (possibly split) network."""
        check_is_fitted(self, "params_")
        return self.params_.n_components


_PARAMS_DOC = """
    Parameters
    ----------
    n_components : int, default={n_components}
        Number ``M`` of shared Gaussian components (before any split).
    covariance_type : {{"full", "diag", "spherical"}}, default="full"
    tol : float, default=1e-4
        Convergence threshold on the change of the mean per-row log-likelihood.
    reg_covar : float, default=1e-6
        Covariance floor added to every variance.
    max_iter : int, default=200
        Maximum EM iterations per initialisation.
    n_init : int, default={n_init}
        Number of initialisations; the run with the largest likelihood is kept.
    init_params : {{"kmeans", "random_from_data", "kmeans_per_class"}}, default="kmeans"
        The start of every restart (pooled k-means, random rows, or k-means within each
        class, see :func:`alprbf.prbf._em.initialize_params`).
    classes : array-like or None, default=None
        Every class of the task (sorted); a class without labeled rows gets prior 0.  None:
        the distinct labels of ``y``.
    random_state : int, numpy Generator or None, default=None
        Seed of every random draw (initialisation).
"""

_ATTRS_DOC = """
    Attributes
    ----------
    classes_ : ndarray (K,)
    params_ : PRBFParams
        Parameters used for prediction{split_note}.
    em_params_ : PRBFParams
        The network at the end of EM.
    loglik_history_ : ndarray (n_iter_ + 1,)
        Log-likelihood (000 eq 17) after initialisation and every EM iteration of the kept run.
    loglik_ : float
    n_iter_ : int
    converged_ : bool
    restart_ : int
        Index of the kept restart (0 .. n_init - 1).
    restart_logliks_ : ndarray (n_init,)
        Final log-likelihood of every restart.
    n_features_in_ : int
"""


class PRBF(_EMClassifier):
    def __init__(self, n_components=5, *, covariance_type="full", tol=1e-4, reg_covar=1e-6,
                 max_iter=200, n_init=1, init_params="kmeans", classes=None, random_state=None):
        self.n_components = n_components
        self.covariance_type = covariance_type
        self.tol = tol
        self.reg_covar = reg_covar
        self.max_iter = max_iter
        self.n_init = n_init
        self.init_params = init_params
        self.classes = classes
        self.random_state = random_state


PRBF.__doc__ = (
    """Probabilistic RBF network trained by EM (001 eqs 2-10).

    ``M`` Gaussian components shared by all classes; ``p(x|k) = sum_j pi_jk N(x; mu_j, Sigma_j)``,
    ``p(k) = N_k / N``; prediction by the Bayes rule.
"""
    + _PARAMS_DOC.format(n_components=5, n_init=1)
    + _ATTRS_DOC.format(split_note=" (equal to ``em_params_``)")
)


class PRBFSplit(_EMClassifier):
    _split = True

    def __init__(self, n_components=5, *, covariance_type="full", tol=1e-4, reg_covar=1e-6,
                 max_iter=200, n_init=5, init_params="kmeans", split_min_mass=1e-3,
                 classes=None, random_state=None):
        self.n_components = n_components
        self.covariance_type = covariance_type
        self.tol = tol
        self.reg_covar = reg_covar
        self.max_iter = max_iter
        self.n_init = n_init
        self.init_params = init_params
        self.split_min_mass = split_min_mass
        self.classes = classes
        self.random_state = random_state


PRBFSplit.__doc__ = (
    """PRBF-split (001 §II.B): EM with fixed ``M`` (best of ``n_init`` runs), then the split.

    Every component responsible for several classes is replaced by class-specific
    subcomponents (001 eqs 11-15); see :mod:`alprbf.prbf._split` for the details and choices.
"""
    + _PARAMS_DOC.format(n_components=5, n_init=5)
    + """    split_min_mass : float, default=1e-3
        A component counts as responsible for class ``k`` when its summed posterior
        responsibility for the class-``k`` rows exceeds this (0 = the paper's literal ``> 0``).
"""
    + _ATTRS_DOC.format(split_note=" (the split network)")
    + """    parent_ : ndarray (n_components_,)
        Component of ``em_params_`` each split component came from.
    component_class_ : ndarray (n_components_,)
        Class code each split component describes.
"""
)


class SemiSupervisedPRBF(_EMClassifier):
    semi_supervised = True

    def __init__(self, n_components=5, *, covariance_type="full", tol=1e-4, reg_covar=1e-6,
                 max_iter=200, n_init=1, init_params="kmeans", split=False,
                 split_min_mass=1e-3, classes=None, random_state=None):
        self.n_components = n_components
        self.covariance_type = covariance_type
        self.tol = tol
        self.reg_covar = reg_covar
        self.max_iter = max_iter
        self.n_init = n_init
        self.init_params = init_params
        self.split = split
        self.split_min_mass = split_min_mass
        self.classes = classes
        self.random_state = random_state

    def _do_split(self) -> bool:
        return bool(self.split)


SemiSupervisedPRBF.__doc__ = (
    """Semi-supervised PRBF (000 §3): EM on the joint likelihood of labeled and unlabeled rows.

    Unlabeled rows (``y = nan``) enter through joint posteriors ``p(j, k|x)`` (000 eqs 21-25);
    class priors are re-estimated (eq 29) when unlabeled rows are present.  With ``split=True``
    the semi-supervised split (000 eqs 30-33) is applied after EM.
"""
    + _PARAMS_DOC.format(n_components=5, n_init=1)
    + """    split : bool, default=False
        Apply the semi-supervised split after EM.
    split_min_mass : float, default=1e-3
        See :class:`PRBFSplit`.
"""
    + _ATTRS_DOC.format(split_note=" (split when ``split=True``)")
)
