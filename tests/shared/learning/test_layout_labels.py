"""A logistic regression's label is one of its layout's values, or the record is refused.

Before, ``labels`` compared ``str(value)`` with ``positive``: with ``positive = "1"`` a
label of ``1.0``, ``true`` or ``"PD"`` became class 0 without a word, so a float label
column made every device a negative. Now a label must be text, and with ``negative`` set
it must be one of the two values.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from ldp_shared.errors import InvalidRecordError
from ldp_shared.learning.layout import FeatureLayout

BASE: dict[str, Any] = {"numeric": [{"name": "x", "lo": 0, "hi": 1}], "label": "y", "positive": "1"}
BOTH = FeatureLayout.model_validate({**BASE, "negative": "0"})
POSITIVE_ONLY = FeatureLayout.model_validate(BASE)


def test_the_two_values_encode_as_one_and_zero() -> None:
    assert BOTH.labels(["1", "0", "1"]).tolist() == [1.0, 0.0, 1.0]
    assert BOTH.labels(np.array(["0", "1"])).tolist() == [0.0, 1.0]
    assert POSITIVE_ONLY.labels(["1", "anything else"]).tolist() == [1.0, 0.0]


@pytest.mark.parametrize(
    ("bad", "shown"),
    [(1.0, "1.0"), (True, "True"), ("PD", "'PD'"), (None, "None"), (1, "1"),
     (np.float64(1.0), "1.0")],
)  # fmt: skip
def test_a_label_that_is_not_one_of_the_values_is_refused(bad: Any, shown: str) -> None:
    with pytest.raises(InvalidRecordError) as caught:
        BOTH.labels([bad])
    message = str(caught.value)
    assert message.startswith(f"label 'y': {shown} is not one of the layout's values")
    assert "'1' (class 1) or '0' (class 0)" in message
    assert "np." not in message


def test_the_refused_record_is_named_in_a_batch() -> None:
    with pytest.raises(InvalidRecordError, match=r"label 'y' \(record 2\): 'PD'"):
        BOTH.labels(["1", "0", "PD", "1"])


@pytest.mark.parametrize("bad", [1.0, True, None, 1])
def test_without_a_negative_value_a_label_must_still_be_text(bad: Any) -> None:
    with pytest.raises(InvalidRecordError, match="is not text"):
        POSITIVE_ONLY.labels(["1", bad])


def test_the_negative_value_is_optional_in_the_json_and_must_differ() -> None:
    assert "negative" not in POSITIVE_ONLY.model_dump_json()  # older layouts keep their form
    assert FeatureLayout.model_validate_json(BOTH.model_dump_json()) == BOTH
    with pytest.raises(ValidationError, match="must differ"):
        FeatureLayout.model_validate({**BASE, "negative": "1"})
