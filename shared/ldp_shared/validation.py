"""Pydantic's validation errors as one readable line: ``field: message; ...``.

Pydantic's own text spans several lines and ends every error with a link to its
documentation; what a user needs is where (``layout.numeric.0.low``) and what. The
aggregator's 422 problems (:mod:`ldp_aggregator.problems`) and the SDK's typed errors
(:func:`validated`) both say it this way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ldp_shared.errors import LDPError

M = TypeVar("M", bound=BaseModel)

PYDANTIC_PREFIXES = ("Value error, ", "Assertion failed, ")
"""What pydantic puts before the message of a validator's ``ValueError`` (dropped)."""

MAX_LISTED = 5
"""Errors named in one line; the rest are counted."""


def readable(message: str) -> str:
    """A validator's message without pydantic's ``Value error, `` prefix."""
    for prefix in PYDANTIC_PREFIXES:
        message = message.removeprefix(prefix)
    return message


def location(loc: Sequence[Any]) -> str:
    """``("body", "layout", 0)`` → ``body.layout.0``."""
    return ".".join(str(part) for part in loc)


def one_line(errors: Iterable[Mapping[str, Any]]) -> str:
    """``loc: msg; loc: msg; and N more`` for pydantic's ``errors()`` items (a message
    without a location, from a whole-model check, stands alone)."""
    items = list(errors)
    parts = []
    for item in items[:MAX_LISTED]:
        where = location(item.get("loc", ()))
        message = readable(str(item.get("msg", "invalid")))
        parts.append(f"{where}: {message}" if where else message)
    if len(items) > MAX_LISTED:
        parts.append(f"and {len(items) - MAX_LISTED} more")
    return "; ".join(parts)


def validated(model: type[M], values: Any, error: type[LDPError], what: str) -> M:
    """``model`` validated from ``values`` (a mapping), or ``error("invalid <what>: ...")``
    in one line: how the SDK checks its callers' arguments before sending them."""
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        raise error(f"invalid {what}: {one_line(exc.errors())}") from None


__all__ = ["PYDANTIC_PREFIXES", "location", "one_line", "readable", "validated"]
