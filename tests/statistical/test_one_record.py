"""The per-record path (``ldp_client.one_record``) answers with the mechanisms' channels.

One record at a time, GRR reports its true value with probability ``p`` and each other
with ``q`` (χ² over the ``d`` answers), and unary encoding sets the true bit with
probability ``p`` and every other bit with ``q`` (a binomial test per bit), for a value
whose bit sits inside a byte and for the last one (next to the padding). Bonferroni at
``ALPHA`` within each test; power: the same tests reject the channel at a wrong ε.
"""

from __future__ import annotations

import numpy as np
import pytest

from ldp_client.privatize import privatize_packed
from ldp_shared.collection import CollectionConfig, build_config
from ldp_shared.mechanisms.grr import grr_probabilities
from ldp_shared.mechanisms.unary import unary_probabilities
from ldp_shared.rand import seeded_rng
from ldp_shared.schema import AttributeSpec, CollectionSpec

from ._stats import ALPHA, binomial_pvalue, bonferroni_reject, chi2_gof

pytestmark = pytest.mark.statistical

SEED = 20261126
N = 40_000
D = 13
EPSILON = 1.5


def _config(mechanism: str) -> CollectionConfig:
    spec = CollectionSpec(
        name="one",
        attributes=[
            AttributeSpec(name="v", domain=[f"x{i}" for i in range(D)], mechanism=mechanism)
        ],
        epsilon=EPSILON,
    )
    return build_config(spec)


def _answers(mechanism: str, value: int, seed: int) -> np.ndarray:
    config = _config(mechanism)
    gen = seeded_rng(seed)
    record = {"v": f"x{value}"}
    packed = b"".join(privatize_packed(config, record, gen) for _ in range(N))
    return np.frombuffer(packed, dtype=np.uint8).reshape(N, config.report_bytes)


def _grr_pvalue(rows: np.ndarray, value: int, epsilon: float) -> float:
    p, q = grr_probabilities(D, epsilon)
    counts = np.bincount(rows[:, 0], minlength=D)
    probabilities = np.full(D, q)
    probabilities[value] = p
    return chi2_gof(counts, probabilities).pvalue


def _ue_pvalues(rows: np.ndarray, value: int, variant: str, epsilon: float) -> list[float]:
    p, q = unary_probabilities(variant, epsilon)  # type: ignore[arg-type]
    bits = np.unpackbits(rows, axis=1)
    assert not bits[:, D:].any()
    ones = bits[:, :D].sum(axis=0)
    return [binomial_pvalue(int(ones[j]), N, p if j == value else q) for j in range(D)]


@pytest.mark.parametrize("value", [0, 6, D - 1])
def test_grr_one_record_channel(value: int) -> None:
    rows = _answers("grr", value, SEED + value)
    assert _grr_pvalue(rows, value, EPSILON) > ALPHA
    assert _grr_pvalue(rows, value, EPSILON * 1.2) < ALPHA  # power: a wrong ε is seen


@pytest.mark.parametrize("variant", ["sue", "oue"])
@pytest.mark.parametrize("value", [3, D - 1])
def test_unary_one_record_channel(variant: str, value: int) -> None:
    rows = _answers(variant, value, SEED + 100 + value)
    assert not bonferroni_reject(_ue_pvalues(rows, value, variant, EPSILON), ALPHA)
    assert bonferroni_reject(_ue_pvalues(rows, value, variant, EPSILON * 1.3), ALPHA)
