"""Training jobs: created and read by analysts, driven by devices (no token, within the
upload limits). See ``docs/training-jobs.md``."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Annotated, TypeVar

from fastapi import APIRouter, Depends, Path, Request, Response, status
from sqlalchemy import Connection
from starlette.concurrency import run_in_threadpool

from ldp_aggregator import training, training_rounds
from ldp_aggregator.auth import require_analyst
from ldp_aggregator.deps import AppState, app_state
from ldp_aggregator.jobs import job_list
from ldp_aggregator.problems import problem_responses
from ldp_aggregator.result_downloads import CSV_RESPONSE, FormatParam, answer, filename
from ldp_aggregator.routes.page_params import Page
from ldp_aggregator.storage.collections import StoredCollection
from ldp_aggregator.training_commit import ISSUE, REPORT, Kind, TrainingCommitter
from ldp_aggregator.training_place_wait import round_signals, wait_for_place
from ldp_shared.errors import NotFoundError
from ldp_shared.learning.layout import FeatureLayout
from ldp_shared.wire.itemsets import check_job_id
from ldp_shared.wire.lists import JobList
from ldp_shared.wire.reports import decode_bits
from ldp_shared.wire.training import (
    TOKEN_PATTERN,
    Participation,
    ParticipationReport,
    ParticipationResult,
    TrainedModel,
    TrainingJob,
    TrainingSpec,
)

T = TypeVar("T")

router = APIRouter(prefix="/v1/collections", tags=["training"])


async def _job_id(
    job_id: Annotated[
        str, Path(description="the id the job was created with (16 to 32 of A-Z a-z 0-9 _ -)")
    ],
) -> str:
    """The path's job id; 404 for an id no job can have (not a 422 about a pattern).
    Async: a plain function dependency would cost every request a hop to a worker
    thread."""
    return check_job_id(job_id, "training")


JobId = Annotated[str, Depends(_job_id)]
DeviceJobId = Annotated[
    str, Path(description="the id the job was created with (16 to 32 of A-Z a-z 0-9 _ -)")
]
"""A device route's job id, checked in the route (:func:`check_job_id`, as :func:`_job_id`
does): a dependency costs each of the devices' requests its own resolution step."""
Token = Annotated[
    str, Path(pattern=TOKEN_PATTERN, description="the participation's token (its secret)")
]


def _on_current(
    state: AppState, name: str, collection: StoredCollection, call: Callable[[StoredCollection], T]
) -> T:
    """``call(collection)``, the collection as this process cached it; if the job or the
    collection is not found, once more with the collection as stored now (it may have
    been deleted and created again since it was cached). Nothing is stored by a call
    that fails."""
    try:
        return call(collection)
    except NotFoundError:
        current = state.collections.get(name)
        if current is collection:
            raise
        return call(current)


_COMMITTER_LOCK = threading.Lock()


def _committer(request: Request) -> TrainingCommitter:
    """The app's committer of device requests (:mod:`ldp_aggregator.training_commit`)."""
    app_state_ = request.app.state
    found = getattr(app_state_, "training_committer", None)
    if found is None:
        with _COMMITTER_LOCK:
            found = getattr(app_state_, "training_committer", None)
            if found is None:
                found = TrainingCommitter(app_state(request).engine)
                app_state_.training_committer = found
    assert isinstance(found, TrainingCommitter)
    return found


async def _admit_device(request: Request, name: str) -> StoredCollection:
    """The collection, after the upload limits let one more device request through."""
    state = app_state(request)
    collection = state.collections.peek(name)
    if collection is None:  # loading it reads the database: not in the event loop
        collection = await run_in_threadpool(state.collections.cached, name)
    address = request.client.host if request.client is not None else None
    refusal = state.upload_limits.admit(collection.name, 1, address)
    if refusal is not None:
        state.metrics.count_rate_limited(collection.name, refusal.limit, 1)
        raise refusal.error()
    return collection


async def _device_request(
    request: Request,
    name: str,
    collection: StoredCollection,
    kind: Kind,
    job_id: str,
    work: Callable[[StoredCollection], Callable[[Connection], T]],
    after: Callable[[T], None] | None = None,
) -> T:
    """A device's request (admitted: :func:`_admit_device`), run in the committer's next
    transaction of ``kind``: ``work(collection)`` is what runs in it. As
    :func:`_on_current`, once more with the collection as stored now if the job or the
    collection was not found (a refusal writes nothing)."""
    committer = _committer(request)
    try:
        return await committer.run(kind, job_id, work(collection), after)
    except NotFoundError:
        current = await run_in_threadpool(app_state(request).collections.get, name)
        if current is collection:
            raise
        return await committer.run(kind, job_id, work(current), after)


@router.post(
    "/{name}/training-jobs",
    response_model=TrainingJob,
    status_code=status.HTTP_201_CREATED,
    dependencies=[Depends(require_analyst)],
    responses=problem_responses(401, 404, 422),
)
def create_training_job(
    name: str, spec: TrainingSpec, request: Request, response: Response
) -> TrainingJob:
    """Create a training job (analyst): the spec with its planned values filled in, and
    round 0 open at the zero weights. 422 ``invalid-query`` for a layout that does not
    name both label values (``positive`` and ``negative``): the problem says which."""
    state = app_state(request)
    collection = state.collections.get(name)
    job = training.create_job(state.engine, collection, spec)
    response.headers["Location"] = f"/v1/collections/{name}/training-jobs/{job.id}"
    return job


@router.get(
    "/{name}/training-jobs",
    response_model=JobList,
    dependencies=[Depends(require_analyst)],
    responses=problem_responses(401, 404),
)
def list_training_jobs(name: str, request: Request, page: Page) -> JobList:
    """The collection's training jobs, by id, a page at a time (analyst): each with its
    status, progress and creation day."""
    state = app_state(request)
    return job_list(state.engine, state.collections.get(name), training.TRAINING, page)


@router.get(
    "/{name}/training-jobs/{job_id}",
    response_model=TrainingJob,
    dependencies=[Depends(require_analyst)],
    responses=problem_responses(401, 404),
)
def training_job(name: str, job_id: JobId, request: Request) -> TrainingJob:
    """A training job as it stands: its open round, weights and loss curve (analyst)."""
    state = app_state(request)
    return training.read_training_job(state.engine, state.collections.get(name), job_id)


@router.get(
    "/{name}/training-jobs/{job_id}/model",
    response_model=TrainedModel,
    dependencies=[Depends(require_analyst)],
    responses={**problem_responses(401, 404, 409), **CSV_RESPONSE},
)
def training_model(
    name: str, job_id: JobId, request: Request, fmt: FormatParam = None
) -> TrainedModel | Response:
    """The trained model of a finished job, with its scikit-learn export (analyst); 409
    while rounds remain. As CSV (``?format=csv`` or ``Accept: text/csv``) the columns
    of ``TrainedModel.to_frame()``."""
    state = app_state(request)
    model = training.trained_model(state.engine, state.collections.get(name), job_id)
    return answer(request, fmt, model, filename(name, "training", job_id))


@router.get(
    "/{name}/training-jobs/{job_id}/layout",
    response_model=FeatureLayout,
    responses=problem_responses(404),
)
async def training_layout(name: str, job_id: JobId, request: Request) -> Response:
    """The job's feature layout (public, like a collection's config). A device need not
    read it: every ``Participation`` carries the layout too, and the SDK's device checks
    its record against that one, giving the place back (``DELETE``) if it does not fit."""
    state = app_state(request)

    def read() -> bytes:
        collection = state.collections.cached(name)
        return _on_current(
            state,
            name,
            collection,
            lambda current: training.job_layout_json(state.engine, current, job_id),
        )

    body = await run_in_threadpool(read)
    return Response(body, media_type="application/json")


@router.post(
    "/{name}/training-jobs/{job_id}/participations",
    response_model=Participation,
    status_code=status.HTTP_201_CREATED,
    responses=problem_responses(404, 409, 429),
)
async def participate(name: str, job_id: DeviceJobId, request: Request) -> Response:
    """A place in the open round for one device: the weights, its role, a single-use
    token and the job's layout (what a record must hold: a device checks its record
    against it and gives the place back with ``DELETE`` if it does not fit). While every
    place is held, the request waits up to 5 s for the round to close and is then given
    a place of the next; 429 with ``Retry-After`` if every place is still held and none
    has lapsed (then tokens are issued beyond the places); 409 once the job is done."""
    job_id = check_job_id(job_id, "training")
    state = app_state(request)
    collection = await _admit_device(request, name)  # once, not at each ask

    async def issue() -> bytes:
        return await _device_request(
            request,
            name,
            collection,
            ISSUE,
            job_id,
            lambda current: (
                lambda connection: training_rounds.issue_in(
                    connection,
                    current,
                    job_id,
                    overissue=state.settings.training_overissue,
                    randbelow=state.randbelow,
                )
            ),
        )

    body = await wait_for_place(issue, job_id)
    return Response(body, status_code=status.HTTP_201_CREATED, media_type="application/json")


@router.put(
    "/{name}/training-jobs/{job_id}/participations/{token}",
    response_model=ParticipationResult,
    responses=problem_responses(404, 409, 422, 429),
)
async def send_participation_report(
    name: str,
    job_id: DeviceJobId,
    token: Token,
    body: ParticipationReport,
    request: Request,
) -> Response:
    """The device's one report for its participation. 409 ``round-closed`` when its round
    has closed, 409 ``already-participated`` when the token was used; nothing is kept
    then."""
    job_id = check_job_id(job_id, "training")
    engine = app_state(request).engine
    collection = await _admit_device(request, name)
    payload = decode_bits(body.report)  # 422 invalid-report
    accepted = await _device_request(
        request,
        name,
        collection,
        REPORT,
        job_id,
        lambda current: (
            lambda connection: training_rounds.accept_in(
                connection, current, job_id, token, payload
            )
        ),
        lambda done: training_rounds.after_report(engine, done),
    )
    return Response(accepted.result.model_dump_json(), media_type="application/json")


@router.delete(
    "/{name}/training-jobs/{job_id}/participations/{token}",
    status_code=status.HTTP_204_NO_CONTENT,
    response_class=Response,
    responses=problem_responses(404, 409, 429),
)
async def release_participation(
    name: str, job_id: DeviceJobId, token: Token, request: Request
) -> Response:
    """Give the participation's place back, unused: the device will not report (its
    record does not fit the layout the participation carries, or it refuses the job's
    numbers). The place is free for another device at once instead of when its hold ends;
    the token is deleted, nothing is kept. 404 for a token the job does not hold unused
    (never issued, given back already, or the job finished), 409 ``already-participated``
    for a token whose report was kept."""
    job_id = check_job_id(job_id, "training")
    await _device_request(
        request,
        name,
        await _admit_device(request, name),
        ISSUE,
        job_id,
        lambda collection: (
            lambda connection: training_rounds.release_in(connection, collection, job_id, token)
        ),
        lambda _: round_signals.notify(job_id),  # a request waiting for a place asks again
    )
    return Response(status_code=status.HTTP_204_NO_CONTENT)
