"""Empty and error states that say what to do next, and a collection's release status."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Engine

from ldp_aggregator.problems import http_status
from ldp_aggregator.release import current_stats
from ldp_aggregator.storage.collections import StoredCollection
from ldp_aggregator.ui.panel import PanelContext, PanelView
from ldp_shared.errors import (
    AuthenticationError,
    InsufficientReportsError,
    InvalidQueryError,
    LDPError,
    NotFoundError,
    PermissionDeniedError,
)


@dataclass(frozen=True)
class ReleaseStatus:
    """How many reports a collection holds against its release minimum."""

    n_reports: int
    min_reports: int

    @property
    def released(self) -> bool:
        return self.n_reports >= self.min_reports

    @property
    def sentence(self) -> str:
        if self.released:
            return (
                f"Released: this collection has {self.n_reports:,} reports, at least the"
                f" {self.min_reports:,} its release policy requires."
            )
        return (
            f"Not released yet: this collection has {self.n_reports:,} of its"
            f" {self.min_reports:,} required reports."
        )


def release_status(engine: Engine, collection: StoredCollection) -> ReleaseStatus:
    stats = current_stats(engine, collection)
    return ReleaseStatus(stats.n_reports, collection.config.spec.release.min_reports)


def _next_step(ctx: PanelContext, error: LDPError) -> str:
    name = ctx.collection.name
    if isinstance(error, InsufficientReportsError):
        return (
            "Estimates appear here once enough reports have arrived: devices send them to"
            f" POST /v1/collections/{name}/reports (the SDK's submit). Come back later."
        )
    if isinstance(error, InvalidQueryError):
        return "Choose another option on this page; the message above says which apply."
    if isinstance(error, NotFoundError):
        return "Pick one from the list on this page; it may have been removed."
    if isinstance(error, AuthenticationError | PermissionDeniedError):
        return "Sign in again with the analyst token."
    return "Try again; if it persists, the aggregator's log has the details."


def problem_view(ctx: PanelContext, error: LDPError) -> PanelView:
    """The error state of a panel: what went wrong, in the collection's own numbers where
    it is a shortage of reports, and what to do next."""
    message = error.detail
    if isinstance(error, InsufficientReportsError):
        status = release_status(ctx.state.engine, ctx.collection)
        if not status.released:
            message = (
                f"This collection has {status.n_reports:,} of its {status.min_reports:,}"
                " required reports."
            )
    return PanelView(
        "panels/_state.html",
        {"title": error.title, "message": message, "next_step": _next_step(ctx, error)},
        status_code=http_status(type(error)),
    )
