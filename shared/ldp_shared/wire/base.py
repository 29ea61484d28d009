"""What every wire module shares: the frozen answer model and stated number bounds."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.config import JsonDict

__all__ = ["WireModel", "central_field", "checked_range"]


class WireModel(BaseModel):
    """An answer of the aggregator: immutable, and no member it does not declare."""

    model_config = ConfigDict(frozen=True, extra="forbid")


def checked_range(
    *,
    gt: float | None = None,
    ge: float | None = None,
    lt: float | None = None,
    le: float | None = None,
) -> JsonDict:
    """The JSON-schema bounds of a number that the code checks itself.

    Passed as ``json_schema_extra`` so that the OpenAPI document states the range a value
    must lie in (a request within every stated bound is not refused for its ranges),
    while the check keeps answering with its own problem (``invalid-query``) instead of
    a generic validation failure. ``tests/aggregator/test_openapi.py`` holds the two
    together at every bound.
    """
    stated: dict[str, float | None] = {
        "exclusiveMinimum": gt,
        "minimum": ge,
        "exclusiveMaximum": lt,
        "maximum": le,
    }
    return {key: bound for key, bound in stated.items() if bound is not None}


SHUFFLED_REPORTS = "of the n_reports shuffled reports (absent when unshuffled)"


def central_field(of_what: str = SHUFFLED_REPORTS) -> Any:
    """The optional ``central`` member of an answer: a shuffled collection's central
    (ε, δ) against the aggregator, left out of the JSON when the collection is not
    shuffled; ``of_what`` says which reports it covers."""
    return Field(
        default=None,
        exclude_if=lambda value: value is None,
        description=(
            "shuffled collections: the central (ε, δ) against the aggregator, given an"
            f" honest shuffler, {of_what}"
        ),
    )
