"""Ranks, wins, Friedman, Iman–Davenport, Nemenyi and CD against hand computations."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as ss

from alprbf.report import stats, tables

# 5 datasets x 3 methods, no ties; ranks (1 = highest):
#   d1: 1 2 3   d2: 2 1 3   d3: 1 2 3   d4: 1 3 2   d5: 1 2 3  -> mean ranks 1.2, 2.0, 2.8
SMALL = pd.DataFrame([[0.90, 0.80, 0.70], [0.85, 0.90, 0.60], [0.70, 0.60, 0.50],
                      [0.95, 0.70, 0.80], [0.60, 0.50, 0.40]],
                     index=["d1", "d2", "d3", "d4", "d5"], columns=["a", "b", "c"])


def test_friedman_and_iman_davenport_by_hand():
    c = stats.compare(SMALL, higher_is_better=True, alpha=0.05)
    np.testing.assert_allclose(c.mean_ranks.to_numpy(), [1.2, 2.0, 2.8])
    # chi2 = 12 N / (k (k+1)) (sum R^2 - k (k+1)^2 / 4) = 5 * (13.28 - 12) = 6.4
    assert c.chi2 == pytest.approx(6.4)
    assert c.chi2_ranks == pytest.approx(6.4)  # no ties: both statistics agree
    assert c.p_chi2 == pytest.approx(np.exp(-6.4 / 2))  # chi2 with 2 dof: sf(x) = exp(-x/2)
    # F = (N-1) chi2 / (N (k-1) - chi2) = 4 * 6.4 / (10 - 6.4) = 64 / 9
    assert c.f_id == pytest.approx(64 / 9)
    # F with (2, 8) dof: sf(F) = (1 + 2 F / 8) ** -4
    assert c.p_f_id == pytest.approx((1 + 2 * (64 / 9) / 8) ** -4)
    # CD = q sqrt(k (k+1) / (6 N)) with Demsar's q_0.05(k=3) = 2.343
    assert c.q_alpha == pytest.approx(2.343, abs=1e-3)
    assert c.cd == pytest.approx(c.q_alpha * np.sqrt(3 * 4 / 30))
    assert c.reject  # p = 0.041 < 0.05
    assert not c.asymptotic_ok  # N = 5, k = 3: below Demsar's N > 10, k > 5


@pytest.mark.parametrize(("alpha", "k", "q"), [
    (0.05, 2, 1.960), (0.05, 3, 2.343), (0.05, 4, 2.569), (0.05, 5, 2.728), (0.05, 6, 2.850),
    (0.10, 2, 1.645), (0.10, 3, 2.052), (0.10, 4, 2.291), (0.10, 5, 2.459), (0.10, 6, 2.589)])
def test_q_alpha_matches_demsar_table(alpha, k, q):
    # Demsar (2006) Table 5(a); his values are truncated to three decimals
    assert stats.q_alpha_nemenyi(alpha, k) == pytest.approx(q, abs=1.1e-3)


def test_user_q_alpha_overrides():
    cd, q = stats.critical_difference(5, 20, alpha=0.10, q_alpha=2.516)
    assert q == 2.516
    assert cd == pytest.approx(2.516 * np.sqrt(30 / 120))


def test_ranks_with_ties_are_averaged():
    s = pd.DataFrame([[0.9, 0.9, 0.7, 0.9], [0.5, 0.6, 0.6, 0.4]], columns=list("abcd"))
    r = stats.rank_matrix(s)
    np.testing.assert_allclose(r.to_numpy(), [[2, 2, 4, 2], [3, 1.5, 1.5, 4]])
    # lower is better flips the order
    r_low = stats.rank_matrix(s, higher_is_better=False)
    np.testing.assert_allclose(r_low.to_numpy(), [[3, 3, 1, 3], [2, 3.5, 3.5, 1]])


def test_round_off_does_not_break_ties():
    s = pd.DataFrame([[0.1 + 0.2, 0.3, 0.2]], columns=list("abc"))  # 0.30000000000000004
    np.testing.assert_allclose(stats.rank_matrix(s).to_numpy(), [[1.5, 1.5, 3]])
    np.testing.assert_allclose(stats.wins(s).to_numpy(), [0.5, 0.5, 0.0])


def test_wins_are_shared_on_ties():
    s = pd.DataFrame([[0.9, 0.9, 0.7, 0.9],    # three-way tie for best: 1/3 each
                      [0.5, 0.6, 0.6, 0.4],    # two-way: 1/2 each
                      [0.1, 0.2, 0.3, 0.4]],   # d wins alone
                     columns=list("abcd"))
    np.testing.assert_allclose(stats.wins(s).to_numpy(), [1 / 3, 1 / 3 + 1 / 2, 1 / 2,
                                                          1 / 3 + 1])
    # for errors the lowest wins: c, d and a
    np.testing.assert_allclose(stats.wins(s, higher_is_better=False).to_numpy(), [1, 0, 1, 1])


def test_two_methods_get_the_wilcoxon_test_by_hand():
    # differences a - b: 0.1, 0.05, 0.3, 0.5, -0.12 -> ranks of |d|: 2, 1, 4, 5, 3
    s = pd.DataFrame([[0.9, 0.8], [0.7, 0.65], [0.5, 0.2], [0.6, 0.1], [0.3, 0.42]],
                     columns=["a", "b"])
    c = stats.wilcoxon(s)
    assert (c.r_plus, c.r_minus, c.statistic) == (12.0, 3.0, 3.0)
    # exact: 5 of the 32 sign patterns have a rank sum <= 3, two-sided 10 / 32
    assert c.p == pytest.approx(10 / 32)
    assert c.p == pytest.approx(ss.wilcoxon(s["a"] - s["b"]).pvalue)
    assert not c.reject
    # errors (lower is better) swap the sides
    low = stats.wilcoxon(s, higher_is_better=False)
    assert (low.r_plus, low.r_minus, low.p) == (3.0, 12.0, c.p)
    # ties on every dataset: no evidence either way; zsplit halves the rank sum 15
    same = stats.wilcoxon(pd.DataFrame({"a": [0.5] * 5, "b": [0.5] * 5}))
    assert same.p == 1.0 and (same.r_plus, same.r_minus, same.statistic) == (7.5, 7.5, 7.5)
    with pytest.raises(ValueError, match="Wilcoxon"):
        stats.compare(s)


def test_significance_picks_the_test_or_says_why_none():
    pair, why = stats.significance(SMALL[["a", "b"]])
    assert isinstance(pair, stats.PairedComparison) and why == ""
    many, why = stats.significance(SMALL)
    assert isinstance(many, stats.RankedComparison) and why == ""
    few, why = stats.significance(SMALL.iloc[:4])
    assert type(few) is stats.Ranking and "at least 5 datasets" in why and "found 4" in why
    np.testing.assert_allclose(few.mean_ranks.to_numpy(), [1.25, 2.0, 2.75])
    assert stats.significance(SMALL.iloc[:0])[0] is None


def test_perfect_agreement_gives_no_infinite_f_and_no_zero_p():
    s = pd.DataFrame([[3.0, 2.0, 1.0]] * 5, columns=list("abc"))
    c = stats.compare(s)
    assert c.chi2 == pytest.approx(10.0)  # N (k - 1), the maximum
    assert np.isnan(c.f_id)
    # the exact p-value of the most extreme outcome: all 5 datasets rank 3 methods alike
    assert c.p_f_id == pytest.approx(6.0 ** -4) == stats.friedman_p_floor(5, 3)
    assert c.p_chi2 == pytest.approx(np.exp(-5.0))  # above the floor: unchanged
    shown = dict(tables._friedman_rows(c)[0][i][::2] for i in range(10))
    assert shown["Iman-Davenport F (2, 8 dof)"].startswith("n/a")
    assert shown["Iman-Davenport p-value"] == "0.0008"


def test_p_values_are_never_printed_as_zero():
    assert tables.fmt_p(0.0) == "< 1e-16"
    assert tables.fmt_p(1e-300) == "< 1e-16"
    assert tables.fmt_p(3e-5) == "3.00e-05"
    assert tables.fmt(float("inf")) == "n/a"


def test_compare_rejects_too_small_tables():
    with pytest.raises(ValueError, match="at least 5 datasets"):
        stats.compare(SMALL.iloc[:4])
    with pytest.raises(ValueError, match="missing"):
        stats.rank_matrix(SMALL.where(SMALL > 0.6))


def test_nemenyi_p_values_agree_with_the_cd_rule():
    rng = np.random.default_rng(3)
    s = pd.DataFrame(rng.normal(size=(15, 5)) + np.arange(5) * 0.8, columns=list("abcde"))
    for alpha in (0.05, 0.10):
        c = stats.compare(s, alpha=alpha)
        p = c.nemenyi_p.to_numpy()
        off = ~np.eye(5, dtype=bool)
        np.testing.assert_array_equal((p < alpha)[off], c.significant.to_numpy()[off])
        assert (c.significant.to_numpy()[off]).any()  # the test must be able to fail


score_tables = st.integers(2, 7).flatmap(lambda k: st.integers(2, 12).flatmap(
    lambda n: st.lists(st.lists(st.integers(0, 4), min_size=k, max_size=k),
                       min_size=n, max_size=n)))


@settings(max_examples=60, deadline=None)
@given(score_tables)
def test_rank_and_win_invariants(rows):
    s = pd.DataFrame(np.asarray(rows, dtype=float) / 4)  # small integer grid: many ties
    n, k = s.shape
    mr = stats.mean_ranks(s)
    assert mr.sum() == pytest.approx(k * (k + 1) / 2)
    assert stats.wins(s).sum() == pytest.approx(n)
    assert stats.wins(s).min() >= 0
    # reversing the direction mirrors the ranks
    np.testing.assert_allclose(stats.mean_ranks(s, False).to_numpy(), k + 1 - mr.to_numpy())
    # without ties scipy's statistic is the textbook formula from the mean ranks
    if k >= 3 and all(len(set(r)) == k for r in rows):
        chi2 = ss.friedmanchisquare(*stats.rank_matrix(s).to_numpy().T).statistic
        assert chi2 == pytest.approx(stats.friedman_chi2_from_ranks(mr.to_numpy(), n))
