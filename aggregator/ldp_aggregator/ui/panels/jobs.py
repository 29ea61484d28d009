"""The collection's long-running jobs (mining now; training later) and their progress.

Jobs of a kind this panel knows (itemsets) link to their result; a job of any other
kind is still listed with its status and progress. The page reloads itself every few
seconds while a job is queued or running.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from ldp_aggregator.jobs import ITEMSETS, job_view
from ldp_aggregator.storage.jobs import JobRow, list_jobs
from ldp_aggregator.ui.panel import Panel, PanelContext, PanelView

ACTIVE = ("queued", "running")

RESULT_PANEL = {ITEMSETS: "itemsets"}
"""Where the result of each kind of job is shown (kind to panel slug)."""


@dataclass(frozen=True)
class JobLine:
    id: str
    kind: str
    status: str
    progress: str
    created: str
    updated: str
    error: str
    link: str


def _when(unix: int) -> str:
    return datetime.fromtimestamp(unix, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _line(ctx: PanelContext, row: JobRow) -> JobLine:
    status, error = row.status, ""
    if row.kind == ITEMSETS:
        job = job_view(ctx.collection, row, lost=row.lost())
        status = job.status
        error = "" if job.error is None else f"{job.error.title}: {job.error.detail}"
    elif row.lost():
        status, error = "failed", "the replica running this job stopped; start it again"
    slug = RESULT_PANEL.get(row.kind)
    return JobLine(
        id=row.id,
        kind=row.kind,
        status=status,
        progress=row.progress or "",
        created=_when(row.created_unix),
        updated=_when(row.updated_unix),
        error=error,
        link=ctx.url(slug, job=row.id) if slug and status == "done" else "",
    )


def view(ctx: PanelContext) -> PanelView:
    with ctx.state.engine.connect() as connection:
        lines = [_line(ctx, row) for row in list_jobs(connection, ctx.collection.id)]
    running = any(line.status in ACTIVE for line in lines)
    return PanelView("panels/jobs.html", {"jobs": lines}, refresh=running)


PANEL = Panel(slug="jobs", title="Jobs", view=view)
