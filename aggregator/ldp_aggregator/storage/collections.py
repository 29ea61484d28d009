"""Creating and loading collections (their configs are immutable once created)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime

from sqlalchemy import Connection, Engine, insert, select
from sqlalchemy.exc import IntegrityError

from ldp_aggregator.pages import PageQuery
from ldp_aggregator.storage.tables import collections
from ldp_shared.collection import CollectionConfig
from ldp_shared.errors import CollectionNotFoundError, ConflictError


def utc_today() -> date:
    """Today's date in UTC: the finest time the aggregator stores."""
    return datetime.now(UTC).date()


@dataclass(frozen=True)
class StoredCollection:
    """A collection as stored: its database id and its public config."""

    id: int
    config: CollectionConfig

    @property
    def name(self) -> str:
        return self.config.name


def insert_collection(
    engine: Engine, config: CollectionConfig, today: date | None = None
) -> StoredCollection:
    """Store a new collection (its statistics rows come with the first report of each
    period, :func:`~ldp_aggregator.storage.stats.claim_shard`).

    Raises :class:`ConflictError` when a collection of that name exists already.
    """
    conflict = ConflictError(f"a collection named {config.name!r} exists already")
    try:
        with engine.begin() as connection:
            if _find_id(connection, config.name) is not None:
                raise conflict
            result = connection.execute(
                insert(collections).values(
                    name=config.name,
                    config_json=config.model_dump_json(),
                    config_hash=config.config_hash,
                    created_day=today or utc_today(),
                )
            )
            key = result.inserted_primary_key
            assert key is not None
            collection_id = int(key[0])
    except IntegrityError:
        # another replica created the same name between our check and our insert
        raise conflict from None
    return StoredCollection(id=collection_id, config=config)


def _find_id(connection: Connection, name: str) -> int | None:
    found = connection.execute(
        select(collections.c.id).where(collections.c.name == name)
    ).scalar_one_or_none()
    return None if found is None else int(found)


def load_collection(engine: Engine, name: str) -> StoredCollection:
    """The stored collection called ``name``; :class:`CollectionNotFoundError` if none."""
    with engine.connect() as connection:
        row = connection.execute(
            select(collections.c.id, collections.c.config_json).where(collections.c.name == name)
        ).one_or_none()
    if row is None:
        raise CollectionNotFoundError(f"no collection named {name!r}")
    config = CollectionConfig.model_validate_json(row.config_json)
    return StoredCollection(id=int(row.id), config=config)


def list_collection_names(engine: Engine) -> list[str]:
    """The names of all collections, sorted."""
    with engine.connect() as connection:
        return list(
            connection.execute(select(collections.c.name).order_by(collections.c.name)).scalars()
        )


def page_collection_names(engine: Engine, page: PageQuery) -> tuple[list[str], str | None]:
    """One page of the collections' names, by name, and the next page's cursor."""
    with engine.connect() as connection:
        query = page.select(select(collections.c.name), collections.c.name)
        names = list(connection.execute(query).scalars())
    return page.cut(names, str)


class CollectionCache:
    """Loaded collections by name, shared by the request threads of one replica.

    A collection's config never changes, but an admin may delete a collection (on any
    replica) and create another of the same name. :meth:`get` therefore checks a hit
    against the database (the id and config hash, one indexed lookup) and never answers
    with a deleted collection. :meth:`cached` skips that check, for the upload path only,
    whose writing transaction checks again
    (:func:`~ldp_aggregator.storage.lifecycle.refusal_to_write`).
    Only hits are cached, so a collection created through another replica is found
    on its first use here.
    """

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._loaded: dict[str, StoredCollection] = {}

    def get(self, name: str) -> StoredCollection:
        """The collection as stored now; :class:`CollectionNotFoundError` if none."""
        found = self._loaded.get(name)
        if found is not None:
            with self._engine.connect() as connection:
                row = connection.execute(
                    select(collections.c.id, collections.c.config_hash).where(
                        collections.c.name == name
                    )
                ).one_or_none()
            if row is not None and (int(row.id), row.config_hash) == (
                found.id,
                found.config.config_hash,
            ):
                return found
            self.forget(name)
        return self._load(name)

    def peek(self, name: str) -> StoredCollection | None:
        """:meth:`cached` without loading (``None``: not loaded here yet)."""
        return self._loaded.get(name)

    def cached(self, name: str) -> StoredCollection:
        """The collection as first loaded here, maybe deleted since (see the class)."""
        found = self._loaded.get(name)
        return self._load(name) if found is None else found

    def _load(self, name: str) -> StoredCollection:
        found = load_collection(self._engine, name)
        self._loaded[name] = found
        return found

    def remember(self, collection: StoredCollection) -> None:
        self._loaded[collection.name] = collection

    def forget(self, name: str) -> None:
        self._loaded.pop(name, None)
