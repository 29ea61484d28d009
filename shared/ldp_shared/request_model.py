"""The one base class of every request body's models (and of the models nested in them):
frozen, no unknown member, and **strict**.

Strict means a JSON value of another type is refused, not coerced: ``true`` is not the
number 1 (``PUT .../retention {"days": true}`` once set one day), ``"7"`` is not 7, ``"0"``
is not a bound, ``7.5`` is not a whole number. A JSON integer is still a number where a
float is expected (``"epsilon": 2``), and an integral float is a whole number (``"days":
7.0``), as JSON Schema's ``integer``, which the OpenAPI document states, has it. The
refusal is the endpoint's usual 422 problem document, naming the member.
``tests/aggregator/test_api_strict_types.py`` holds every request model to it.
"""

from __future__ import annotations

import functools
import typing
from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator

REQUEST_CONFIG = ConfigDict(frozen=True, extra="forbid", strict=True)


@functools.cache
def _whole_fields(model: type[BaseModel]) -> frozenset[str]:
    """The members of ``model`` that take an integer (``int`` or ``int | None``)."""

    def takes_int(annotation: Any) -> bool:
        return annotation is int or any(takes_int(a) for a in typing.get_args(annotation))

    return frozenset(n for n, f in model.model_fields.items() if takes_int(f.annotation))


class RequestModel(BaseModel):
    """A model of a request body (see the module docstring)."""

    model_config = REQUEST_CONFIG

    @model_validator(mode="before")
    @classmethod
    def _integral_floats(cls, data: Any) -> Any:
        """``7.0`` as ``7`` where a whole number is expected; every other value is left to
        the strict validation (``True``, ``"7"``, ``7.5`` are refused there)."""
        if not isinstance(data, dict):
            return data
        whole = _whole_fields(cls)
        return {
            key: int(value)
            if key in whole and type(value) is float and value.is_integer()
            else value
            for key, value in data.items()
        }
