"""The dashboard's sign-in sessions, kept server-side (table ``ui_sessions``).

A session id is ``secrets.token_urlsafe(32)`` (256 bits), sent to the browser in the
session cookie and never stored: the table keeps its SHA-256, so a copy of the database
opens no session. Each row also keeps the SHA-256 (hex) of the bearer token that signed
in, which the server holds anyway in its settings: a session lasts while that token is
still configured (retiring a token ends its sessions) and until ``expires_unix``.
Signing out deletes the row. Replicas sharing a database share the sessions.

An id is not a bearer token (the API compares bearer tokens with the configured digests
only) and a bearer token is not an id (no row holds its hash as an id).

Migration 0010 creates the table.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from dataclasses import dataclass

from sqlalchemy import (
    BigInteger,
    Column,
    Engine,
    LargeBinary,
    String,
    Table,
    delete,
    insert,
    select,
)

from ldp_aggregator.storage.tables import metadata

ui_sessions = Table(
    "ui_sessions",
    metadata,
    Column("id_hash", LargeBinary(32), primary_key=True),
    Column("token_sha256", String(64), nullable=False),
    Column("expires_unix", BigInteger, nullable=False),
)


@dataclass(frozen=True)
class SessionRow:
    """A live session: the digest of the token that opened it and when it ends."""

    token_sha256: str
    expires_unix: int


def _id_hash(session_id: str) -> bytes:
    return hashlib.sha256(session_id.encode("utf-8", "replace")).digest()


def open_session(engine: Engine, token_sha256: str, lifetime_seconds: int) -> str:
    """A new session for the token with digest ``token_sha256``; its id (only the hash is
    kept). Sessions past their end are deleted on the way."""
    session_id = secrets.token_urlsafe(32)
    now = int(time.time())
    with engine.begin() as connection:
        connection.execute(delete(ui_sessions).where(ui_sessions.c.expires_unix <= now))
        connection.execute(
            insert(ui_sessions).values(
                id_hash=_id_hash(session_id),
                token_sha256=token_sha256,
                expires_unix=now + lifetime_seconds,
            )
        )
    return session_id


def live_session(engine: Engine, session_id: str) -> SessionRow | None:
    """The session of ``session_id`` if it exists and has not ended, else ``None``."""
    with engine.connect() as connection:
        row = connection.execute(
            select(ui_sessions.c.token_sha256, ui_sessions.c.expires_unix).where(
                ui_sessions.c.id_hash == _id_hash(session_id),
                ui_sessions.c.expires_unix > int(time.time()),
            )
        ).one_or_none()
    if row is None:
        return None
    return SessionRow(str(row.token_sha256), int(row.expires_unix))


def close_session(engine: Engine, session_id: str) -> None:
    """Revoke the session (signing out): its id opens nothing afterwards."""
    with engine.begin() as connection:
        connection.execute(delete(ui_sessions).where(ui_sessions.c.id_hash == _id_hash(session_id)))
