"""Mining jobs: run in worker threads, stored in the ``jobs`` table, polled by callers.

``POST /v1/collections/{name}/itemsets`` stores a queued job and hands it to this
replica's :class:`JobRunner` (a small thread pool, :data:`WORKERS` jobs at a time, so
mining never blocks the request threads); the request then waits up to the query's
``wait_seconds`` and answers either the finished job (200) or the job as it stands
(202, ``Location`` of the job). The job's state, progress and result live in the
database, so any replica can answer ``GET .../itemsets/{id}``.

While it works, a runner refreshes its jobs' ``updated_unix`` (at most every
:data:`HEARTBEAT_SECONDS`, also for the jobs waiting in its queue); a job whose replica
stopped is reported as failed once it has not been refreshed for
:data:`~ldp_aggregator.storage.jobs.STALE_AFTER_SECONDS`. On shutdown the runner stops
its jobs at their next chunk and marks them failed.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Container
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

from fastapi import FastAPI
from sqlalchemy import Engine

from ldp_aggregator.itemsets import mine_collection
from ldp_aggregator.pages import PageQuery
from ldp_aggregator.problems import http_status
from ldp_aggregator.storage.collections import StoredCollection
from ldp_aggregator.storage.jobs import (
    JobRow,
    insert_job,
    page_jobs,
    read_job,
    touch_jobs,
    update_job,
)
from ldp_shared.errors import JobCancelledError, LDPError, NotFoundError, problem_type
from ldp_shared.wire.itemsets import ItemsetJob, ItemsetQuery, ItemsetResult, JobError
from ldp_shared.wire.lists import JobList, JobSummary

logger = logging.getLogger("ldp_aggregator")

WORKERS = 1
"""Mining jobs run at once per replica (each uses BLAS threads of its own)."""

HEARTBEAT_SECONDS = 2.0
"""Least time between two refreshes of a runner's jobs in the database."""

ITEMSETS = "itemsets"


def _new_job_id() -> str:
    return secrets.token_urlsafe(16)[:22]


def _problem(error: LDPError) -> JobError:
    return JobError(
        type=problem_type(type(error)),
        title=error.title,
        status=http_status(type(error)),
        detail=error.detail,
    )


class JobRunner:
    """This replica's worker threads for mining jobs."""

    def __init__(self, engine: Engine, workers: int = WORKERS) -> None:
        self._engine = engine
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ldp-job")
        self._lock = threading.Lock()
        self._active: dict[str, threading.Event] = {}
        self._started: set[str] = set()
        self._closing = threading.Event()
        self._last_beat = 0.0

    # ------------------------------------------------------------------ submitting

    def submit(self, collection: StoredCollection, query: ItemsetQuery) -> str:
        """Store a queued job for ``query`` and start it when a worker is free; its id."""
        job_id = _new_job_id()
        with self._engine.begin() as connection:
            insert_job(connection, job_id, collection.id, ITEMSETS, query.model_dump_json())
        finished = threading.Event()
        with self._lock:
            self._active[job_id] = finished
        self._executor.submit(self._run, job_id, collection, query, finished)
        return job_id

    def wait(self, job_id: str, seconds: float) -> bool:
        """Wait up to ``seconds`` for a job of this runner; whether it has finished."""
        with self._lock:
            finished = self._active.get(job_id)
        return True if finished is None else finished.wait(seconds)

    # ------------------------------------------------------------------ running

    def _heartbeat(self, job_id: str, message: str) -> None:
        if self._closing.is_set():
            raise JobCancelledError("the aggregator is shutting down")
        now = time.monotonic()
        if now - self._last_beat < HEARTBEAT_SECONDS:
            return
        self._last_beat = now
        with self._lock:
            others = [other for other in self._active if other != job_id]
        with self._engine.begin() as connection:
            update_job(connection, job_id, progress=message)
            touch_jobs(connection, others)

    def _run(
        self,
        job_id: str,
        collection: StoredCollection,
        query: ItemsetQuery,
        finished: threading.Event,
    ) -> None:
        with self._lock:
            self._started.add(job_id)
        try:
            if self._closing.is_set():
                raise JobCancelledError("the aggregator is shutting down")
            with self._engine.begin() as connection:
                update_job(connection, job_id, status="running", progress="started")
            result = mine_collection(
                self._engine,
                collection,
                query,
                progress=lambda message: self._heartbeat(job_id, message),
            )
            self._finish(job_id, status="done", result_json=result.model_dump_json())
        except JobCancelledError as error:
            failure = JobError(
                type=problem_type(JobCancelledError),
                title=JobCancelledError.title,
                status=http_status(JobCancelledError),
                detail=f"{error}; start the job again",
            )
            self._finish(job_id, status="failed", error_json=failure.model_dump_json())
        except LDPError as error:
            self._finish(job_id, status="failed", error_json=_problem(error).model_dump_json())
        except Exception as error:  # a bug: keep the server up, log it, say so
            logger.error("mining job %s failed", job_id, exc_info=error)
            failure = JobError(
                type=problem_type(LDPError),
                title="Internal server error",
                status=500,
                detail="the mining job failed; the error was logged",
            )
            self._finish(job_id, status="failed", error_json=failure.model_dump_json())
        finally:
            with self._lock:
                self._active.pop(job_id, None)
                self._started.discard(job_id)
            finished.set()

    def _finish(self, job_id: str, **values: Any) -> None:
        try:
            with self._engine.begin() as connection:
                update_job(connection, job_id, progress="finished", **values)
        except Exception as error:  # the database went away: the job will read as lost
            logger.error("could not store the outcome of job %s", job_id, exc_info=error)

    # ------------------------------------------------------------------ reading

    def get(self, collection: StoredCollection, job_id: str) -> ItemsetJob:
        """The job ``job_id`` of ``collection``; :class:`NotFoundError` if there is none."""
        with self._engine.connect() as connection:
            row = read_job(connection, job_id)
        if row is None or row.collection_id != collection.id or row.kind != ITEMSETS:
            raise NotFoundError(f"collection {collection.name!r} has no itemset job {job_id!r}")
        with self._lock:
            mine = job_id in self._active
        return job_view(collection, row, lost=not mine and row.lost())

    def list_jobs(self, collection: StoredCollection, page: PageQuery) -> JobList:
        """One page of the collection's itemset jobs (a lost one as failed, as :meth:`get`)."""
        with self._lock:
            mine = set(self._active)
        return job_list(self._engine, collection, ITEMSETS, page, running_here=mine)

    def shutdown(self) -> None:
        """Stop accepting work; running jobs stop at their next chunk."""
        self._closing.set()
        self._executor.shutdown(wait=False, cancel_futures=True)
        with self._lock:
            pending = [job for job in self._active if job not in self._started]
        # cancelled before they started (their _run never runs): say so
        failure = JobError(
            type=problem_type(LDPError),
            title="Job cancelled",
            status=503,
            detail="the aggregator shut down before the job ran; start it again",
        )
        for job_id in pending:
            self._finish(job_id, status="failed", error_json=failure.model_dump_json())


def job_view(collection: StoredCollection, row: JobRow, lost: bool = False) -> ItemsetJob:
    """The wire form of a stored job."""
    status = row.status
    error = JobError.model_validate_json(row.error_json) if row.error_json else None
    if lost:
        status = "failed"
        error = JobError(
            type=problem_type(LDPError),
            title="Job lost",
            status=503,
            detail="the aggregator replica running this job stopped; start it again",
        )
    return ItemsetJob(
        id=row.id,
        collection=collection.name,
        status=status,
        query=ItemsetQuery.model_validate_json(row.request_json),
        progress=row.progress,
        created_unix=row.created_unix,
        updated_unix=row.updated_unix,
        result=(
            ItemsetResult.model_validate_json(row.result_json)
            if row.result_json and status == "done"
            else None
        ),
        error=error if status == "failed" else None,
    )


def job_list(
    engine: Engine,
    collection: StoredCollection,
    kind: str,
    page: PageQuery,
    running_here: Container[str] | None = None,
) -> JobList:
    """One page of the collection's jobs of ``kind``, by id: each with its status, progress
    and creation day. With ``running_here`` (the jobs this replica runs), a queued or
    running job of another replica that stopped refreshing it reads as failed; without,
    no job is ever lost (a training job waits for its devices)."""
    with engine.connect() as connection:
        heads, next_cursor = page_jobs(connection, collection.id, kind, page)
    summaries = [
        JobSummary(
            id=head.id,
            status=(
                "failed"
                if running_here is not None and head.id not in running_here and head.lost()
                else head.status
            ),
            progress=head.progress,
            created_day=datetime.fromtimestamp(head.created_unix, UTC).date(),
        )
        for head in heads
    ]
    return JobList(jobs=summaries, next_cursor=next_cursor)


def runner_of(app: FastAPI, engine: Engine) -> JobRunner:
    """The app's runner, created on first use (the router's lifespan shuts it down)."""
    state = app.state
    runner: JobRunner | None = getattr(state, "ldp_jobs", None)
    if runner is None:
        with _CREATE_LOCK:
            runner = getattr(state, "ldp_jobs", None)
            if runner is None:
                runner = JobRunner(engine)
                state.ldp_jobs = runner
    return runner


_CREATE_LOCK = threading.Lock()
