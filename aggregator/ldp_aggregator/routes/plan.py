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
) -> Plan:
    """Every mechanism that plans the attribute, best first: the standard error at ``n``
    (or the ``n`` a target needs), report size, central ε if shuffled, heavy-hitter
    threshold. Neither bounds nor a domain size: an open domain."""
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
    )
