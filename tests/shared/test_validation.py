"""Pydantic's errors as one line: where and what, no prefixes, no links, the rest counted."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, Field, ValidationError, field_validator

from ldp_shared.errors import InvalidQueryError
from ldp_shared.validation import one_line, validated


class Inner(BaseModel):
    low: float


class Outer(BaseModel):
    n: int = Field(ge=1)
    inner: list[Inner] = []
    name: str = "x"

    @field_validator("name")
    @classmethod
    def _short(cls, value: str) -> str:
        if len(value) > 3:
            raise ValueError("name is longer than 3 characters")
        return value


def test_one_line_names_each_field_and_drops_pydantics_prefix() -> None:
    with pytest.raises(ValidationError) as info:
        Outer.model_validate({"n": 0, "inner": [{"low": "a"}], "name": "long"})
    assert one_line(info.value.errors()) == (
        "n: Input should be greater than or equal to 1; inner.0.low: Input should be a valid"
        " number, unable to parse string as a number; name: name is longer than 3 characters"
    )


def test_more_than_five_errors_are_counted() -> None:
    items = [{"loc": ("a", i), "msg": "bad"} for i in range(8)]
    assert one_line(items).endswith("a.4: bad; and 3 more")
    assert one_line([{"loc": (), "msg": "Value error, whole"}]) == "whole"


def test_validated_raises_the_given_class_in_one_line() -> None:
    assert validated(Outer, {"n": 2}, InvalidQueryError, "thing").n == 2
    with pytest.raises(InvalidQueryError) as info:
        validated(Outer, {"n": 0}, InvalidQueryError, "thing")
    assert str(info.value) == "invalid thing: n: Input should be greater than or equal to 1"
    assert info.value.__cause__ is None
