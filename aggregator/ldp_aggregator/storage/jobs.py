"""Long-running analysis jobs (frequent-itemset mining): one row per job.

A job is created by the replica that received the request and run by a worker thread
of that replica; its state, progress and result are stored here, so that any replica
can answer the poll. The running replica refreshes ``updated_unix`` while it works; a
queued or running job that has not been refreshed for :data:`STALE_AFTER_SECONDS` was
lost (its replica stopped) and is reported as failed.

The table is defined on the schema's :data:`~ldp_aggregator.storage.tables.metadata`
(``ldp_aggregator.storage`` imports this module, so the table is always registered);
migration 0003 creates it. Nothing in it concerns the people who reported: a job holds
an analyst's query and the released estimates.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import (
    BigInteger,
    Column,
    Connection,
    ForeignKey,
    Integer,
    String,
    Table,
    Text,
    delete,
    insert,
    select,
    update,
)

from ldp_aggregator.pages import PageQuery
from ldp_aggregator.storage.tables import metadata

STALE_AFTER_SECONDS = 300
"""A queued or running job not refreshed for this long is reported as lost."""

RETENTION_SECONDS = 7 * 24 * 3600
"""Finished jobs older than this are deleted when a new job is created (except the
:data:`KEPT_KINDS`)."""

KEPT_KINDS = ("training",)
"""Jobs whose result is a model an analyst keeps: never deleted by the retention rule."""

jobs = Table(
    "jobs",
    metadata,
    Column("id", String(32), primary_key=True),
    Column(
        "collection_id",
        Integer,
        ForeignKey("collections.id", ondelete="CASCADE"),
        nullable=False,
        index=True,
    ),
    Column("kind", String(32), nullable=False),
    Column("status", String(16), nullable=False),
    Column("request_json", Text, nullable=False),
    Column("progress", String(200), nullable=True),
    Column("result_json", Text, nullable=True),
    Column("error_json", Text, nullable=True),
    Column("created_unix", BigInteger, nullable=False),
    Column("updated_unix", BigInteger, nullable=False),
)


@dataclass(frozen=True)
class JobRow:
    """A stored job."""

    id: str
    collection_id: int
    kind: str
    status: str
    request_json: str
    progress: str | None
    result_json: str | None
    error_json: str | None
    created_unix: int
    updated_unix: int

    def lost(self, now: int | None = None) -> bool:
        """Queued or running, but not refreshed for :data:`STALE_AFTER_SECONDS`."""
        return _stale(self.status, self.updated_unix, now)


@dataclass(frozen=True)
class JobHead:
    """What a list of jobs shows of one (its request and result are not read)."""

    id: str
    status: str
    progress: str | None
    created_unix: int
    updated_unix: int

    def lost(self, now: int | None = None) -> bool:
        """As :meth:`JobRow.lost`."""
        return _stale(self.status, self.updated_unix, now)


def _stale(status: str, updated_unix: int, now: int | None) -> bool:
    current = int(time.time()) if now is None else now
    return status in ("queued", "running") and current - updated_unix > STALE_AFTER_SECONDS


def insert_job(
    connection: Connection, job_id: str, collection_id: int, kind: str, request_json: str
) -> None:
    """Store a new queued job (and drop finished jobs past :data:`RETENTION_SECONDS`)."""
    now = int(time.time())
    connection.execute(
        delete(jobs).where(
            jobs.c.status.in_(("done", "failed")),
            jobs.c.kind.not_in(KEPT_KINDS),
            jobs.c.updated_unix < now - RETENTION_SECONDS,
        )
    )
    connection.execute(
        insert(jobs).values(
            id=job_id,
            collection_id=collection_id,
            kind=kind,
            status="queued",
            request_json=request_json,
            created_unix=now,
            updated_unix=now,
        )
    )


def update_job(
    connection: Connection,
    job_id: str,
    *,
    status: str | None = None,
    progress: str | None = None,
    result_json: str | None = None,
    error_json: str | None = None,
) -> None:
    """Change a job's state; ``updated_unix`` is refreshed every time."""
    values: dict[str, object] = {"updated_unix": int(time.time())}
    if status is not None:
        values["status"] = status
    if progress is not None:
        values["progress"] = progress[:200]
    if result_json is not None:
        values["result_json"] = result_json
    if error_json is not None:
        values["error_json"] = error_json
    connection.execute(update(jobs).where(jobs.c.id == job_id).values(**values))


def touch_jobs(connection: Connection, job_ids: Sequence[str]) -> None:
    """Refresh ``updated_unix`` of several jobs (a worker's heartbeat)."""
    if job_ids:
        connection.execute(
            update(jobs).where(jobs.c.id.in_(list(job_ids))).values(updated_unix=int(time.time()))
        )


def read_job(connection: Connection, job_id: str) -> JobRow | None:
    """The job ``job_id``, or ``None``."""
    row = connection.execute(select(jobs).where(jobs.c.id == job_id)).one_or_none()
    if row is None:
        return None
    return JobRow(
        id=str(row.id),
        collection_id=int(row.collection_id),
        kind=str(row.kind),
        status=str(row.status),
        request_json=str(row.request_json),
        progress=row.progress,
        result_json=row.result_json,
        error_json=row.error_json,
        created_unix=int(row.created_unix),
        updated_unix=int(row.updated_unix),
    )


def list_jobs(connection: Connection, collection_id: int) -> list[JobRow]:
    """The collection's jobs of every kind, newest first (for the dashboard)."""
    ids = connection.execute(
        select(jobs.c.id)
        .where(jobs.c.collection_id == collection_id)
        .order_by(jobs.c.created_unix.desc(), jobs.c.id)
    ).scalars()
    found = (read_job(connection, str(job_id)) for job_id in list(ids))
    return [row for row in found if row is not None]


def page_jobs(
    connection: Connection, collection_id: int, kind: str, page: PageQuery
) -> tuple[list[JobHead], str | None]:
    """One page of the collection's jobs of one kind, by id, and the next page's cursor."""
    query = select(
        jobs.c.id, jobs.c.status, jobs.c.progress, jobs.c.created_unix, jobs.c.updated_unix
    ).where(jobs.c.collection_id == collection_id, jobs.c.kind == kind)
    heads = [
        JobHead(
            id=str(row.id),
            status=str(row.status),
            progress=row.progress,
            created_unix=int(row.created_unix),
            updated_unix=int(row.updated_unix),
        )
        for row in connection.execute(page.select(query, jobs.c.id))
    ]
    return page.cut(heads, lambda head: head.id)
