"""The kNN endpoints seen from the client, without I/O (shared by both clients).

A device of a kNN collection turns its raw features and class into the record
``{cell_τ: code, label: class}`` (:func:`knn_records`, the public hyperplanes of
:mod:`ldp_shared.knn_cells`) and privatizes it like any other record: no raw feature
leaves it. An analyst classifies query points with :func:`classify_knn_call`; the
points are checked here first (:class:`~ldp_shared.errors.InvalidQueryError`), and the
aggregator checks them again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ldp_client.protocol import ApiCall, collection_path
from ldp_shared.codec import Record
from ldp_shared.collection import CollectionConfig
from ldp_shared.errors import ConfigurationError, InvalidQueryError
from ldp_shared.knn_cells import device_columns
from ldp_shared.validation import validated
from ldp_shared.wire.knn import KnnClassification, KnnQuery

__all__ = ["classify_knn_call", "knn_records"]


def knn_records(config: CollectionConfig, points: Any, labels: Sequence[str]) -> list[Record]:
    """The records a device of kNN collection ``config`` privatizes for its points."""
    cells = config.spec.knn
    if cells is None or config.label is None:
        raise ConfigurationError(f"collection {config.name!r} is not a kNN collection")
    columns = device_columns(cells, config.label.name, points, labels)
    names = list(columns)
    return [dict(zip(names, values, strict=True)) for values in zip(*columns.values(), strict=True)]


def classify_knn_call(name: str, points: Any, k: int) -> ApiCall[KnnClassification]:
    """``POST .../knn/classify`` (analyst): classify query points. Idempotent."""
    try:
        rows = np.asarray(points, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidQueryError("points must be rows of numbers of equal length") from None
    if rows.ndim != 2 or not np.isfinite(rows).all():
        raise InvalidQueryError("points must be rows of finite numbers (no NaN or infinity)")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InvalidQueryError(f"k must be a positive integer, got {k!r}")
    query = validated(KnnQuery, {"points": rows.tolist(), "k": k}, InvalidQueryError, "kNN query")
    return ApiCall(
        "POST",
        collection_path(name) + "/knn/classify",
        KnnClassification.model_validate_json,
        body=query.model_dump_json().encode("utf-8"),
        auth=True,
    )
