"""The density model of the pool (Reitmaier et al. 2016, eqs 1-7 and §5.1.1): a variational mixture.

This module owns the unsupervised model ``M0`` that the CMM classifiers (:mod:`.cmm`), the
transductive refinement (:mod:`.refinement`) and the structure-aware kernels build on: its fit,
its fitted parameters (:class:`MixtureDensity`), the quantities derived from it (eq 1 density,
eq 2 responsibilities, eq 5 Mahalanobis distances, eq 7 component densities), and the choice
of its hyper-parameters by *representativity* (a Parzen-window estimate of the pool and a
symmetric Kullback-Leibler divergence).

Model (eqs 1-7).  ``p(x) = sum_j pi_j p(x|j)`` with ``p(x|j) = N(x_cont | mu_j, Sigma_j) *
prod_a M(x_a | delta_ja)``: a full-covariance Gaussian on the continuous columns times one
multinomial per categorical column (columns flagged by a boolean mask, values integer codes
``0, 1, ...``).

Choices where the paper is silent (or points to other papers):

* **VI fit.**  The Gaussian part is sklearn's ``BayesianGaussianMixture`` (full covariances,
  ``weight_concentration_prior_type="dirichlet_distribution"``, i.e. the finite Dirichlet
  model of Bishop's VI mixture, k-means initialisation, ``max_iter`` / ``tol`` /
  ``reg_covar`` from :class:`DensityOptions`), started from ``n_components`` components (at
  most one per row; default 20, the paper gives no start).  Convergence warnings are silenced
  and recorded in :attr:`MixtureDensity.converged`.  sklearn refuses a single row; its update
  for one row is then applied in closed form (``mu = x``,
  ``Sigma = (prior + reg_covar I) / (D + 1)``).
* **Pruning (J).**  After VI, a component whose weight stands for fewer than
  ``min_component_rows`` rows (``pi_j * n < 1`` by default) is dropped and the weights are
  renormalised; at least the heaviest component stays.  With ``prune_by="data"`` the rows
  are the data part of the component's Dirichlet posterior (``a_j - alpha_0``) instead: an
  empty component keeps a weight of about ``alpha_0 / n``, one row when ``alpha_0 = 1``.
  With ``component_floor="full_rank"`` (decision 0312) the floor is at least ``D + 1`` rows:
  a full covariance in ``D`` dimensions is singular on fewer rows, so VI leaves such a
  component's covariance to its prior (ecoli's and page blocks' components of 1-3 rows), and
  the kernels would measure distances with it.  Such components may hold many rows in all
  (a VI started from 20 components on 114 rows in 9-d leaves up to half of them in components
  below 10 rows), so instead of renormalising the rest, VI is run again from as many
  components as were kept, until none falls below the floor.
* **Point estimates.**  The fitted model is the *plug-in* mixture of the variational posterior
  means: ``pi = weights_``, ``mu = means_``, ``Sigma = covariances_`` (the inverse of the
  expected precision; ``precisions_cholesky`` is sklearn's ``U`` with ``inv(Sigma) = U U^T``).
  It is a proper density, as the KL divergence and the kernels need.  (sklearn's own
  ``BayesianGaussianMixture.predict_proba`` / ``score_samples`` use the variational
  expectations ``E[log pi_j]`` and ``E[log N(x | mu_j, Lambda_j)]`` instead and are not
  normalised.)
* **Responsibility rule** (``DensityOptions.responsibility_rule``).  ``"plug_in"`` (default):
  eq 2 with the point estimates above.  ``"variational"``: eq 2 as VI's E-step computes it,
  ``rho_j(x) ~ exp(E[log pi_j] + E[log N(x | mu_j, Lambda_j)])``, sklearn's ``predict_proba``.
  Both expectations differ from the plug-in terms by a constant per component
  (``psi(a_j) - psi(sum a)`` for the weights; ``-D/2 log nu_j + 1/2 (sum_i psi((nu_j - i)/2) +
  D log 2 - D / kappa_j)`` for the Gaussian, with ``nu`` the degrees of freedom and ``kappa``
  the mean precision), so the variational rule is the plug-in mixture with the weights
  ``softmax_j(E[log pi_j] + c_j)``: still a normalised density (used as such by the KL and
  the kernels), whose log-density plus ``MixtureDensity.score_offset`` is sklearn's
  ``score_samples``.  Pruning keeps the same components and renormalises these weights;
  ``E[log pi_j]`` keeps the Dirichlet of all started components.  A one-row fit (no VI) is
  plug-in under both rules.
* **Categorical attributes (eqs 6-7).**  ``BayesianGaussianMixture`` has no multinomial
  factors, so the components are found on the continuous columns and each component's
  multinomials are the Dirichlet posterior means given its responsibilities:
  ``delta_jak = (sum_i rho_ij [x_ia = k] + a) / (N_j + a K_a)`` with one pseudo-count
  ``a = category_pseudo_count`` per category.  A code not seen in the fit (``>= K_a``) gets
  the pseudo-count mass ``a / (N_j + a K_a)``.  ``K_a`` is the largest code + 1 (or given).
  With no continuous column at all there is nothing for the Gaussian VI to cluster: the
  model is then one component (independent multinomials).
* **Covariance prior.**  ``covariance_prior = s * C + reg_covar * I`` where ``C`` is the
  covariance of the continuous columns of the rows fitted (sklearn's default for ``s = 1``)
  or a given matrix (per-class models pass the pool's), and ``s`` the grid's
  ``covariance_prior_scale``; the degrees-of-freedom and mean priors are sklearn's defaults.
* **Representativity (§5.1.1).**  The symmetric KL divergence ``KL(P||M) + KL(M||P)`` between
  the Parzen estimate ``P`` of the rows and the mixture ``M``, each term by Monte Carlo:
  ``KL(P||M) ~ mean_i [log P_-i(x_i) - log M(x_i)]`` over (up to ``n_mc``) pool rows, with
  the leave-one-out Parzen density ``P_-i`` (the pool rows are the draws from ``P``; leaving
  the row out removes the self-kernel bias); ``KL(M||P) ~ mean_s [log M(z_s) - log P(z_s)]``
  over ``n_mc`` draws ``z_s`` from the mixture.  The estimates are noisy and may be slightly
  negative; the grid point with the smallest value wins (the first among ties).
* **Held-out representativity** (``representativity="held_out"``, the reading of the
  density part of issue 50, on Reitmaier et al. 2016).  Judged on the rows it was fitted to,
  the mixture's fit term rewards fragmentation (the in-sample estimate comes out negative and
  prefers the most fragmented fit).  Here a random ``held_out_fraction`` of the rows is held out;
  every grid point (concentration x covariance-prior scale x VI start ``initial_components``) is
  fitted on the rest and compared with the Parzen estimate ``P`` of the held-out rows:
  ``KL(P||M) ~ mean_s [log P(z_s) - log M(z_s)]`` over ``n_mc`` draws of ``P`` and
  ``KL(M||P)`` over ``n_mc`` draws of ``M`` (:func:`held_out_representativity`): a Monte
  Carlo estimate of the divergence between two fixed densities, unbiased and so
  non-negative in expectation.  The winner (``selection``) is refitted on all rows, started
  from the number of components its VI pruned to (``grid_scores`` has both).  The
  held-out window's factor is the multiple of Silverman's with the largest leave-one-out
  likelihood of the held-out rows (:func:`loo_parzen`): Silverman's rule, optimal for one
  Gaussian, smooths separated clusters into one, and a one-component mixture then wins.
* **Held-out rows as the window's draws** (``representativity="held_out_rows"``, decision
  0306).  As ``"held_out"``, except that ``KL(P||M)`` is averaged over the held-out rows
  themselves, ``mean_i [log P_-i(x_i) - log M(x_i)]`` with the leave-one-out window (the
  in-sample estimator's form, on rows the mixture was not fitted to), instead of over draws
  of the window.  The rows are draws of the data's density; a draw of the window adds the
  kernel's noise, whose covariance ``h^2 C`` follows the rows' *global* covariance, so it
  smears a tight, separated cluster along the between-cluster direction (iris: the kernel's
  standard deviation along the first principal axis is four times setosa's own, and 18 % of
  the window's draws fall in the empty gap between setosa and the rest), where a mixture
  that separates the cluster has almost no density and a single broad Gaussian wins.
  ``KL(M||P)`` and its draws are those of ``"held_out"`` (the window's draws are still made,
  unused, so that the mixture's draws are the same).  ``log P_-i(x_i)`` does not depend on
  the mixture, so this term ranks the grid points by their held-out log-likelihood.
* **Parzen window.**  Gaussian kernel with covariance ``h^2 (C + reg_covar I)`` (``C`` the
  rows' covariance) and Silverman's rule of thumb ``h = (4 / ((D + 2) n))^(1 / (D + 4))``
  (``D`` continuous dimensions); categorical columns use the Aitchison-Aitken kernel with
  ``lambda_a = (K_a - 1) / (n + K_a)`` (mass ``1 - lambda_a`` on the row's category,
  ``lambda_a / (K_a - 1)`` on each other one), whose marginal is add-one smoothing of the
  category frequencies (``K_a >= 2`` so an unseen code keeps a positive mass).
* **Grid.**  ``weight_concentration_priors x covariance_prior_scales`` (default 2 x 2); the
  search is skipped (first grid point, ``representativity = nan``) with one grid point, fewer
  than two rows or no continuous column.  All grid points use the same seed.  Cost: each grid
  point is a full VI fit (on 4 000 x 36 rows, 20 components, about 4 s of one CPU), the
  representativity adds well under a second, so the grid size is the cost factor.
"""

from __future__ import annotations

import hashlib
import itertools
import warnings
from dataclasses import dataclass, field, replace

import numpy as np
from scipy.linalg import solve_triangular
from scipy.spatial.distance import cdist
from scipy.special import digamma, logsumexp
from sklearn.exceptions import ConvergenceWarning
from sklearn.mixture import BayesianGaussianMixture
from sklearn.utils import check_random_state

from ..validation import check_choice, check_int, check_positive, check_real

_LOG_2PI = float(np.log(2.0 * np.pi))
RESPONSIBILITY_RULES = ("plug_in", "variational")
"""How eq 2 weighs the components (:class:`DensityOptions`)."""
REPRESENTATIVITY = ("in_sample", "held_out", "held_out_rows")
"""Where the representativity is estimated (:class:`DensityOptions`, module docstring)."""
SEARCH_OPTIONS = ("initial_components", "representativity", "held_out_fraction", "selection",
                  "search_rows", "prune_by", "component_floor")
"""The :class:`DensityOptions` of the held-out search and the full-rank floor (not parameters
of the CMM estimators, which keep the in-sample search and the plain floor)."""
LOO_FACTORS = (0.25, 0.35, 0.5, 0.7, 1.0)
"""Multiples of Silverman's factor searched by :func:`loo_parzen`."""
REITMAIER2016_M0 = {"initial_components": (1, 2, 3, 4, 6, 8, 12, 20),
                    "representativity": "held_out", "selection": "one_se", "prune_by": "data",
                    "max_iter": 300, "tol": 1e-3, "search_rows": 1000}
"""Reitmaier et al. 2016's density model M0 as issue 50 reads it (docs/decisions/0301): the options
of the ``density`` block of table 003's ``kernel_svm`` methods, and of Algorithm 2's M0
(:func:`alprbf.engine.initial.m0_initial`; a config's ``protocol.initial.density`` replaces some).
The corrected config runs ``representativity="held_out_rows"`` (decision 0306); this stays as
0301 left it, the M0 of the configs already run."""
SELECTIONS = ("min", "one_se")
"""How the grid's winner is chosen from the representativity (module docstring)."""
COMPONENT_FLOORS = ("rows", "full_rank")
"""The least rows a component keeps (:class:`DensityOptions`, module docstring; decision 0312)."""
_BLOCK_CELLS = 2**22   # pairwise cells per block of the Parzen evaluation (32 MiB of float64)


@dataclass(frozen=True)
class DensityOptions:
    """Settings of the VI fit and of the representativity search (see the module docstring).

    Parameters
    ----------
    n_components : int, default=20
        Components the VI starts from (capped at the number of rows); pruning sets J.
    weight_concentration_priors : tuple of float, default=(0.01, 1.0)
        Grid of the Dirichlet concentration ``alpha_0`` of the weights.
    covariance_prior_scales : tuple of float, default=(0.1, 1.0)
        Grid of the scale ``s`` of the Wishart prior covariance ``s * C``.
    max_iter : int, default=100
        VI iterations at most.
    tol : float, default=1e-3
        VI convergence threshold on the lower bound (per row).
    reg_covar : float, default=1e-6
        Added to every covariance diagonal (VI, prior and Parzen window).
    min_component_rows : float, default=1.0
        A component is pruned when ``pi_j * n`` is below this.
    category_pseudo_count : float, default=1.0
        Dirichlet pseudo-count ``a`` of every category of every component.
    n_mc : int, default=1000
        Monte Carlo draws per KL term of the representativity.
    responsibility_rule : {"plug_in", "variational"}, default="plug_in"
        How eq 2 weighs the components (module docstring).
    initial_components : tuple of int, default=()
        Grid of VI starts (components before pruning), searched with the two grids above;
        empty: ``n_components`` alone.
    representativity : {"in_sample", "held_out", "held_out_rows"}, default="in_sample"
        ``"in_sample"``: the mixture fitted on all rows is judged against the Parzen
        estimate of the same rows.  ``"held_out"``: every grid point is fitted on a random
        part of the rows and judged against the Parzen estimate of the held-out rest
        (module docstring); the winner is refitted on all rows.  ``"held_out_rows"``: as
        ``"held_out"``, with ``KL(P||M)`` averaged over the held-out rows instead of draws
        of their Parzen window (module docstring; decision 0306).
    held_out_fraction : float, default=1/3
        Share of the rows held out (``"held_out"``, ``"held_out_rows"`` only).
    selection : {"min", "one_se"}, default="min"
        ``"min"``: the smallest divergence wins (first among ties).  Grid points whose VI
        did not converge are eligible only when none did (held-out search).  ``"one_se"``: among the
        grid points within one Monte Carlo standard error of the smallest, the one with the
        fewest fitted components (then the smallest divergence).
    search_rows : int, default=0
        Held-out search only: the grid is fitted on at most this many of the fitting rows and
        judged on at most ``search_rows * f / (1 - f)`` held-out rows (``f`` the held-out
        fraction), both random; 0: all.  Bounds the search's cost on large pools; the
        winner is refitted on every row.
    prune_by : {"weight", "data"}, default="weight"
        What ``min_component_rows`` is compared with: ``pi_j * n``, or the rows of data the
        component's Dirichlet posterior counts (``a_j - alpha_0``; with a concentration near
        1 an empty component keeps a weight of about one row).
    component_floor : {"rows", "full_rank"}, default="rows"
        ``"rows"``: a component is pruned below ``min_component_rows`` rows and the weights
        renormalised.  ``"full_rank"``: below ``max(min_component_rows, D + 1)`` rows, ``D``
        the continuous columns (fewer rows than ``D + 1`` cannot span a full covariance, so
        such a component's covariance is mostly its prior's), and VI is run again from the
        number of components kept until none is below it (decision 0312).
    """

    n_components: int = 20
    weight_concentration_priors: tuple[float, ...] = (0.01, 1.0)
    covariance_prior_scales: tuple[float, ...] = (0.1, 1.0)
    max_iter: int = 100
    tol: float = 1e-3
    reg_covar: float = 1e-6
    min_component_rows: float = 1.0
    category_pseudo_count: float = 1.0
    n_mc: int = 1000
    responsibility_rule: str = "plug_in"
    initial_components: tuple[int, ...] = ()
    representativity: str = "in_sample"
    held_out_fraction: float = 1.0 / 3.0
    selection: str = "min"
    search_rows: int = 0
    prune_by: str = "weight"
    component_floor: str = "rows"

    def __post_init__(self) -> None:
        owner = "DensityOptions"
        check_choice(owner, "responsibility_rule", self.responsibility_rule,
                     RESPONSIBILITY_RULES)
        check_choice(owner, "representativity", self.representativity, REPRESENTATIVITY)
        check_choice(owner, "selection", self.selection, SELECTIONS)
        check_real(owner, "held_out_fraction", self.held_out_fraction, 0.0)
        check_int(owner, "search_rows", self.search_rows, 0)
        check_choice(owner, "prune_by", self.prune_by, ("weight", "data"))
        check_choice(owner, "component_floor", self.component_floor, COMPONENT_FLOORS)
        if not 0.0 < self.held_out_fraction < 1.0:
            raise ValueError(f"{owner}: invalid held_out_fraction={self.held_out_fraction!r}; "
                             "valid: 0 < value < 1")
        if np.ndim(self.initial_components) != 1:
            raise ValueError(f"{owner}: invalid initial_components="
                             f"{self.initial_components!r}; valid: a list of ints >= 1")
        for v in self.initial_components:
            check_int(owner, "initial_components", v, 1)
        object.__setattr__(self, "initial_components",
                           tuple(int(v) for v in self.initial_components))
        check_int(owner, "n_components", self.n_components, 1)
        check_int(owner, "max_iter", self.max_iter, 1)
        check_int(owner, "n_mc", self.n_mc, 1)
        for name in ("tol", "reg_covar", "min_component_rows"):
            check_real(owner, name, getattr(self, name), 0.0)
        check_positive(owner, "category_pseudo_count", self.category_pseudo_count)
        for name in ("weight_concentration_priors", "covariance_prior_scales"):
            grid = getattr(self, name)
            if np.ndim(grid) != 1 or len(grid) == 0:
                raise ValueError(f"{owner}: invalid {name}={grid!r}; valid: a non-empty list")
            for v in grid:
                check_real(owner, name, v, 0.0)
                if v <= 0:
                    raise ValueError(f"{owner}: invalid {name}={grid!r}; valid: values > 0")
            object.__setattr__(self, name, tuple(float(v) for v in grid))

    def floor(self, dim: int) -> float:
        """The least rows a component of a fit on ``dim`` continuous columns keeps."""
        if self.component_floor == "full_rank":
            return max(self.min_component_rows, dim + 1.0)
        return self.min_component_rows

    def grid(self) -> list[tuple[float, float]]:
        """The ``(weight_concentration_prior, covariance_prior_scale)`` pairs, in search order."""
        return list(itertools.product(self.weight_concentration_priors,
                                      self.covariance_prior_scales))

    def starts(self, n_rows: int) -> tuple[int, ...]:
        """The VI starts searched (``initial_components``, or ``n_components`` alone), each
        capped at ``n_rows``, without repeats, ascending."""
        starts = self.initial_components or (self.n_components,)
        return tuple(sorted({max(1, min(int(j), n_rows)) for j in starts}))

    def at(self, weight_concentration_prior: float, covariance_prior_scale: float
           ) -> DensityOptions:
        """These options with the grid reduced to one point (and the VI start to
        ``n_components``)."""
        return replace(self, weight_concentration_priors=(weight_concentration_prior,),
                       covariance_prior_scales=(covariance_prior_scale,),
                       initial_components=())


@dataclass(frozen=True, eq=False)
class MixtureDensity:
    """A fitted mixture density (eqs 1-7); ``J`` components, ``D`` continuous columns.

    Attributes
    ----------
    weights : ndarray of shape (J,)
        Mixing coefficients ``pi_j`` (sum to 1).
    means : ndarray of shape (J, D)
    covariances : ndarray of shape (J, D, D)
    precisions_cholesky : ndarray of shape (J, D, D)
        Upper triangular ``U_j`` with ``inv(Sigma_j) = U_j U_j^T`` (sklearn's convention).
    categorical : ndarray of bool, shape (n_features,)
        Which columns of ``X`` are categorical; the others are the continuous part.
    category_log_probs : tuple of ndarray, one (J, K_a) per categorical column
        ``log delta_jak``; each row sums (in probability) to 1.
    unseen_log_probs : ndarray of shape (J, n_categorical)
        Log mass of a code ``>= K_a`` (not seen in the fit).
    weight_concentration_prior, covariance_prior_scale : float
        The grid point of this fit.
    representativity : float
        Symmetric KL divergence to the Parzen estimate (nan when not searched).
    grid_scores : tuple of (float, float, float)
        ``(weight_concentration_prior, covariance_prior_scale, symmetric KL)`` of every grid
        point searched (empty when not searched).
    converged : bool
        Whether the VI met ``tol`` within ``max_iter``.
    n_iter : int
        VI iterations run.
    score_offset : float
        ``log_density + score_offset`` is the unnormalised variational log-density
        (sklearn's ``BayesianGaussianMixture.score_samples``) under the variational
        responsibility rule; 0 under the plug-in rule; nan for a mixture assembled from
        others (:func:`merge_mixtures`, :func:`subset_components`), which no VI fit scored.
    """

    weights: np.ndarray
    means: np.ndarray
    covariances: np.ndarray
    precisions_cholesky: np.ndarray
    categorical: np.ndarray
    category_log_probs: tuple[np.ndarray, ...]
    unseen_log_probs: np.ndarray
    weight_concentration_prior: float = float("nan")
    covariance_prior_scale: float = float("nan")
    representativity: float = float("nan")
    grid_scores: tuple[tuple[float, float, float], ...] = field(default=())
    converged: bool = True
    n_iter: int = 0
    score_offset: float = 0.0

    @property
    def n_components(self) -> int:
        """``J``."""
        return len(self.weights)

    @property
    def n_features(self) -> int:
        """Columns of the ``X`` the model describes (continuous + categorical)."""
        return len(self.categorical)

    @property
    def n_categories(self) -> tuple[int, ...]:
        """``K_a`` of every categorical column."""
        return tuple(lp.shape[1] for lp in self.category_log_probs)


# ---------------------------------------------------------------------------- column handling

def categorical_mask(categorical, n_features: int) -> np.ndarray:
    """Boolean mask of the categorical columns.

    Parameters
    ----------
    categorical : array-like of bool, shape (n_features,), or None
        None: every column is continuous.
    n_features : int

    Returns
    -------
    ndarray of bool, shape (n_features,)
    """
    if categorical is None:
        return np.zeros(n_features, dtype=bool)
    mask = np.asarray(categorical)
    if mask.dtype != bool or mask.shape != (n_features,):
        raise ValueError(f"categorical must be None or a boolean mask of {n_features} columns; "
                         f"got {categorical!r}")
    return mask


def split_columns(X: np.ndarray, categorical: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Continuous part (n, D) and integer category codes (n, n_categorical) of ``X``.

    Raises ``ValueError`` when a categorical value is not a non-negative integer.
    """
    X = np.asarray(X, dtype=np.float64)
    raw = X[:, categorical]
    codes = raw.astype(np.int64) if raw.size else np.zeros(raw.shape, dtype=np.int64)
    if raw.size and (not np.all(np.isfinite(raw)) or np.any(raw < 0) or np.any(codes != raw)):
        raise ValueError("categorical columns must hold non-negative integer codes")
    return X[:, ~categorical], codes


def covariance_of(Xc: np.ndarray) -> np.ndarray:
    """Sample covariance (D, D) of the rows (unbiased; zeros for a single row)."""
    n, dim = Xc.shape
    if n < 2:
        return np.zeros((dim, dim))
    return np.atleast_2d(np.cov(Xc, rowvar=False))


def precision_cholesky(covariances: np.ndarray) -> np.ndarray:
    """sklearn's precision Cholesky factors: upper ``U_j`` with ``inv(Sigma_j) = U_j U_j^T``.

    Parameters
    ----------
    covariances : ndarray of shape (J, D, D)

    Returns
    -------
    ndarray of shape (J, D, D)
    """
    out = np.empty_like(covariances)
    for j, cov in enumerate(covariances):
        L = np.linalg.cholesky(cov)
        out[j] = solve_triangular(L, np.eye(len(cov)), lower=True).T
    return out


def fingerprint(*parts) -> str:
    """A digest of arrays and plain values (decides whether a fitted model can be reused)."""
    h = hashlib.blake2b(digest_size=16)
    for p in parts:
        if isinstance(p, np.ndarray):
            a = np.ascontiguousarray(p)
            h.update(repr((a.shape, a.dtype.str)).encode())
            h.update(a.tobytes())
        else:
            h.update(repr(p).encode())
    return h.hexdigest()


# ------------------------------------------------------------------------ model quantities

def _whitened_squares(Xc: np.ndarray, means: np.ndarray, prec_chol: np.ndarray) -> np.ndarray:
    """``||(x - mu_j) U_j||^2`` for every row and component, shape (n, J)."""
    out = np.empty((Xc.shape[0], len(means)))
    for j, (mu, U) in enumerate(zip(means, prec_chol, strict=True)):
        w = Xc @ U - mu @ U
        out[:, j] = np.einsum("ij,ij->i", w, w)
    return out


def squared_mahalanobis(density: MixtureDensity, X: np.ndarray) -> np.ndarray:
    """Squared Mahalanobis distances ``Delta_Sigma_j(x, mu_j)^2`` (eq 5), shape (n, J).

    Parameters
    ----------
    density : MixtureDensity
    X : ndarray of shape (n, n_features)
        Only the continuous columns are used (zeros without any).
    """
    Xc, _ = split_columns(X, density.categorical)
    return _whitened_squares(Xc, density.means, density.precisions_cholesky)


def pairwise_squared_mahalanobis(density: MixtureDensity, X: np.ndarray,
                                 Y: np.ndarray | None = None) -> np.ndarray:
    """``Delta_Sigma_j(x, y)^2`` (eq 5) for every component and pair, shape (J, n, m).

    Parameters
    ----------
    density : MixtureDensity
    X : ndarray of shape (n, n_features)
    Y : ndarray of shape (m, n_features) or None
        None: ``Y = X``.
    """
    Xc, _ = split_columns(X, density.categorical)
    Yc = Xc if Y is None else split_columns(Y, density.categorical)[0]
    out = np.empty((density.n_components, len(Xc), len(Yc)))
    for j, U in enumerate(density.precisions_cholesky):
        out[j] = cdist(Xc @ U, Yc @ U, "sqeuclidean")
    return out


def log_component_densities(density: MixtureDensity, X: np.ndarray) -> np.ndarray:
    """``log p(x | j)`` (eq 7: Gaussian eq 4 times the multinomials eq 6), shape (n, J)."""
    Xc, codes = split_columns(X, density.categorical)
    U = density.precisions_cholesky
    log_det = np.sum(np.log(np.diagonal(U, axis1=1, axis2=2)), axis=1)
    out = (-0.5 * _whitened_squares(Xc, density.means, U)
           + log_det - 0.5 * Xc.shape[1] * _LOG_2PI)
    for a, lp in enumerate(density.category_log_probs):
        c = codes[:, a]
        seen = c < lp.shape[1]
        out[seen] += lp[:, c[seen]].T
        out[~seen] += density.unseen_log_probs[:, a]
    return out


def _log_joint(density: MixtureDensity, X: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return log_component_densities(density, X) + np.log(density.weights)


def log_density(density: MixtureDensity, X: np.ndarray) -> np.ndarray:
    """``log p(x)`` (eq 1), shape (n,)."""
    return logsumexp(_log_joint(density, X), axis=1)


def log_responsibilities(density: MixtureDensity, X: np.ndarray) -> np.ndarray:
    """``log rho_j(x) = log p(j | x)`` (eq 2), shape (n, J)."""
    lj = _log_joint(density, X)
    return lj - logsumexp(lj, axis=1, keepdims=True)


def responsibilities(density: MixtureDensity, X: np.ndarray) -> np.ndarray:
    """``rho_j(x) = p(j | x)`` (eq 2), shape (n, J); rows sum to 1."""
    return np.exp(log_responsibilities(density, X))


def sample(density: MixtureDensity, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` draws from the mixture, shape (n, n_features) (categorical columns as codes)."""
    comp = rng.choice(density.n_components, size=n, p=density.weights)
    out = np.empty((n, density.n_features))
    cont = np.empty((n, density.means.shape[1]))
    eps = rng.standard_normal(cont.shape)
    for j in range(density.n_components):
        rows = comp == j
        if density.means.shape[1]:
            L = np.linalg.cholesky(density.covariances[j])
            cont[rows] = density.means[j] + eps[rows] @ L.T
    out[:, ~density.categorical] = cont
    cat_cols = np.flatnonzero(density.categorical)
    for a, lp in enumerate(density.category_log_probs):
        p = np.exp(lp[comp])
        u = rng.random(n)[:, None]
        out[:, cat_cols[a]] = np.minimum((np.cumsum(p, axis=1) < u).sum(axis=1), lp.shape[1] - 1)
    return out


def merge_mixtures(parts: list[MixtureDensity], shares) -> MixtureDensity:
    """One mixture from several (same columns and ``K_a``), part ``i`` weighted by ``shares[i]``.

    The result keeps the hyper-parameters and fit diagnostics of ``parts[0]``.

    Parameters
    ----------
    parts : list of MixtureDensity
    shares : array-like of shape (len(parts),)
        Non-negative; normalised to sum to 1.
    """
    shares = np.asarray(shares, dtype=np.float64)
    shares = shares / shares.sum()
    cats = [np.concatenate([p.category_log_probs[a] for p in parts])
            for a in range(len(parts[0].category_log_probs))]
    return replace(
        parts[0], score_offset=float("nan"),
        weights=np.concatenate([s * p.weights for s, p in zip(shares, parts, strict=True)]),
        means=np.concatenate([p.means for p in parts]),
        covariances=np.concatenate([p.covariances for p in parts]),
        precisions_cholesky=np.concatenate([p.precisions_cholesky for p in parts]),
        category_log_probs=tuple(cats),
        unseen_log_probs=np.concatenate([p.unseen_log_probs for p in parts]))


def subset_components(density: MixtureDensity, keep: np.ndarray) -> MixtureDensity:
    """The mixture restricted to the components ``keep`` (weights renormalised)."""
    w = density.weights[keep]
    return replace(density, weights=w / w.sum(), score_offset=float("nan"),
                   means=density.means[keep],
                   covariances=density.covariances[keep],
                   precisions_cholesky=density.precisions_cholesky[keep],
                   category_log_probs=tuple(lp[keep] for lp in density.category_log_probs),
                   unseen_log_probs=density.unseen_log_probs[keep])


def density_summary(density: MixtureDensity) -> dict:
    """What a health check needs of a fitted density model: ``J``, whether the VI
    converged, its iterations, the chosen grid point and representativity, and the grid's
    scores (JSON-able; nan where not searched)."""
    return {"J": density.n_components, "converged": bool(density.converged),
            "n_iter": int(density.n_iter),
            "weight_concentration_prior": density.weight_concentration_prior,
            "covariance_prior_scale": density.covariance_prior_scale,
            "representativity": density.representativity,
            "grid_scores": [list(g) for g in density.grid_scores]}


# ------------------------------------------------------------------- representativity

def silverman_bandwidth(n: int, dim: int) -> float:
    """Silverman's rule-of-thumb factor ``(4 / ((dim + 2) n))^(1 / (dim + 4))``."""
    return float((4.0 / ((dim + 2.0) * max(n, 1))) ** (1.0 / (dim + 4.0)))


class ParzenWindow:
    """Parzen-window (kernel) density estimate of a set of rows (module docstring).

    Parameters
    ----------
    X : ndarray of shape (n, n_features)
        The reference rows (the pool).
    categorical : ndarray of bool, shape (n_features,), or None
    n_categories : tuple of int or None
        ``K_a`` per categorical column (default: largest code + 1, at least 2).
    reg_covar : float, default=1e-6
    bandwidth : float or None
        The factor ``h``; None: :func:`silverman_bandwidth`.

    Attributes
    ----------
    bandwidth : float
    n_rows : int
    """

    def __init__(self, X, categorical=None, *, n_categories=None, reg_covar: float = 1e-6,
                 bandwidth: float | None = None) -> None:
        X = np.asarray(X, dtype=np.float64)
        self.categorical = categorical_mask(categorical, X.shape[1])
        Xc, self._codes = split_columns(X, self.categorical)
        self.n_rows, dim = Xc.shape
        self.bandwidth = float(bandwidth or silverman_bandwidth(self.n_rows, dim))
        cov = covariance_of(Xc) + reg_covar * np.eye(dim)
        self._chol = np.linalg.cholesky(cov) if dim else np.zeros((0, 0))
        self._ref = self._whiten(Xc)
        self._log_norm = -(0.5 * dim * _LOG_2PI + dim * np.log(self.bandwidth)
                           + np.sum(np.log(np.diag(self._chol))))
        if n_categories is None:
            n_categories = self._codes.max(axis=0) + 1 if self._codes.size else []
        K = np.maximum(np.asarray(n_categories, dtype=np.float64), 2.0)
        self._n_categories = K.astype(np.int64)
        lam = (K - 1.0) / (self.n_rows + K)
        self._lambda = lam
        self._log_same = np.log1p(-lam)
        self._log_other = np.log(lam / (K - 1.0))

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` draws from the estimate, shape (n, n_features): a reference row chosen
        uniformly, Gaussian noise of the window's covariance on its continuous part, and each
        categorical code kept with probability ``1 - lambda_a`` (else one of the other
        ``K_a - 1`` codes, uniformly)."""
        pick = rng.integers(self.n_rows, size=n)
        dim = self._ref.shape[1]
        eps = rng.standard_normal((n, dim))
        out = np.empty((n, len(self.categorical)))
        if dim:
            out[:, ~self.categorical] = (self._ref[pick] + eps) @ self._chol.T * self.bandwidth
        for a, col in enumerate(np.flatnonzero(self.categorical)):
            K = int(self._n_categories[a])
            codes = self._codes[pick, a]
            change = rng.random(n) < self._lambda[a]
            other = (codes + rng.integers(1, K, size=n)) % K
            out[:, col] = np.where(change, other, codes)
        return out

    def _whiten(self, Xc: np.ndarray) -> np.ndarray:
        if not Xc.shape[1]:
            return Xc
        return solve_triangular(self._chol, Xc.T, lower=True).T / self.bandwidth

    def log_density(self, X, exclude: np.ndarray | None = None) -> np.ndarray:
        """``log P(x)``, shape (m,).

        Parameters
        ----------
        X : ndarray of shape (m, n_features)
        exclude : ndarray of int, shape (m,), or None
            Leave-one-out: row ``i`` of ``X`` is the reference row ``exclude[i]``, whose
            kernel is left out (the average is then over ``n - 1`` rows).
        """
        Xc, codes = split_columns(X, self.categorical)
        Z = self._whiten(Xc)
        m = len(Z)
        out = np.empty(m)
        step = max(1, _BLOCK_CELLS // max(self.n_rows, 1))
        for s in range(0, m, step):
            b = slice(s, min(s + step, m))
            logk = -0.5 * cdist(Z[b], self._ref, "sqeuclidean") + self._log_norm
            for a in range(codes.shape[1]):
                same = codes[b, a][:, None] == self._codes[:, a][None, :]
                logk += np.where(same, self._log_same[a], self._log_other[a])
            if exclude is not None:
                logk[np.arange(logk.shape[0]), exclude[b]] = -np.inf
            out[b] = logsumexp(logk, axis=1)
        return out - np.log(self.n_rows - (exclude is not None))


def symmetric_kl(log_p_on_p: np.ndarray, log_q_on_p: np.ndarray,
                 log_p_on_q: np.ndarray, log_q_on_q: np.ndarray) -> float:
    """Monte Carlo ``KL(p||q) + KL(q||p)`` from log densities at draws of ``p`` and of ``q``.

    Parameters
    ----------
    log_p_on_p, log_q_on_p : ndarray of shape (m_p,)
        ``log p`` and ``log q`` at draws from ``p``.
    log_p_on_q, log_q_on_q : ndarray of shape (m_q,)
        ``log p`` and ``log q`` at draws from ``q``.
    """
    return float(np.mean(log_p_on_p - log_q_on_p) + np.mean(log_q_on_q - log_p_on_q))


def loo_parzen(X: np.ndarray, categorical, n_categories, reg_covar: float) -> ParzenWindow:
    """The Parzen window of ``X`` whose factor ``h`` (a multiple of Silverman's, from
    :data:`LOO_FACTORS`) gives ``X`` the largest mean leave-one-out log-density (the first
    among ties).  Silverman's rule is optimal for one Gaussian and smooths well-separated
    clusters into one, so that a one-component mixture would match it best."""
    base = ParzenWindow(X, categorical, n_categories=n_categories, reg_covar=reg_covar)
    rows = np.arange(len(X))
    best, best_ll = base, -np.inf
    for f in LOO_FACTORS:
        window = ParzenWindow(X, categorical, n_categories=n_categories, reg_covar=reg_covar,
                              bandwidth=f * base.bandwidth)
        ll = float(np.mean(window.log_density(X, exclude=rows)))
        if ll > best_ll + 1e-12:
            best, best_ll = window, ll
    return best


def held_out_representativity(density: MixtureDensity, parzen: ParzenWindow, *,
                              n_mc: int = 1000, random_state=None,
                              rows: np.ndarray | None = None) -> tuple[float, float]:
    """Symmetric KL divergence between ``density`` and a Parzen estimate of rows it was not
    fitted on, with its Monte Carlo standard error (module docstring, ``"held_out"``).

    Both terms are plain Monte Carlo averages over independent draws, ``n_mc`` from the
    Parzen estimate for ``KL(P||M)`` and ``n_mc`` from the mixture for ``KL(M||P)``, of two
    fixed densities, so the estimate is unbiased and non-negative in expectation.

    With ``rows`` (the rows ``parzen`` was built on, in its order): ``KL(P||M)`` is averaged
    over these rows with the leave-one-out window instead (``"held_out_rows"``, module
    docstring); the window's draws are still made, so the mixture's draws do not change.

    Returns
    -------
    (float, float)
        The divergence and its standard error.
    """
    rng = np.random.default_rng(check_random_state(random_state).randint(2**31 - 1))
    zp = parzen.sample(n_mc, rng)
    zm = sample(density, n_mc, rng)
    if rows is None:
        a = parzen.log_density(zp) - log_density(density, zp)
    else:
        rows = np.asarray(rows, dtype=np.float64)
        a = parzen.log_density(rows, exclude=np.arange(len(rows))) - log_density(density, rows)
    b = log_density(density, zm) - parzen.log_density(zm)
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        return float("inf"), float("inf")
    se = float(np.sqrt(a.var(ddof=1) / len(a) + b.var(ddof=1) / len(b))) \
        if min(len(a), len(b)) > 1 else 0.0
    return float(a.mean() + b.mean()), se


def representativity(density: MixtureDensity, X: np.ndarray, parzen: ParzenWindow | None = None,
                     *, n_mc: int = 1000, random_state=None) -> float:
    """Symmetric KL divergence between the Parzen estimate of ``X`` and ``density`` (§5.1.1).

    Parameters
    ----------
    density : MixtureDensity
    X : ndarray of shape (n, n_features)
        The rows the Parzen window is built on (n >= 2).
    parzen : ParzenWindow or None
        Built on ``X`` (pass it to reuse it across grid points); None: built here.
    n_mc : int
        Pool rows (a random subset when ``n > n_mc``) and mixture draws per KL term.
    random_state : int, RandomState or None

    Returns
    -------
    float
        Lower is more representative (0 for identical densities up to Monte Carlo noise).
    """
    X = np.asarray(X, dtype=np.float64)
    if parzen is None:
        parzen = ParzenWindow(X, density.categorical, n_categories=density.n_categories)
    rng = np.random.default_rng(check_random_state(random_state).randint(2**31 - 1))
    rows = np.arange(len(X)) if len(X) <= n_mc else np.sort(
        rng.choice(len(X), size=n_mc, replace=False))
    Z = sample(density, n_mc, rng)
    return symmetric_kl(parzen.log_density(X[rows], exclude=rows), log_density(density, X[rows]),
                        parzen.log_density(Z), log_density(density, Z))


# ------------------------------------------------------------------------------ fitting

def _category_log_probs(codes: np.ndarray, resp: np.ndarray, n_categories, pseudo: float
                        ) -> tuple[tuple[np.ndarray, ...], np.ndarray]:
    """Dirichlet posterior means of the per-component multinomials (module docstring)."""
    nk = resp.sum(axis=0)
    logs, unseen = [], []
    for a, K in enumerate(n_categories):
        counts = resp.T @ (codes[:, a][:, None] == np.arange(K))
        denom = nk[:, None] + pseudo * K
        logs.append(np.log((counts + pseudo) / denom))
        unseen.append(np.log(pseudo / denom[:, 0]))
    unseen_arr = np.stack(unseen, axis=1) if unseen else np.zeros((resp.shape[1], 0))
    return tuple(logs), unseen_arr


def variational_log_weights(weight_concentration: np.ndarray, degrees_of_freedom: np.ndarray,
                            mean_precision: np.ndarray, dim: int) -> np.ndarray:
    """Per-component constants of VI's E-step: ``E[log pi_j] + c_j`` (module docstring).

    ``E[log pi_j] = psi(a_j) - psi(sum_k a_k)`` (finite Dirichlet) and
    ``c_j = -D/2 log nu_j + 1/2 (D log 2 + sum_{i<D} psi((nu_j - i) / 2) - D / kappa_j)``:
    what ``E[log N(x | mu_j, Lambda_j)]`` adds to the plug-in log-density with the expected
    precision ``nu_j W_j`` (Bishop 2006, eqs 10.64-10.66).

    Parameters
    ----------
    weight_concentration : ndarray of shape (J,)
        ``a_j``, the Dirichlet posterior (sklearn's ``weight_concentration_``).
    degrees_of_freedom, mean_precision : ndarray of shape (J,)
        ``nu_j`` and ``kappa_j`` (sklearn's ``degrees_of_freedom_``, ``mean_precision_``).
    dim : int
        D, the continuous dimensions.

    Returns
    -------
    ndarray of shape (J,)
    """
    a = np.asarray(weight_concentration, dtype=np.float64)
    nu = np.asarray(degrees_of_freedom, dtype=np.float64)
    kappa = np.asarray(mean_precision, dtype=np.float64)
    log_lambda = dim * np.log(2.0) + digamma(0.5 * (nu[None, :] - np.arange(dim)[:, None])).sum(0)
    return (digamma(a) - digamma(a.sum()) - 0.5 * dim * np.log(nu)
            + 0.5 * (log_lambda - dim / kappa))


def fit_mixture(X, categorical=None, *, weight_concentration_prior: float,
                covariance_prior_scale: float, options: DensityOptions | None = None,
                covariance_prior: np.ndarray | None = None, n_categories=None,
                random_state=None) -> MixtureDensity:
    """Fit the mixture at one grid point: VI, pruning, then the multinomials.

    Parameters
    ----------
    X : ndarray of shape (n, n_features)
        n >= 1.
    categorical : ndarray of bool, shape (n_features,), or None
    weight_concentration_prior : float
        Dirichlet concentration ``alpha_0`` of the weights.
    covariance_prior_scale : float
        ``s`` of the prior covariance ``s * C + reg_covar * I``.
    options : DensityOptions or None
        Only the VI settings are used here (not the grids).
    covariance_prior : ndarray of shape (D, D) or None
        ``C``; None: the covariance of the continuous columns of ``X``.
    n_categories : sequence of int or None
        ``K_a`` per categorical column; None: largest code of ``X`` + 1.
    random_state : int, RandomState or None
        Seed of the k-means initialisation.

    Returns
    -------
    MixtureDensity
    """
    options = options or DensityOptions()
    X = np.asarray(X, dtype=np.float64)
    mask = categorical_mask(categorical, X.shape[1])
    Xc, codes = split_columns(X, mask)
    n, dim = Xc.shape
    if n == 0:
        raise ValueError("the density model needs at least one row")
    if n_categories is None:
        n_categories = tuple(int(k) for k in codes.max(axis=0) + 1) if codes.size else ()
    converged, n_iter, score_offset = True, 0, 0.0
    if dim == 0:
        weights = np.ones(1)
        means, covs = np.zeros((1, 0)), np.zeros((1, 0, 0))
        prec = covs.copy()
    else:
        C = covariance_of(Xc) if covariance_prior is None else np.asarray(covariance_prior)
        prior = covariance_prior_scale * C + options.reg_covar * np.eye(dim)
    if dim and n == 1:   # sklearn's VI needs two rows; its update for one row, in closed form
        weights, means = np.ones(1), Xc.copy()
        covs = ((prior + options.reg_covar * np.eye(dim)) / (dim + 1.0))[None]
        prec = precision_cholesky(covs)
    elif dim:
        start = min(options.n_components, n)
        while True:
            vi = BayesianGaussianMixture(
                n_components=start, covariance_type="full",
                weight_concentration_prior_type="dirichlet_distribution",
                weight_concentration_prior=weight_concentration_prior,
                covariance_prior=prior,
                reg_covar=options.reg_covar, max_iter=options.max_iter, tol=options.tol,
                random_state=random_state)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                vi.fit(Xc)
            # rows a component stands for: its weight times n, or ("data") the data part of
            # its Dirichlet posterior, N_j = a_j - alpha_0 (a dead component's weight under a
            # concentration alpha_0 ~ 1 is about alpha_0 / n, i.e. one row, however empty)
            rows = vi.weights_ * n if options.prune_by == "weight" else \
                vi.weight_concentration_ - weight_concentration_prior
            keep = rows >= options.floor(dim)
            keep[np.argmax(vi.weights_)] = True
            # the full-rank floor can drop components that hold data: their rows are then not
            # modelled by the components kept, so VI runs again from as many components as
            # were kept, until none falls below the floor (decision 0312)
            if options.component_floor == "rows" or keep.all():
                break
            start = int(keep.sum())
        weights = vi.weights_[keep] / vi.weights_[keep].sum()
        if options.responsibility_rule == "variational":
            terms = variational_log_weights(vi.weight_concentration_, vi.degrees_of_freedom_,
                                            vi.mean_precision_, dim)[keep]
            score_offset = float(logsumexp(terms))
            weights = np.exp(terms - score_offset)
        means, covs = vi.means_[keep], vi.covariances_[keep]
        prec = vi.precisions_cholesky_[keep]
        converged, n_iter = bool(vi.converged_), int(vi.n_iter_)
    gaussian = MixtureDensity(weights, means, covs, prec, np.zeros(dim, dtype=bool), (),
                              np.zeros((len(weights), 0)))
    cat_logs, unseen = _category_log_probs(codes, responsibilities(gaussian, Xc), n_categories,
                                           options.category_pseudo_count)
    return replace(gaussian, categorical=mask, category_log_probs=cat_logs,
                   unseen_log_probs=unseen,
                   weight_concentration_prior=float(weight_concentration_prior),
                   covariance_prior_scale=float(covariance_prior_scale), converged=converged,
                   n_iter=n_iter, score_offset=score_offset)


def fit_density(X, categorical=None, options: DensityOptions | None = None, *,
                covariance_prior: np.ndarray | None = None, n_categories=None,
                random_state=None) -> MixtureDensity:
    """Fit the density model with its hyper-parameters chosen by representativity (§5.1.1).

    Parameters
    ----------
    X : ndarray of shape (n, n_features)
        The rows to model (the pool, or one class's rows).
    categorical : ndarray of bool, shape (n_features,), or None
    options : DensityOptions or None
        Start, VI settings and the grid (default :class:`DensityOptions`).
    covariance_prior, n_categories :
        As in :func:`fit_mixture`.
    random_state : int, RandomState or None
        One seed for every grid point's VI and one for the Monte Carlo draws.

    Returns
    -------
    MixtureDensity
        The most representative fit, with ``representativity`` and ``grid_scores``.
    """
    options = options or DensityOptions()
    X = np.asarray(X, dtype=np.float64)
    mask = categorical_mask(categorical, X.shape[1])
    seed_fit, seed_mc = check_random_state(random_state).randint(2**31 - 1, size=2)
    if options.representativity != "in_sample" or options.initial_components:
        return _fit_density_held_out(X, mask, options, covariance_prior, n_categories,
                                     seed_fit, seed_mc)
    grid = options.grid()
    searched = len(grid) > 1 and len(X) >= 2 and not np.all(mask)
    fits, scores = [], []
    parzen = ParzenWindow(X, mask, n_categories=n_categories,
                          reg_covar=options.reg_covar) if searched else None
    for wcp, scale in grid if searched else grid[:1]:
        fit = fit_mixture(X, mask, weight_concentration_prior=wcp, covariance_prior_scale=scale,
                          options=options, covariance_prior=covariance_prior,
                          n_categories=n_categories, random_state=seed_fit)
        fits.append(fit)
        if searched:
            kl = representativity(fit, X, parzen, n_mc=options.n_mc, random_state=seed_mc)
            scores.append(kl if np.isfinite(kl) else np.inf)
    if not searched:
        return fits[0]
    best = int(np.argmin(scores))
    table = tuple((w, s, float(k)) for (w, s), k in zip(grid, scores, strict=True))
    return replace(fits[best], representativity=float(scores[best]), grid_scores=table)


def _fit_density_held_out(X, mask, options: DensityOptions, covariance_prior, n_categories,
                          seed_fit: int, seed_mc: int) -> MixtureDensity:
    """:func:`fit_density` over the grid of (concentration, covariance-prior scale, VI start),
    each point judged on held-out rows (``options.representativity``; ``"in_sample"`` judges
    it on the rows it was fitted on), the winner (``options.selection``) refitted on all
    rows.  ``grid_scores`` holds ``(concentration, scale, start, divergence, standard error,
    fitted J)`` per point."""
    Xc, codes = split_columns(X, mask)
    if n_categories is None and codes.size:
        n_categories = tuple(int(k) for k in codes.max(axis=0) + 1)
    C = covariance_of(Xc) if covariance_prior is None else np.asarray(covariance_prior)
    held_out = options.representativity != "in_sample"
    on_rows = options.representativity == "held_out_rows"
    n_hold = int(round(options.held_out_fraction * len(X))) if held_out else 0
    grid = [(w, s, j) for w, s in options.grid() for j in options.starts(len(X) - n_hold)]
    searched = len(grid) > 1 and len(X) - n_hold >= 2 and n_hold != 1 and not np.all(mask)

    def fit(rows, w, s, j):
        return fit_mixture(X[rows], mask, weight_concentration_prior=w,
                           covariance_prior_scale=s, options=replace(options, n_components=j),
                           covariance_prior=C, n_categories=n_categories,
                           random_state=seed_fit)

    if not searched:
        w, s = options.grid()[0]
        return fit(np.arange(len(X)), w, s, options.starts(len(X))[0])
    order = np.random.default_rng(seed_mc).permutation(len(X))
    fit_rows, judge_rows = order[n_hold:], order[:n_hold]
    if options.search_rows:
        fit_rows = fit_rows[:options.search_rows]
        judge_rows = judge_rows[:int(np.ceil(options.search_rows * options.held_out_fraction
                                             / (1.0 - options.held_out_fraction)))]
    fit_rows = np.sort(fit_rows) if held_out else np.arange(len(X))
    judge = X[np.sort(judge_rows)] if held_out else X
    parzen = loo_parzen(judge, mask, n_categories, options.reg_covar) if held_out else \
        ParzenWindow(judge, mask, n_categories=n_categories, reg_covar=options.reg_covar)
    table = []
    for w, s, j in grid:
        model = fit(fit_rows, w, s, j)
        if held_out:
            kl, se = held_out_representativity(model, parzen, n_mc=options.n_mc,
                                               random_state=seed_mc,
                                               rows=judge if on_rows else None)
        else:
            kl, se = representativity(model, X, parzen, n_mc=options.n_mc,
                                      random_state=seed_mc), 0.0
        kl = kl if np.isfinite(kl) else np.inf
        table.append((w, s, j, float(kl), float(se), model.n_components, model))
    # an unconverged VI is not yet a fit of its start: eligible only when none converged
    eligible = [i for i, t in enumerate(table) if t[6].converged] or list(range(len(table)))
    best = min(eligible, key=lambda i: (table[i][3], i))
    if options.selection == "one_se":
        near = [i for i in eligible if table[i][3] <= table[best][3] + table[best][4]]
        best = min(near, key=lambda i: (table[i][5], table[i][3], i))
    w, s, j, kl, _, fitted = table[best][:6]
    # the refit on every row starts from the J the search's VI pruned to
    final = fit(np.arange(len(X)), w, s, fitted) if held_out else table[best][6]
    return replace(final, representativity=kl,
                   grid_scores=tuple(t[:6] for t in table))
