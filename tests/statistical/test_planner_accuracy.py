"""The planner's predicted standard errors against simulation, for every mechanism it ranks.

For each attribute kind (16 categorical values, an open domain, numbers in [0, 10]), each
ε of :data:`EPSILONS` and each n of :data:`REPORTS`, every mechanism the planner ranks is
simulated in its planning case and the measured root-mean-square error must be within
10% of the predicted standard error:

* frequencies: every device holds one value and the error is measured at values no
  device holds (the categorical values 1…15, the bins or buckets above the lowest, or
  strings of the longest length a spec takes); where the prediction names its case
  (``PlannedVariance.case``: the ordinal exponential mechanism), the devices hold its
  ``held`` value and the error is measured at its ``queried`` one;
* means: every device holds the worst value the planner names.

Hashing mechanisms draw a fresh public salt per run (their collision term is a variance
over salts). The collision term at a given ``F₂ < 1`` is checked on its own
(:func:`test_collision_term_at_a_given_second_moment`), with few hash functions so that
it dominates.

Design (tests/statistical/_stats.py conventions): fixed seeds; at least
:data:`SAMPLES` errors per check, so that under a right prediction a check fails
(|s/σ − 1| > 0.1, ``s`` the RMS of m normal errors, relative sd ≈ 1/√(2m)) with
probability below ALPHA split over the checks. Power, each must fail the same 10% test:
the prediction at ε/2, which the design check shows is more than 10% plus four sds
away; and the prediction with its variance off by a factor 2 either way (σ·√2, σ/√2).
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray
from tests.statistical._stats import ALPHA, POWER_MARGIN_SD

from ldp_shared.mechanisms.base import AttributeSpec
from ldp_shared.planner import PlannedMechanism, planned_mechanisms
from ldp_shared.rand import seeded_rng

EPSILONS = (0.5, 1.5)
REPORTS = (1000, 4000)
TOLERANCE = 0.10
SAMPLES = 1000
"""Errors per check: P(|s/σ − 1| > 0.1) ≈ 2Φ(−0.1·√(2·1000)) ≈ 8e-6 per check."""
OTHERS = 15
"""Values nobody holds, measured per run over a declared domain (all of them but one)."""
OPEN_OTHERS = 100
"""Values nobody holds, measured per run of a hashing mechanism: each has its own
collisions with the held value, and a run of a 2^20-cell sketch is the slow step."""
ATTRIBUTES: dict[str, dict[str, Any]] = {
    "categorical": {"domain_size": 16},
    "open": {},
    "numeric": {"lo": 0.0, "hi": 10.0},
}
COLLISION_CASES: list[dict[str, Any]] = [
    {"mechanism": "flh", "hashes": 16},
    {"mechanism": "hcms", "hashes": 8, "columns": 4},
]
"""Hashing specs whose collision term dominates at n = 1000 (ε = 1, F₂ = 1/8)."""
SPREAD = 8
"""Values the devices spread over, uniformly, in the collision check: F₂ = 1/8."""


def _rel_sd(samples: int) -> float:
    return 1.0 / math.sqrt(2.0 * samples)


def _args(kind: str) -> tuple[Any, Any, Any]:
    attribute = ATTRIBUTES[kind]
    return attribute.get("domain_size"), attribute.get("lo"), attribute.get("hi")


def test_design_sample_size_meets_alpha() -> None:
    """Bonferroni over every check of the module (mechanisms × attributes × ε × n, and
    the collision checks)."""
    checks = len(COLLISION_CASES) + sum(
        len(planned_mechanisms(*_args(kind), epsilon)[0]) * len(REPORTS)
        for kind in ATTRIBUTES
        for epsilon in EPSILONS
    )
    fail = 2.0 * NormalDist().cdf(-TOLERANCE / _rel_sd(SAMPLES))
    assert fail * checks <= ALPHA


def _fresh(spec: AttributeSpec, epsilon: float, rng: np.random.Generator) -> Any:
    """The spec with a fresh public salt where it has one, and its randomizer."""
    if hasattr(spec, "salt"):
        spec = spec.model_copy(update={"salt": rng.bytes(16).hex()})
    return spec, spec.randomizer(epsilon)


def _label(spec: AttributeSpec, i: int) -> str:
    """Value ``i`` as the spec takes it: a string of its longest length over an open
    domain (a ``pem`` string of ``L`` bytes is estimated from the final level alone)."""
    if spec.is_open:
        return str(i).zfill(int(getattr(spec, "max_length", 1)))
    return str(i)


def _case(m: PlannedMechanism, spec: AttributeSpec) -> tuple[list[Any], NDArray[Any]]:
    """The held raw value (a one-item list) and the queried values, encoded."""
    edges = getattr(spec, "edges", None)
    if edges is not None:  # bins or buckets of a number: all in the lowest
        return [edges[0]], np.arange(1, len(edges) - 1)
    if m.variance.case is not None:
        held, queried = m.variance.case
        return [spec.values[held]], spec.encode([spec.values[queried]])
    count = OPEN_OTHERS if hasattr(spec, "salt") else OTHERS
    others = [spec.parse_candidate(_label(spec, i)) for i in range(1, count + 1)]
    return [spec.parse_candidate(_label(spec, 0))], spec.encode(others)


def _frequency_errors(
    spec: AttributeSpec, m: PlannedMechanism, epsilon: float, n: int, seed: int
) -> NDArray[np.float64]:
    """Estimates at values nobody holds (their errors): a fresh salt per run for hashing,
    else the runs' reports drawn at once."""
    rng = seeded_rng(seed)
    errors: list[NDArray[np.float64]] = []
    while sum(e.size for e in errors) < SAMPLES:
        spec, randomizer = _fresh(spec, epsilon, rng)
        held, queried = _case(m, spec)
        runs = 1 if hasattr(spec, "salt") else -(-SAMPLES // len(queried))
        answers = randomizer.perturb(spec.encode(held * (n * runs)), rng)
        for run in range(runs):
            stats = randomizer.accumulate(answers[run * n : (run + 1) * n])
            estimate = randomizer.estimate_values(stats, n, queried, 0.95)
            errors.append(np.asarray(estimate.estimate, dtype=np.float64))
    return np.concatenate(errors)


def _mean_errors(m: PlannedMechanism, epsilon: float, n: int, seed: int) -> NDArray[np.float64]:
    rng = seeded_rng(seed)
    spec, randomizer = _fresh(m.spec, epsilon, rng)
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
        errors = _frequency_errors(m.spec, m, epsilon, n, seed)
    else:
        errors = _mean_errors(m, epsilon, n, seed)
    return float(np.sqrt(np.mean(np.square(errors))))


def _assert_powered(name: str, measured: float, predicted: float, wrong: list[float]) -> None:
    """Each wrong prediction is far enough away to be caught (design), and is."""
    margin = TOLERANCE + POWER_MARGIN_SD * _rel_sd(SAMPLES)
    for at_wrong in wrong:
        assert abs(predicted / at_wrong - 1.0) > margin, (name, at_wrong, "design: no power")
        assert abs(measured / at_wrong - 1.0) > TOLERANCE, (name, at_wrong, "not caught")


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
        at_half_epsilon = math.sqrt(wrong[m.name].variance.variance(n))
        factor = [predicted * math.sqrt(2.0), predicted / math.sqrt(2.0)]
        _assert_powered(m.name, measured, predicted, [at_half_epsilon, *factor])


@pytest.mark.parametrize("case", COLLISION_CASES, ids=lambda c: str(c["mechanism"]))
def test_collision_term_at_a_given_second_moment(case: dict[str, Any]) -> None:
    """Devices spread uniformly over :data:`SPREAD` values (F₂ = 1/8), estimates at 15
    values nobody holds; the prediction at F₂ = 1 (the planner's default, the worst
    case) must fail the same test."""
    epsilon, n = 1.0, 1000
    spec = AttributeSpec(name="a", **case)
    planned = spec.randomizer(epsilon).planned_variance()
    assert planned is not None
    f2 = 1.0 / SPREAD
    predicted = math.sqrt(planned.assuming(f2).variance(n))
    worst = math.sqrt(planned.assuming(1.0).variance(n))
    rng = seeded_rng(7 + len(case))
    held = [str(i) for i in range(SPREAD)]
    others = [str(i) for i in range(SPREAD, SPREAD + OTHERS)]
    errors: list[NDArray[np.float64]] = []
    while sum(e.size for e in errors) < SAMPLES:
        spec, randomizer = _fresh(spec, epsilon, rng)
        column = [held[i % SPREAD] for i in range(n)]
        stats = randomizer.accumulate(randomizer.perturb(spec.encode(column), rng))
        estimate = randomizer.estimate_values(stats, n, spec.encode(others), 0.95)
        errors.append(np.asarray(estimate.estimate, dtype=np.float64))
    measured = float(np.sqrt(np.mean(np.square(np.concatenate(errors)))))
    assert abs(measured / predicted - 1.0) <= TOLERANCE, (case, measured, predicted)
    _assert_powered(str(case["mechanism"]), measured, predicted, [worst])
