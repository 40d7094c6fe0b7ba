"""Comparing methods over several datasets: ranks, wins, and the tests Demšar (2006) recommends.

The input is a *score matrix*: a DataFrame with one row per dataset (block) and one column per
method, holding one number per cell (e.g. the RP accuracy, an AULC, or a DUR).
``higher_is_better`` says which direction wins.

Definitions (Demšar 2006, as used by Reitmaier et al. 2016, §5.1.4)
-----------------------------------------------------
Ranks.  Within each dataset the best method gets rank 1 and the worst rank k; tied methods
share the average of the ranks they span (``scipy.stats.rankdata(method="average")``).  Values
are rounded to :data:`TIE_DECIMALS` decimals before ranking so that floating round-off does not
break ties.  Mean rank ``R_j`` = average over the N datasets; ``sum_j R_j = k (k + 1) / 2``.

Wins.  On each dataset the method(s) with the best value win; a tie for best between m methods
gives each 1/m, so the wins sum to N (Reitmaier et al. 2016: "shared" wins, e.g. 4.5).

Which test.  Demšar recommends the Wilcoxon signed-rank test for two methods and the Friedman
test with the Nemenyi post-hoc test for more.  Both need enough datasets: below
:data:`MIN_DATASETS` (5) no test is run (:func:`skip_reason`).  Five is the smallest N at which
the exact two-sided Wilcoxon test can reject at the default alpha = 0.10 (its smallest p-value
is ``2 / 2^N``: 0.125 for N = 4, 0.0625 for N = 5), and the Friedman and Nemenyi tests rest on
large-sample approximations (chi-square, studentized range) that Demšar calls satisfactory only
for N > 10 and k > 5; for 5 <= N <= 10 the report prints them with that caveat.

Wilcoxon (k = 2).  ``scipy.stats.wilcoxon`` on the per-dataset differences, two-sided, zero
differences split evenly between the two rank sums (``zero_method="zsplit"``, as Demšar
describes).  ``R+`` is the rank sum of the datasets where the first method is better.

Friedman (k >= 3).  Two statistics are computed:

* ``chi2`` (the one reported): ``scipy.stats.friedmanchisquare`` on the ranks, which divides
  the textbook statistic by the tie correction ``1 - sum(t^3 - t) / (N k (k^2 - 1))`` (t: sizes
  of tie groups); it equals the textbook value when there are no ties.
* ``chi2_ranks``: the textbook formula from the mean ranks,
  ``12 N / (k (k + 1)) * (sum_j R_j^2 - k (k + 1)^2 / 4)``, without tie correction (Demšar's
  eq.; Reitmaier et al. 2016 applies it to its mean ranks: 19.73 for its Table 2).

Both have k - 1 degrees of freedom.  Iman–Davenport:
``F = (N - 1) chi2 / (N (k - 1) - chi2)`` with (k - 1, (k - 1)(N - 1)) degrees of freedom,
from the reported ``chi2``.  When every dataset ranks the methods identically the denominator
is 0 and F is undefined (NaN, printed ``n/a``).

p-values are never 0.  Under H0 each dataset's ranking is a uniformly random permutation, so
no outcome of the exact Friedman test has a p-value below the probability that all N datasets
rank the k methods alike, ``(k!)^(1 - N)`` (:func:`friedman_p_floor`).  The asymptotic
p-values are raised to that floor; with perfect agreement both p-values equal it.

Nemenyi and the critical difference.  Pairwise p-values from
``scikit_posthocs.posthoc_nemenyi_friedman`` on the rank matrix.  Two methods differ
significantly when their mean ranks differ by at least ``CD = q_alpha sqrt(k (k + 1) / (6 N))``
with ``q_alpha = studentized_range.ppf(1 - alpha, k, inf) / sqrt(2)`` (Demšar's table:
2.459 for k = 5, alpha = 0.10).  A ``q_alpha`` supplied by the user replaces it.

Wilcoxon–Holm (``posthoc="wilcoxon-holm"``, the alternative to Nemenyi that Benavoli et al.
2016 recommend, since the Nemenyi outcome for two methods depends on the other methods in the
comparison).  Every pair of methods gets a two-sided Wilcoxon signed-rank test over the N
datasets (zero differences split, as above), from ``scikit_posthocs.posthoc_wilcoxon`` with
``zero_method="zsplit"``; the k (k - 1) / 2 p-values are Holm-adjusted (``p_adjust="holm"``:
the i-th smallest of m is multiplied by m - i + 1, then made monotone, capped at 1).  A pair
differs significantly when its adjusted p-value is below alpha.  There is no CD: the
diagram's bars join the methods that no test separates.

Reitmaier et al. 2016 reports CD = 2.516 * sqrt(5 * 6 / (6 * 20)) = 1.258 for k = 5, N = 20, alpha =
0.10. Its q = 2.516 is not the Nemenyi value for k = 5 at alpha = 0.10 (2.459, giving CD = 1.230);
we use the standard value by default and accept ``q_alpha=2.516`` to reproduce the paper.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

#: Decimals kept before ranking and before looking for ties.
TIE_DECIMALS = 9

#: Fewest datasets on which the Wilcoxon, Friedman and Nemenyi tests are run (see above).
MIN_DATASETS = 5

#: Above this N, with more than this k, Demšar finds the chi-square approximation satisfactory.
ASYMPTOTIC_N, ASYMPTOTIC_K = 10, 5


def _values(scores: pd.DataFrame, higher_is_better: bool) -> np.ndarray:
    v = np.round(scores.to_numpy(dtype=float), TIE_DECIMALS)
    if np.isnan(v).any():
        raise ValueError("score matrix has missing values; drop incomplete datasets first")
    return -v if higher_is_better else v


def rank_matrix(scores: pd.DataFrame, higher_is_better: bool = True) -> pd.DataFrame:
    """Rank the methods (columns) within each dataset (row): 1 = best, ties averaged."""
    r = stats.rankdata(_values(scores, higher_is_better), axis=1, method="average")
    return pd.DataFrame(r, index=scores.index, columns=scores.columns)


def mean_ranks(scores: pd.DataFrame, higher_is_better: bool = True) -> pd.Series:
    """Average rank of each method over the datasets."""
    return rank_matrix(scores, higher_is_better).mean(axis=0).rename("mean_rank")


def wins(scores: pd.DataFrame, higher_is_better: bool = True) -> pd.Series:
    """Number of datasets on which each method is best; a tie between m methods gives 1/m each."""
    v = _values(scores, higher_is_better)
    best = v == v.min(axis=1, keepdims=True)
    w = (best / best.sum(axis=1, keepdims=True)).sum(axis=0)
    return pd.Series(w, index=scores.columns, name="wins")


def skip_reason(n_datasets: int, k: int) -> str:
    """Why no significance test is run on ``n_datasets`` x ``k`` scores ("" when one is)."""
    if k < 2:
        return f"needs at least 2 methods, found {k}"
    if n_datasets < MIN_DATASETS:
        return (f"needs at least {MIN_DATASETS} datasets with results for every method, found "
                f"{n_datasets} (see DEFINITIONS.md: below {MIN_DATASETS} the tests cannot "
                "reject at alpha = 0.10 or rest on approximations that do not hold)")
    return ""


def friedman_chi2_from_ranks(mean_rank: np.ndarray, n_datasets: int) -> float:
    """Textbook Friedman statistic from mean ranks (no tie correction)."""
    r = np.asarray(mean_rank, dtype=float)
    k = r.size
    return float(12.0 * n_datasets / (k * (k + 1)) * (np.sum(r ** 2) - k * (k + 1) ** 2 / 4.0))


def friedman_p_floor(n_datasets: int, k: int) -> float:
    """Smallest p-value of the exact Friedman test: ``(k!)^(1 - N)``, all datasets agreeing."""
    return float(math.exp((1 - n_datasets) * math.lgamma(k + 1)))


def iman_davenport(chi2: float, n_datasets: int, k: int) -> tuple[float, float]:
    """Iman–Davenport F and its p-value from a Friedman chi-square.

    F is NaN when every dataset ranks the methods alike (``chi2 = N (k - 1)``); the p-value is
    never below :func:`friedman_p_floor`.
    """
    df1, df2 = k - 1, (k - 1) * (n_datasets - 1)
    floor = friedman_p_floor(n_datasets, k)
    denom = n_datasets * (k - 1) - chi2
    if denom <= 1e-12:
        return float("nan"), floor
    f = (n_datasets - 1) * chi2 / denom
    return float(f), max(float(stats.f.sf(f, df1, df2)), floor)


def q_alpha_nemenyi(alpha: float, k: int) -> float:
    """Nemenyi critical value: ``studentized_range.ppf(1 - alpha, k, inf) / sqrt(2)``."""
    return float(stats.studentized_range.ppf(1.0 - alpha, k, np.inf) / np.sqrt(2.0))


def critical_difference(k: int, n_datasets: int, alpha: float = 0.10,
                        q_alpha: float | None = None) -> tuple[float, float]:
    """Nemenyi critical difference ``q_alpha sqrt(k (k + 1) / (6 N))``; returns (CD, q_alpha)."""
    q = q_alpha_nemenyi(alpha, k) if q_alpha is None else float(q_alpha)
    return float(q * np.sqrt(k * (k + 1) / (6.0 * n_datasets))), q


#: Post-hoc tests after the Friedman test (see the module docstring).
POSTHOCS = ("nemenyi", "wilcoxon-holm")


def wilcoxon_holm(scores: pd.DataFrame, higher_is_better: bool = True) -> pd.DataFrame:
    """Holm-adjusted pairwise Wilcoxon p-values of a complete score matrix (methods x
    methods, 1 on the diagonal), from ``scikit_posthocs.posthoc_wilcoxon``."""
    import scikit_posthocs as sp

    v = _values(scores, higher_is_better)
    p = sp.posthoc_wilcoxon([v[:, j] for j in range(v.shape[1])], zero_method="zsplit",
                            p_adjust="holm")
    return pd.DataFrame(p.to_numpy(dtype=float), index=scores.columns, columns=scores.columns)


def nemenyi(ranks: pd.DataFrame) -> pd.DataFrame:
    """Pairwise Nemenyi p-values of a rank matrix (:func:`rank_matrix`), from
    ``scikit_posthocs.posthoc_nemenyi_friedman``."""
    import scikit_posthocs as sp

    return sp.posthoc_nemenyi_friedman(ranks)


@dataclass(frozen=True)
class Ranking:
    """Ranks and wins of a complete score matrix (no test)."""

    scores: pd.DataFrame          # datasets x methods, the ranked values
    ranks: pd.DataFrame           # datasets x methods
    mean_ranks: pd.Series
    wins: pd.Series
    alpha: float

    @property
    def n_datasets(self) -> int:
        """Number of datasets N."""
        return self.scores.shape[0]

    @property
    def k(self) -> int:
        """Number of methods k."""
        return self.scores.shape[1]


def ranking(scores: pd.DataFrame, higher_is_better: bool = True, alpha: float = 0.10
            ) -> Ranking:
    """Ranks, mean ranks and wins of a complete score matrix."""
    ranks = rank_matrix(scores, higher_is_better)
    return Ranking(scores=scores, ranks=ranks, mean_ranks=ranks.mean(axis=0).rename("mean_rank"),
                   wins=wins(scores, higher_is_better), alpha=alpha)


@dataclass(frozen=True)
class PairedComparison(Ranking):
    """Two methods: the Wilcoxon signed-rank test (see the module docstring)."""

    r_plus: float                 # rank sum of the datasets where the first method is better
    r_minus: float
    statistic: float              # min(R+, R-)
    p: float

    @property
    def reject(self) -> bool:
        """Whether the test rejects equal performance at ``alpha``."""
        return bool(self.p < self.alpha)


@dataclass(frozen=True)
class RankedComparison(Ranking):
    """k >= 3 methods: Friedman, Iman–Davenport, Nemenyi and CD (see the module docstring)."""

    chi2: float                   # reported (tie-corrected) Friedman chi-square
    chi2_ranks: float             # textbook formula from the mean ranks
    p_chi2: float
    chi2_critical: float          # chi2 quantile at 1 - alpha, k - 1 dof
    f_id: float                   # NaN when all datasets rank the methods alike
    p_f_id: float
    q_alpha: float
    q_alpha_source: str           # "Nemenyi (studentized range)" or "user"
    cd: float
    nemenyi_p: pd.DataFrame
    significant: pd.DataFrame     # True where |R_i - R_j| >= CD
    #: Holm-adjusted pairwise Wilcoxon p-values when the post-hoc test asked is
    #: ``"wilcoxon-holm"`` (None: Nemenyi)
    wilcoxon_holm_p: pd.DataFrame | None = None

    @property
    def reject(self) -> bool:
        """Whether the Friedman test rejects equal performance at ``alpha``."""
        return bool(self.p_chi2 < self.alpha)

    @property
    def asymptotic_ok(self) -> bool:
        """Whether N and k are in the range where Demšar finds the approximation satisfactory."""
        return self.n_datasets > ASYMPTOTIC_N and self.k > ASYMPTOTIC_K


def _check_size(scores: pd.DataFrame, k_ok: bool, what: str) -> None:
    n, k = scores.shape
    if not k_ok:
        raise ValueError(f"{what}, got k = {k}")
    if n < MIN_DATASETS:
        raise ValueError(f"need at least {MIN_DATASETS} datasets, got {n}")


def wilcoxon(scores: pd.DataFrame, higher_is_better: bool = True, alpha: float = 0.10
             ) -> PairedComparison:
    """Wilcoxon signed-rank test of two methods over the datasets.

    Parameters
    ----------
    scores : DataFrame of shape (N datasets, 2 methods)
        No missing values; N >= :data:`MIN_DATASETS`.
    higher_is_better : bool
        True for accuracies and AULC, False for errors and DUR.
    alpha : float
        Significance level.
    """
    _check_size(scores, scores.shape[1] == 2, "the Wilcoxon test compares 2 methods")
    v = _values(scores, higher_is_better)
    d = v[:, 1] - v[:, 0]  # > 0 where the first method is better (values negated if higher)
    base = ranking(scores, higher_is_better, alpha)
    ranks = stats.rankdata(np.abs(d))
    zero = ranks[d == 0].sum() / 2.0
    r_plus, r_minus = ranks[d > 0].sum() + zero, ranks[d < 0].sum() + zero
    res = stats.wilcoxon(d, zero_method="zsplit", alternative="two-sided")
    return PairedComparison(**vars(base), r_plus=float(r_plus), r_minus=float(r_minus),
                            statistic=float(res.statistic), p=float(res.pvalue))


def compare(scores: pd.DataFrame, higher_is_better: bool = True, alpha: float = 0.10,
            q_alpha: float | None = None, posthoc: str = "nemenyi") -> RankedComparison:
    """Ranks, wins, Friedman, Iman–Davenport, Nemenyi and CD for a complete score matrix.

    Parameters
    ----------
    scores : DataFrame of shape (N datasets, k methods)
        No missing values; N >= :data:`MIN_DATASETS` and k >= 3 (two methods:
        :func:`wilcoxon`).
    higher_is_better : bool
        True for accuracies and AULC, False for errors and DUR.
    alpha : float
        Significance level of the Friedman test and of the critical difference.
    q_alpha : float, optional
        Critical value to use instead of the Nemenyi value.
    posthoc : {"nemenyi", "wilcoxon-holm"}
        With ``"wilcoxon-holm"`` the pairwise Wilcoxon-Holm p-values are computed as well
        (:func:`wilcoxon_holm`).
    """
    _check_size(scores, scores.shape[1] >= 3, "the Friedman test needs 3 or more methods "
                "(2 methods: the Wilcoxon test)")
    n, k = scores.shape
    base = ranking(scores, higher_is_better, alpha)
    chi2 = float(stats.friedmanchisquare(*base.ranks.to_numpy().T).statistic)
    f_id, p_f = iman_davenport(chi2, n, k)
    cd, q = critical_difference(k, n, alpha, q_alpha)
    mr = base.mean_ranks.to_numpy()
    sig = pd.DataFrame(np.abs(mr[:, None] - mr[None, :]) >= cd - 1e-12, index=scores.columns,
                       columns=scores.columns)
    return RankedComparison(
        **vars(base), chi2=chi2, chi2_ranks=friedman_chi2_from_ranks(mr, n),
        p_chi2=max(float(stats.chi2.sf(chi2, k - 1)), friedman_p_floor(n, k)),
        chi2_critical=float(stats.chi2.ppf(1.0 - alpha, k - 1)),
        f_id=f_id, p_f_id=p_f, q_alpha=q,
        q_alpha_source="Nemenyi (studentized range)" if q_alpha is None else "user",
        cd=cd, nemenyi_p=nemenyi(base.ranks), significant=sig,
        wilcoxon_holm_p=(wilcoxon_holm(scores, higher_is_better) if posthoc == "wilcoxon-holm"
                         else None),
    )


def significance(scores: pd.DataFrame, higher_is_better: bool = True, alpha: float = 0.10,
                 q_alpha: float | None = None, posthoc: str = "nemenyi"
                 ) -> tuple[Ranking | None, str]:
    """The test that fits a complete score matrix, or None and the reason none does.

    Returns
    -------
    (result, skipped)
        A :class:`PairedComparison` (k = 2), a :class:`RankedComparison` (k >= 3), or a plain
        :class:`Ranking` with ``skipped`` saying why no test was run (fewer than
        :data:`MIN_DATASETS` datasets); None when there is not a single complete dataset.
    """
    n, k = scores.shape
    why = skip_reason(n, k)
    if why:
        return (ranking(scores, higher_is_better, alpha) if n and k else None), why
    if k == 2:
        return wilcoxon(scores, higher_is_better, alpha), ""
    return compare(scores, higher_is_better, alpha, q_alpha, posthoc), ""
