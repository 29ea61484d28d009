"""What every wire module shares: the frozen answer model and stated number bounds."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.config import JsonDict

__all__ = ["WireModel", "checked_range"]


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
