"""The naive Bayes endpoints seen from the client, without I/O (shared by both clients).

Call builders in the style of :mod:`ldp_client.protocol`: each describes one exchange as
an :class:`~ldp_client.protocol.ApiCall`. Arguments are validated here, before any
request: a bad training option or query record raises
:class:`~ldp_shared.errors.InvalidQueryError`, a model id no model can have raises
:class:`~ldp_shared.errors.ModelNotFoundError`.

The model itself (Yilmaz, Al-Rubaie and Chang, arXiv:1905.01039, 2019) is
:mod:`ldp_shared.analyses.naive_bayes`: a fetched
:class:`~ldp_shared.wire.naive_bayes.NaiveBayesModel` can also predict locally
(``ldp_shared.analyses.naive_bayes.predict``) or become a scikit-learn ``CategoricalNB``
(``to_categorical_nb(export_categorical_nb(model))``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

from pydantic import ValidationError

from ldp_client.protocol import ApiCall, collection_path
from ldp_shared.errors import InvalidQueryError, ModelNotFoundError
from ldp_shared.validation import one_line
from ldp_shared.wire.naive_bayes import (
    MODEL_ID_PATTERN,
    CategoricalNBExport,
    CountRepair,
    NaiveBayesModel,
    NaiveBayesPredictions,
    NaiveBayesPredictRequest,
    NaiveBayesTrainRequest,
)

__all__ = [
    "export_naive_bayes_call",
    "get_naive_bayes_call",
    "predict_naive_bayes_call",
    "train_naive_bayes_call",
]

_MODEL_ID = re.compile(MODEL_ID_PATTERN)


def models_path(name: str) -> str:
    """``/v1/collections/{name}/models/naive-bayes``."""
    return collection_path(name) + "/models/naive-bayes"


def model_path(name: str, model_id: str) -> str:
    """``.../models/naive-bayes/{id}``; an id no model can have is refused locally."""
    if not isinstance(model_id, str) or _MODEL_ID.fullmatch(model_id) is None:
        raise ModelNotFoundError(f"no model can have the id {model_id!r}")
    return models_path(name) + "/" + quote(model_id, safe="")


def train_naive_bayes_call(
    name: str, alpha: float, repair: CountRepair, confidence: float
) -> ApiCall[NaiveBayesModel]:
    """``POST .../models/naive-bayes`` (analyst): train and store a model.

    Not idempotent (a repeat stores a second model), so it is repeated only when the
    request surely never reached the application.
    """
    try:
        request = NaiveBayesTrainRequest(alpha=alpha, repair=repair, confidence=confidence)
    except ValidationError as error:
        raise InvalidQueryError(f"invalid training options: {one_line(error.errors())}") from None
    return ApiCall(
        "POST",
        models_path(name),
        NaiveBayesModel.model_validate_json,
        body=request.model_dump_json().encode("utf-8"),
        auth=True,
        idempotent=False,
    )


def get_naive_bayes_call(name: str, model_id: str) -> ApiCall[NaiveBayesModel]:
    """``GET .../models/naive-bayes/{id}`` (analyst)."""
    return ApiCall(
        "GET", model_path(name, model_id), NaiveBayesModel.model_validate_json, auth=True
    )


def predict_naive_bayes_call(
    name: str, model_id: str, records: Sequence[Mapping[str, Any]]
) -> ApiCall[NaiveBayesPredictions]:
    """``POST .../models/naive-bayes/{id}/predict`` (analyst): classify query records.

    The records travel in the clear (they are the analyst's own queries) and the
    aggregator does not store them. Idempotent: predicting changes nothing.
    """
    if isinstance(records, Mapping | str | bytes):
        raise InvalidQueryError("records must be a sequence of mappings of feature to value")
    try:
        request = NaiveBayesPredictRequest(records=[dict(record) for record in records])
    except (ValidationError, TypeError, ValueError) as error:
        detail = one_line(error.errors()) if isinstance(error, ValidationError) else str(error)
        raise InvalidQueryError(f"invalid query records: {detail}") from None
    return ApiCall(
        "POST",
        model_path(name, model_id) + "/predict",
        NaiveBayesPredictions.model_validate_json,
        body=request.model_dump_json().encode("utf-8"),
        auth=True,
    )


def export_naive_bayes_call(name: str, model_id: str) -> ApiCall[CategoricalNBExport]:
    """``GET .../models/naive-bayes/{id}/export`` (analyst): the ``CategoricalNB`` form."""
    return ApiCall(
        "GET",
        model_path(name, model_id) + "/export",
        CategoricalNBExport.model_validate_json,
        auth=True,
    )
