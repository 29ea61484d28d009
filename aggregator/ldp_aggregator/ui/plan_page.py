"""The dashboard's planner (``/ui/plan``): a form over :func:`ldp_shared.planner.plan`,
the function behind ``GET /v1/plan``, and its ranked table.

The form is a GET (it reads no collection and changes nothing): an attribute (a domain
size, bounds, or an open domain), ε, either ``n`` or a target standard error, and the
``F₂ = Σ f²`` of the values that hashing's collision terms are stated at (1, the worst
case, by default). The table shows, beside the errors, what the planner chose for each
mechanism (its ``parameters``) and an (ε, δ) mechanism's δ per report. A
query the planner refuses (malformed, or impossible at this ε) is shown inside the
form's panel, the form keeping what was typed, with the problem's status.
"""

from __future__ import annotations

import math
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from starlette.datastructures import QueryParams

from ldp_aggregator.problems import http_status
from ldp_aggregator.ui.render import render
from ldp_aggregator.ui.session import signed_in_role
from ldp_shared.errors import InvalidQueryError, LDPError
from ldp_shared.planner import plan
from ldp_shared.wire.plan import Plan

router = APIRouter(prefix="/ui", include_in_schema=False)

KINDS = (
    ("categorical", "Categorical: a domain of d values"),
    ("numeric", "Numeric: numbers in [lo, hi]"),
    ("open", "Open domain: any string"),
)
DEFAULTS = {
    "kind": "categorical",
    "domain_size": "10",
    "lo": "0",
    "hi": "1",
    "epsilon": "1",
    "second_moment": "1",
}
NEXT_STEP = (
    "Change the query above: a larger ε or target error, or fewer values, make a plan"
    " possible; the message says what was refused."
)


def _number(params: QueryParams, name: str, label: str) -> float | None:
    text = params.get(name, "").strip().replace(",", "")
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        raise InvalidQueryError(f"{label} must be a number, got {text!r}") from None
    if not math.isfinite(value):
        raise InvalidQueryError(f"{label} must be a finite number, got {text!r}")
    return value


def _whole(params: QueryParams, name: str, label: str) -> int | None:
    value = _number(params, name, label)
    if value is None:
        return None
    if value != int(value):
        raise InvalidQueryError(f"{label} must be a whole number, got {value:g}")
    return int(value)


def planned(params: QueryParams) -> Plan:
    """The plan the form's values ask for; :class:`InvalidQueryError` (or its subclass
    :class:`~ldp_shared.errors.InfeasiblePlanError`) for a query the planner refuses."""
    kind = params.get("kind", "categorical")
    if kind not in {k for k, _ in KINDS}:
        raise InvalidQueryError(
            f"the attribute kind must be categorical, numeric or open, got {kind!r}"
        )
    epsilon = _number(params, "epsilon", "ε")
    if epsilon is None:
        raise InvalidQueryError("give ε, the privacy of one report of the attribute")
    second_moment = _number(params, "second_moment", "F₂")  # empty: the worst case, 1
    return plan(
        epsilon=epsilon,
        domain_size=_whole(params, "domain_size", "the domain size")
        if kind == "categorical"
        else None,
        lo=_number(params, "lo", "lo") if kind == "numeric" else None,
        hi=_number(params, "hi", "hi") if kind == "numeric" else None,
        n=_whole(params, "n", "n"),
        target_stderr=_number(params, "target_stderr", "the target standard error"),
        second_moment=1.0 if second_moment is None else second_moment,
    )


@router.get("/plan")
def plan_page(request: Request) -> Response:
    """The planner form, and the ranked table once ε is given."""
    role = signed_in_role(request)
    if role is None:
        return RedirectResponse("/ui/sign-in?next=/ui/plan", status_code=303)
    params = request.query_params
    values = {**DEFAULTS, **{key: params[key] for key in params}}
    context: dict[str, Any] = {"role": role, "form": values, "kinds": KINDS, "plan": None}
    status = 200
    if "epsilon" in params:
        try:
            context["plan"] = planned(params)
        except LDPError as error:
            status = http_status(type(error))
            context["problem"] = {
                "title": error.title,
                "message": error.detail,
                "next_step": NEXT_STEP,
            }
    return render(request, "plan.html", context, status)
