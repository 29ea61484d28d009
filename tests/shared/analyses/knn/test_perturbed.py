"""The per-coordinate protocol: with the noise off it is scikit-learn's kNN; its exact ε."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.neighbors import KNeighborsClassifier

from ldp_shared.analyses.knn import CoordinateProtocol
from ldp_shared.errors import ConfigurationError, InvalidQueryError
from ldp_shared.rand import seeded_rng


@pytest.mark.parametrize("k", [1, 7, 25])
def test_noise_off_equals_scikit_learn(k: int) -> None:
    rng = seeded_rng(3)
    t = rng.uniform(-1, 1, (400, 4))
    y = (t[:, 0] * t[:, 1] > 0).astype(np.int64)
    q = rng.uniform(-1, 1, (60, 4))
    proto = CoordinateProtocol(4, 2, 1.0, noiseless=True)
    pairs, labels = proto.report(t, y, rng)
    scores = proto.scores(proto.decode(pairs, labels, t), q, k=k)
    knn = KNeighborsClassifier(n_neighbors=k, algorithm="brute").fit(t, y)
    _, idx = knn.kneighbors(q)
    votes = np.stack([(y[idx] == c).sum(axis=1) for c in range(2)], axis=1)
    assert np.array_equal(scores.scores, votes)
    assert (scores.stderr == 0).all()
    assert np.array_equal(scores.predicted, knn.predict(q))


@pytest.mark.parametrize("epsilon", [0.5, 2.0, 5.0, 10.0])
def test_exact_epsilon_composes_features_and_label(epsilon: float) -> None:
    proto = CoordinateProtocol(6, 3, epsilon, label_share=0.25)
    features = proto.features.exact_epsilon
    assert features <= 0.75 * epsilon * (1 + 1e-9)
    assert math.log(proto.label.p / proto.label.q) == pytest.approx(0.25 * epsilon)
    assert proto.exact_epsilon == pytest.approx(features + 0.25 * epsilon, rel=1e-12)
    assert proto.exact_epsilon <= epsilon * (1 + 1e-9)


def test_decoded_reports_estimate_the_point_and_its_square_norm() -> None:
    t = np.tile([[0.5, -0.25, 0.0]], (200_000, 1))
    proto = CoordinateProtocol(3, 2, 4.0)
    rng = seeded_rng(9)
    stored = proto.decode(*proto.report(t, np.zeros(len(t), dtype=np.int64), rng))
    assert np.allclose(stored.vectors.mean(axis=0), t[0], atol=0.02)
    assert float(stored.squares.mean()) == pytest.approx(0.3125, abs=0.03)


def test_refusals() -> None:
    with pytest.raises(ConfigurationError):
        CoordinateProtocol(3, 2, 1.0, label_share=1.0)
    with pytest.raises(ConfigurationError):
        CoordinateProtocol(3, 2, 1.0, mechanism="laplace")
    proto = CoordinateProtocol(3, 2, 1.0)
    t = np.zeros((5, 3))
    stored = proto.decode(*proto.report(t, np.zeros(5, dtype=np.int64), seeded_rng(1)))
    with pytest.raises(InvalidQueryError):
        proto.scores(stored, t, k=0)
