"""Trained models: stored as released (JSON), looked up by collection, kind and id."""

from __future__ import annotations

from datetime import date

from sqlalchemy import Connection, Engine, insert, select

from ldp_aggregator.pages import PageQuery
from ldp_aggregator.storage.tables import models
from ldp_shared.errors import ModelNotFoundError


def insert_model(
    connection: Connection,
    *,
    model_id: str,
    collection_id: int,
    kind: str,
    created_day: date,
    model_json: str,
) -> None:
    """Store one model (the caller's transaction commits it)."""
    connection.execute(
        insert(models).values(
            model_id=model_id,
            collection_id=collection_id,
            kind=kind,
            created_day=created_day,
            model_json=model_json,
        )
    )


def load_model_json(engine: Engine, collection_id: int, kind: str, model_id: str) -> str:
    """The stored JSON of a model; :class:`ModelNotFoundError` if the collection has no
    model of that kind and id."""
    with engine.connect() as connection:
        found = connection.execute(
            select(models.c.model_json).where(
                models.c.model_id == model_id,
                models.c.collection_id == collection_id,
                models.c.kind == kind,
            )
        ).scalar_one_or_none()
    if found is None:
        raise ModelNotFoundError(f"the collection has no {kind} model with id {model_id!r}")
    return str(found)


def list_model_ids(engine: Engine, collection_id: int, kind: str) -> list[str]:
    """The ids of a collection's models of one kind, oldest day first."""
    with engine.connect() as connection:
        return list(
            connection.execute(
                select(models.c.model_id)
                .where(models.c.collection_id == collection_id, models.c.kind == kind)
                .order_by(models.c.created_day, models.c.model_id)
            ).scalars()
        )


def page_model_ids(
    engine: Engine, collection_id: int, kind: str, page: PageQuery
) -> tuple[list[str], str | None]:
    """One page of the ids of a collection's models of one kind, by id, and the next
    page's cursor."""
    query = select(models.c.model_id).where(
        models.c.collection_id == collection_id, models.c.kind == kind
    )
    with engine.connect() as connection:
        ids = list(connection.execute(page.select(query, models.c.model_id)).scalars())
    return page.cut(ids, str)
