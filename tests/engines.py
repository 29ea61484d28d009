"""Which database the tests store into: SQLite files by default, PostgreSQL on request.

``LDPCOLLECT_TEST_ENGINE=postgresql`` makes :func:`database_url` hand each test a
schema of its own on the PostgreSQL server at ``LDPCOLLECT_TEST_POSTGRES_URL`` (default
the local one at ``127.0.0.1:5432``, database ``test``) instead of a SQLite file, so the
storage, API and end-to-end tests run unchanged on PostgreSQL (``.ci/run`` does this
in its second pass). The schemas are dropped when the session ends (``tests/conftest.py``).

:data:`POSTGRES_URL` is the server's URL when it answers, else ``""``; under ``CI=true``
an unreachable server is an error, never a skip.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from urllib.parse import quote

from sqlalchemy import create_engine, text

DEFAULT_POSTGRES_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
ENGINE = os.environ.get("LDPCOLLECT_TEST_ENGINE", "sqlite").lower()
if ENGINE not in ("sqlite", "postgresql"):
    raise RuntimeError(f"LDPCOLLECT_TEST_ENGINE must be sqlite or postgresql, got {ENGINE!r}")


def _reachable_postgres_url() -> str:
    url = os.environ.get("LDPCOLLECT_TEST_POSTGRES_URL") or DEFAULT_POSTGRES_URL
    try:
        probe = create_engine(url, connect_args={"connect_timeout": 5})
        with probe.connect() as connection:
            connection.execute(text("SELECT 1"))
        probe.dispose()
    except Exception as error:
        if os.environ.get("CI", "").lower() == "true" or ENGINE == "postgresql":
            raise RuntimeError(f"the PostgreSQL tests must run: {url} is unreachable") from error
        return ""
    return url


POSTGRES_URL = _reachable_postgres_url()
_CREATED: list[str] = []


def new_postgres_schema() -> str:
    """The URL of a fresh, empty schema on the test server (dropped at the session's end)."""
    assert POSTGRES_URL, "no PostgreSQL server answers"
    schema = f"ldp_test_{secrets.token_hex(6)}"
    admin = create_engine(POSTGRES_URL)
    with admin.begin() as connection:
        connection.execute(text(f'CREATE SCHEMA "{schema}"'))
    admin.dispose()
    _CREATED.append(schema)
    separator = "&" if "?" in POSTGRES_URL else "?"
    return f"{POSTGRES_URL}{separator}options={quote(f'-csearch_path={schema}')}"


def drop_schema(url: str) -> None:
    """Drop the schema :func:`new_postgres_schema` made for ``url`` (now, not at the end)."""
    for schema in list(_CREATED):
        if quote(f"-csearch_path={schema}") in url:
            _drop([schema])


def _drop(schemas: list[str]) -> None:
    admin = create_engine(POSTGRES_URL)
    with admin.connect() as connection:
        for schema in schemas:
            with connection.begin():
                connection.execute(text("SET LOCAL lock_timeout = '10s'"))
                connection.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
            _CREATED.remove(schema)
    admin.dispose()


def drop_created_schemas() -> None:
    """Drop every schema still left (called once the session ends)."""
    if _CREATED:
        _drop(list(_CREATED))


def database_url(path: Path) -> str:
    """A fresh database for one test: the SQLite file ``path``, or under
    ``LDPCOLLECT_TEST_ENGINE=postgresql`` a new schema on the test server."""
    if ENGINE == "postgresql":
        return new_postgres_schema()
    return f"sqlite:///{path}"
