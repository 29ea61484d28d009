"""kNN classification of a kNN collection (analyst)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request, Response

from ldp_aggregator.auth import require_analyst
from ldp_aggregator.deps import app_state
from ldp_aggregator.knn import classify_points
from ldp_aggregator.problems import problem_responses
from ldp_aggregator.release import window_query
from ldp_aggregator.result_downloads import CSV_RESPONSE, FormatParam, answer, filename
from ldp_aggregator.routes.window_params import WindowFrom, WindowTo
from ldp_shared.wire.knn import KnnClassification, KnnQuery

router = APIRouter(prefix="/v1/collections", tags=["analyses"])


@router.post(
    "/{name}/knn/classify",
    response_model=KnnClassification,
    dependencies=[Depends(require_analyst)],
    responses={**problem_responses(401, 404, 409), **CSV_RESPONSE},
)
def classify(
    name: str,
    body: KnnQuery,
    request: Request,
    first: WindowFrom = None,
    last: WindowTo = None,
    fmt: FormatParam = None,
) -> KnnClassification | Response:
    """Classify query points (raw feature rows, a category as its value's index): per
    point the predicted class, the debiased class scores and their standard errors, from
    all reports or those of the periods ``from`` … ``to``."""
    state = app_state(request)
    collection = state.collections.get(name)
    window = window_query(collection, first, last)
    result = classify_points(state.engine, collection, body, window)
    return answer(request, fmt, result, filename(name, "knn"))  # CSV: ?format=csv
