"""Ranks, wins, Friedman, Iman–Davenport, Nemenyi and CD against hand computations."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as ss

from alprbf.report import stats

# 4 datasets x 3 methods, no ties; ranks (1 = highest):
#   d1: 1 2 3   d2: 2 1 3   d3: 1 2 3   d4: 1 3 2   -> mean ranks 1.25, 2.00, 2.75
SMALL = pd.DataFrame([[0.90, 0.80, 0.70], [0.85, 0.90, 0.60], [0.70, 0.60, 0.50],
                      [0.95, 0.70, 0.80]], index=["d1", "d2", "d3", "d4"],
                     columns=["a", "b", "c"])


def test_friedman_and_iman_davenport_by_hand():
    c = stats.compare(SMALL, higher_is_better=True, alpha=0.05)
    np.testing.assert_allclose(c.mean_ranks.to_numpy(), [1.25, 2.0, 2.75])
    # chi2 = 12 N / (k (k+1)) (sum R^2 - k (k+1)^2 / 4) = 4 * (13.125 - 12) = 4.5
    assert c.chi2 == pytest.approx(4.5)
    assert c.chi2_ranks == pytest.approx(4.5)  # no ties: both statistics agree
    assert c.p_chi2 == pytest.approx(np.exp(-4.5 / 2))  # chi2 with 2 dof: sf(x) = exp(-x/2)
    # F = (N-1) chi2 / (N (k-1) - chi2) = 3 * 4.5 / (8 - 4.5) = 27 / 7
    assert c.f_id == pytest.approx(27 / 7)
    # F with (2, 6) dof: sf(F) = (1 + 2 F / 6) ** -3
    assert c.p_f_id == pytest.approx((1 + 2 * (27 / 7) / 6) ** -3)
    # CD = q sqrt(k (k+1) / (6 N)) with Demsar's q_0.05(k=3) = 2.343
    assert c.q_alpha == pytest.approx(2.343, abs=1e-3)
    assert c.cd == pytest.approx(c.q_alpha * np.sqrt(3 * 4 / 24))
    assert not c.reject  # p = 0.105 > 0.05


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


def test_two_methods_friedman_equals_sign_test_statistic():
    # k = 2 without ties: chi2 = (W - L)^2 / N (scipy refuses k = 2; our formula is used)
    s = pd.DataFrame([[0.9, 0.8], [0.7, 0.6], [0.5, 0.4], [0.6, 0.5], [0.3, 0.4]],
                     columns=["a", "b"])
    c = stats.compare(s)
    assert c.chi2 == pytest.approx((4 - 1) ** 2 / 5)
    assert c.p_chi2 == pytest.approx(ss.chi2.sf(1.8, 1))


def test_perfect_agreement_gives_infinite_iman_davenport():
    s = pd.DataFrame([[3.0, 2.0, 1.0]] * 4, columns=list("abc"))
    c = stats.compare(s)
    assert c.chi2 == pytest.approx(8.0)  # N (k - 1), the maximum
    assert c.f_id == np.inf and c.p_f_id == 0.0


def test_compare_rejects_too_small_tables():
    with pytest.raises(ValueError, match="at least 2 datasets"):
        stats.compare(SMALL.iloc[:1])
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
    chi2 = stats._friedman_tie_corrected(stats.rank_matrix(s).to_numpy())
    if k >= 3 and np.ptp(s.to_numpy(), axis=1).all():  # scipy needs a non-degenerate block
        assert chi2 == pytest.approx(ss.friedmanchisquare(*s.to_numpy().T).statistic)
    # without ties the textbook formula from mean ranks is the same statistic
    if all(len(set(r)) == k for r in rows):
        assert chi2 == pytest.approx(stats.friedman_chi2_from_ranks(mr.to_numpy(), n))
