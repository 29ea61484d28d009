"""``GET /v1/plan``: the planner (:mod:`ldp_shared.planner`) over HTTP.

Public like ``/healthz``: it reads no collection and no report, only the registry's
formulas, so it needs no token. An impossible or malformed query is a 422 problem
document (``infeasible-plan`` or ``invalid-query``).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from ldp_aggregator.problems import problem_responses
from ldp_shared.planner import MAX_REPORTS, plan
from ldp_shared.wire.plan import Plan

router = APIRouter(prefix="/v1", tags=["planning"])


@router.get("/plan", response_model=Plan, responses=problem_responses())
def get_plan(
    epsilon: Annotated[float, Query(description="ε of one report of the attribute")],
    domain_size: Annotated[
        int | None, Query(description="a categorical attribute's number of values")
    ] = None,
    lo: Annotated[float | None, Query(description="a numeric attribute's lower bound")] = None,
    hi: Annotated[float | None, Query(description="a numeric attribute's upper bound")] = None,
    n: Annotated[int | None, Query(ge=1, le=MAX_REPORTS, description="reports expected")] = None,
    target_stderr: Annotated[
        float | None, Query(description="standard error wanted (instead of n)")
    ] = None,
    target_width: Annotated[
        float | None, Query(description="interval width wanted (instead of n)")
    ] = None,
    delta: Annotated[float, Query(description="δ of the central (shuffled) guarantee")] = 1e-6,
    confidence: Annotated[float, Query(description="level of the intervals")] = 0.95,
    second_moment: Annotated[
        float,
        Query(
            # the range is documented here and checked by the planner, so that a value
            # outside it is the planner's invalid-query problem, as for ε, δ and the rest
            json_schema_extra={"exclusiveMinimum": 0, "maximum": 1},
            description="F₂ = Σ f² of the values, in (0, 1], at which hashing's collision"
            " term is stated (1, the default: the worst case; 1/d for d equally common"
            " values)",
        ),
    ] = 1.0,
) -> Plan:
    """Every mechanism that plans the attribute, best first: the standard error at ``n``
    (or the ``n`` a target needs), report size, central ε if shuffled, heavy-hitter
    threshold. Neither bounds nor a domain size: an open domain. ``second_moment`` outside
    ``(0, 1]`` is a 422 problem."""
    return plan(
        epsilon=epsilon,
        domain_size=domain_size,
        lo=lo,
        hi=hi,
        n=n,
        target_stderr=target_stderr,
        target_width=target_width,
        delta=delta,
        confidence=confidence,
        second_moment=second_moment,
    )
