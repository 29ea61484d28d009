"""Training jobs: created and read by analysts, driven by devices (no token, within the
upload limits). See ``docs/training-jobs.md``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, TypeVar

from fastapi import APIRouter, Depends, Path, Request, Response, status
from starlette.concurrency import run_in_threadpool

from ldp_aggregator import training, training_rounds
from ldp_aggregator.auth import require_analyst
from ldp_aggregator.deps import AppState, app_state
from ldp_aggregator.jobs import job_list
from ldp_aggregator.problems import problem_responses
from ldp_aggregator.result_downloads import CSV_RESPONSE, FormatParam, answer, filename
from ldp_aggregator.routes.page_params import Page
from ldp_aggregator.storage.collections import StoredCollection
from ldp_aggregator.training_place_wait import wait_for_place
from ldp_shared.errors import NotFoundError
from ldp_shared.learning.layout import FeatureLayout
from ldp_shared.wire.itemsets import check_job_id
from ldp_shared.wire.lists import JobList
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


def _job_id(
    job_id: Annotated[
        str, Path(description="the id the job was created with (16 to 32 of A-Z a-z 0-9 _ -)")
    ],
) -> str:
    """The path's job id; 404 for an id no job can have (not a 422 about a pattern)."""
    return check_job_id(job_id, "training")


JobId = Annotated[str, Depends(_job_id)]


def _admit_device(state: AppState, name: str, request: Request) -> StoredCollection:
    """The collection, after the upload limits let one more device request through."""
    collection = state.collections.cached(name)
    address = request.client.host if request.client is not None else None
    refusal = state.upload_limits.admit(collection.name, 1, address)
    if refusal is not None:
        state.metrics.count_rate_limited(collection.name, refusal.limit, 1)
        raise refusal.error()
    return collection


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
    """The job's feature layout (public, like a collection's config): a device checks its
    record against it before it asks for a place, so a record that cannot be encoded
    never holds one."""
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
async def participate(name: str, job_id: JobId, request: Request) -> Response:
    """A place in the open round for one device: the weights, its role and a single-use
    token. While every place is held, the request waits up to 5 s for the round to close
    and is then given a place of the next; 429 with ``Retry-After`` if every place is
    still held and none has lapsed (then tokens are issued beyond the places); 409 once
    the job is done."""
    state = app_state(request)
    admitted: list[StoredCollection] = []

    def issue() -> bytes:
        if not admitted:  # the upload limits count the request once, not each ask
            admitted.append(_admit_device(state, name, request))
        return _on_current(
            state,
            name,
            admitted[0],
            lambda collection: training_rounds.issue_participation_json(
                state.engine,
                collection,
                job_id,
                overissue=state.settings.training_overissue,
                randbelow=state.randbelow,
            ),
        )

    body = await wait_for_place(issue, job_id)
    return Response(body, status_code=status.HTTP_201_CREATED, media_type="application/json")


@router.put(
    "/{name}/training-jobs/{job_id}/participations/{token}",
    response_model=ParticipationResult,
    responses=problem_responses(404, 409, 422, 429),
)
def send_participation_report(
    name: str,
    job_id: JobId,
    token: Annotated[str, Path(pattern=TOKEN_PATTERN)],
    body: ParticipationReport,
    request: Request,
) -> ParticipationResult:
    """The device's one report for its participation. 409 ``round-closed`` when its round
    has closed, 409 ``already-participated`` when the token was used; nothing is kept
    then."""
    state = app_state(request)
    collection = _admit_device(state, name, request)
    return _on_current(
        state,
        name,
        collection,
        lambda current: training_rounds.accept_report(state.engine, current, job_id, token, body),
    )
