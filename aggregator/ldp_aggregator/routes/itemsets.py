"""Frequent itemsets of a MASK attribute (analyst, a polled job) and MASK's privacy (public)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, FastAPI, Path, Query, Request, Response, status
from fastapi.responses import JSONResponse

from ldp_aggregator.auth import require_analyst
from ldp_aggregator.deps import app_state
from ldp_aggregator.itemsets import basket_attribute, check_itemset_query, check_release
from ldp_aggregator.jobs import runner_of
from ldp_aggregator.problems import problem_response, problem_responses
from ldp_aggregator.result_downloads import (
    CSV_RESPONSE,
    FormatParam,
    csv_response,
    filename,
    table_rows,
    wants_csv,
)
from ldp_aggregator.routes.page_params import Page
from ldp_shared.errors import ConflictError
from ldp_shared.wire.base import checked_range
from ldp_shared.wire.itemsets import (
    JOB_ID_PATTERN,
    ItemsetJob,
    ItemsetQuery,
    MaskPrivacy,
    mask_privacy,
)
from ldp_shared.wire.lists import JobList


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    try:
        yield
    finally:
        runner = getattr(app.state, "ldp_jobs", None)
        if runner is not None:
            runner.shutdown()


router = APIRouter(prefix="/v1/collections", tags=["itemsets"], lifespan=_lifespan)


@router.post(
    "/{name}/itemsets",
    response_model=ItemsetJob,
    dependencies=[Depends(require_analyst)],
    responses={
        202: {"model": ItemsetJob, "description": "Still mining: poll the Location"},
        **problem_responses(401, 404, 409),
    },
)
def mine_itemsets(
    name: str, query: ItemsetQuery, request: Request, response: Response
) -> ItemsetJob | JSONResponse:
    """Mine frequent itemsets and association rules from a MASK attribute (analyst).

    Starts a job and waits up to ``wait_seconds`` for it: 200 with the finished job (and
    its result), or 202 with the job as it stands and its ``Location`` to poll. A job
    that fails within the wait answers its problem directly (422, 409, ...).
    """
    state = app_state(request)
    collection = state.collections.get(name)
    check_itemset_query(collection.config, query)
    check_release(state.engine, collection)
    runner = runner_of(request.app, state.engine)
    job_id = runner.submit(collection, query)
    runner.wait(job_id, query.wait_seconds)
    job = runner.get(collection, job_id)
    if job.status == "failed" and job.error is not None:
        # the problem the job met, as it would have been answered without a job
        error = job.error
        return problem_response(error.status, error.type, error.title, error.detail)
    location = f"/v1/collections/{name}/itemsets/{job_id}"
    response.headers["Location"] = location
    if job.status != "done":
        response.status_code = status.HTTP_202_ACCEPTED
        response.headers["Retry-After"] = "1"
    return job


@router.get(
    "/{name}/itemsets",
    response_model=JobList,
    dependencies=[Depends(require_analyst)],
    responses=problem_responses(401, 404),
)
def list_itemset_jobs(name: str, request: Request, page: Page) -> JobList:
    """The collection's mining jobs, by id, a page at a time (analyst): each with its
    status, progress and creation day (read a job's query and result at its id)."""
    state = app_state(request)
    collection = state.collections.get(name)
    return runner_of(request.app, state.engine).list_jobs(collection, page)


@router.get(
    "/{name}/itemsets/{job_id}",
    response_model=ItemsetJob,
    dependencies=[Depends(require_analyst)],
    responses={**problem_responses(401, 404, 409), **CSV_RESPONSE},
)
def itemset_job(
    name: str,
    job_id: Annotated[str, Path(pattern=JOB_ID_PATTERN)],
    request: Request,
    fmt: FormatParam = None,
    table: Annotated[
        Literal["rules", "itemsets"],
        Query(description="with format=csv: one row per rule (the default) or per itemset"),
    ] = "rules",
) -> ItemsetJob | Response:
    """A mining job: ``queued``, ``running``, ``done`` (with its result) or ``failed``
    (with the problem it met). As CSV (``?format=csv`` or ``Accept: text/csv``) a done
    job's rules, or its itemsets with ``table=itemsets``; 409 before it is done."""
    state = app_state(request)
    collection = state.collections.get(name)
    job = runner_of(request.app, state.engine).get(collection, job_id)
    if not wants_csv(request, fmt):
        return job
    if job.result is None:
        raise ConflictError(
            f"job {job_id} is {job.status}: only a done job has rows to download;"
            " poll it until its status is done"
        )
    header, rows = table_rows(job.result.frame_columns(table))
    return csv_response(header, rows, filename(name, job.result.attribute, table))


@router.get("/{name}/privacy", response_model=MaskPrivacy, responses=problem_responses(404))
def privacy(
    name: str,
    request: Request,
    average_support: Annotated[
        float,
        Query(
            description="s0: the average support of an item, in (0, 1)",
            json_schema_extra=checked_range(gt=0, lt=1),
        ),
    ],
    attribute: Annotated[
        str | None,
        Query(min_length=1, description="the MASK attribute (optional if there is one)"),
    ] = None,
    weight: Annotated[
        float,
        Query(
            description="a: the weight of the 1s (purchases), in [0, 1]",
            json_schema_extra=checked_range(ge=0, le=1),
        ),
    ] = 1.0,
) -> MaskPrivacy:
    """MASK's privacy of a basket attribute (public, from the config alone): ε per item
    and per basket, and the reconstruction probabilities R1, R0, R and P = (1 - R)·100
    of Rizvi and Haritsa (2002, §3) for the given ``s0`` and ``a``."""
    config = app_state(request).collections.get(name).config
    return mask_privacy(basket_attribute(config, attribute), average_support, weight)
