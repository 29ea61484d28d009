"""The planner: the registry's own variances, ranked; n for a target; typed errors."""

from __future__ import annotations

import math

import pytest

from ldp_shared.errors import InfeasiblePlanError, InvalidQueryError
from ldp_shared.mechanisms.registry import mechanism_names
from ldp_shared.planner import heavy_hitter_threshold, plan, planned_mechanisms
from ldp_shared.shuffling import closed_form_epsilon


def test_categorical_plan_uses_the_kernel_variance_and_ranks_by_error() -> None:
    p = plan(epsilon=1.0, domain_size=1024, n=100_000)
    names = [e.mechanism for e in p.mechanisms]
    assert {"oue", "sue", "grr", "hadamard", "flh"} <= set(names)
    assert sorted(names + p.not_planned) == mechanism_names()
    stderrs = [e.stderr for e in p.mechanisms]
    assert stderrs == sorted(stderrs)
    oue = next(e for e in p.mechanisms if e.mechanism == "oue")
    # Wang et al. 2017: OUE's Var* = 4e^ε / (n (e^ε − 1)²)
    e = math.e
    assert oue.stderr == pytest.approx(math.sqrt(4 * e / (100_000 * (e - 1) ** 2)), rel=1e-9)
    assert oue.report_bytes == 128  # 1024 bits
    grr = next(e for e in p.mechanisms if e.mechanism == "grr")
    assert grr.report_bytes == 2
    assert oue.interval_width == pytest.approx(2 * 1.959963985 * oue.stderr, rel=1e-6)
    assert oue.central_epsilon is not None and oue.central_epsilon < 1.0
    assert oue.central_epsilon_closed_form == pytest.approx(closed_form_epsilon(1.0, 100_000, 1e-6))
    assert oue.heavy_hitter_threshold == pytest.approx(heavy_hitter_threshold(oue.stderr, 1024))


def test_numeric_plan_ranks_means_in_attribute_units() -> None:
    unit = plan(epsilon=1.0, lo=0.0, hi=1.0, n=10_000)
    wide = plan(epsilon=1.0, lo=0.0, hi=100.0, n=10_000)
    assert {e.mechanism for e in unit.mechanisms} >= {"duchi", "piecewise", "hybrid", "laplace"}
    for a, b in zip(unit.mechanisms, wide.mechanisms, strict=True):
        assert a.mechanism == b.mechanism
        assert b.stderr == pytest.approx(100 * a.stderr, rel=1e-9)
        assert a.heavy_hitter_threshold is None
    duchi = next(e for e in unit.mechanisms if e.mechanism == "duchi")
    c = (math.e + 1) / (math.e - 1)  # Duchi et al.: C = (e^ε + 1)/(e^ε − 1), Var = C²/n at t = 0
    assert duchi.stderr == pytest.approx(0.5 * c / 100.0, rel=1e-3)


def test_target_gives_the_n_that_reaches_it() -> None:
    p = plan(epsilon=2.0, domain_size=16, target_stderr=0.002)
    ns = [e.n for e in p.mechanisms]
    assert ns == sorted(ns)
    for entry in p.mechanisms:
        assert entry.stderr <= 0.002
        below = plan(epsilon=2.0, domain_size=16, n=entry.n - 1)
        worse = next(e for e in below.mechanisms if e.mechanism == entry.mechanism)
        assert worse.stderr > 0.002
    width = plan(epsilon=2.0, domain_size=16, target_width=0.01, confidence=0.9)
    assert width.target_stderr == pytest.approx(0.01 / (2 * 1.6448536), rel=1e-6)


def test_open_domain_plans_hashing_with_its_collision_floor() -> None:
    p = plan(epsilon=1.0, n=10**6)
    assert [e.mechanism for e in p.mechanisms] == ["flh"]
    # the collision term does not shrink with n: a target below it is unreachable
    with pytest.raises(InfeasiblePlanError):
        plan(epsilon=1.0, target_stderr=0.001)


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
