"""Creating, listing, reading, closing and deleting collections."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request, Response, status

from ldp_aggregator.auth import require_admin, require_analyst
from ldp_aggregator.collections import create_collection as store_collection
from ldp_aggregator.deps import app_state
from ldp_aggregator.problems import body_validation_problem, problem_responses
from ldp_aggregator.routes.page_params import Page
from ldp_aggregator.storage import lifecycle, retention
from ldp_aggregator.storage.collections import page_collection_names
from ldp_shared.collection import CollectionConfig
from ldp_shared.errors import ConfigurationError, InvalidQueryError
from ldp_shared.schema import CollectionSpec
from ldp_shared.wire.lifecycle import CollectionStatus, Retention
from ldp_shared.wire.lists import CollectionList

router = APIRouter(prefix="/v1/collections", tags=["collections"])


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=CollectionConfig,
    dependencies=[Depends(require_admin)],
    responses=problem_responses(401, 403, 409, 413),
)
@body_validation_problem(ConfigurationError)
def create_collection(
    spec: CollectionSpec, request: Request, response: Response
) -> CollectionConfig:
    """Create a collection (admin). Its config is fixed from now on."""
    state = app_state(request)
    stored = store_collection(state.engine, spec)
    state.collections.remember(stored)
    response.headers["Location"] = f"/v1/collections/{stored.name}"
    return stored.config


@router.get(
    "",
    response_model=CollectionList,
    dependencies=[Depends(require_analyst)],
    responses=problem_responses(401),
)
def list_collections(request: Request, page: Page) -> CollectionList:
    """The names of the collections, by name, a page at a time (analyst): ``limit``
    names after ``cursor``, and ``next_cursor`` (null on the last page)."""
    names, next_cursor = page_collection_names(app_state(request).engine, page)
    return CollectionList(collections=names, next_cursor=next_cursor)


@router.get("/{name}", response_model=CollectionConfig, responses=problem_responses(404))
def get_collection(name: str, request: Request) -> CollectionConfig:
    """The public config of a collection: what a client needs to perturb (no token)."""
    return app_state(request).collections.get(name).config


@router.get(
    "/{name}/status",
    response_model=CollectionStatus,
    dependencies=[Depends(require_analyst)],
    responses=problem_responses(401, 404),
)
def collection_status(name: str, request: Request) -> CollectionStatus:
    """Whether the collection takes new reports, and how many it holds (analyst)."""
    state = app_state(request)
    return lifecycle.collection_status(state.engine, state.collections.get(name))


@router.post(
    "/{name}/close",
    response_model=CollectionStatus,
    dependencies=[Depends(require_admin)],
    responses=problem_responses(401, 403, 404),
)
def close_collection(name: str, request: Request) -> CollectionStatus:
    """Close the collection to new reports (admin; idempotent). Uploads then get 409
    ``collection-closed``; estimates, models and jobs stay readable."""
    state = app_state(request)
    return lifecycle.set_closed(state.engine, state.collections.get(name), closed=True)


@router.post(
    "/{name}/reopen",
    response_model=CollectionStatus,
    dependencies=[Depends(require_admin)],
    responses=problem_responses(401, 403, 404),
)
def reopen_collection(name: str, request: Request) -> CollectionStatus:
    """Take new reports again (admin; idempotent)."""
    state = app_state(request)
    return lifecycle.set_closed(state.engine, state.collections.get(name), closed=False)


@router.put(
    "/{name}/retention",
    response_model=CollectionStatus,
    dependencies=[Depends(require_admin)],
    responses=problem_responses(401, 403, 404),
)
def set_retention(name: str, body: Retention, request: Request) -> CollectionStatus:
    """How many days reports keep their bits (admin); older ones are folded away at once
    and then periodically. Their ids stay (a replay counts once), and so do the estimates."""
    state = app_state(request)
    return retention.set_retention(state.engine, state.collections.get(name), body.days)


@router.delete(
    "/{name}",
    status_code=status.HTTP_204_NO_CONTENT,
    response_class=Response,
    dependencies=[Depends(require_admin)],
    responses=problem_responses(401, 403, 404),
)
def delete_collection(
    name: str,
    request: Request,
    confirm: Annotated[str, Query(min_length=1, description="the collection's name again")],
) -> Response:
    """Delete the collection with its reports, statistics, models and jobs (admin), in one
    transaction. ``confirm`` must repeat the name (422 otherwise, and nothing is deleted)."""
    if confirm != name:
        raise InvalidQueryError(
            f"confirm={confirm!r} is not the collection's name: send ?confirm={name} to"
            " delete it with all its reports, statistics, models and jobs"
        )
    state = app_state(request)
    lifecycle.delete_collection(state.engine, state.collections.get(name))
    state.collections.forget(name)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
