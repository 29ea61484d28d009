"""Creating a collection from a spec (the plain function behind ``POST /v1/collections``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date

from sqlalchemy import Engine

from ldp_aggregator.storage.collections import StoredCollection, insert_collection
from ldp_shared.collection import CollectionConfig, build_config
from ldp_shared.errors import ConfigurationError, LDPError
from ldp_shared.schema import CollectionSpec


@contextmanager
def refused_as_configuration(what: str) -> Iterator[None]:
    """Any failure to derive ``what``'s mechanisms is a :class:`ConfigurationError` (422),
    never a 500: the mechanisms refuse an ε out of range themselves (the one rule of
    ``ldp_shared.mechanisms._checks``); this is the net under it."""
    try:
        yield
    except LDPError:
        raise
    except OverflowError:
        raise ConfigurationError(
            f"{what} cannot run with these parameters: ε is too large "
            "(numeric overflow computing the mechanism's probabilities)"
        ) from None
    except (ValueError, ArithmeticError) as exc:
        raise ConfigurationError(f"{what} cannot run with these parameters: {exc}") from None


def config_of(spec: CollectionSpec) -> CollectionConfig:
    """The public config of a spec; any failure to derive it is a :class:`ConfigurationError`."""
    with refused_as_configuration("the collection"):
        return build_config(spec)


def create_collection(
    engine: Engine, spec: CollectionSpec, today: date | None = None
) -> StoredCollection:
    """Derive the config of ``spec`` and store the collection with empty statistics.

    Raises :class:`ConfigurationError` when the spec cannot run and
    :class:`~ldp_shared.errors.ConflictError` when the name is taken.
    """
    return insert_collection(engine, config_of(spec), today)
