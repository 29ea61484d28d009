"""The device's side of a training job, without a server: it rebuilds the mechanism and
refuses a participation whose stated ε, δ or parameters are not what it computes, its
policy applies, and only the packed perturbed report leaves it."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from ldp_client import DevicePolicy
from ldp_client.training import check_policy, make_report, rebuild_mechanisms
from ldp_shared.errors import ConfigurationError, InvalidRecordError, PrivacyPolicyError
from ldp_shared.learning.device import loss_randomizer
from ldp_shared.learning.layout import FeatureLayout
from ldp_shared.mechanisms.gradient_mechanisms import gradient_randomizer
from ldp_shared.rand import seeded_rng
from ldp_shared.wire.training import (
    GradientMechanismConfig,
    LossMechanismConfig,
    Participation,
)

LAYOUT = FeatureLayout.model_validate(
    {
        "numeric": [{"name": "x1", "lo": 0.0, "hi": 10.0}],
        "categorical": [{"name": "color", "domain": ["red", "blue"]}],
        "label": "y",
        "positive": "yes",
    }
)


def participation(role: str = "gradient", epsilon: float = 2.0, **tamper: Any) -> Participation:
    """What an honest aggregator issues for a job at ``epsilon``; ``tamper`` changes the
    stated gradient config."""
    g = gradient_randomizer("sampled-piecewise", LAYOUT.dimension, epsilon, 0.5)
    loss = loss_randomizer(epsilon)
    gradient = {
        "name": "sampled-piecewise",
        "dimension": LAYOUT.dimension,
        "epsilon": epsilon,
        "bound": 0.5,
        "exact_epsilon": g.exact_epsilon,
        "exact_delta": 0.0,
        "report_bytes": g.segment.byte_length,
        "published": g.published(),
    }
    gradient.update(tamper)
    return Participation(
        job="j" * 22,
        collection="c",
        token="t" * 43,
        round=0,
        role=role,  # type: ignore[arg-type]
        weights=[0.1, -0.2, 0.3, 0.0],
        layout=LAYOUT,
        gradient=GradientMechanismConfig.model_validate(gradient),
        loss=LossMechanismConfig(
            name="hybrid" if type(loss).__name__.startswith("Hybrid") else "piecewise",
            epsilon=epsilon,
            cap=4.0,
            exact_epsilon=loss.exact_epsilon,
            report_bytes=loss.segment.byte_length,
        ),
        epsilon=max(g.exact_epsilon, loss.exact_epsilon),
        delta=0.0,
        expires_unix=0,
    )


RECORD = {"x1": 4.0, "color": "blue", "y": "yes"}


def test_an_honest_participation_gives_a_packed_report_of_its_role() -> None:
    for role in ("gradient", "loss"):
        p = participation(role)
        mechanisms = rebuild_mechanisms(p)
        assert math.isclose(mechanisms.epsilon, 2.0, rel_tol=1e-9)
        report = make_report(p, mechanisms, RECORD, seeded_rng(0))
        expected = p.gradient.report_bytes if role == "gradient" else p.loss.report_bytes  # type: ignore[union-attr]
        assert isinstance(report, bytes) and len(report) == expected


@pytest.mark.parametrize(
    "tamper",
    [
        {"exact_epsilon": 1.0},  # understates the ε the mechanism spends
        {"exact_delta": 1e-3},
        {"report_bytes": 6},
        {"published": {"samples": 2, "levels": 3}},
        {"dimension": 5},
    ],
)
def test_a_participation_that_misstates_its_mechanism_is_refused(tamper: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        rebuild_mechanisms(participation(**tamper))


def test_the_policy_limits_apply_to_the_job() -> None:
    mechanisms = rebuild_mechanisms(participation(epsilon=4.0))
    check_policy(DevicePolicy(max_epsilon_per_record=4.0), "job", mechanisms)  # at the limit
    with pytest.raises(PrivacyPolicyError, match="ε = 4"):
        check_policy(DevicePolicy(max_epsilon_per_record=3.999), "job", mechanisms)
    with pytest.raises(PrivacyPolicyError, match="does not allow"):
        check_policy(DevicePolicy(allowed_mechanisms={"l1-laplace"}), "job", mechanisms)


@pytest.mark.parametrize(
    "record",
    [
        {"x1": float("nan"), "color": "blue", "y": "yes"},
        {"x1": 1.0, "color": "green", "y": "yes"},
        {"x1": 1.0, "color": "blue"},
        {"color": "blue", "y": "no"},
        "not a mapping",
    ],
)
def test_a_bad_record_is_refused_on_the_device(record: Any) -> None:
    p = participation()
    with pytest.raises(InvalidRecordError):
        make_report(p, rebuild_mechanisms(p), record, seeded_rng(0))


def test_the_report_depends_on_the_noise_not_only_on_the_record() -> None:
    p = participation("loss")
    mechanisms = rebuild_mechanisms(p)
    reports = {make_report(p, mechanisms, RECORD, seeded_rng(seed)) for seed in range(50)}
    assert len(reports) > 1
    answers = np.frombuffer(b"".join(reports), dtype=np.uint8)
    assert answers.size == len(reports) * p.loss.report_bytes  # type: ignore[union-attr]
