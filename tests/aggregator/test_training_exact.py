"""With the noise off (a mechanism registered by this test only: the device sends its
gradient's float64 bytes), a training job run through the aggregator's functions is plain
mini-batch gradient descent, bit for bit; and a job survives a restart of the aggregator."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray
from tests.aggregator.conftest import ADMIN_TOKEN, ANALYST, TestClient, spec_payload
from tests.aggregator.training_helpers import LAYOUT, records, spec, take_part

from ldp_aggregator import training, training_rounds
from ldp_aggregator.app import create_app
from ldp_aggregator.collections import create_collection
from ldp_aggregator.settings import Settings
from ldp_aggregator.storage.engine import make_engine
from ldp_aggregator.storage.migrate import upgrade
from ldp_client.training import make_report, rebuild_mechanisms
from ldp_shared.kernel import FloatArray
from ldp_shared.learning import device
from ldp_shared.learning.layout import FeatureLayout
from ldp_shared.mechanisms.base import Blocks, Segment, StatsBlock, Unpacked
from ldp_shared.mechanisms.gradient import GradientNorm, GradientRandomizer, register_gradient
from ldp_shared.rand import seeded_rng
from ldp_shared.schema import CollectionSpec
from ldp_shared.wire.reports import encode_bits
from ldp_shared.wire.training import ParticipationReport, TrainingSpec


@register_gradient
@dataclass(frozen=True)
class NoiseOff(GradientRandomizer):
    """The test-only switch: the exact gradient travels (ε = ∞); sums are exactly rounded
    (``math.fsum``), so a round's mean does not depend on the order its reports arrive in."""

    name: ClassVar[str] = "test-noise-off"
    norm: ClassVar[GradientNorm] = "linf"

    dimension: int
    bound: float = 1.0

    @classmethod
    def create(
        cls, dimension: int, epsilon: float, bound: float = 1.0, delta: float | None = None
    ) -> NoiseOff:
        return cls(dimension, bound)

    @property
    def exact_epsilon(self) -> float:
        return math.inf

    @property
    def segment(self) -> Segment:
        return Segment("float64", 8 * self.dimension)

    @property
    def stats_layout(self) -> tuple[StatsBlock, ...]:
        return (StatsBlock("sum", "float64", self.dimension),)

    def perturb(self, values: Any, rng: np.random.Generator | None = None) -> NDArray[Any]:
        return np.asarray(values, dtype="<f8")

    def pack(self, answers: NDArray[Any]) -> NDArray[np.uint8]:
        return np.ascontiguousarray(answers, dtype="<f8").view(np.uint8)

    def unpack(self, segment: NDArray[np.uint8]) -> Unpacked:
        values = np.ascontiguousarray(segment).view("<f8").astype(np.float64)
        return Unpacked(values, ~np.isfinite(values).all(axis=1), "not finite")

    def accumulate(self, answers: NDArray[Any]) -> dict[str, NDArray[Any]]:
        return {"sum": np.array([math.fsum(column) for column in np.asarray(answers).T])}

    def coordinate_variance(self, gradients: Any) -> FloatArray:
        return np.zeros(np.shape(gradients))

    def estimate_mean(self, stats: Blocks, n: int) -> tuple[FloatArray, FloatArray]:
        return np.asarray(stats["sum"], dtype=np.float64) / n, np.zeros(self.dimension)


def exact_mean(rows: FloatArray) -> FloatArray:
    return np.array([math.fsum(column) for column in rows.T]) / len(rows)


def test_noise_off_is_plain_minibatch_gradient_descent_bit_for_bit(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'exact.db'}")
    upgrade(engine)
    collection = create_collection(engine, CollectionSpec.model_validate(spec_payload("train")))
    changes = {"mechanism": "test-noise-off", "loss_share": 0.0, "bound": 1.0, "rounds": 4}
    job = training.create_job(
        engine, collection, TrainingSpec.model_validate(spec(**changes, l2=0.01))
    )
    assert job.gradient.exact_epsilon == math.inf and job.loss is None
    data = records(80, seed=11)
    for record in data:  # 4 rounds of 20, in this order
        participation = training_rounds.issue_participation(engine, collection, job.id)
        mechanisms = rebuild_mechanisms(participation)
        report = make_report(participation, mechanisms, record, seeded_rng(0))
        body = ParticipationReport(report=encode_bits(report))
        training_rounds.accept_report(engine, collection, job.id, participation.token, body)
    model = training.trained_model(engine, collection, job.id)

    # the reference: w ← w − η(mean gradient + λ·w without intercept), tail-averaged
    layout = FeatureLayout.model_validate(LAYOUT)
    x = layout.encode({k: [r[k] for r in data] for k in ("x1", "x2", "color")})
    y = layout.labels([r["y"] for r in data])
    rate = job.spec.learning_rate
    assert rate is not None and rate == 1.0 / (4 / 4 + 0.01)
    w = np.zeros(layout.dimension)
    total = np.zeros_like(w)
    for t in range(4):
        # each example's gradient as its own 1-row product (BLAS may round a batch's
        # matrix product differently from a row's dot product)
        rows = [device.gradients(w, x[i : i + 1], y[i : i + 1]) for i in range(20 * t, 20 * t + 20)]
        g = exact_mean(np.vstack(rows))
        w = w - rate * (g + 0.01 * np.concatenate([[0.0], w[1:]]))
        if t >= 2:  # average_from = 0.5 of 4 rounds
            total = total + w
    assert model.weights == (total / 2).tolist()  # exact equality, every bit
    assert model.epsilon == math.inf
    engine.dispose()


def test_a_job_survives_a_restart_of_the_aggregator(tmp_path: Path) -> None:
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'restart.db'}",
        admin_token=ADMIN_TOKEN,
        analyst_token=ANALYST["Authorization"].split()[1],
    )
    admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    data = records(60, seed=12)
    rng = seeded_rng(13)
    with TestClient(create_app(settings)) as first:
        assert first.post("/v1/collections", json=spec_payload("train"), headers=admin).is_success
        job = first.post("/v1/collections/train/training-jobs", json=spec(), headers=ANALYST)
        job_id = job.json()["id"]
        for record in data[:30]:  # round 0 closes, round 1 is half full
            take_part(first, job_id, record, rng)
        before = first.get(f"/v1/collections/train/training-jobs/{job_id}", headers=ANALYST)
    assert before.json()["round"] == 1 and before.json()["received"] == 10
    with TestClient(create_app(settings)) as second:
        after = second.get(f"/v1/collections/train/training-jobs/{job_id}", headers=ANALYST)
        assert after.json() == before.json()
        for record in data[30:]:
            take_part(second, job_id, record, rng)
        done = second.get(f"/v1/collections/train/training-jobs/{job_id}", headers=ANALYST)
    assert done.json()["status"] == "done" and len(done.json()["curve"]) == 3
