"""A mechanism added through the registry alone works end to end over real HTTP.

This module defines a mechanism the package does not ship (generalised randomized
response whose statistics are a float64 block of debiased sums, in a 2-byte segment of
its own encoding), registers it, and runs spec → config → perturb → ingest → estimate
through the SDK and a real uvicorn server on loopback. Nothing outside this module
names it: the schema, config, accountant, codec, storage and estimation reach it
through :mod:`ldp_shared.mechanisms.base`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx
import numpy as np
import pytest
from numpy.typing import NDArray

from ldp_client import LDPClient
from ldp_shared.errors import ConfigurationError
from ldp_shared.kernel import FrequencyEstimate, frequency_variance, z_value
from ldp_shared.mechanisms import Randomizer, Segment, StatsBlock, Unpacked
from ldp_shared.mechanisms.base import mechanism_names, register, unregister
from ldp_shared.mechanisms.categorical import CategoricalSpec
from ldp_shared.mechanisms.grr import grr_probabilities
from ldp_shared.rand import resolve_rng, seeded_rng

from .conftest import ADMIN, ANALYST

pytestmark = pytest.mark.e2e

NAME = "test-float-rr"
Z_LIMIT = 4.0  # |f̂ - f| / se over a handful of values: P(any beyond 4 se) < 0.001


class FloatRRSpec(CategoricalSpec):
    mechanism: Literal["test-float-rr"]

    def randomizer(self, epsilon: float | None, classes: int = 1) -> FloatRR:
        assert epsilon is not None
        return FloatRR(d=len(self.domain) * classes, epsilon=epsilon)


@dataclass(frozen=True)
class FloatRR(Randomizer):
    """GRR (``p = e^ε/(e^ε+d-1)``) keeping ``Σ z_v``, ``z_v = (1[y=v] - q)/(p - q)``."""

    d: int
    epsilon: float
    p: float = field(init=False)
    q: float = field(init=False)

    def __post_init__(self) -> None:
        p, q = grr_probabilities(self.d, self.epsilon)
        object.__setattr__(self, "p", p)
        object.__setattr__(self, "q", q)

    @property
    def exact_epsilon(self) -> float:
        return math.log(self.p / self.q)

    @property
    def segment(self) -> Segment:
        return Segment(encoding="test-u16", byte_length=2)

    @property
    def stats_layout(self) -> tuple[StatsBlock, ...]:
        return (StatsBlock("debiased", "float64", self.d),)

    def published(self) -> dict[str, Any]:
        return {"p": self.p, "q": self.q, "test_note": "float statistics"}

    def perturb(self, values: Any, rng: np.random.Generator | None = None) -> NDArray[Any]:
        gen = resolve_rng(rng)
        idx = np.asarray(values, dtype=np.int64)
        keep = gen.random(idx.size) < self.p
        other = gen.integers(0, self.d - 1, size=idx.size)
        other += other >= idx
        return np.where(keep, idx, other)

    def pack(self, answers: NDArray[Any]) -> NDArray[np.uint8]:
        return answers.astype(">u2").view(np.uint8).reshape(-1, 2)

    def unpack(self, segment: NDArray[np.uint8]) -> Unpacked:
        value = segment[:, 0].astype(np.int64) << 8 | segment[:, 1]
        return Unpacked(values=value, bad=value >= self.d, problem="value beyond the domain")

    def accumulate(self, answers: NDArray[Any]) -> dict[str, NDArray[Any]]:
        counts = np.bincount(answers, minlength=self.d).astype(np.float64)
        return {"debiased": (counts - answers.size * self.q) / (self.p - self.q)}

    def estimate_stats(
        self, stats: dict[str, NDArray[Any]], n: int, confidence: float
    ) -> FrequencyEstimate:
        f = np.asarray(stats["debiased"], dtype=np.float64) / n
        se = np.sqrt(frequency_variance(f, n, self.p, self.q))
        z = z_value(confidence)
        return FrequencyEstimate(n, f, se, f - z * se, f + z * se, confidence)


@pytest.fixture
def registered() -> Iterator[None]:
    register(FloatRRSpec)
    yield
    unregister(NAME)


COLOURS = ["red", "green", "blue", "cyan", "white"]
TRUTH = np.array([0.4, 0.25, 0.2, 0.1, 0.05])


def test_a_registered_mechanism_round_trips_over_http(registered: None, server: str) -> None:
    assert NAME in mechanism_names()
    spec = {
        "name": "plugin",
        "epsilon": 4.0,
        "attributes": [
            {"name": "colour", "mechanism": NAME, "domain": COLOURS},
            {"name": "ok", "domain": ["no", "yes"]},
        ],
        "release": {"min_reports": 500},
    }
    with LDPClient(server, token=ADMIN) as admin:
        config = admin.create_collection(spec)
    colour = config.attribute("colour")
    # the accountant's exact ε (half of 4.0 each, split) and the mechanism's own fields
    assert colour.epsilon == pytest.approx(2.0, rel=1e-12)
    assert colour.model_dump()["test_note"] == "float statistics"
    assert (colour.encoding, colour.byte_length, colour.float_offset) == ("test-u16", 2, 0)
    assert config.float_stats_length == len(COLOURS)
    assert config.report_bytes == 3

    gen = np.random.default_rng(3)
    n = 20_000
    values = gen.choice(len(COLOURS), size=n, p=TRUTH)
    records = [{"colour": COLOURS[v], "ok": "yes" if v < 2 else "no"} for v in values]
    with LDPClient(server, rng=seeded_rng(4)) as device:
        summary = device.submit("plugin", records, batch_size=5_000)
    assert summary.accepted == n

    with LDPClient(server, token=ANALYST) as analyst:
        result = analyst.frequencies("plugin", "colour")
        ok = analyst.frequencies("plugin", "ok")
    assert result.mechanism == NAME and result.n_reports == n
    assert result.values == COLOURS
    observed = np.bincount(values, minlength=len(COLOURS)) / n
    z = np.abs(np.array(result.estimate) - observed) / np.array(result.stderr)
    assert z.max() < Z_LIMIT, z
    # the exact standard error of this mechanism at the truth, not a loose bound
    expected_se = np.sqrt(frequency_variance(observed, n, colour.p or 0.0, colour.q or 0.0))
    assert np.allclose(result.stderr, expected_se, rtol=0.05)
    # the built-in mechanism beside it is estimated as usual
    truth_ok = np.array([1 - observed[:2].sum(), observed[:2].sum()])
    z_ok = np.abs(np.array(ok.estimate) - truth_ok) / np.array(ok.stderr)
    assert z_ok.max() < Z_LIMIT, z_ok


def test_an_unregistered_mechanism_is_refused_by_name(server: str) -> None:
    """Without the registration, the SDK refuses the spec before sending it, and the
    aggregator refuses it with a problem document naming the known mechanisms."""
    assert NAME not in mechanism_names()
    spec = {
        "name": "plugin",
        "epsilon": 1.0,
        "attributes": [{"name": "c", "mechanism": NAME, "domain": COLOURS}],
    }
    with LDPClient(server, token=ADMIN) as admin, pytest.raises(ConfigurationError, match=NAME):
        admin.create_collection(spec)
    answer = httpx.post(
        f"{server}/v1/collections", json=spec, headers={"Authorization": f"Bearer {ADMIN}"}
    )
    assert answer.status_code == 422
    assert answer.headers["content-type"].startswith("application/problem+json")
    assert f"unknown mechanism {NAME!r}" in answer.text and "'oue'" not in answer.text
    assert ", ".join(mechanism_names()) in answer.text  # every registered name, sorted
