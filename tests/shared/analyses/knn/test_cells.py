"""The cell protocol: with the noise off it is the LSH-ball classifier of the true records
(recomputed here by brute force), its exact ε, and its refusals."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldp_shared.analyses.knn import CellProtocol, choose_oracle
from ldp_shared.analyses.knn import cells as cells_module
from ldp_shared.errors import ConfigurationError, InvalidQueryError, InvalidRecordError
from ldp_shared.rand import seeded_rng


def data(n: int = 300, m: int = 3) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = seeded_rng(5)
    z = rng.standard_normal((n, m))
    y = (z[:, 0] + 0.5 * z[:, 1] > 0.2).astype(np.int64) + (z[:, 2] > 1.0)
    return z, y, rng.standard_normal((40, m))


def brute_force(
    proto: CellProtocol, z: np.ndarray, y: np.ndarray, table: np.ndarray, q: np.ndarray, k: int
) -> np.ndarray:
    """The non-private classifier, one query, table and record at a time."""
    n = len(y)
    out = np.zeros((len(q), proto.classes))
    for i, u in enumerate(q):
        used = 0
        for tau in range(proto.tables):
            members = np.flatnonzero(table == tau)
            if members.size == 0:
                continue
            used += 1
            bits_u = [
                float(proto.normals[tau, b] @ u) >= proto.thresholds[tau, b]
                for b in range(proto.bits)
            ]
            dist = []
            for j in members:
                bits_j = [
                    float(proto.normals[tau, b] @ z[j]) >= proto.thresholds[tau, b]
                    for b in range(proto.bits)
                ]
                dist.append(sum(a != b for a, b in zip(bits_u, bits_j, strict=True)))
            dist_arr = np.array(dist)
            scale = n / members.size
            for r in range(proto.bits + 1):
                inside = members[dist_arr <= r]
                if inside.size * scale >= k or r == proto.bits:
                    break
            votes = np.bincount(y[inside], minlength=proto.classes) * scale
            out[i] += votes * k / max(inside.size * scale, k)
        out[i] /= used
    return out


@pytest.mark.parametrize(("tables", "bits", "k"), [(1, 4, 1), (3, 5, 20), (4, 6, 60)])
def test_noise_off_equals_the_non_private_classifier(tables: int, bits: int, k: int) -> None:
    z, y, q = data()
    proto = CellProtocol(3, 3, 1.0, tables=tables, bits=bits, seed=11, noiseless=True)
    counts = proto.empty_counts()
    table, answers = proto.report(z, y, seeded_rng(2))
    proto.accumulate(counts, table, answers)
    scores = proto.scores(counts, q, k=k)
    expected = brute_force(proto, z, y, table, q, k)
    assert np.allclose(scores.scores, expected)
    assert (scores.stderr == 0).all()
    assert (scores.predicted == np.argmax(expected, axis=1)).all()


def test_fixed_radius_counts_the_ball() -> None:
    z, y, q = data()
    proto = CellProtocol(3, 3, 1.0, tables=1, bits=6, noiseless=True)
    counts = proto.empty_counts()
    proto.accumulate(counts, *proto.report(z, y, seeded_rng(2)))
    codes, qcodes = proto.codes(z)[:, 0], proto.codes(q)[:, 0]
    ham = np.array([[bin(int(a) ^ int(b)).count("1") for b in codes] for a in qcodes])
    for r in (0, 2, 6):
        expected = np.stack([((ham <= r) & (y == c)).sum(axis=1) for c in range(3)], axis=1)
        assert np.array_equal(proto.scores(counts, q, radius=r).scores, expected)


def test_public_hyperplanes_depend_on_the_seed_only() -> None:
    a, b = CellProtocol(3, 2, 1.0, seed=4), CellProtocol(3, 2, 5.0, seed=4)
    assert np.array_equal(a.normals, b.normals)
    assert not np.array_equal(a.normals, CellProtocol(3, 2, 1.0, seed=5).normals)


@pytest.mark.parametrize(("epsilon", "bits"), [(0.5, 8), (5.0, 8), (10.0, 8), (4.0, 2)])
def test_exact_epsilon_is_the_oracles(epsilon: float, bits: int) -> None:
    proto = CellProtocol(3, 2, epsilon, bits=bits)
    assert proto.oracle == choose_oracle(proto.domain, epsilon)
    assert proto.exact_epsilon == pytest.approx(epsilon, rel=1e-12)
    if proto.oracle == "grr":
        assert math.log(proto.p / proto.q) == pytest.approx(epsilon, rel=1e-12)
    else:
        odds = proto.p * (1 - proto.q) / ((1 - proto.p) * proto.q)
        assert math.log(odds) == pytest.approx(epsilon, rel=1e-12)
    assert CellProtocol(3, 2, epsilon, noiseless=True).exact_epsilon == math.inf


def test_oracle_boundary() -> None:
    # d < 3e^ε + 2 picks GRR; at equality (ε = ln((d−2)/3)) OUE
    assert choose_oracle(512, math.log(510 / 3) + 1e-9) == "grr"
    assert choose_oracle(512, math.log(510 / 3) - 1e-9) == "oue"


def test_refusals() -> None:
    z, y, q = data()
    proto = CellProtocol(3, 3, 1.0, tables=2, bits=4)
    counts = proto.empty_counts()
    with pytest.raises(InvalidQueryError, match="no reports"):
        proto.scores(counts, q, k=3)
    proto.accumulate(counts, *proto.report(z, y, seeded_rng(1)))
    for k in (0, -1, 2.5, True):
        with pytest.raises(InvalidQueryError, match="k must"):
            proto.scores(counts, q, k=k)  # type: ignore[arg-type]
    with pytest.raises(InvalidQueryError):
        proto.scores(counts, q, k=3, radius=1)
    with pytest.raises(InvalidRecordError):
        proto.report(z, y + 3, seeded_rng(1))
    with pytest.raises(ConfigurationError):
        CellProtocol(3, 2, 1.0, bits=13)
    with pytest.raises(ConfigurationError):
        CellProtocol(3, 2, math.inf)


def test_noise_widens_the_ball_to_the_whole_table() -> None:
    # at ε = 0.1 no ball of 2,000 reports holds 50 standard errors of its population (at
    # the default SNR a ball of pure noise passes now and then, for some query): every
    # query then gets the whole table, i.e. the estimated class totals
    z, y, q = data(2_000)
    proto = CellProtocol(3, 3, 0.1, tables=1, bits=6)
    counts = proto.empty_counts()
    proto.accumulate(counts, *proto.report(z, y, seeded_rng(3)))
    whole = proto.scores(counts, q, radius=6).scores
    near = proto.scores(counts, q, k=1, snr=50.0)
    population = whole.sum(axis=1, keepdims=True)
    assert np.allclose(near.scores, whole / np.maximum(population, 1.0))
    assert (near.predicted == np.argmax(whole[0])).all()
    assert not np.allclose(proto.scores(counts, q, k=1, snr=0.0).scores, near.scores)


def test_large_batches_are_answered_in_blocks_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    z, y, q = data()
    proto = CellProtocol(3, 3, 2.0, tables=2, bits=4)
    counts = proto.empty_counts()
    proto.accumulate(counts, *proto.report(z, y, seeded_rng(6)))
    whole = proto.scores(counts, q, k=10)
    monkeypatch.setattr(cells_module, "QUERY_BLOCK", 7 * proto.domain)
    blocked = proto.scores(counts, q, k=10)
    assert np.array_equal(whole.scores, blocked.scores)
    assert np.array_equal(whole.stderr, blocked.stderr)
