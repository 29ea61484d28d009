"""The collection specs and configs the client accepts, checked without I/O.

:func:`coerce_spec` validates a spec before it is sent; :func:`accept_config` and
:func:`accept_created` check a config the aggregator answered with before anything is
perturbed with it. Every refusal is a :class:`~ldp_shared.errors.ConfigurationError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ldp_shared.collection import FORMAT_VERSION, CollectionConfig, verify_config
from ldp_shared.errors import ConfigurationError, LDPError
from ldp_shared.schema import CollectionSpec
from ldp_shared.validation import validated

__all__ = ["accept_config", "accept_created", "coerce_spec"]


def coerce_spec(spec: CollectionSpec | Mapping[str, Any]) -> CollectionSpec:
    """A validated spec; :class:`ConfigurationError` (before any request) if it is invalid."""
    if isinstance(spec, CollectionSpec):
        return spec
    if not isinstance(spec, Mapping):
        raise ConfigurationError("a collection spec must be a CollectionSpec or a mapping")
    return validated(CollectionSpec, dict(spec), ConfigurationError, "collection spec")


def accept_created(spec: CollectionSpec, config: CollectionConfig) -> CollectionConfig:
    """Check the config a create answered with: verified, and made from the spec sent."""
    checked = accept_config(spec.name, config)
    if checked.spec != spec:
        raise ConfigurationError(
            f"collection {spec.name!r}: the aggregator created it from another spec than the"
            " one sent"
        )
    return checked


def accept_config(name: str, config: CollectionConfig) -> CollectionConfig:
    """Check a published config before perturbing anything with it.

    The config must be the one of collection ``name``, of a format this SDK knows, and
    exactly what its spec implies (:func:`~ldp_shared.collection.verify_config`: p, q,
    ε, layout and hash are derived here, not taken from the server). Returns the
    locally rebuilt config; :class:`ConfigurationError` otherwise.
    """
    if config.name != name:
        raise ConfigurationError(
            f"asked for collection {name!r}, the aggregator sent the config of {config.name!r}"
        )
    if config.format_version != FORMAT_VERSION:
        raise ConfigurationError(
            f"collection {name!r} uses config format {config.format_version}; this SDK "
            f"understands format {FORMAT_VERSION} (upgrade ldpcollect)"
        )
    try:
        return verify_config(config)
    except LDPError:
        raise
    except (ValueError, AssertionError) as error:
        raise ConfigurationError(
            f"collection {name!r}: the published config cannot be rebuilt: {error}"
        ) from None
