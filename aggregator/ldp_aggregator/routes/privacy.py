"""The privacy devices have spent, as the aggregator sees it (analyst)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request

from ldp_aggregator.auth import require_analyst
from ldp_aggregator.deps import app_state
from ldp_aggregator.privacy_spent import privacy_spent
from ldp_aggregator.problems import problem_responses
from ldp_shared.wire.privacy import PrivacySpent

router = APIRouter(prefix="/v1", tags=["privacy"])


@router.get(
    "/privacy",
    response_model=PrivacySpent,
    dependencies=[Depends(require_analyst)],
    responses=problem_responses(401),
)
def privacy(request: Request) -> PrivacySpent:
    """Per collection the exact ε and δ of one record's report, per training job those of
    a device's one report; the reports and releases so far; and what a device that took
    part in all of them has spent at most (sequential composition: Σ ε, Σ δ, for one
    report each; a further fresh report to a collection adds its ε per record again).
    Releases are post-processing of the reports and spend nothing more."""
    return privacy_spent(app_state(request))
