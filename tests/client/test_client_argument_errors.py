"""Bad arguments to the SDK are typed ldpcollect errors with a one-line message, raised
before any request: never pydantic's multi-line ``ValidationError`` with its links.

Every test runs with :class:`LDPClient` and :class:`AsyncLDPClient`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from pydantic import ValidationError
from tests.aggregator.training_helpers import spec as training_spec

from ldp_shared.errors import (
    ConfigurationError,
    InvalidQueryError,
    InvalidRecordError,
    LDPError,
)

from .conftest import SPEC, MakeClient
from .fake_aggregator import FakeAggregator

Case = tuple[type[LDPError], str, Callable[[Any], object]]

CASES: dict[str, Case] = {
    "retention-0": (
        InvalidQueryError,
        "invalid retention: days: Input should be greater than or equal to 1",
        lambda c: c.set_retention("survey", 0),
    ),
    "retention-huge": (
        InvalidQueryError,
        "invalid retention: days: Input should be less than or equal to",
        lambda c: c.set_retention("survey", 10**9),
    ),
    "training-epsilon": (
        InvalidQueryError,
        "invalid training spec: epsilon: Input should be greater than 0",
        lambda c: c.create_training_job("survey", training_spec(epsilon=0)),
    ),
    "training-layout": (
        InvalidQueryError,
        "invalid training spec: layout.numeric.0.lo: Input should be a valid number",
        lambda c: c.create_training_job(
            "survey", training_spec(layout={"numeric": [{"name": "x", "lo": "a", "hi": 1}]})
        ),
    ),
    "submit-none": (
        InvalidRecordError,
        "records must be an iterable of records, got NoneType",
        lambda c: c.submit("survey", None),
    ),
    "privatize-many-number": (
        InvalidRecordError,
        "records must be an iterable of records",
        lambda c: c.privatize_many("survey", 5),
    ),
    "collection-spec": (
        ConfigurationError,
        "invalid collection spec: epsilon must be a finite number > 0, got -1.0",
        lambda c: c.create_collection({**SPEC.model_dump(mode="json"), "epsilon": -1}),
    ),
}


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_bad_arguments_are_one_line_typed_errors_before_any_request(
    make_client: MakeClient, server: FakeAggregator, case: str
) -> None:
    error, start, call = CASES[case]
    client = make_client(token="admin")
    before = len(server.requests)
    with pytest.raises(LDPError) as info:
        call(client)
    assert type(info.value) is error and not isinstance(info.value, ValidationError)
    message = str(info.value)
    assert message.startswith(start), message
    assert "\n" not in message and "pydantic.dev" not in message
    assert len(server.requests) == before
