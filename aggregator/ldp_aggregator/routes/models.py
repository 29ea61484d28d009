"""Models trained from a collection (analyst): naive Bayes (train, read, predict, export)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Depends, Request, Response, status

from ldp_aggregator import naive_bayes
from ldp_aggregator.auth import require_analyst
from ldp_aggregator.deps import app_state
from ldp_aggregator.problems import problem_responses
from ldp_aggregator.release import window_query
from ldp_aggregator.result_downloads import CSV_RESPONSE, FormatParam, answer, filename
from ldp_aggregator.routes.page_params import Page
from ldp_aggregator.routes.window_params import WindowFrom, WindowTo
from ldp_shared.wire.lists import ModelList
from ldp_shared.wire.naive_bayes import (
    CategoricalNBExport,
    NaiveBayesModel,
    NaiveBayesPredictions,
    NaiveBayesPredictRequest,
    NaiveBayesTrainRequest,
)

router = APIRouter(
    prefix="/v1/collections", tags=["models"], dependencies=[Depends(require_analyst)]
)

BASE = "/{name}/models/naive-bayes"


@router.post(
    BASE,
    status_code=status.HTTP_201_CREATED,
    response_model=NaiveBayesModel,
    responses=problem_responses(401, 404, 409),
)
def train_naive_bayes(
    name: str,
    request: Request,
    response: Response,
    body: Annotated[NaiveBayesTrainRequest | None, Body()] = None,
    first: WindowFrom = None,
    last: WindowTo = None,
) -> NaiveBayesModel:
    """Train a naive Bayes model from the collection's sufficient statistics and store it.

    Returns class priors, conditional probability tables, the raw joint counts with
    their standard errors, the number of reports, ε and the smoothing applied. 409
    `insufficient-reports` below the release minimum (under the `sample` budget also of
    the reports that carried any feature, as `GET .../frequencies`); 422 `invalid-query`
    for a collection without a label or a model with a number that is not finite. With
    `from`/`to`, the model rests on the reports of those periods only.
    """
    state = app_state(request)
    collection = state.collections.get(name)
    window = window_query(collection, first, last)
    model = naive_bayes.train_model(
        state.engine, collection, body or NaiveBayesTrainRequest(), window=window
    )
    response.headers["Location"] = (
        f"/v1/collections/{collection.name}/models/naive-bayes/{model.id}"
    )
    return model


@router.get(BASE, response_model=ModelList, responses=problem_responses(401, 404))
def list_naive_bayes(name: str, request: Request, page: Page) -> ModelList:
    """The ids of the collection's naive Bayes models, by id, a page at a time: ``limit``
    ids after ``cursor``, and ``next_cursor`` (null on the last page)."""
    state = app_state(request)
    return naive_bayes.model_list(state.engine, state.collections.get(name), page)


@router.get(
    BASE + "/{model_id}",
    response_model=NaiveBayesModel,
    responses={**problem_responses(401, 404), **CSV_RESPONSE},
)
def get_naive_bayes(
    name: str, model_id: str, request: Request, fmt: FormatParam = None
) -> NaiveBayesModel | Response:
    """A stored naive Bayes model, as it was released; as CSV (``?format=csv`` or
    ``Accept: text/csv``) one row per class prior, then per feature, value and class."""
    state = app_state(request)
    model = naive_bayes.get_model(state.engine, state.collections.get(name), model_id)
    return answer(request, fmt, model, filename(name, "naive-bayes", model_id))


@router.post(
    BASE + "/{model_id}/predict",
    response_model=NaiveBayesPredictions,
    responses=problem_responses(401, 404, 413),
)
def predict_naive_bayes(
    name: str, model_id: str, body: NaiveBayesPredictRequest, request: Request
) -> NaiveBayesPredictions:
    """Classify the analyst's own records (in the clear; never stored or logged).

    422 `invalid-query` for a missing feature, an unknown attribute or a value outside
    a feature's domain.
    """
    state = app_state(request)
    return naive_bayes.predict(state.engine, state.collections.get(name), model_id, body.records)


@router.get(
    BASE + "/{model_id}/export",
    response_model=CategoricalNBExport,
    responses=problem_responses(401, 404),
)
def export_naive_bayes(name: str, model_id: str, request: Request) -> CategoricalNBExport:
    """The model as the attributes of a fitted scikit-learn `CategoricalNB`."""
    state = app_state(request)
    return naive_bayes.export_model(state.engine, state.collections.get(name), model_id)
