"""The planner: which mechanism, how many people, and what error, before collecting.

Pure: from an attribute (``domain_size`` values, numbers in ``[lo, hi]``, or an open
domain) and ε, with either ``n`` reports or a target standard error (or interval width),
it asks every registered spec class for its specs of that attribute
(:meth:`AttributeSpec.plan_specs`) and each one's randomizer for its closed-form variance
(:meth:`Randomizer.planned_variance`): ``Var = per_report/n + floor + collision·F₂``,
the last term a hash family's collisions, stated at the query's ``F₂ = Σ f²`` of the
values (``second_moment``, default 1: the worst case). A spec whose planned parameters
follow ε (a longitudinal ε∞, dBitFlip's bits) is fixed by :meth:`AttributeSpec.plan_at`.
Then:

* **at n**: ``SE = √Var(n)``, ranked by SE (then report size); in a numeric query the
  means (attribute units) come first, then the bin frequencies of a histogram;
* **for a target** ``s`` (or a width ``w``: ``s = w/(2 z)``):
  ``n = ⌈per_report/(s² − floor)⌉`` (``floor`` with the collision term), ranked by n; a
  mechanism whose ``floor ≥ s²`` cannot reach it at any n; the target is in the query's
  units (a frequency, or the attribute's for a number), so a bin frequency is not
  planned for a numeric target;
* **central ε** at that n if the reports are shuffled (:mod:`ldp_shared.shuffling`), for a
  pure ε-LDP mechanism (the numerical bound where its sum is small enough to answer
  quickly, :data:`PLANNER_CELLS`, else the closed form);
* **heavy-hitter threshold** of a frequency mechanism: the least frequency ``f`` that a
  one-sided test at level ``α/d`` against 0 finds with probability ``1 − β``,
  ``(z_{1−α/d} + z_{1−β})·SE₀`` (normal approximation; α = 0.05, β = 0.1, ``d`` the
  values: the domain size or the bins, 1 for an open domain: one value named in
  advance), or the mechanism's own discovery threshold
  (:meth:`Randomizer.planned_threshold`, ``pem``).

A query no mechanism meets raises :class:`InfeasiblePlanError`; a malformed one
:class:`InvalidQueryError`.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from statistics import NormalDist

from ldp_shared.errors import ConfigurationError, InfeasiblePlanError, InvalidQueryError
from ldp_shared.mechanisms.base import (
    AttributeSpec,
    PlannedVariance,
    Randomizer,
    registered_classes,
)
from ldp_shared.shuffling import CentralGuarantee, central_epsilon
from ldp_shared.wire.plan import AttributeKind, Plan, PlanEntry

FALSE_DISCOVERY = 0.05
"""α of the heavy-hitter threshold (split over the d values)."""
MISS = 0.1
"""β of the heavy-hitter threshold: a value at the threshold is missed this often."""
PLANNER_CELLS = 8_000_000
"""Window of the numerical shuffle bound the planner sums per mechanism (about 0.5 s);
beyond it the central ε is the closed form, still a valid bound."""
MAX_REPORTS = 10**12
"""The largest n the planner states; a target that needs more is unreachable."""
_N01 = NormalDist()
_RELEASE: dict[AttributeKind, str] = {
    "categorical": "frequencies",
    "open": "frequencies",
    "numeric": "mean",
}
"""What a target's standard error is of, by attribute: a frequency, or the mean."""


@dataclass(frozen=True)
class PlannedMechanism:
    """A registered mechanism built for the planner's attribute at the query's ε."""

    name: str
    spec: AttributeSpec
    randomizer: Randomizer
    variance: PlannedVariance


def _kind(domain_size: int | None, lo: float | None, hi: float | None) -> AttributeKind:
    if domain_size is not None:
        if lo is not None or hi is not None:
            raise InvalidQueryError("give either domain_size or lo and hi, not both")
        if isinstance(domain_size, bool) or domain_size < 2:
            raise InvalidQueryError(f"domain_size must be at least 2, got {domain_size}")
        return "categorical"
    if (lo is None) != (hi is None):
        raise InvalidQueryError("a numeric attribute needs both lo and hi")
    if lo is not None and hi is not None:
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise InvalidQueryError(f"bounds must be finite with lo < hi, got [{lo}, {hi}]")
        return "numeric"
    return "open"


def planned_mechanisms(
    domain_size: int | None,
    lo: float | None,
    hi: float | None,
    epsilon: float,
    second_moment: float = 1.0,
) -> tuple[list[PlannedMechanism], list[str]]:
    """The registered mechanisms that plan this attribute at ε, with their collision terms
    at ``F₂ = second_moment``, and the names of those that do not (no spec for it, no
    closed-form variance, or ε outside their range)."""
    planned: list[PlannedMechanism] = []
    skipped: list[str] = []
    for spec_class in registered_classes():
        specs = spec_class.plan_specs(domain_size, lo, hi) if spec_class.takes_budget else []
        built = {spec.mechanism: spec for spec in specs}
        for name in spec_class.mechanism_literals():
            spec = built.get(name)
            try:
                spec = None if spec is None else spec.plan_at(epsilon)
                randomizer = None if spec is None else spec.randomizer(epsilon)
            except ConfigurationError:
                randomizer = None
            variance = None if randomizer is None else randomizer.planned_variance()
            if spec is None or randomizer is None or variance is None:
                skipped.append(name)
            else:
                variance = variance.assuming(second_moment)
                planned.append(PlannedMechanism(name, spec, randomizer, variance))
    return planned, sorted(skipped)


def _central(epsilon0: float, n: int, delta: float) -> CentralGuarantee:
    """The shuffled guarantee at ε₀ rounded up to 10 significant digits: the bound grows
    with ε₀, so it still holds, and mechanisms whose exact ε differ by rounding (the
    realised probabilities) share one computation and one answer."""
    step = 10.0 ** (math.floor(math.log10(epsilon0)) - 9)
    up = math.ceil(epsilon0 / step) * step
    return _central_at(up if up >= epsilon0 else up + step, n, delta)


@functools.lru_cache(maxsize=256)
def _central_at(epsilon0: float, n: int, delta: float) -> CentralGuarantee:
    return central_epsilon(epsilon0, n, delta, max_cells=PLANNER_CELLS)


def heavy_hitter_threshold(stderr_at_zero: float, values: int) -> float:
    """``(z_{1−α/d} + z_{1−β})·SE₀``, at most 1 (the module docstring)."""
    z_test = _N01.inv_cdf(1.0 - FALSE_DISCOVERY / values)
    z_power = _N01.inv_cdf(1.0 - MISS)
    return min(1.0, (z_test + z_power) * stderr_at_zero)


def _threshold(m: PlannedMechanism, n: int, se: float, domain_size: int | None) -> float | None:
    """The mechanism's own discovery threshold, else the test of one of its ``d`` values
    (its spec's values, the query's domain size, or 1 for a value named in advance)."""
    if m.spec.released_as != "frequencies":
        return None
    own = m.randomizer.planned_threshold(m.variance, n)
    if own is not None:
        return own
    return heavy_hitter_threshold(se, len(m.spec.values) or domain_size or 1)


def _entry(
    m: PlannedMechanism, n: int, z: float, delta: float, domain_size: int | None
) -> PlanEntry:
    se = math.sqrt(m.variance.variance(n))
    pure = m.randomizer.delta == 0.0 and math.isfinite(m.randomizer.exact_epsilon)
    central = _central(m.randomizer.exact_epsilon, n, delta) if pure else None
    return PlanEntry(
        mechanism=m.name,
        released_as=m.spec.released_as,
        n=n,
        stderr=se,
        interval_width=2.0 * z * se,
        report_bytes=m.randomizer.segment.byte_length,
        central_epsilon=None if central is None else central.epsilon,
        central_epsilon_closed_form=None if central is None else central.epsilon_closed_form,
        heavy_hitter_threshold=_threshold(m, n, se, domain_size),
        second_moment=m.variance.second_moment if m.variance.collision > 0.0 else None,
        local_delta=m.randomizer.delta,
        parameters={k: v for k, v in m.variance.parameters.items() if math.isfinite(v)},
    )


def plan(
    *,
    epsilon: float,
    domain_size: int | None = None,
    lo: float | None = None,
    hi: float | None = None,
    n: int | None = None,
    target_stderr: float | None = None,
    target_width: float | None = None,
    delta: float = 1e-6,
    confidence: float = 0.95,
    second_moment: float = 1.0,
) -> Plan:
    """Every mechanism that plans the attribute, best first (the module docstring);
    ``second_moment`` is the ``F₂`` hashing's collision terms are stated at."""
    kind = _kind(domain_size, lo, hi)
    if not (math.isfinite(epsilon) and epsilon > 0.0):
        raise InvalidQueryError(f"epsilon must be a positive number, got {epsilon}")
    if not 0.0 < delta < 1.0:
        raise InvalidQueryError(f"delta must be in (0, 1), got {delta}")
    if not 0.0 < confidence < 1.0:
        raise InvalidQueryError(f"confidence must be in (0, 1), got {confidence}")
    given = [x is not None for x in (n, target_stderr, target_width)]
    if sum(given) != 1:
        raise InvalidQueryError("give exactly one of n, target_stderr and target_width")
    z = _N01.inv_cdf(0.5 + confidence / 2.0)
    if target_width is not None:
        if not (math.isfinite(target_width) and target_width > 0.0):
            raise InvalidQueryError(f"target_width must be positive, got {target_width}")
        target_stderr = target_width / (2.0 * z)
    if target_stderr is not None and not (math.isfinite(target_stderr) and target_stderr > 0):
        raise InvalidQueryError(f"target_stderr must be positive, got {target_stderr}")
    if n is not None and (isinstance(n, bool) or not 1 <= n <= MAX_REPORTS):
        raise InvalidQueryError(f"n must be a whole number from 1 to {MAX_REPORTS}, got {n}")
    if not (math.isfinite(second_moment) and 0.0 < second_moment <= 1.0):
        raise InvalidQueryError(f"second_moment (F₂) must be in (0, 1], got {second_moment}")

    planned, skipped = planned_mechanisms(domain_size, lo, hi, epsilon, second_moment)
    if not planned:
        raise InfeasiblePlanError(
            f"no registered mechanism plans a {kind} attribute at epsilon {epsilon:g}"
        )
    release = _RELEASE[kind]
    entries: list[PlanEntry] = []
    unreachable: list[str] = []
    for m in planned:
        if target_stderr is None:
            assert n is not None
            entries.append(_entry(m, n, z, delta, domain_size))
            continue
        if m.spec.released_as != release:  # a target is in the attribute's units
            skipped.append(m.name)
            continue
        room = target_stderr**2 - m.variance.floor_total
        needed = math.ceil(m.variance.per_report / room) if room > 0 else MAX_REPORTS + 1
        if needed > MAX_REPORTS:
            unreachable.append(m.name)
        else:
            entries.append(_entry(m, max(1, needed), z, delta, domain_size))
    if not entries:
        raise InfeasiblePlanError(
            f"no mechanism reaches a standard error of {target_stderr:g} at epsilon"
            f" {epsilon:g} with at most {MAX_REPORTS:.0e} reports; raise epsilon or the target"
        )
    entries.sort(
        key=lambda e: (e.released_as != release, e.n, e.stderr, e.report_bytes, e.mechanism)
    )
    return Plan(
        kind=kind,
        domain_size=domain_size,
        lo=lo,
        hi=hi,
        epsilon=epsilon,
        n=n,
        target_stderr=target_stderr,
        delta=delta,
        second_moment=second_moment,
        confidence=confidence,
        mechanisms=entries,
        unreachable=sorted(unreachable),
        not_planned=sorted(skipped),
    )
