"""Alembic environment: runs on the connection handed over in ``config.attributes``.

:func:`ldp_aggregator.storage.migrate.upgrade` builds the Alembic config in code, so
no ``alembic.ini`` is needed and the migrations run from an installed wheel too. The
``alembic`` command line works as well with ``-x url=...`` or ``sqlalchemy.url`` set.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection, create_engine

from ldp_aggregator.storage.tables import metadata

config = context.config


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    url = context.get_x_argument(as_dictionary=True).get("url") or config.get_main_option(
        "sqlalchemy.url"
    )
    if not url:
        raise RuntimeError("no database: pass -x url=... or set sqlalchemy.url")
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            _run(conn)
    finally:
        engine.dispose()


if context.is_offline_mode():
    raise RuntimeError("offline (SQL script) migrations are not supported")
run_migrations_online()
