"""The registry of mechanisms: a mechanism's name → its spec class.

A mechanism module registers its spec class (:func:`register`) when it is imported;
:mod:`ldp_shared.mechanisms` imports the built-in ones. A collection spec finds the class
of each attribute here by the attribute's ``mechanism`` (default
:data:`DEFAULT_MECHANISM`); nothing else lists mechanism names.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from typing import Any, TypeVar

from ldp_shared.errors import ConfigurationError
from ldp_shared.mechanisms.base import AttributeSpec

DEFAULT_MECHANISM = "oue"
"""The mechanism of an attribute that names none: optimised unary encoding."""

_SPECS: dict[str, type[AttributeSpec]] = {}

SpecClass = TypeVar("SpecClass", bound=type[AttributeSpec])


def register(spec_class: SpecClass) -> SpecClass:
    """Register a spec class under every name of its ``mechanism`` literal (a decorator)."""
    fields: dict[str, Any] = dict(spec_class.__pydantic_fields__)
    annotation = fields["mechanism"].annotation
    names = typing.get_args(annotation)
    if typing.get_origin(annotation) is not typing.Literal or not names:
        raise ConfigurationError(
            f"{spec_class.__name__}.mechanism must be a Literal of the mechanism's names"
        )
    for name in names:
        known = _SPECS.get(name)
        if known is not None and known is not spec_class:
            raise ConfigurationError(f"mechanism {name!r} is registered already ({known})")
    for name in names:
        _SPECS[name] = spec_class
    return spec_class


def unregister(name: str) -> None:
    """Forget a mechanism (for tests that register one of their own)."""
    _SPECS.pop(name, None)


def mechanism_names() -> list[str]:
    """The registered mechanisms' names, sorted."""
    return sorted(_SPECS)


def registered_classes() -> list[type[AttributeSpec]]:
    """Each registered spec class once, in the order of their first name."""
    seen: dict[type[AttributeSpec], None] = {}
    for name in mechanism_names():
        seen.setdefault(_SPECS[name], None)
    return list(seen)


def spec_class(name: str) -> type[AttributeSpec]:
    """The spec class of mechanism ``name``; ``ValueError`` naming the known ones otherwise."""
    found = _SPECS.get(name)
    if found is None:
        raise ValueError(
            f"unknown mechanism {name!r}; choose one of {', '.join(mechanism_names())}"
        )
    return found


def parse_attribute(data: Any) -> AttributeSpec:
    """Validate one attribute with the spec class its ``mechanism`` names."""
    if isinstance(data, AttributeSpec):
        return data
    if not isinstance(data, Mapping):
        raise ValueError("an attribute must be an object")
    name = data.get("mechanism", DEFAULT_MECHANISM)
    if not isinstance(name, str):
        raise ValueError(f"mechanism must be a name, got {name!r}")
    return spec_class(name).model_validate(dict(data))
