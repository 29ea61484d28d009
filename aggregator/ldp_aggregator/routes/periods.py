"""Retention of whole periods (admin): merge old periods into coarser ones, or drop them
(:mod:`ldp_aggregator.storage.period_retention`)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request

from ldp_aggregator.auth import require_admin
from ldp_aggregator.deps import app_state
from ldp_aggregator.problems import problem_responses
from ldp_aggregator.storage.period_retention import PeriodChange, drop_periods, merge_periods
from ldp_shared.errors import InvalidQueryError
from ldp_shared.periods import parse_bound
from ldp_shared.wire.trends import PeriodChangeResult, PeriodDrop, PeriodMerge

router = APIRouter(
    prefix="/v1/collections", tags=["collections"], dependencies=[Depends(require_admin)]
)


def _answer(name: str, change: PeriodChange) -> PeriodChangeResult:
    return PeriodChangeResult(
        collection=name,
        periods_before=change.periods_before,
        periods_after=change.periods_after,
        reports=change.reports,
    )


@router.post(
    "/{name}/periods/merge",
    response_model=PeriodChangeResult,
    responses=problem_responses(401, 403, 404),
)
def merge(name: str, body: PeriodMerge, request: Request) -> PeriodChangeResult:
    """Add every period that starts before ``before`` into the coarser period containing
    it (``day``, ``week``) or into the oldest of them (``all``). Estimates over all
    periods are unchanged; a window then takes in a merged period whole when its start
    lies in the window."""
    state = app_state(request)
    collection = state.collections.get(name)
    before = parse_bound(body.before, collection.config.spec.period, "before")
    return _answer(name, merge_periods(state.engine, collection, before, body.into))


@router.post(
    "/{name}/periods/drop",
    response_model=PeriodChangeResult,
    responses=problem_responses(401, 403, 404),
)
def drop(name: str, body: PeriodDrop, request: Request) -> PeriodChangeResult:
    """Delete the statistics of every period that starts before ``before`` and fold its
    reports (their ids stay, so a replay still counts once). ``confirm`` must repeat the
    collection's name (422 otherwise, and nothing is dropped)."""
    if body.confirm != name:
        raise InvalidQueryError(
            f"confirm={body.confirm!r} is not the collection's name: send {name!r} to drop"
        )
    state = app_state(request)
    collection = state.collections.get(name)
    before = parse_bound(body.before, collection.config.spec.period, "before")
    return _answer(name, drop_periods(state.engine, collection, before))
