"""Sampled Piecewise/Hybrid gradient mechanisms: exact tests of k, the report's ε (brute
force over the whole report channel, from both sides), the decoder, the segment, bad
input and the registry."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from ldp_shared.errors import ConfigurationError, InvalidQueryError, InvalidRecordError
from ldp_shared.kernel import channel_epsilon
from ldp_shared.mechanisms.base import EPSILON_SLACK
from ldp_shared.mechanisms.gradient_mechanisms import gradient_mechanism_names, gradient_randomizer
from ldp_shared.mechanisms.gradient_sampling import (
    SampledGradient,
    SampledHybrid,
    SampledPiecewise,
    sample_coordinates,
    sample_count,
)
from ldp_shared.mechanisms.lattice import level_values
from ldp_shared.rand import seeded_rng

from ._channel import BELOW

KINDS: list[type[SampledGradient]] = [SampledPiecewise, SampledHybrid]


@pytest.mark.parametrize(
    ("d", "epsilon", "k"),
    [(10, 0.1, 1), (10, 2.49, 1), (10, 2.5, 1), (10, 5.0, 2), (10, 8.0, 3), (2, 8.0, 2), (1, 9, 1)],
)
def test_sample_count_is_wang_et_al_s(d: int, epsilon: float, k: int) -> None:
    assert sample_count(d, epsilon) == k


def test_sampled_coordinates_are_distinct_increasing_and_cover_every_coordinate() -> None:
    rng = seeded_rng(1)
    for d, k in [(5, 1), (5, 3), (5, 5), (40, 7)]:
        coords = sample_coordinates(4000, d, k, rng)
        assert coords.shape == (4000, k)
        assert coords.min() >= 0 and coords.max() < d
        assert (np.diff(coords, axis=1) > 0).all()
        assert set(np.unique(coords)) == set(range(d))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("epsilon", [0.5, 1.0, 4.0])
def test_one_coordinate_report_channel_spends_exactly_the_stated_epsilon(
    kind: type[SampledGradient], epsilon: float
) -> None:
    """d = 2, k = 1: every (coordinate, cell) report against every pair of levels."""
    m = kind(dimension=2, epsilon=epsilon)
    assert m.k == 1
    column = m.channel.matrix  # G × (K+1)
    levels = column.shape[1]
    # P((j, g) | levels (a, b)) = ½·M[g, a] for j = 0, ½·M[g, b] for j = 1
    a, b = np.meshgrid(np.arange(levels), np.arange(levels), indexing="ij")
    report = np.vstack([0.5 * column[:, a.ravel()], 0.5 * column[:, b.ravel()]])
    exact = channel_epsilon(report)
    assert exact <= m.exact_epsilon * (1 + 1e-12)
    assert exact > m.exact_epsilon - BELOW
    assert m.exact_epsilon <= epsilon * (1 + EPSILON_SLACK)


@pytest.mark.parametrize("kind", KINDS)
def test_two_coordinate_reports_compose_to_k_times_the_channel_epsilon(
    kind: type[SampledGradient],
) -> None:
    """d = k = 2 (ε = 6): the joint cells of both coordinates, at the levels 0, K/2, K."""
    m = kind(dimension=2, epsilon=6.0)
    assert m.k == 2
    column = m.channel.matrix[:, [0, m.channel.levels // 2, m.channel.levels]]
    inputs = list(itertools.product(range(3), repeat=2))
    report = np.stack([np.outer(column[:, i], column[:, j]).ravel() for i, j in inputs], axis=1)
    exact = channel_epsilon(report)
    assert math.isclose(m.exact_epsilon, 2 * m.channel.epsilon)
    assert exact <= m.exact_epsilon * (1 + 1e-12)
    assert exact > m.exact_epsilon - BELOW
    assert m.exact_epsilon <= 6.0 * (1 + EPSILON_SLACK)


@pytest.mark.parametrize("kind", KINDS)
def test_the_decoder_is_unbiased_on_the_exact_answer_distribution(
    kind: type[SampledGradient],
) -> None:
    """Expected counts of n reports at fixed levels decode to the levels exactly."""
    m = kind(dimension=3, epsilon=8.0)  # k = 3 ... of 3: no sampling
    m1 = kind(dimension=5, epsilon=2.0)  # k = 1 of 5
    for mech in (m, m1):
        k_levels = np.array([0, 40, 64, 100, 128][: mech.dimension])
        t = level_values(mech.channel.levels)[k_levels]
        n = 1000.0
        share = n * mech.k / mech.dimension  # expected reports that sample a coordinate
        counts = share * mech.channel.matrix[:, k_levels].T  # d × G, fractional
        mean, variance = mech.estimate_mean({"counts": counts.ravel()}, int(n))
        np.testing.assert_allclose(mean, t, atol=1e-12)
        exact = mech.coordinate_variance(t[None, :])[0] / n
        assert (variance > 0).all()
        np.testing.assert_allclose(variance, exact, rtol=1e-9, atol=1e-15)


def test_bound_scales_answers_and_estimates() -> None:
    m = SampledPiecewise(dimension=4, epsilon=2.0, bound=0.5)
    g = np.array([[0.5, -0.5, 0.25, 0.0]])
    assert np.allclose(
        m.coordinate_variance(g), 0.25 * SampledPiecewise(4, 2.0).coordinate_variance(2 * g)
    )
    with pytest.raises(InvalidRecordError, match=r"\[-0.5, 0.5\]"):
        m.perturb(np.array([[0.6, 0.0, 0.0, 0.0]]))
    np.testing.assert_array_equal(
        m.clip(np.array([[3.0, -3.0, 0.1, 0.0]])), [[0.5, -0.5, 0.1, 0.0]]
    )


@pytest.mark.parametrize("kind", KINDS)
def test_pack_unpack_round_trip_and_bad_rows(kind: type[SampledGradient]) -> None:
    m = kind(dimension=300, epsilon=8.0)  # k = 3, coordinates need two bytes
    rng = seeded_rng(3)
    answers = m.perturb(rng.uniform(-1, 1, size=(500, 300)), rng)
    assert answers.shape == (500, 3, 2)
    packed = m.pack(answers)
    assert packed.shape == (500, m.segment.byte_length) and m.segment.byte_length == 9
    unpacked = m.unpack(packed)
    assert not unpacked.bad.any()
    np.testing.assert_array_equal(unpacked.values, answers)
    bad = packed[:4].copy()
    bad[0, 0:2] = [0x01, 0x2C]  # coordinate 300 = d
    bad[1, 3:5] = bad[1, 0:2]  # a repeated coordinate
    bad[2, [0, 1, 3, 4]] = bad[2, [3, 4, 0, 1]]  # decreasing coordinates
    assert m.unpack(bad).bad.tolist() == [True, True, True, False]
    if m.channel.cells < 256:
        cell = packed[3:4].copy()
        cell[0, 2] = m.channel.cells
        assert m.unpack(cell).bad.all()


def test_accumulate_counts_each_coordinate_and_cell() -> None:
    m = SampledHybrid(dimension=3, epsilon=0.5)  # Duchi's two cells at ε ≤ 0.61
    assert m.channel.cells == 2 and m.k == 1
    answers = np.array([[[0, 1]], [[2, 0]], [[2, 0]], [[1, 1]]])
    counts = m.accumulate(answers)["counts"]
    assert counts.dtype == np.int64
    assert counts.reshape(3, 2).tolist() == [[0, 1], [0, 1], [2, 0]]
    assert m.stats_layout[0].length == 6


def test_bad_parameters_and_values_are_refused() -> None:
    for bad in [
        {"dimension": 0, "epsilon": 1.0},
        {"dimension": 70_000, "epsilon": 1.0},
        {"dimension": 3, "epsilon": 0.0},
        {"dimension": 3, "epsilon": math.inf},
        {"dimension": 3, "epsilon": 1.0, "bound": 0.0},
        {"dimension": 3, "epsilon": 1.0, "samples": 4},
    ]:
        with pytest.raises(ConfigurationError):
            SampledPiecewise(**bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="takes no δ"):
        gradient_randomizer("sampled-piecewise", 3, 1.0, delta=1e-5)
    m = SampledPiecewise(dimension=3, epsilon=1.0)
    for values in ([[0.0, 0.0]], [[np.nan, 0.0, 0.0]], [0.0, 0.0, 0.0]):
        with pytest.raises(InvalidRecordError):
            m.perturb(np.asarray(values))
    with pytest.raises(InvalidQueryError):
        m.estimate_mean({"counts": np.zeros(3 * 256, dtype=np.int64)}, 0)


def test_the_registry_builds_each_gradient_mechanism_by_name() -> None:
    assert {"sampled-piecewise", "sampled-hybrid", "l1-laplace"} <= set(gradient_mechanism_names())
    assert isinstance(gradient_randomizer("sampled-hybrid", 5, 1.0), SampledHybrid)
    with pytest.raises(ConfigurationError, match="known: l1-laplace"):
        gradient_randomizer("gaussian-l3", 5, 1.0)


def test_published_parameters() -> None:
    m = SampledPiecewise(dimension=7, epsilon=8.0)
    assert m.published() == {
        "dimension": 7,
        "bound": 1.0,
        "samples": 3,
        "levels": 128,
        "cells": 256,
    }
