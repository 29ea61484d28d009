"""Naive Bayes and kNN devices refuse a label outside the collection's classes, whatever
its type: ``1.0``, ``True`` and ``"PD"`` for classes ``"1"``/``"0"`` are never encoded as
some other class (the logistic regression's layout: test_training_labels.py)."""

from __future__ import annotations

from typing import Any

import pytest

from ldp_client.knn import knn_records
from ldp_client.privatize import privatize
from ldp_shared.analyses.knn.collection import collection_spec
from ldp_shared.collection import build_config
from ldp_shared.errors import InvalidRecordError
from ldp_shared.knn_cells import KnnCells
from ldp_shared.rand import seeded_rng
from ldp_shared.schema import CollectionSpec

NAIVE_BAYES = build_config(
    CollectionSpec.model_validate(
        {
            "name": "nb",
            "epsilon": 2.0,
            "label": "y",
            "attributes": [
                {"name": "colour", "domain": ["red", "blue"]},
                {"name": "y", "domain": ["1", "0"]},
            ],
        }
    )
)
CELLS = KnnCells.model_validate(
    {"features": [{"name": "height", "lo": 100, "hi": 220}], "tables": 2, "bits": 3}
)
KNN = build_config(collection_spec("people", CELLS, 2.0, "y", ["1", "0"], 10))

WRONG = [1.0, True, 1, "PD", None]


@pytest.mark.parametrize("label", WRONG)
def test_a_naive_bayes_device_refuses_a_label_outside_the_classes(label: Any) -> None:
    with pytest.raises(InvalidRecordError, match="label 'y'"):
        privatize(NAIVE_BAYES, {"colour": "red", "y": label}, seeded_rng(0))
    assert privatize(NAIVE_BAYES, {"colour": "red", "y": "1"}, seeded_rng(0))


@pytest.mark.parametrize("label", WRONG)
def test_a_knn_device_refuses_a_label_outside_the_classes(label: Any) -> None:
    (record,) = knn_records(KNN, [[150.0]], [label])
    with pytest.raises(InvalidRecordError, match="label 'y'"):
        privatize(KNN, record, seeded_rng(0))
