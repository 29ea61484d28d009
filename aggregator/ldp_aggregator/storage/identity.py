"""The database's identity (table ``database_identity``, one row made by migration 0013):
log mode stamps each message with it (``Ldp-Database``), and a fold worker refuses
messages stamped with another database's (docs/log-mode.md)."""

from __future__ import annotations

import weakref

from sqlalchemy import Engine, select

from ldp_aggregator.storage.tables import database_identity

_KNOWN: weakref.WeakKeyDictionary[Engine, str] = weakref.WeakKeyDictionary()


def known_identity(engine: Engine) -> str | None:
    """The identity of ``engine``'s database if it was read already (no I/O)."""
    return _KNOWN.get(engine)


def identity_of(engine: Engine) -> str:
    """The identity of ``engine``'s database, read once per engine."""
    known = _KNOWN.get(engine)
    if known is None:
        with engine.connect() as connection:
            known = str(connection.execute(select(database_identity.c.id)).scalar_one())
        _KNOWN[engine] = known
    return known
