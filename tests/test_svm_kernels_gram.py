"""Kernel Gram matrices of Reitmaier et al. 2016 (alprbf.svm_kernels.gram) against independent
oracles."""

from __future__ import annotations

import functools
import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import cdist, mahalanobis
from sklearn.datasets import make_moons
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.mixture import GaussianMixture
from sklearn.svm import SVC

from alprbf.svm_kernels._graph import apply_qt, band_reduce, laplacian_factor
from alprbf.svm_kernels.gram import (
    COMBINE,
    KERNELS,
    LaplacianDeformation,
    clip_spectrum,
    gmm_gram,
    gram,
    knn_laplacian,
    lap_gram,
    lapsvm_C,
    map_responsibilities,
    mismatch_counts,
    rbf_gram,
    rwm_gram,
    rwm_sq_distances,
    smallest_eigenvalue,
)

SETTINGS = settings(max_examples=30, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def identity_factors(kind: str, J: int, d: int) -> np.ndarray:
    return {"full": np.tile(np.eye(d), (J, 1, 1)), "diag": np.ones((J, d)),
            "spherical": np.ones(J)}[kind]


def fitted_mixture(X: np.ndarray, kind: str, J: int = 3) -> GaussianMixture:
    return GaussianMixture(J, covariance_type=kind, random_state=0, reg_covar=1e-3).fit(X)


def full_covariances(gm: GaussianMixture, d: int) -> np.ndarray:
    cov = gm.covariances_
    if gm.covariance_type == "diag":
        return np.array([np.diag(c) for c in cov])
    if gm.covariance_type == "spherical":
        return np.array([c * np.eye(d) for c in cov])
    return cov


# ------------------------------------------------------------------ RBF and RWM


@SETTINGS
@given(n=st.integers(1, 12), m=st.integers(1, 12), d=st.integers(1, 5), J=st.integers(1, 4),
       kind=st.sampled_from(["full", "diag", "spherical"]), combine=st.sampled_from(COMBINE),
       gamma=st.floats(0.0, 3.0), seed=st.integers(0, 2**16))
def test_rwm_with_identity_covariances_is_rbf(n, m, d, J, kind, combine, gamma, seed):
    rng = np.random.default_rng(seed)
    X, Z = rng.normal(size=(n, d)), rng.normal(size=(m, d))
    RX, RZ = rng.dirichlet(np.ones(J), n), rng.dirichlet(np.ones(J), m)
    P = identity_factors(kind, J, d)
    cross = rwm_gram(X, Z, resp_X=RX, resp_Z=RZ, precisions_cholesky=P, gamma=gamma,
                     combine=combine)
    square = rwm_gram(X, resp_X=RX, precisions_cholesky=P, gamma=gamma, combine=combine)
    np.testing.assert_allclose(cross, rbf_kernel(X, Z, gamma=gamma), rtol=0, atol=1e-12)
    np.testing.assert_allclose(square, rbf_kernel(X, gamma=gamma), rtol=0, atol=1e-12)
    np.testing.assert_allclose(rbf_gram(X, Z, gamma=gamma), rbf_kernel(X, Z, gamma=gamma),
                               rtol=0, atol=1e-12)


@pytest.mark.parametrize("kind", ["full", "diag", "spherical"])
@pytest.mark.parametrize("combine", COMBINE)
def test_rwm_distances_against_scipy_mahalanobis(kind, combine):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 3)) @ rng.normal(size=(3, 3)) + 2.0
    Z = X[:9] + rng.normal(scale=0.5, size=(9, 3))
    gm = fitted_mixture(X, kind)
    RX, RZ = gm.predict_proba(X[:11]), gm.predict_proba(Z)
    inv_cov = np.linalg.inv(full_covariances(gm, 3))
    expected = np.empty((11, 9))
    for a, b in itertools.product(range(11), range(9)):
        w = 0.5 * (RX[a] + RZ[b])
        dist = np.array([mahalanobis(X[a], Z[b], vi) for vi in inv_cov])
        expected[a, b] = (w @ dist) ** 2 if combine == "distance" else w @ dist ** 2
    got = rwm_sq_distances(X[:11], Z, RX, RZ, gm.precisions_cholesky_, combine=combine)
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)
    # the literal reading (sum of distances, then squared) never exceeds the mean of squares
    if combine == "distance":
        other = rwm_sq_distances(X[:11], Z, RX, RZ, gm.precisions_cholesky_, combine="squared")
        assert (got <= other + 1e-12).all()


@SETTINGS
@given(n=st.integers(1, 15), d=st.integers(1, 4), J=st.integers(1, 4),
       gamma=st.floats(0.0, 5.0), combine=st.sampled_from(COMBINE), seed=st.integers(0, 2**16))
def test_rwm_square_gram_symmetric_with_unit_diagonal(n, d, J, gamma, combine, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    R = rng.dirichlet(np.ones(J), n)
    A = rng.normal(size=(J, d, d))
    P = np.linalg.cholesky(np.linalg.inv(A @ A.transpose(0, 2, 1) + np.eye(d)))
    K = rwm_gram(X, resp_X=R, precisions_cholesky=P, gamma=gamma, combine=combine)
    assert np.array_equal(K, K.T)
    assert np.array_equal(np.diag(K), np.ones(n))
    assert ((K >= 0) & (K <= 1)).all()
    cross = rwm_gram(X, X, resp_X=R, resp_Z=R, precisions_cholesky=P, gamma=gamma,
                     combine=combine)
    np.testing.assert_allclose(cross, K, atol=1e-9)


def test_categorical_extension_hand_worked():
    # columns: two continuous, two categorical (codes); every Sigma_j = I
    X = np.array([[0.0, 0.0, 1, 2], [1.0, 0.0, 1, 3], [0.0, 2.0, 0, 3]])
    cat = np.array([False, False, True, True])
    # squared distances 1, 4, 5 and mismatches 1, 2, 1 for the pairs (0,1), (0,2), (1,2)
    gamma, alpha, beta = 0.5, 0.6, 0.3
    expected = np.exp(-gamma * np.array([
        [0.0, alpha * 1 + beta * 1, alpha * 4 + beta * 4],
        [alpha * 1 + beta * 1, 0.0, alpha * 5 + beta * 1],
        [alpha * 4 + beta * 4, alpha * 5 + beta * 1, 0.0]]))
    R = np.array([[0.2, 0.8], [0.5, 0.5], [1.0, 0.0]])
    for K in (rwm_gram(X, resp_X=R, precisions_cholesky=np.ones(2), gamma=gamma,
                       categorical=cat, alpha=alpha, beta=beta),
              rbf_gram(X, gamma=gamma, categorical=cat, alpha=alpha, beta=beta)):
        np.testing.assert_allclose(K, expected, rtol=1e-14)


def test_categorical_extension_against_brute_force_loop():
    rng = np.random.default_rng(2)
    cont = rng.normal(size=(25, 3))
    codes = rng.integers(0, 3, size=(25, 2)).astype(float)
    X = np.column_stack([cont[:, 0], codes[:, 0], cont[:, 1:], codes[:, 1]])
    cat = np.array([False, True, False, False, True])
    gm = fitted_mixture(cont, "full", J=2)
    R = gm.predict_proba(cont)
    inv_cov = np.linalg.inv(gm.covariances_)
    gamma, alpha, beta = 0.7, 0.4, 0.9
    K = rwm_gram(X[:10], X[10:], resp_X=R[:10], resp_Z=R[10:],
                 precisions_cholesky=gm.precisions_cholesky_, gamma=gamma, categorical=cat,
                 alpha=alpha, beta=beta)
    for a, b in itertools.product(range(10), range(15)):
        w = 0.5 * (R[a] + R[10 + b])
        rwm = sum(w[j] * mahalanobis(cont[a], cont[10 + b], inv_cov[j]) for j in range(2))
        mismatches = sum(codes[a, c] != codes[10 + b, c] for c in range(2))
        assert K[a, b] == pytest.approx(np.exp(-gamma * (alpha * rwm ** 2
                                                         + beta * mismatches ** 2)), rel=1e-10)


@SETTINGS
@given(n=st.integers(1, 10), m=st.integers(1, 10), d=st.integers(1, 5),
       seed=st.integers(0, 2**16))
def test_mismatch_counts_brute_force(n, m, d, seed):
    rng = np.random.default_rng(seed)
    X, Z = rng.integers(0, 3, (n, d)), rng.integers(0, 3, (m, d))
    mask = rng.random(d) < 0.5
    expected = [[sum(X[a, c] != Z[b, c] for c in np.flatnonzero(mask)) for b in range(m)]
                for a in range(n)]
    np.testing.assert_array_equal(mismatch_counts(X, Z, mask), expected)


def test_gmm_kernel_is_rwm_with_map_responsibilities():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 2))
    gm = fitted_mixture(X, "full")
    R = gm.predict_proba(X)
    hard = map_responsibilities(R)
    assert np.array_equal(hard.sum(axis=1), np.ones(40))
    assert np.array_equal(hard.argmax(axis=1), R.argmax(axis=1))
    P = gm.precisions_cholesky_
    K = gmm_gram(X[:30], X[30:], resp_X=R[:30], resp_Z=R[30:], precisions_cholesky=P,
                 gamma=0.4)
    np.testing.assert_array_equal(K, rwm_gram(X[:30], X[30:], resp_X=hard[:30],
                                              resp_Z=hard[30:], precisions_cholesky=P,
                                              gamma=0.4))
    # two rows in the same component: exp(-gamma * that component's squared Mahalanobis)
    a, b = np.flatnonzero(hard[:30, 0])[0], np.flatnonzero(hard[30:, 0])[0]
    d2 = mahalanobis(X[a], X[30 + b], np.linalg.inv(gm.covariances_[0])) ** 2
    assert K[a, b] == pytest.approx(np.exp(-0.4 * d2), rel=1e-10)


def test_indefinite_gram_clipping():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(80, 2)) * [3.0, 0.3]
    gm = fitted_mixture(X, "full", J=4)
    R = gm.predict_proba(X)
    raw = rwm_gram(X, resp_X=R, precisions_cholesky=gm.precisions_cholesky_, gamma=2.0)
    clipped = rwm_gram(X, resp_X=R, precisions_cholesky=gm.precisions_cholesky_, gamma=2.0,
                       psd="clip")
    assert smallest_eigenvalue(clipped) >= -1e-10
    assert np.array_equal(clipped, clipped.T)
    np.testing.assert_allclose(clip_spectrum(raw), clipped, atol=1e-12)
    if smallest_eigenvalue(raw) >= 0:
        np.testing.assert_allclose(clipped, raw, atol=1e-12)
    with pytest.raises(ValueError, match="psd"):
        rwm_gram(X, X, resp_X=R, resp_Z=R, precisions_cholesky=gm.precisions_cholesky_,
                 gamma=2.0, psd="clip")


# ------------------------------------------------------------------ graph and band reduction


def test_knn_laplacian_against_brute_force():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(50, 3))
    k = 7
    D = cdist(X, X)
    np.fill_diagonal(D, np.inf)
    W = np.zeros((50, 50))
    for i in range(50):
        W[i, np.argsort(D[i])[:k]] = 1.0
    W = np.maximum(W, W.T)
    L = knn_laplacian(X, n_neighbors=k).toarray()
    np.testing.assert_array_equal(L, np.diag(W.sum(1)) - W)
    heat = knn_laplacian(X, n_neighbors=k, weights="heat", heat_sigma=0.8).toarray()
    Wh = np.where(W > 0, np.exp(-np.where(W > 0, D, 0) ** 2 / (2 * 0.8 ** 2)), 0.0)
    np.testing.assert_allclose(heat, np.diag(Wh.sum(1)) - Wh, atol=1e-14)


@pytest.mark.parametrize("degree", [1, 2, 3])
def test_laplacian_factor_is_exact(degree):
    rng = np.random.default_rng(6)
    X = np.vstack([rng.normal(size=(30, 2)), rng.normal(size=(25, 2)) + 50.0])  # 2 components
    L = knn_laplacian(X, n_neighbors=4)
    B = laplacian_factor(L, degree).toarray()
    Lp = np.linalg.matrix_power(L.toarray(), degree)
    np.testing.assert_allclose(B @ B.T, Lp, atol=1e-10 * np.abs(Lp).max())


@SETTINGS
@given(r=st.integers(1, 40), b=st.integers(1, 12), seed=st.integers(0, 2**16))
def test_band_reduction_is_an_orthogonal_similarity(r, b, seed):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(r, r))
    A = A + A.T
    ab, reflectors = band_reduce(A, b)
    Qt = apply_qt(reflectors, np.eye(r))
    T = np.zeros((r, r))
    for o in range(min(b + 1, r)):
        T[np.arange(o, r), np.arange(r - o)] = ab[o, :r - o]
    T = np.tril(T) + np.tril(T, -1).T
    np.testing.assert_allclose(Qt @ Qt.T, np.eye(r), atol=1e-12)
    np.testing.assert_allclose(Qt.T @ T @ Qt, A, atol=1e-12 * max(1.0, np.abs(A).max()) * r)


# ------------------------------------------------------------------ LAP kernel


def deformed_by_definition(lap, rows_a, rows_b, gamma_I, gamma_A, degree=1):
    """k(a, b) - k_a^T (I + M K)^{-1} M k_b with an explicit inverse."""
    N = lap.n_pool
    M = gamma_I / (gamma_A * N ** 2) * np.linalg.matrix_power(lap.laplacian.toarray(), degree)
    base = lap.base_kernel(rows_a.X, rows_b.X)
    return base - rows_a.K_pool.T @ np.linalg.inv(np.eye(N) + M @ lap.K) @ M @ rows_b.K_pool


@pytest.mark.parametrize(("degree", "bandwidth", "weights"),
                         [(1, 64, "binary"), (1, 1, "heat"), (1, 5, "binary"), (2, 8, "binary"),
                          (3, 3, "heat")])
def test_lap_shortcut_equals_direct_formula_on_a_grid(degree, bandwidth, weights):
    rng = np.random.default_rng(7)
    X = rng.normal(size=(90, 3))
    X[4] = X[5]                                    # a duplicate row: K is singular
    lap = LaplacianDeformation(X, functools.partial(rbf_gram, gamma=0.5), degree=degree,
                               bandwidth=bandwidth, weights=weights)
    labeled = lap.rows(index=np.arange(0, 90, 9))
    outside = lap.rows(X=rng.normal(size=(7, 3)))
    grid = 10.0 ** np.arange(-5, 3, 2)     # Reitmaier et al. 2016's range, every other power
    for gamma_I, gamma_A in itertools.product(grid, grid):
        for a, b in ((labeled, labeled), (outside, labeled)):
            expected = deformed_by_definition(lap, a, b, gamma_I, gamma_A, degree)
            shortcut = lap.gram(a, None if a is b else b, gamma_I=gamma_I, gamma_A=gamma_A)
            direct = lap.gram_direct(a, b, gamma_I=gamma_I, gamma_A=gamma_A)
            # base kernel values are in [0, 1]; I + M K reaches condition ~1e8 at p = 3
            np.testing.assert_allclose(shortcut, expected, rtol=0, atol=1e-8)
            np.testing.assert_allclose(direct, expected, rtol=0, atol=1e-8)
    # arrays of rows work like their projections; gamma_I = 0 is the base kernel
    np.testing.assert_allclose(lap.gram(labeled.X, outside.X, gamma_I=1.0, gamma_A=1e-3),
                               lap.gram(labeled, outside, gamma_I=1.0, gamma_A=1e-3), atol=1e-12)
    np.testing.assert_array_equal(lap.gram(labeled, gamma_I=0.0, gamma_A=1.0),
                                  lap.K[np.ix_(labeled.index, labeled.index)])


@SETTINGS
@given(N=st.integers(3, 40), d=st.integers(1, 4), k=st.integers(1, 6), bandwidth=st.integers(1, 9),
       degree=st.integers(1, 2), log_c=st.floats(-4.0, 1.0), seed=st.integers(0, 2**16))
def test_lap_shortcut_equals_direct_property(N, d, k, bandwidth, degree, log_c, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, d))
    lap = LaplacianDeformation(X, functools.partial(rbf_gram, gamma=1.0),
                               n_neighbors=min(k, N - 1), bandwidth=bandwidth, degree=degree)
    a = lap.rows(index=rng.choice(N, size=min(N, 5), replace=False))
    b = lap.rows(X=rng.normal(size=(3, d)))
    gamma_I, gamma_A = 10.0 ** log_c * N ** 2, 1.0          # c = 10^log_c
    expected = deformed_by_definition(lap, a, b, gamma_I, gamma_A, degree)
    np.testing.assert_allclose(lap.gram(a, b, gamma_I=gamma_I, gamma_A=gamma_A), expected,
                               rtol=0, atol=1e-9)
    square = lap.gram(a, gamma_I=gamma_I, gamma_A=gamma_A)
    assert np.array_equal(square, square.T)
    np.testing.assert_allclose(square, deformed_by_definition(lap, a, a, gamma_I, gamma_A, degree),
                               rtol=0, atol=1e-9)


def test_lap_shortcut_with_an_indefinite_base_kernel():
    rng = np.random.default_rng(11)
    X = rng.normal(size=(40, 2))

    def indefinite(A, B):                       # RBF minus a linear kernel: not PSD
        return rbf_gram(A, B, gamma=0.5) - 0.5 * A[:, :1] @ B[:, :1].T

    lap = LaplacianDeformation(X, indefinite, n_neighbors=5, bandwidth=4)
    assert smallest_eigenvalue(lap.K) < 0
    a = lap.rows(index=np.arange(0, 40, 3))
    for gamma_I in (1e1, 1e3, 1e5):             # 1e3, 1e5: I + c A indefinite (banded LU)
        expected = deformed_by_definition(lap, a, a, gamma_I, 1.0)
        np.testing.assert_allclose(lap.gram(a, gamma_I=gamma_I, gamma_A=1.0), expected,
                                   rtol=0, atol=1e-9)
    # a pool smaller than the band width (the default 64): the LU band is trimmed to the matrix
    small = LaplacianDeformation(X[:12], indefinite, n_neighbors=3)
    a = small.rows(index=np.arange(0, 12, 2))
    for gamma_I in (1e3, 1e5):
        expected = deformed_by_definition(small, a, a, gamma_I, 1.0)
        np.testing.assert_allclose(small.gram(a, gamma_I=gamma_I, gamma_A=1.0), expected,
                                   rtol=0, atol=1e-9)


@pytest.mark.parametrize("degree", [1, 2, 3])
@pytest.mark.parametrize("indefinite", [False, True])
def test_lap_many_rows_against_few_map_the_few_back(degree, indefinite):
    """Rows not projected yet (fresh :class:`LapRows` at every grid point) against a few: only
    the few are projected and mapped back to the pool; both orientations equal the
    definition (Cholesky and, with an indefinite base kernel, LU band solves)."""
    rng = np.random.default_rng(12)
    X = rng.normal(size=(60, 2))

    def base(A, B):
        K = rbf_gram(A, B, gamma=0.5)
        return K - 0.5 * A[:, :1] @ B[:, :1].T if indefinite else K

    lap = LaplacianDeformation(X, base, n_neighbors=5, bandwidth=4, degree=degree)
    for gamma_I in (1e-1, 1e1, 1e3, 1e5):
        many = lap.rows(X=rng.normal(size=(25, 2)))
        few = lap.rows(index=np.arange(0, 60, 12))
        expected = deformed_by_definition(lap, many, few, gamma_I, 1.0, degree)
        got = lap.gram(many, few, gamma_I=gamma_I, gamma_A=1.0)
        assert many.G is None and few.G is not None         # only the few were projected
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-8)
        few = lap.rows(index=np.arange(0, 60, 12))
        got_t = lap.gram(few, lap.rows(X=many.X), gamma_I=gamma_I, gamma_A=1.0)
        np.testing.assert_allclose(got_t, expected.T, rtol=0, atol=1e-8)


def lapsvm_by_definition(K, L, labeled, y, gamma_A, gamma_I):
    """LapSVM (Belkin, Niyogi & Sindhwani 2006, hinge loss, with bias) solved from its dual.

    alpha = (2 gamma_A I + 2 gamma_I / N^2 L K)^{-1} J^T Y beta and
    beta = argmax 1^T beta - beta^T Q beta / 2, 0 <= beta <= 1/l, y^T beta = 0, with
    Q = Y J K (2 gamma_A I + 2 gamma_I / N^2 L K)^{-1} J^T Y. The dual is a 6-variable QP solved
    exactly: every split into zero / free / bounded variables, the KKT conditions checked.
    Returns (alpha over the N pool rows, b).
    """
    N, l = K.shape[0], len(labeled)
    J = np.zeros((l, N))
    J[np.arange(l), labeled] = 1.0
    Y = np.diag(y)
    T = np.linalg.solve(2 * gamma_A * np.eye(N) + 2 * gamma_I / N ** 2 * L @ K, J.T @ Y)
    Q = Y @ J @ K @ T
    Q = 0.5 * (Q + Q.T)
    C = 1.0 / l
    for split in itertools.product((0, 1, 2), repeat=l):
        split = np.array(split)
        F, U = split == 1, split == 2
        if not F.any():
            continue
        beta = np.where(U, C, 0.0)
        kkt = np.block([[Q[np.ix_(F, F)], y[F, None]], [y[None, F], np.zeros((1, 1))]])
        rhs = np.r_[1.0 - Q[np.ix_(F, U)] @ beta[U], -y[U] @ beta[U]]
        sol = np.linalg.lstsq(kkt, rhs, rcond=None)[0]
        beta[F], b = sol[:-1], sol[-1]
        grad = 1.0 - Q @ beta - b * y
        tol = 1e-10
        if ((beta[F] > tol) & (beta[F] < C - tol)).all() and (grad[split == 0] <= tol).all() \
                and (grad[U] >= -tol).all() and abs(y @ beta) < tol:
            return T @ beta, b, F
    raise AssertionError("no KKT point found")


def test_svc_on_lap_kernel_is_lapsvm():
    X, y01 = make_moons(40, noise=0.15, random_state=0)
    y = 2.0 * y01 - 1.0
    labeled = np.r_[np.flatnonzero(y01 == 0)[:3], np.flatnonzero(y01 == 1)[:3]]
    X_test = make_moons(15, noise=0.15, random_state=1)[0]
    gamma_A, gamma_I = 0.05, 1.0
    lap = LaplacianDeformation(X, functools.partial(rbf_gram, gamma=1.0), n_neighbors=7)
    alpha, b, free = lapsvm_by_definition(lap.K, lap.laplacian.toarray(), labeled, y[labeled],
                                          gamma_A, gamma_I)
    assert free.any()                                           # the bias is determined
    rows = lap.rows(index=labeled)
    svc = SVC(kernel="precomputed", C=lapsvm_C(gamma_A, len(labeled)), tol=1e-12,
              shrinking=False).fit(lap.gram(rows, gamma_I=gamma_I, gamma_A=gamma_A), y[labeled])
    for Xe in (X, X_test):
        expected = rbf_gram(Xe, X, gamma=1.0) @ alpha + b
        deformed = lap.gram(lap.rows(X=Xe), rows, gamma_I=gamma_I, gamma_A=gamma_A)
        np.testing.assert_allclose(svc.decision_function(deformed), expected, atol=1e-6)
    assert lapsvm_C(gamma_A, 6) == pytest.approx(1 / (2 * 0.05 * 6))


# ------------------------------------------------------------------ edge cases, registry, errors


def edge_case_data():
    rng = np.random.default_rng(8)
    dup = rng.normal(size=(20, 3))
    dup[1] = dup[0]
    dup[7] = dup[0]
    const = rng.normal(size=(20, 3))
    const[:, 1] = 4.0
    wide = rng.normal(size=(12, 30))                 # d > n
    return {"duplicates": dup, "constant": const, "wide": wide}


@pytest.mark.parametrize("case", ["duplicates", "constant", "wide"])
def test_gram_matrices_finite_on_edge_cases(case):
    X = edge_case_data()[case]
    n, d = X.shape
    gm = GaussianMixture(2, covariance_type="diag", reg_covar=1e-6, random_state=0).fit(X)
    R = gm.predict_proba(X)
    common = {"resp_X": R, "precisions_cholesky": gm.precisions_cholesky_, "gamma": 0.2}
    lap = LaplacianDeformation(X, functools.partial(rbf_gram, gamma=0.2), n_neighbors=3)
    plain = (rbf_gram(X, gamma=0.2), rwm_gram(X, **common), gmm_gram(X, **common))
    for K in plain:
        np.testing.assert_array_equal(np.diag(K), np.ones(n))
    others = (rwm_gram(X, **common, combine="squared", psd="clip"),
              lap.gram(lap.rows(index=np.arange(n)), gamma_I=10.0, gamma_A=1e-4))
    for K in plain + others:
        assert K.shape == (n, n)
        assert np.isfinite(K).all()


def test_registry_selects_by_name():
    rng = np.random.default_rng(9)
    X, Z = rng.normal(size=(10, 2)), rng.normal(size=(4, 2))
    R, RZ = rng.dirichlet([1, 1], 10), rng.dirichlet([1, 1], 4)
    P = np.ones(2)
    assert set(KERNELS) == {"rbf", "rwm", "gmm", "lap"}
    np.testing.assert_array_equal(gram("rbf", X, Z, gamma=0.3), rbf_gram(X, Z, gamma=0.3))
    for kind, fn in (("rwm", rwm_gram), ("gmm", gmm_gram)):
        np.testing.assert_array_equal(
            gram(kind, X, Z, resp_X=R, resp_Z=RZ, precisions_cholesky=P, gamma=0.3),
            fn(X, Z, resp_X=R, resp_Z=RZ, precisions_cholesky=P, gamma=0.3))
    lap = LaplacianDeformation(X, functools.partial(rbf_gram, gamma=0.3), n_neighbors=3)
    np.testing.assert_array_equal(
        gram("lap", X, Z, deformation=lap, gamma_I=1.0, gamma_A=0.1),
        lap_gram(X, Z, deformation=lap, gamma_I=1.0, gamma_A=0.1))


def test_invalid_parameters_raise_one_line_errors():
    rng = np.random.default_rng(10)
    X = rng.normal(size=(10, 2))
    R = rng.dirichlet([1, 1], 10)
    P = np.ones(2)
    cases = [
        (lambda: rbf_gram(X, gamma=-1.0), "gamma"),
        (lambda: rwm_gram(X, resp_X=R, precisions_cholesky=P, gamma=-0.1), "gamma"),
        (lambda: gram("poly", X, gamma=1.0), "kind"),
        (lambda: gram("rwn", X, gamma=1.0), "did you mean 'rwm'"),
        (lambda: rbf_gram(X, gamma=1.0, categorical=[True, False], alpha=0.0, beta=0.0),
         "alpha"),
        (lambda: rbf_gram(X, gamma=1.0, alpha=-0.5), "alpha"),
        (lambda: rwm_gram(X, resp_X=R, precisions_cholesky=P, gamma=1.0, combine="sum"),
         "combine"),
        (lambda: rwm_gram(X, resp_X=R, precisions_cholesky=P, gamma=1.0, psd="shift"), "psd"),
        (lambda: rwm_gram(X, resp_X=R[:, :1], precisions_cholesky=P, gamma=1.0), "resp_X"),
        (lambda: rwm_gram(X, resp_X=R, precisions_cholesky=np.ones((2, 3)), gamma=1.0),
         "precisions_cholesky"),
        (lambda: gmm_gram(X, resp_X=np.full((10, 2), np.nan), precisions_cholesky=P,
                          gamma=1.0), "gmm_gram: invalid resp_X"),
        (lambda: knn_laplacian(X, n_neighbors=10), r"n_neighbors=10.*\[1, 9\]"),
        (lambda: knn_laplacian(X, weights="cosine"), "weights"),
        (lambda: LaplacianDeformation(X, functools.partial(rbf_gram, gamma=1.0),
                                      n_neighbors=10), "n_neighbors"),
        (lambda: lapsvm_C(0.0, 5), "gamma_A"),
    ]
    lap = LaplacianDeformation(X, functools.partial(rbf_gram, gamma=1.0), n_neighbors=3)
    cases += [(lambda: lap.gram(X, gamma_I=1.0, gamma_A=0.0), "gamma_A"),
              (lambda: lap.gram(X, gamma_I=-1.0, gamma_A=1.0), "gamma_I"),
              (lambda: lap.rows(index=[10]), "index"),
              (lambda: lap_gram(X, deformation=None, gamma_I=1.0, gamma_A=1.0), "deformation")]
    for call, pattern in cases:
        with pytest.raises(ValueError, match=pattern) as info:
            call()
        assert "\n" not in str(info.value)
