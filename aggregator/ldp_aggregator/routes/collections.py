"""Creating, listing and reading collections."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request, Response, status
from pydantic import BaseModel

from ldp_aggregator.auth import require_admin, require_analyst
from ldp_aggregator.collections import create_collection as store_collection
from ldp_aggregator.deps import app_state
from ldp_aggregator.problems import body_validation_problem, problem_responses
from ldp_aggregator.storage.collections import list_collection_names
from ldp_shared.collection import CollectionConfig
from ldp_shared.errors import ConfigurationError
from ldp_shared.schema import CollectionSpec

router = APIRouter(prefix="/v1/collections", tags=["collections"])


class CollectionList(BaseModel):
    collections: list[str]


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
def list_collections(request: Request) -> CollectionList:
    """The names of all collections (analyst)."""
    return CollectionList(collections=list_collection_names(app_state(request).engine))


@router.get("/{name}", response_model=CollectionConfig, responses=problem_responses(404))
def get_collection(name: str, request: Request) -> CollectionConfig:
    """The public config of a collection: what a client needs to perturb (no token)."""
    return app_state(request).collections.get(name).config
