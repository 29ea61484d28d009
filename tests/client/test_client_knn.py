"""The SDK's kNN helpers without a server: device records and the checked query."""

from __future__ import annotations

import json
import math

import pytest

from ldp_client.knn import classify_knn_call, knn_records
from ldp_shared.collection import build_config
from ldp_shared.errors import ConfigurationError, InvalidQueryError, InvalidRecordError
from ldp_shared.schema import CollectionSpec

CELLS = {"features": [{"name": "x", "lo": 0, "hi": 10}], "tables": 2, "bits": 3}
SPEC = {
    "name": "kc",
    "epsilon": 2.0,
    "budget": "sample",
    "label": "y",
    "attributes": [
        *({"name": f"cell_{t}", "domain": [str(h) for h in range(8)]} for t in range(2)),
        {"name": "y", "domain": ["a", "b"]},
    ],
    "knn": CELLS,
}


def test_device_records_carry_cells_and_class_only() -> None:
    config = build_config(CollectionSpec.model_validate(SPEC))
    records = knn_records(config, [[1.0], [9.5], [42.0]], ["a", "b", "a"])
    assert [set(r) for r in records] == [{"cell_0", "cell_1", "y"}] * 3
    assert all(r[f"cell_{t}"] in {str(h) for h in range(8)} for r in records for t in (0, 1))
    assert records[2] == knn_records(config, [[10.0]], ["a"])[0]  # clipped into the bounds
    with pytest.raises(InvalidRecordError):
        knn_records(config, [[math.nan]], ["a"])
    with pytest.raises(InvalidRecordError):
        knn_records(config, [[1.0]], ["a", "b"])
    plain = build_config(CollectionSpec.model_validate({**SPEC, "knn": None}))
    with pytest.raises(ConfigurationError):
        knn_records(plain, [[1.0]], ["a"])


def test_query_is_checked_before_sending() -> None:
    call = classify_knn_call("kc", [[1.0], [2.0]], k=7)
    assert call.method == "POST" and call.path == "/v1/collections/kc/knn/classify"
    assert call.auth and json.loads(call.body or b"") == {"points": [[1.0], [2.0]], "k": 7}
    for points, k in (([[math.nan]], 3), ([[1.0], [1.0, 2.0]], 3), ([[1.0]], 0), ([[1.0]], -1)):
        with pytest.raises(InvalidQueryError):
            classify_knn_call("kc", points, k)
