"""Comparing methods over several datasets: ranks, wins, Friedman, Iman–Davenport, Nemenyi.

The input is a *score matrix*: a DataFrame with one row per dataset (block) and one column per
method, holding one number per cell (e.g. the RP accuracy, an AULC, or a DUR).
``higher_is_better`` says which direction wins.

Definitions (Demšar 2006, as used by seed 003 §5.1.4)
-----------------------------------------------------
Ranks.  Within each dataset the best method gets rank 1 and the worst rank k; tied methods
share the average of the ranks they span (``scipy.stats.rankdata(method="average")``).  Values
are rounded to :data:`TIE_DECIMALS` decimals before ranking so that floating round-off does not
break ties.  Mean rank ``R_j`` = average over the N datasets; ``sum_j R_j = k (k + 1) / 2``.

Wins.  On each dataset the method(s) with the best value win; a tie for best between m methods
gives each 1/m, so the wins sum to N (seed 003: "shared" wins, e.g. 4.5).

Friedman.  Two statistics are computed:

* ``chi2`` (the one reported): ``scipy.stats.friedmanchisquare`` on the ranks, which divides
  the textbook statistic by the tie correction ``1 - sum(t^3 - t) / (N k (k^2 - 1))`` (t: sizes
  of tie groups); it equals the textbook value when there are no ties.  For k = 2, where scipy
  refuses, the same formula is evaluated here.
* ``chi2_ranks``: the textbook formula from the mean ranks,
  ``12 N / (k (k + 1)) * (sum_j R_j^2 - k (k + 1)^2 / 4)``, without tie correction (Demšar's
  eq.; seed 003 applies it to its mean ranks: 19.73 for its Table 2).

Both have k - 1 degrees of freedom.  Iman–Davenport:
``F = (N - 1) chi2 / (N (k - 1) - chi2)`` with (k - 1, (k - 1)(N - 1)) degrees of freedom,
from the reported ``chi2`` (infinite when all datasets rank the methods identically).

Nemenyi and the critical difference.  Pairwise p-values from
``scikit_posthocs.posthoc_nemenyi_friedman`` on the rank matrix.  Two methods differ
significantly when their mean ranks differ by at least ``CD = q_alpha sqrt(k (k + 1) / (6 N))``
with ``q_alpha = studentized_range.ppf(1 - alpha, k, inf) / sqrt(2)`` (Demšar's table:
2.459 for k = 5, alpha = 0.10).  A ``q_alpha`` supplied by the user replaces it.

Seed 003 reports CD = 2.516 * sqrt(5 * 6 / (6 * 20)) = 1.258 for k = 5, N = 20, alpha = 0.10.
Its q = 2.516 is not the Nemenyi value for k = 5 at alpha = 0.10 (2.459, giving CD = 1.230);
we use the standard value by default and accept ``q_alpha=2.516`` to reproduce the paper.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

#: Decimals kept before ranking and before looking for ties.
TIE_DECIMALS = 9


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


def friedman_chi2_from_ranks(mean_rank: np.ndarray, n_datasets: int) -> float:
    """Textbook Friedman statistic from mean ranks (no tie correction)."""
    r = np.asarray(mean_rank, dtype=float)
    k = r.size
    return float(12.0 * n_datasets / (k * (k + 1)) * (np.sum(r ** 2) - k * (k + 1) ** 2 / 4.0))


def _friedman_tie_corrected(ranks: np.ndarray) -> float:
    """scipy's tie-corrected Friedman statistic, for any k >= 2 (ranks: N x k)."""
    n, k = ranks.shape
    ties = 0.0
    for row in ranks:
        _, t = np.unique(row, return_counts=True)
        ties += float(np.sum(t ** 3 - t))
    c = 1.0 - ties / (k * (k * k - 1) * n)
    chi2 = 12.0 / (n * k * (k + 1)) * np.sum(ranks.sum(axis=0) ** 2) - 3.0 * n * (k + 1)
    return float(chi2 / c) if c > 0 else 0.0


def iman_davenport(chi2: float, n_datasets: int, k: int) -> tuple[float, float]:
    """Iman–Davenport F and its p-value from a Friedman chi-square."""
    df1, df2 = k - 1, (k - 1) * (n_datasets - 1)
    denom = n_datasets * (k - 1) - chi2
    if denom <= 1e-12:
        return float("inf"), 0.0
    f = (n_datasets - 1) * chi2 / denom
    return float(f), float(stats.f.sf(f, df1, df2))


def q_alpha_nemenyi(alpha: float, k: int) -> float:
    """Nemenyi critical value: ``studentized_range.ppf(1 - alpha, k, inf) / sqrt(2)``."""
    return float(stats.studentized_range.ppf(1.0 - alpha, k, np.inf) / np.sqrt(2.0))


def critical_difference(k: int, n_datasets: int, alpha: float = 0.10,
                        q_alpha: float | None = None) -> tuple[float, float]:
    """Nemenyi critical difference ``q_alpha sqrt(k (k + 1) / (6 N))``; returns (CD, q_alpha)."""
    q = q_alpha_nemenyi(alpha, k) if q_alpha is None else float(q_alpha)
    return float(q * np.sqrt(k * (k + 1) / (6.0 * n_datasets))), q


def nemenyi(scores: pd.DataFrame, higher_is_better: bool = True) -> pd.DataFrame:
    """Pairwise Nemenyi p-values (``scikit_posthocs.posthoc_nemenyi_friedman`` on the ranks)."""
    import scikit_posthocs as sp

    return sp.posthoc_nemenyi_friedman(rank_matrix(scores, higher_is_better))


@dataclass(frozen=True)
class RankedComparison:
    """Everything the RP table and the CD diagram show (see the module docstring)."""

    scores: pd.DataFrame          # datasets x methods, the ranked values
    ranks: pd.DataFrame           # datasets x methods
    mean_ranks: pd.Series
    wins: pd.Series
    n_datasets: int
    k: int
    alpha: float
    chi2: float                   # reported (tie-corrected) Friedman chi-square
    chi2_ranks: float             # textbook formula from the mean ranks
    p_chi2: float
    chi2_critical: float          # chi2 quantile at 1 - alpha, k - 1 dof
    f_id: float
    p_f_id: float
    q_alpha: float
    q_alpha_source: str           # "Nemenyi (studentized range)" or "user"
    cd: float
    nemenyi_p: pd.DataFrame
    significant: pd.DataFrame     # True where |R_i - R_j| >= CD

    @property
    def reject(self) -> bool:
        """Whether the Friedman test rejects equal performance at ``alpha``."""
        return bool(self.p_chi2 < self.alpha)


def compare(scores: pd.DataFrame, higher_is_better: bool = True, alpha: float = 0.10,
            q_alpha: float | None = None) -> RankedComparison:
    """Ranks, wins, Friedman, Iman–Davenport, Nemenyi and CD for a complete score matrix.

    Parameters
    ----------
    scores : DataFrame of shape (N datasets, k methods)
        No missing values; N >= 2 and k >= 2.
    higher_is_better : bool
        True for accuracies and AULC, False for errors and DUR.
    alpha : float
        Significance level of the Friedman test and of the critical difference.
    q_alpha : float, optional
        Critical value to use instead of the Nemenyi value.
    """
    n, k = scores.shape
    if n < 2 or k < 2:
        raise ValueError(f"need at least 2 datasets and 2 methods, got {n} and {k}")
    ranks = rank_matrix(scores, higher_is_better)
    mr = ranks.mean(axis=0).rename("mean_rank")
    if k >= 3:
        chi2 = float(stats.friedmanchisquare(*ranks.to_numpy().T).statistic)
    else:
        chi2 = _friedman_tie_corrected(ranks.to_numpy())
    f_id, p_f = iman_davenport(chi2, n, k)
    cd, q = critical_difference(k, n, alpha, q_alpha)
    diff = np.abs(mr.to_numpy()[:, None] - mr.to_numpy()[None, :])
    sig = pd.DataFrame(diff >= cd - 1e-12, index=scores.columns, columns=scores.columns)
    return RankedComparison(
        scores=scores, ranks=ranks, mean_ranks=mr, wins=wins(scores, higher_is_better),
        n_datasets=n, k=k, alpha=alpha, chi2=chi2,
        chi2_ranks=friedman_chi2_from_ranks(mr.to_numpy(), n),
        p_chi2=float(stats.chi2.sf(chi2, k - 1)),
        chi2_critical=float(stats.chi2.ppf(1.0 - alpha, k - 1)),
        f_id=f_id, p_f_id=p_f, q_alpha=q,
        q_alpha_source="Nemenyi (studentized range)" if q_alpha is None else "user",
        cd=cd, nemenyi_p=nemenyi(scores, higher_is_better), significant=sig,
    )
