"""What the numeric mechanisms share (``mechanisms/numeric.py``): a value is a finite
number, or it is refused naming it; an integer beyond a double is out of range (it was
"values must be numbers"), and one beyond int64 but within a double is a number."""

from __future__ import annotations

import numpy as np
import pytest

from ldp_shared.codec import Privatizer
from ldp_shared.collection import build_config
from ldp_shared.errors import InvalidRecordError
from ldp_shared.mechanisms.numeric import finite_numbers
from ldp_shared.schema import CollectionSpec


@pytest.mark.parametrize(
    ("column", "message"),
    [
        ([10**400], r"value 100000… \(401 digits\) is out of range: .* ±1\.8e308"),
        ([1.0, -(10**309)], r"value -100000… \(310 digits\) is out of range"),
        (["7"], "value '7' is not a number"),
        ([True], "value True is not a number"),
        ([float("inf")], "value inf is not a finite number"),
        ([[1.0]], r"value \[1\.0\] is not a number"),
    ],
)
def test_a_value_that_is_not_a_finite_number_is_named(column: list[object], message: str) -> None:
    with pytest.raises(InvalidRecordError, match=f"attribute 'x': {message}"):
        finite_numbers("x", column)


def test_an_integer_beyond_int64_within_a_double_is_a_number() -> None:
    np.testing.assert_array_equal(finite_numbers("x", [10**30, 2]), [1e30, 2.0])


def test_the_sdk_names_an_out_of_range_value() -> None:
    spec = CollectionSpec.model_validate(
        {
            "name": "n",
            "epsilon": 1,
            "attributes": [{"name": "x", "mechanism": "duchi", "lo": 0, "hi": 1}],
        }
    )
    with pytest.raises(InvalidRecordError, match="out of range"):
        Privatizer(build_config(spec)).privatize({"x": 10**400})
