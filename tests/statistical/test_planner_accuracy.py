"""The planner's predicted standard errors against simulation, for every mechanism it ranks.

For each attribute kind (16 categorical values, an open domain, numbers in [0, 10]), each
ε of :data:`EPSILONS` and each n of :data:`REPORTS`, every mechanism the planner ranks is
simulated in its planning case (every device holds value 0, and the error is measured at
the values no device holds; or, for a mean, every device holds the worst value the
planner names) and the measured root-mean-square error must be within 10% of the
predicted standard error.

Design (tests/statistical/_stats.py conventions): fixed seeds; at least
:data:`SAMPLES` errors per check, so that under a right prediction a check fails
(|s/σ − 1| > 0.1, ``s`` the RMS of m normal errors, relative sd ≈ 1/√(2m)) with
probability below ALPHA split over the checks; power: the prediction at ε/2, which the
design check shows is more than 10% plus four sds away, must fail the same 10% test.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any

import numpy as np
import pytest
from tests.statistical._stats import ALPHA, POWER_MARGIN_SD

from ldp_shared.planner import PlannedMechanism, planned_mechanisms
from ldp_shared.rand import seeded_rng

EPSILONS = (0.5, 1.5)
REPORTS = (1000, 4000)
TOLERANCE = 0.10
SAMPLES = 1000
"""Errors per check: P(|s/σ − 1| > 0.1) ≈ 2Φ(−0.1·√(2·1000)) ≈ 8e-6 per check."""
ATTRIBUTES: dict[str, dict[str, Any]] = {
    "categorical": {"domain_size": 16},
    "open": {},
    "numeric": {"lo": 0.0, "hi": 10.0},
}


def _rel_sd(samples: int) -> float:
    return 1.0 / math.sqrt(2.0 * samples)


def _args(kind: str) -> tuple[Any, Any, Any]:
    attribute = ATTRIBUTES[kind]
    return attribute.get("domain_size"), attribute.get("lo"), attribute.get("hi")


def test_design_sample_size_meets_alpha() -> None:
    """Bonferroni over every check of the module (mechanisms × attributes × ε × n)."""
    checks = sum(
        len(planned_mechanisms(*_args(kind), epsilon)[0]) * len(REPORTS)
        for kind in ATTRIBUTES
        for epsilon in EPSILONS
    )
    fail = 2.0 * NormalDist().cdf(-TOLERANCE / _rel_sd(SAMPLES))
    assert fail * checks <= ALPHA


def _fresh(m: PlannedMechanism, epsilon: float, rng: np.random.Generator) -> Any:
    """The mechanism's randomizer, with a fresh public salt where the spec has one (the
    collision term of hashing is a variance over salts)."""
    spec = m.spec
    if hasattr(spec, "salt"):
        spec = spec.model_copy(update={"salt": rng.bytes(16).hex()})
    return spec, spec.randomizer(epsilon)


def _frequency_errors(m: PlannedMechanism, epsilon: float, n: int, seed: int) -> np.ndarray:
    rng = seeded_rng(seed)
    spec = m.spec
    others = [spec.parse_candidate(str(i)) for i in range(1, 16)]
    errors: list[np.ndarray] = []
    while sum(e.size for e in errors) < SAMPLES:
        spec, randomizer = _fresh(m, epsilon, rng)
        held = spec.encode([spec.parse_candidate("0")] * n)
        stats = randomizer.accumulate(randomizer.perturb(held, rng))
        estimate = randomizer.estimate_values(stats, n, spec.encode(others), 0.95)
        errors.append(np.asarray(estimate.estimate, dtype=np.float64))
    return np.concatenate(errors)


def _mean_errors(m: PlannedMechanism, epsilon: float, n: int, seed: int) -> np.ndarray:
    rng = seeded_rng(seed)
    spec, randomizer = _fresh(m, epsilon, rng)
    truth = m.variance.at
    values = spec.encode(np.full(n * SAMPLES, truth))
    answers = randomizer.perturb(values, rng)
    errors = np.empty(SAMPLES)
    for i in range(SAMPLES):
        stats = randomizer.accumulate(answers[i * n : (i + 1) * n])
        errors[i] = randomizer.estimate_stats(stats, n, 0.95).estimate[0] - truth
    return errors


def _measured(m: PlannedMechanism, epsilon: float, n: int, seed: int) -> float:
    if m.spec.released_as == "frequencies":
        errors = _frequency_errors(m, epsilon, n, seed)
    else:
        errors = _mean_errors(m, epsilon, n, seed)
    return float(np.sqrt(np.mean(np.square(errors))))


@pytest.mark.parametrize("kind", sorted(ATTRIBUTES))
@pytest.mark.parametrize("epsilon", EPSILONS)
def test_measured_error_within_ten_percent_of_predicted(kind: str, epsilon: float) -> None:
    args = _args(kind)
    planned, _ = planned_mechanisms(*args, epsilon)
    wrong = {m.name: m for m in planned_mechanisms(*args, epsilon / 2.0)[0]}
    assert planned, kind
    for seed, (m, n) in enumerate((m, n) for m in planned for n in REPORTS):
        predicted = math.sqrt(m.variance.variance(n))
        measured = _measured(m, epsilon, n, seed=1000 * seed + int(10 * epsilon))
        ratio = measured / predicted
        assert abs(ratio - 1.0) <= TOLERANCE, (m.name, kind, epsilon, n, measured, predicted)
        # power: the prediction at ε/2 is far enough away to be caught, and is
        at_wrong = math.sqrt(wrong[m.name].variance.variance(n))
        margin = TOLERANCE + POWER_MARGIN_SD * _rel_sd(SAMPLES)
        assert abs(predicted / at_wrong - 1.0) > margin, (m.name, "design: no power")
        assert abs(measured / at_wrong - 1.0) > TOLERANCE, (m.name, "wrong ε not caught")
