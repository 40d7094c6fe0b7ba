"""Active learning with the semi-supervised PRBF network (Constantinopoulos & Likas 2008, §4.2) and
its QBC variant.

One *step* of the paper's algorithm with ``S = 1`` -- what happens after every new label:

1. try to add one node to the current network ``PRBF_J`` (semi-supervised node addition,
   eqs 34-37, :func:`alprbf.prbf._incremental.try_add_component`) and, when a node is added,
   train ``PRBF_{J+1}`` by semi-supervised EM (eqs 17-29);
2. split both networks (eqs 30-33);
3. keep the network whose *split* version has the larger joint log-likelihood (eq 17);
   predictions use that split network.

The QBC algorithm of §4.3 keeps a different classifier between queries: it adds the node
whenever the addition succeeds (no comparison of split networks) and outputs the split network.
Both are :func:`active_step`, with ``selection="split_likelihood"`` or ``"always_add"``.

The network is carried from one query to the next.  The first fit starts from the paper's
degenerate one-node network (:func:`alprbf.prbf._incremental.one_component_params`: mean and
covariance of all rows, ``p(1|k) = 1``, ``p(k) = N_k/N``, which is the fixed point of
semi-supervised EM with one node) and then takes one step.

Choices where the paper is silent (parameters of :class:`StepOptions`):

* The algorithm as printed trains only ``PRBF_{J+1}`` by EM in step 1 (``PRBF_J`` keeps the
  parameters of the previous iteration, although its split is recomputed with the new label);
  ``refit_current=True`` also re-runs EM on ``PRBF_J`` first.
* "EM until convergence": until the joint log-likelihood per row changes by less than
  ``tol``, at most ``max_iter`` M-steps.
* Covariance type and candidate nodes.  §4.1 builds the candidates from the *labeled* rows of
  each partition (eq 36): ``candidate_rows="labeled"``
  (:func:`alprbf.prbf._incremental.try_add_component`, with ``candidate_reg_covar`` as an
  optional larger floor for the candidates).  With *full* covariances and fewer labels in a
  kd-tree subset than dimensions the candidates are needle-like, take no unlabeled mass in EM
  and the network does not learn to discriminate.  ``candidate_rows="all"`` is the
  alternative for that case: partition *all* rows by eq 36 and take the kd-tree subset moments
  over labeled and unlabeled rows alike (eq 37 still tests on the labeled rows).  It is a
  departure: node placement then no longer follows where the queries went, which is the point
  of §4.2.  With *diagonal* covariances (the reading §4.3 suggests) the literal procedure
  works, so the defaults are ``covariance_type="diag"`` and ``candidate_rows="labeled"``;
  ``configs/table_000.yaml`` runs the three readings (evidence: docs/history/notes.md,
  'Candidate rows and covariance type').
* Constantinopoulos & Likas 2008 uses the candidate statistics directly (no partial EM as in
  Constantinopoulos & Likas 2006): ``partial_max_iter=0`` (only used with
  ``candidate_rows="labeled"``).
* A component is split for class ``k`` when its joint-posterior mass for ``k`` exceeds
  ``split_min_mass`` (the paper: ``> 0``).  With unlabeled rows every mass is positive, so the
  literal test gives ``M x K`` subcomponents; the default ``0.01`` drops those fitted to less
  than 1 % of one row.  A choice for speed: fewer subcomponents make the split and every
  prediction cheaper, while the dropped ones carry almost no mass (evidence: docs/history/notes.md,
  'split_min_mass').
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, fields

import numpy as np

from ..validation import check_params, check_real
from ._data import PRBFData, prepare_data
from ._em import run_em
from ._estep import EStep, e_step, estimate_log_gaussian_prob
from ._incremental import (
    batched_precision_cholesky,
    class_loglik_change,
    component_partition,
    initial_candidates,
    insert_component,
    one_component_params,
    select_candidate,
    try_add_component,
)
from ._kdtree import SPLIT_POINTS
from ._params import COVARIANCE_TYPES, PRBFParams
from ._split import split_params

SELECTIONS = ("split_likelihood", "always_add")
CANDIDATE_ROWS = ("labeled", "all")
UNLABELED_ROWS = ("use", "ignore")
MIN_ROWS_DIMENSION = "d+1"


@dataclass(frozen=True)
class StepOptions:
    """Options of the active PRBF learners and of :func:`active_step` (see the module
    docstring for the choices).  Invalid values raise ``ValueError``.

    Attributes
    ----------
    covariance_type : {"full", "diag", "spherical"}, default="diag"
        Of the network the learner grows.  Constantinopoulos & Likas 2008 does not state it; §4.3
        treats the features as independent and takes each node's per-feature variances from the
        trained network, which reads most naturally as diagonal covariances (evidence:
        docs/history/notes.md, 'Candidate rows and covariance type').
    reg_covar : float, default=1e-6
        Covariance floor (added to every variance), the same default as every PRBF estimator.
        ``configs/table_000.yaml`` sets 1e-3 for the Constantinopoulos & Likas 2008 data sets, whose
        quantised features let components collapse onto repeated points (evidence:
        docs/history/notes.md, 'Covariance floor').
    tol : float, default=1e-4
        Semi-supervised EM stops when the joint log-likelihood per row changes by less.
    max_iter : int, default=200
        Cap on the EM iterations of one step.
    refit_current : bool, default=False
        Re-run EM on ``PRBF_J`` before the comparison (not in the paper).
    add_threshold : float, default=0.01
        Minimum total per-class likelihood increase of an added node (eq 37; paper: 0.01).
    kd_depth : int, default=3
        kd-tree levels below the root for the candidates (3 -> 14 per node, the paper's).
    split_point : {"mean", "median"}, default="mean"
        Where the kd-tree cuts the principal axis.
    partial_max_iter : int, default=0
        Partial-EM steps refining each candidate (``candidate_rows="labeled"`` only;
        Constantinopoulos & Likas 2008 uses none).
    split_min_mass : float, default=0.01
        Minimum joint-posterior mass of a subcomponent (the paper: > 0).
    candidate_rows : {"labeled", "all"}, default="labeled"
        Rows whose kd-tree subsets give the candidate nodes: the labeled rows of each
        partition (eq 36, the paper's procedure) or all rows (needed with full covariances,
        where labeled-only subsets are singular).
    candidate_reg_covar : float or None, default=None
        Covariance floor of the candidates (None: ``reg_covar``).
    candidate_min_rows : int or "d+1", default=2
        Smallest kd-tree subset (rows it is estimated from: the labeled rows of a partition,
        or all rows with ``candidate_rows="all"``) that gives a candidate node.  2, the
        smallest subset with a sample variance, is today's behaviour.  ``"d+1"`` (the data's
        dimension plus one, the fewest rows whose sample covariance can be non-singular) is
        the *supported-candidate* gate reading of Constantinopoulos & Likas 2008
        (docs/decisions/0005): a candidate fitted to fewer rows is a needle whose eq-37 gain on
        those rows grows without bound as the covariance floor shrinks, so the gate then measures
        the floor, not class overlap.
    unlabeled_rows : {"use", "ignore"}, default="use"
        What the learners do with the unlabeled rows of a ``fit``: the paper's semi-supervised
        EM on all rows ("use"), or an ablation that is not in the paper ("ignore"): every step
        (initial node, EM, node addition, split) sees the labeled rows only, so EM is
        supervised; the network still carries over from one fit to the next, and queries
        still score the pool.  Read by the learners (:mod:`alprbf.models.active_prbf`), not
        by :func:`active_step`, which trains on the rows it is given.
    """

    covariance_type: str = "diag"
    reg_covar: float = 1e-6
    tol: float = 1e-4
    max_iter: int = 200
    refit_current: bool = False
    add_threshold: float = 0.01
    kd_depth: int = 3
    split_point: str = "mean"
    partial_max_iter: int = 0
    split_min_mass: float = 0.01
    candidate_rows: str = "labeled"
    candidate_reg_covar: float | None = None
    candidate_min_rows: int | str = 2
    unlabeled_rows: str = "use"

    def __post_init__(self) -> None:
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        check_params("active PRBF", values,
                     choices={"covariance_type": COVARIANCE_TYPES, "split_point": SPLIT_POINTS,
                              "candidate_rows": CANDIDATE_ROWS, "refit_current": (False, True),
                              "unlabeled_rows": UNLABELED_ROWS},
                     ints={"max_iter": 0, "kd_depth": 1, "partial_max_iter": 0},
                     reals={"reg_covar": 0.0, "tol": 0.0, "add_threshold": 0.0,
                            "split_min_mass": 0.0})
        if self.candidate_reg_covar is not None:
            check_real("active PRBF", "candidate_reg_covar", self.candidate_reg_covar, 0.0)
        m = self.candidate_min_rows
        if m != MIN_ROWS_DIMENSION and not (isinstance(m, numbers.Integral)
                                            and not isinstance(m, bool) and m >= 2):
            raise ValueError(f"active PRBF: invalid candidate_min_rows={m!r}; valid: an "
                             f"integer >= 2 or {MIN_ROWS_DIMENSION!r}")

    def min_rows(self, n_features: int) -> int:
        """Smallest candidate subset for data with ``n_features`` features."""
        if self.candidate_min_rows == MIN_ROWS_DIMENSION:
            return n_features + 1
        return int(self.candidate_min_rows)

    @property
    def candidate_floor(self) -> float:
        """Covariance floor of the candidate nodes."""
        return self.reg_covar if self.candidate_reg_covar is None else self.candidate_reg_covar


@dataclass(frozen=True, eq=False)
class StepResult:
    """Outcome of one active-learning step.

    Attributes
    ----------
    network : PRBFParams
        The unsplit network carried to the next step.
    estep : EStep
        Its E-step on the step's data (responsibilities for the committee statistics).
    split : PRBFParams
        Its split version, used for prediction.
    added : bool
        A node was added and kept.
    attempted : bool
        The node addition found a candidate above the threshold (``PRBF_{J+1}`` existed).
    joint_loglik : float
        Joint log-likelihood (eq 17) of ``split``.
    rejected_loglik : float
        Eq 17 of the split network that was not kept (nan if there was none).
    em_iter : int
        EM iterations spent in this step.
    split_estep : EStep
        E-step of ``split`` on the step's data (its ``log_prob`` gives the posteriors of every
        row without another Gaussian evaluation).
    """

    network: PRBFParams
    estep: EStep
    split: PRBFParams
    added: bool
    attempted: bool
    joint_loglik: float
    rejected_loglik: float
    em_iter: int
    split_estep: EStep


def initial_network(X: np.ndarray, y: np.ndarray, n_classes: int,
                    covariance_type: str = "full", reg_covar: float = 1e-6) -> PRBFParams:
    """The degenerate one-node network ``PRBF_{J=1}`` the algorithm starts from.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        All rows (labeled and unlabeled).
    y : ndarray of shape (n,)
        Class codes, ``nan`` for unlabeled rows.
    n_classes : int
    covariance_type : {"full", "diag", "spherical"}
    reg_covar : float

    Returns
    -------
    PRBFParams
    """
    return one_component_params(np.asarray(X, dtype=np.float64), y, n_classes,
                                covariance_type, reg_covar)


def propose_from_all_rows(data: PRBFData, estep: EStep, params: PRBFParams,
                          opts: StepOptions) -> PRBFParams | None:
    """Node addition (eqs 34-37) with candidates built from *all* rows of each partition.

    Every row (labeled or not) goes to the node with the largest ``P(j|x)`` of eq 36 (with
    ``P(k) = N_k / N`` the labeled class proportions); each partition is cut by the
    principal-direction kd-tree and the sample moments of the 14 subsets (all rows) are the
    candidates, with ``alpha_k = pi_jk / 2``.  The acceptance test is the paper's: the
    per-class likelihood change of eq 37 on the *labeled* rows, positive for at least two
    classes, total above ``opts.add_threshold``.  No partial EM (Constantinopoulos & Likas 2008,
    §4.1 uses the subset statistics directly).

    Parameters
    ----------
    data : PRBFData
    estep : EStep
        ``e_step(data, params)``.
    params : PRBFParams
        The current network.
    opts : StepOptions

    Returns
    -------
    PRBFParams or None
        The network with one more node (before EM), or None if no candidate qualifies.
    """
    lab = data.labeled
    if len(lab) == 0:
        return None
    counts = data.class_counts
    assign = component_partition(estep.log_prob, params.weights, counts / counts.sum())
    cand = initial_candidates(data.X, assign, params, opts.kd_depth, opts.split_point,
                              opts.candidate_floor, opts.min_rows(data.X.shape[1]))
    if cand.means.shape[0] == 0:
        return None
    ct = params.covariance_type
    prec = batched_precision_cholesky(cand.covariances, ct)
    log_f = estimate_log_gaussian_prob(data.X[lab], cand.means, prec, ct)
    delta = class_loglik_change(data.codes, estep.log_norm[lab], log_f, cand.alphas)
    best, _, _ = select_candidate(delta, opts.add_threshold, 2)
    if best is None:
        return None
    return insert_component(params, cand.means[best], cand.covariances[best], prec[best],
                            cand.alphas[best])


def propose_node(data: PRBFData, estep: EStep, params: PRBFParams,
                 opts: StepOptions) -> PRBFParams | None:
    """Node addition (eqs 34-37) with the candidates ``opts.candidate_rows`` asks for.

    ``"labeled"``: the paper's procedure on the labeled rows
    (:func:`alprbf.prbf._incremental.try_add_component`, no EM; ``estep`` is not used);
    ``"all"``: :func:`propose_from_all_rows`, whose parameters and return value these are.
    """
    if opts.candidate_rows == "all":
        return propose_from_all_rows(data, estep, params, opts)
    grown, _ = try_add_component(data.X, data.y, params, add_threshold=opts.add_threshold,
                                 kd_depth=opts.kd_depth, split_point=opts.split_point,
                                 reg_covar=opts.candidate_floor,
                                 partial_max_iter=opts.partial_max_iter,
                                 min_size=opts.min_rows(data.X.shape[1]), em=False)
    return grown


def _split(data: PRBFData, params: PRBFParams, est: EStep, opts: StepOptions
           ) -> tuple[PRBFParams, EStep]:
    split = split_params(data, params, est, reg_covar=opts.reg_covar,
                         min_mass=opts.split_min_mass).params
    return split, e_step(data, split)


def active_step(X: np.ndarray, y: np.ndarray, network: PRBFParams, opts: StepOptions,
                selection: str = "split_likelihood", data: PRBFData | None = None,
                log_prob: np.ndarray | None = None) -> StepResult:
    """One iteration of the active PRBF algorithm with ``S = 1`` (see the module docstring).

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Labeled and unlabeled rows.
    y : ndarray of shape (n,)
        Class codes, ``nan`` for unlabeled rows.
    network : PRBFParams
        The current unsplit network ``PRBF_J``.
    opts : StepOptions
    selection : {"split_likelihood", "always_add"}
        The active PRBF of §4.2 (keep the split network with the larger eq 17) or the QBC
        classifier of §4.3 (keep the node whenever the addition succeeds).
    data : PRBFData, optional
        ``prepare_data(X, y, K, network.covariance_type)`` if already built.
    log_prob : ndarray of shape (n, M), optional
        ``log N_j(x_i)`` of ``network`` on ``X``: the previous step's E-step holds it (only the
        labels changed since), so the step need not evaluate the Gaussians again.

    Returns
    -------
    StepResult
    """
    if selection not in SELECTIONS:
        raise ValueError(f"selection must be one of {', '.join(SELECTIONS)}; got {selection!r}")
    K = network.n_classes
    if data is None:
        data = prepare_data(X, y, K, network.covariance_type)
    em = dict(tol=opts.tol, max_iter=opts.max_iter, reg_covar=opts.reg_covar)
    current, em_iter = network, 0
    if opts.refit_current:
        res = run_em(data, current, **em)
        current, est_cur, em_iter = res.params, res.estep, res.n_iter
    else:
        est_cur = e_step(data, current, log_prob=log_prob)
    grown = propose_node(data, est_cur, current, opts)
    if grown is not None:
        res = run_em(data, grown, **em)
        grown, est_grown, em_iter = res.params, res.estep, em_iter + res.n_iter
        split_grown, sest_grown = _split(data, grown, est_grown, opts)
        if selection == "always_add":
            return StepResult(grown, est_grown, split_grown, True, True, sest_grown.loglik,
                              np.nan, em_iter, sest_grown)
    split_cur, sest_cur = _split(data, current, est_cur, opts)
    if grown is None:
        return StepResult(current, est_cur, split_cur, False, False, sest_cur.loglik, np.nan,
                          em_iter, sest_cur)
    if sest_grown.loglik > sest_cur.loglik:
        return StepResult(grown, est_grown, split_grown, True, True, sest_grown.loglik,
                          sest_cur.loglik, em_iter, sest_grown)
    return StepResult(current, est_cur, split_cur, False, True, sest_cur.loglik,
                      sest_grown.loglik, em_iter, sest_cur)
