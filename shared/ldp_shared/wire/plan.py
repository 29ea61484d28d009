"""Wire types of the planner (``GET /v1/plan``, SDK ``plan()``, ``ldpcollect plan``).

A :class:`Plan` answers "which mechanism, how many people, what error": every registered
mechanism that plans the attribute, best first, with the standard error it gives at the
query's ``n`` (or the ``n`` it needs for the target), its report size, the central ε if
its reports are shuffled, and the heavy-hitter threshold of a frequency mechanism.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ldp_shared.wire.base import WireModel

AttributeKind = Literal["categorical", "numeric", "open"]


class PlanEntry(WireModel):
    """One mechanism's prediction for the query."""

    mechanism: str
    released_as: str = Field(description="'frequencies' (one value's share) or 'mean'")
    n: int = Field(description="reports: the query's n, or the n this mechanism needs")
    stderr: float = Field(
        description="standard error of one estimate at n: a value of frequency 0, or the"
        " mean at the worst true value (attribute units)"
    )
    interval_width: float = Field(description="width of the two-sided interval at n")
    report_bytes: int = Field(description="bytes of this attribute's segment in a report")
    central_epsilon: float | None = Field(
        description="ε against the aggregator if the n reports are shuffled (the tighter"
        " bound); null for an (ε, δ) mechanism"
    )
    central_epsilon_closed_form: float | None = Field(
        description="the closed-form bound (Feldman, McMillan and Talwar 2021, Thm 3.1)"
    )
    heavy_hitter_threshold: float | None = Field(
        description="least frequency found with probability 0.9 by a test at level"
        " 0.05/d against 0 (pem: by its own discovery); null for a mean"
    )
    second_moment: float | None = Field(
        default=None,
        description="F₂ = Σ f² of the others' values that the hashing collision term,"
        " which no n removes, is stated at; null for a mechanism without one",
    )
    local_delta: float = Field(
        default=0.0, description="δ of one report: 0 for a pure ε-LDP mechanism"
    )
    parameters: dict[str, int | float] = Field(
        default_factory=dict,
        description="the mechanism's parameters the planner chose (hash functions, bins,"
        " ε∞, δ): a collection declares them to get this prediction",
    )


class Plan(WireModel):
    """The planner's answer: the query echoed and the mechanisms, best first."""

    kind: AttributeKind
    domain_size: int | None
    lo: float | None
    hi: float | None
    epsilon: float
    n: int | None = Field(description="the query's n (null when it gave a target)")
    target_stderr: float | None = Field(description="the target (null when it gave n)")
    delta: float = Field(description="δ of the central guarantee")
    second_moment: float = Field(
        default=1.0,
        description="F₂ = Σ f² of the values assumed by collision terms (1: the worst case)",
    )
    confidence: float
    mechanisms: list[PlanEntry] = Field(description="best first: lowest error, or fewest reports")
    unreachable: list[str] = Field(
        description="mechanisms that plan the attribute but cannot reach the target at any n"
    )
    not_planned: list[str] = Field(
        description="registered mechanisms with no closed-form variance for this attribute"
        " (or, for a target, none in the target's units)"
    )
