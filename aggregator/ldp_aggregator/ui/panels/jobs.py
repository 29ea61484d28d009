"""The collection's jobs (mining itemsets, training a model) and their progress.

A mining job runs in a worker thread and is failed ("lost") when its replica stops
refreshing it (``job_view``); a training job is driven by the devices' reports, so its
progress is its round and the reports of the open round (``read_training_job``). A job
of another kind is listed with its stored status and progress. The page reloads itself
every few seconds while a job is queued or running.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from ldp_aggregator.jobs import ITEMSETS, job_view
from ldp_aggregator.storage.jobs import JobRow, list_jobs
from ldp_aggregator.training import TRAINING, read_training_job
from ldp_aggregator.ui.panel import Panel, PanelContext, PanelView

ACTIVE = ("queued", "running")

RESULT_PANEL = {ITEMSETS: "itemsets", TRAINING: "training"}
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
    status, progress, failure = row.status, row.progress or "", None
    if row.kind == ITEMSETS:
        mining = job_view(ctx.collection, row, lost=row.lost())
        status, failure = mining.status, mining.error
    elif row.kind == TRAINING:
        training = read_training_job(ctx.state.engine, ctx.collection, row.id)
        status, failure = training.status, training.error
        if status in ACTIVE:
            progress = f"{progress}; {training.received:,} reports in the open round"
    error = "" if failure is None else f"{failure.title}: {failure.detail}"
    slug = RESULT_PANEL.get(row.kind)
    return JobLine(
        id=row.id,
        kind=row.kind,
        status=status,
        progress=progress,
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


PANEL = Panel(slug="jobs", title="Jobs", view=view, needs_reports=False)
