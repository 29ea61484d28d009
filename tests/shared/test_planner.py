"""The planner: the registry's own variances, ranked; n for a target; typed errors.

Each newly planned mechanism's prediction is checked against a computation of its own
(the estimator's variance method, the paper's formula written out here, or the
covariance of the channel); :func:`_same` compares to a relative 1e-9, and
:func:`test_the_checks_reject_a_variance_off_by_a_factor` shows that each check fails
when the planner's variance is off by 5%.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from statistics import NormalDist
from typing import Any

import numpy as np
import pytest

from ldp_shared.errors import InfeasiblePlanError, InvalidQueryError
from ldp_shared.mechanisms import gaussian, hybrid, laplace, piecewise
from ldp_shared.mechanisms.base import mechanism_names
from ldp_shared.mechanisms.hitter_threshold import FALSE_DISCOVERY, detection_threshold, keep_limit
from ldp_shared.mechanisms.longitudinal import PLANNED_PERMANENT_RATIO
from ldp_shared.planner import (
    PlannedMechanism,
    heavy_hitter_threshold,
    plan,
    planned_mechanisms,
)
from ldp_shared.shuffling import closed_form_epsilon
from ldp_shared.wire.plan import PlanEntry

N = 10_000


def _same(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9)


def _entry(entries: list[PlanEntry], name: str) -> PlanEntry:
    return next(e for e in entries if e.mechanism == name)


def _planned(name: str, *args: object, epsilon: float = 1.0) -> PlannedMechanism:
    planned, _ = planned_mechanisms(*args, epsilon)  # type: ignore[arg-type]
    return next(m for m in planned if m.name == name)


def test_categorical_plan_uses_the_kernel_variance_and_ranks_by_error() -> None:
    p = plan(epsilon=1.0, domain_size=1024, n=100_000)
    names = [e.mechanism for e in p.mechanisms]
    assert {"oue", "sue", "grr", "hadamard", "flh", "hcms", "l-grr", "l-osue"} <= set(names)
    assert sorted(names + p.not_planned) == mechanism_names()
    assert "mask" in p.not_planned and "exponential" in p.not_planned  # d > 512
    stderrs = [e.stderr for e in p.mechanisms]
    assert stderrs == sorted(stderrs)
    oue = _entry(p.mechanisms, "oue")
    # Wang et al. 2017: OUE's Var* = 4e^ε / (n (e^ε − 1)²)
    e = math.e
    assert oue.stderr == pytest.approx(math.sqrt(4 * e / (100_000 * (e - 1) ** 2)), rel=1e-9)
    assert oue.report_bytes == 128  # 1024 bits
    assert _entry(p.mechanisms, "grr").report_bytes == 2
    assert oue.interval_width == pytest.approx(2 * 1.959963985 * oue.stderr, rel=1e-6)
    assert oue.central_epsilon is not None and oue.central_epsilon < 1.0
    assert oue.central_epsilon_closed_form == pytest.approx(closed_form_epsilon(1.0, 100_000, 1e-6))
    assert oue.heavy_hitter_threshold == pytest.approx(heavy_hitter_threshold(oue.stderr, 1024))
    assert oue.second_moment is None and oue.parameters == {} and oue.local_delta == 0.0


def test_numeric_plan_ranks_means_in_attribute_units_then_bin_frequencies() -> None:
    unit = plan(epsilon=1.0, lo=0.0, hi=1.0, n=N)
    wide = plan(epsilon=1.0, lo=0.0, hi=100.0, n=N)
    means = {"duchi", "piecewise", "hybrid", "laplace", "gaussian"}
    kinds = [e.released_as for e in unit.mechanisms]
    assert kinds == ["mean"] * len(means) + ["frequencies"] * 2
    assert {e.mechanism for e in unit.mechanisms} == means | {"histogram", "dbitflippm"}
    for a, b in zip(unit.mechanisms, wide.mechanisms, strict=True):
        assert a.mechanism == b.mechanism
        scale = 100 if a.released_as == "mean" else 1  # a bin's frequency has no unit
        assert b.stderr == pytest.approx(scale * a.stderr, rel=1e-9)
        assert (a.heavy_hitter_threshold is None) == (a.released_as == "mean")
    duchi = _entry(unit.mechanisms, "duchi")
    c = (math.e + 1) / (math.e - 1)  # Duchi et al.: C = (e^ε + 1)/(e^ε − 1), Var = C²/n at t = 0
    assert duchi.stderr == pytest.approx(0.5 * c / 100.0, rel=1e-3)
    # a target is in the attribute's units: the bin frequencies are not planned for it
    target = plan(epsilon=1.0, lo=0.0, hi=1.0, target_stderr=0.01)
    assert {"histogram", "dbitflippm"} <= set(target.not_planned)
    assert {e.mechanism for e in target.mechanisms} == means


def test_target_gives_the_n_that_reaches_it() -> None:
    p = plan(epsilon=2.0, domain_size=16, target_stderr=0.002)
    ns = [e.n for e in p.mechanisms]
    assert ns == sorted(ns)
    for entry in p.mechanisms:
        assert entry.stderr <= 0.002
        m = _planned(entry.mechanism, 16, None, None, epsilon=2.0)
        assert _same(entry.stderr**2, m.variance.variance(entry.n))
        assert m.variance.variance(entry.n - 1) > 0.002**2
    width = plan(epsilon=2.0, domain_size=16, target_width=0.01, confidence=0.9)
    assert width.target_stderr == pytest.approx(0.01 / (2 * 1.6448536), rel=1e-6)


def test_open_domain_plans_hashing_with_its_collision_floor() -> None:
    p = plan(epsilon=1.0, n=10**6)
    assert {e.mechanism for e in p.mechanisms} == {"flh", "hcms", "pem"}
    assert all(e.second_moment == 1.0 for e in p.mechanisms)
    # the collision terms do not shrink with n: only HCMS's k·m cells reach 0.001
    reach = plan(epsilon=1.0, target_stderr=0.001)
    assert [e.mechanism for e in reach.mechanisms] == ["hcms"]
    assert reach.unreachable == ["flh", "pem"]
    with pytest.raises(InfeasiblePlanError):
        plan(epsilon=1.0, target_stderr=0.0005)


def test_the_collision_floor_follows_the_second_moment_of_the_query() -> None:
    """F₂/((g − 1) k) for FLH (Cormode et al. 2021), F₂/((m − 1) k) for HCMS."""
    worst = plan(epsilon=1.0, n=10**6)
    uniform = plan(epsilon=1.0, n=10**6, second_moment=1 / 64)
    assert uniform.second_moment == 1 / 64
    for name in ("flh", "hcms", "pem"):
        m = _planned(name, None, None, None)
        at = m.variance.variance(10**6)
        collision = m.variance.collision
        assert _same(_entry(worst.mechanisms, name).stderr ** 2, at)
        assert _same(_entry(uniform.mechanisms, name).stderr ** 2, at - collision * (1 - 1 / 64))
        assert _entry(uniform.mechanisms, name).second_moment == 1 / 64
    flh = _planned("flh", None, None, None)
    g, k = flh.variance.parameters["buckets"], flh.variance.parameters["hashes"]
    assert _same(flh.variance.collision, 1 / ((g - 1) * k))
    for bad in (0.0, 1.5, math.nan):
        with pytest.raises(InvalidQueryError):
            plan(epsilon=1.0, n=10, second_moment=bad)


def _hcms(m: PlannedMechanism) -> float:
    """The estimator's own variance at f = 0 (its ``variance``, used for released SEs)."""
    return float(m.randomizer.variance(np.zeros(1), N, 1.0)[0])  # type: ignore[attr-defined]


def _exponential(m: PlannedMechanism) -> float:
    """The plug-in covariance of ``f̂`` with every report from ``held``, at ``queried``."""
    held, queried = m.variance.case  # type: ignore[misc]
    r = m.randomizer
    counts = N * r.channel_matrix()[:, held]  # type: ignore[attr-defined]
    return float(r.estimate_covariance(counts, N)[1][queried, queried])  # type: ignore[attr-defined]


def _longitudinal(m: PlannedMechanism) -> float:
    """Arcolezi et al. 2022: π(1 − π)/(n (p₁ − q₁)²(p₂ − q₂)²) at π = q."""
    r = m.randomizer
    p1, q1, p2, q2, q = r.p1, r.q1, r.p2, r.q2, r.q  # type: ignore[attr-defined]
    return q * (1 - q) / (N * (p1 - q1) ** 2 * (p2 - q2) ** 2)


def _dbitflip(m: PlannedMechanism) -> float:
    """Ding et al. 2017: q(1 − q)/(n_v (p − q)²) with n_v = n·b/d, q the flip probability."""
    r = m.randomizer
    phi = r.flip  # type: ignore[attr-defined]
    return phi * (1 - phi) / (N * r.b / r.d * (1 - 2 * phi) ** 2)  # type: ignore[attr-defined]


def _pem(m: PlannedMechanism) -> float:
    """FLH's variance at f = 0 over the final level's n/L reports, F₂ = 1."""
    oracle = m.randomizer.level_oracle  # type: ignore[attr-defined]
    q, p, g, k = oracle.q_star, oracle.p, oracle.g, oracle.k
    levels = m.randomizer.levels  # type: ignore[attr-defined]
    return q * (1 - q) / (N / levels * (p - q) ** 2) + 1 / ((g - 1) * k)


def _histogram(m: PlannedMechanism) -> float:
    """OUE over the 16 bins (auto picks OUE at ε = 1 for 16 bins): 4e^ε/(n (e^ε − 1)²)."""
    assert m.randomizer.published()["channel"] == "oue"
    return 4 * math.e / (N * (math.e - 1) ** 2)


CHECKS: dict[str, tuple[tuple[object, ...], Callable[[PlannedMechanism], float]]] = {
    "hcms": ((16, None, None), _hcms),
    "exponential": ((16, None, None), _exponential),
    "l-grr": ((16, None, None), _longitudinal),
    "l-osue": ((16, None, None), _longitudinal),
    "pem": ((None, None, None), _pem),
    "dbitflippm": ((None, 0.0, 1.0), _dbitflip),
    "histogram": ((None, 0.0, 1.0), _histogram),
}


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_new_entries_match_their_own_formulas(name: str) -> None:
    args, formula = CHECKS[name]
    m = _planned(name, *args)
    assert _same(m.variance.variance(N), formula(m))


def test_the_checks_reject_a_variance_off_by_a_factor() -> None:
    for name, (args, formula) in CHECKS.items():
        m = _planned(name, *args)
        assert not _same(1.05 * m.variance.variance(N), formula(m)), name
        assert not _same(m.variance.variance(N) / 1.05, formula(m)), name


def test_exponential_plans_its_worst_pair() -> None:
    """The variance is linear in the distribution: the largest over point masses and
    values nobody holds bounds every distribution with f_v = 0."""
    m = _planned("exponential", 16, None, None)
    held, queried = m.variance.case  # type: ignore[misc]
    assert held != queried
    r = m.randomizer
    for x in range(16):
        counts = N * r.channel_matrix()[:, x]  # type: ignore[attr-defined]
        cov = r.estimate_covariance(counts, N)[1]  # type: ignore[attr-defined]
        others = np.delete(np.diag(cov), x)
        assert others.max() <= m.variance.variance(N) * (1 + 1e-9)


def test_planned_parameters_are_stated_in_the_entry() -> None:
    cat = plan(epsilon=1.0, domain_size=16, n=N)
    for name in ("l-grr", "l-osue"):
        assert _entry(cat.mechanisms, name).parameters["permanent_epsilon"] == pytest.approx(
            PLANNED_PERMANENT_RATIO * 1.0, rel=1e-6
        )
    assert _entry(cat.mechanisms, "hcms").parameters == {"hashes": 1024, "columns": 1024}
    num = plan(epsilon=1.0, lo=0.0, hi=1.0, n=N)
    gaussian = _entry(num.mechanisms, "gaussian")
    assert 0.0 < gaussian.local_delta <= 1e-6 and gaussian.central_epsilon is None
    assert _entry(num.mechanisms, "histogram").parameters == {"bins": 16}
    # dBitFlip's b: one bit at ε per bit, or all 16 at ε/2 each, whichever is better
    assert _entry(num.mechanisms, "dbitflippm").parameters == {"buckets": 16, "bits": 16}
    high = plan(epsilon=8.0, lo=0.0, hi=1.0, n=N)
    assert _entry(high.mechanisms, "dbitflippm").parameters == {"buckets": 16, "bits": 1}


def test_pem_threshold_is_its_discovery_threshold() -> None:
    p = plan(epsilon=2.0, n=10**6)
    pem = _entry(p.mechanisms, "pem")
    levels = pem.parameters["levels"]
    keep = keep_limit(32, int(levels), int(pem.parameters["hashes"]))  # 53 here
    z = NormalDist().inv_cdf(1 - FALSE_DISCOVERY / (256 * keep * levels))
    sd = pem.stderr
    expected = detection_threshold([sd] * int(levels - 1), sd, z * sd)
    assert pem.heavy_hitter_threshold == pytest.approx(expected, rel=1e-12)
    # stricter than one value tested against 0: L − 1 prefixes must survive first
    assert expected > heavy_hitter_threshold(sd, 1)


def test_impossible_and_malformed_queries_raise_typed_errors() -> None:
    with pytest.raises(InfeasiblePlanError):
        plan(epsilon=1.0, lo=0.0, hi=1.0, target_stderr=1e-9)
    bad = [
        {"epsilon": 0.0, "domain_size": 4, "n": 10},
        {"epsilon": math.nan, "domain_size": 4, "n": 10},
        {"epsilon": 1.0, "domain_size": 1, "n": 10},
        {"epsilon": 1.0, "domain_size": 4},
        {"epsilon": 1.0, "domain_size": 4, "n": 10, "target_stderr": 0.1},
        {"epsilon": 1.0, "lo": 1.0, "hi": 0.0, "n": 10},
        {"epsilon": 1.0, "lo": 0.0, "n": 10},
        {"epsilon": 1.0, "domain_size": 4, "lo": 0.0, "hi": 1.0, "n": 10},
        {"epsilon": 1.0, "domain_size": 4, "n": 0},
        {"epsilon": 1.0, "domain_size": 4, "n": 10, "delta": 0.0},
        {"epsilon": 1.0, "domain_size": 4, "target_stderr": -1.0},
    ]
    for query in bad:
        with pytest.raises(InvalidQueryError):
            plan(**query)  # type: ignore[arg-type]


def test_mechanisms_outside_their_epsilon_range_are_not_planned() -> None:
    planned, skipped = planned_mechanisms(None, 0.0, 1.0, 1e6)
    assert all(m.name not in skipped for m in planned)
    assert "piecewise" in skipped  # a lattice channel has a largest ε


def test_stated_parameters_are_finite_at_an_extreme_epsilon() -> None:
    """At ε = 303 L-GRR's realised ε∞ is infinite; the entry states the declared one."""
    p = plan(epsilon=303.0, domain_size=303, target_stderr=303.0)
    for entry in p.mechanisms:
        assert all(math.isfinite(v) for v in entry.parameters.values()), entry
    assert _entry(p.mechanisms, "l-grr").parameters["permanent_epsilon"] == 606.0
    assert type(p).model_validate_json(p.model_dump_json()) == p


def test_a_numeric_plan_builds_each_lattice_channel_once_per_epsilon() -> None:
    """The channels behind a numeric plan (the slow part: their decoders' least squares)
    depend on ε alone, so other bounds, n, targets and F₂ at that ε build none again."""
    builders: list[Any] = [
        laplace.build_laplace,
        hybrid.build_hybrid,
        piecewise.build_piecewise,
        gaussian.build_gaussian,
    ]
    first = plan(epsilon=1.2345, lo=0.0, hi=1.0, n=1000)
    misses = [b.cache_info().misses for b in builders]
    again = plan(epsilon=1.2345, lo=0.0, hi=1.0, n=1000)
    other = plan(epsilon=1.2345, lo=-5.0, hi=5.0, target_stderr=0.5, second_moment=0.25)
    assert [b.cache_info().misses for b in builders] == misses
    assert again == first and other.mechanisms
    plan(epsilon=1.3579, lo=0.0, hi=1.0, n=1000)  # the check can fail: a new ε builds
    assert [b.cache_info().misses for b in builders] != misses
