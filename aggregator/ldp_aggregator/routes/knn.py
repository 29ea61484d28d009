"""kNN classification of a kNN collection (analyst)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request

from ldp_aggregator.auth import require_analyst
from ldp_aggregator.deps import app_state
from ldp_aggregator.knn import classify_points
from ldp_aggregator.problems import problem_responses
from ldp_shared.knn_wire import KnnClassification, KnnQuery

router = APIRouter(prefix="/v1/collections", tags=["analyses"])


@router.post(
    "/{name}/knn/classify",
    response_model=KnnClassification,
    dependencies=[Depends(require_analyst)],
    responses=problem_responses(401, 404, 409),
)
def classify(name: str, body: KnnQuery, request: Request) -> KnnClassification:
    """Classify query points (raw feature rows, a category as its value's index): per
    point the predicted class, the debiased class scores and their standard errors."""
    state = app_state(request)
    return classify_points(state.engine, state.collections.get(name), body)
