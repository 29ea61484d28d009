# The single source of both clients' planner method: scripts/unasync.py writes
# plan_methods.py from this file. After changing it, run `python scripts/unasync.py`.
"""The planner of :class:`~ldp_client.async_client.AsyncLDPClient`: ``GET /v1/plan``.

:class:`AsyncPlanMethods` is a mixin: the client supplies the transport (``_call``).
The planner is pure (:func:`ldp_shared.planner.plan` answers the same without a server);
asking the aggregator answers with its registry, the mechanisms it can run.
"""

from __future__ import annotations

from typing import TypeVar

from ldp_client.protocol import ApiCall
from ldp_shared.wire.plan import Plan

__all__ = ["AsyncPlanMethods", "plan_call"]

T = TypeVar("T")


def _parse_plan(body: bytes) -> Plan:
    return Plan.model_validate_json(body)


def plan_call(
    epsilon: float,
    domain_size: int | None,
    lo: float | None,
    hi: float | None,
    n: int | None,
    target_stderr: float | None,
    target_width: float | None,
    delta: float,
    confidence: float,
    second_moment: float = 1.0,
) -> ApiCall[Plan]:
    """``GET /v1/plan`` (no token): the query's members that are set, as parameters."""
    given = {
        "epsilon": epsilon,
        "domain_size": domain_size,
        "lo": lo,
        "hi": hi,
        "n": n,
        "target_stderr": target_stderr,
        "target_width": target_width,
        "delta": delta,
        "confidence": confidence,
        "second_moment": second_moment,
    }
    params = {key: repr(value) for key, value in given.items() if value is not None}
    return ApiCall("GET", "/v1/plan", _parse_plan, params)


class AsyncPlanMethods:
    """Plan a collection: which mechanism, how many reports, what error."""

    async def _call(self, call: ApiCall[T]) -> T:
        """One API call through the client's transport (the client defines it)."""
        raise NotImplementedError

    async def plan(
        self,
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
        """Every mechanism that plans the attribute (``domain_size`` values, numbers in
        ``[lo, hi]``, or an open domain), best first, at ``n`` reports or for a target
        standard error or interval width: its error or the reports it needs, report size,
        central ε if shuffled (at ``delta``) and heavy-hitter threshold, with hashing's
        collision term stated at ``second_moment`` (F₂ = Σ f² of the values, in (0, 1];
        1, the worst case). An impossible query raises
        :class:`~ldp_shared.errors.InfeasiblePlanError`, a malformed one (``second_moment``
        outside (0, 1], say) :class:`~ldp_shared.errors.InvalidQueryError`."""
        call = plan_call(
            epsilon,
            domain_size,
            lo,
            hi,
            n,
            target_stderr,
            target_width,
            delta,
            confidence,
            second_moment,
        )
        return await self._call(call)
