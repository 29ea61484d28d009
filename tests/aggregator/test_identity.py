"""The database's identity (``storage/identity.py``, migration 0013): one random id per
database, the same for every engine on it, different for another database."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import func, select

from ldp_aggregator.storage.engine import make_engine
from ldp_aggregator.storage.identity import identity_of, known_identity
from ldp_aggregator.storage.migrate import upgrade
from ldp_aggregator.storage.tables import database_identity


def test_one_random_identity_per_database(tmp_path: Path) -> None:
    first, again, other = (
        make_engine(f"sqlite:///{tmp_path / name}") for name in ("a.db", "a.db", "b.db")
    )
    upgrade(first)
    upgrade(other)
    upgrade(first)  # migrating again makes no second identity
    assert known_identity(first) is None
    mine = identity_of(first)
    assert known_identity(first) == mine and len(mine) == 32 and int(mine, 16) >= 0
    assert identity_of(again) == mine  # another engine, another process: the same database
    assert identity_of(other) != mine
    with first.connect() as connection:
        assert connection.execute(select(func.count()).select_from(database_identity)).scalar() == 1
    for engine in (first, again, other):
        engine.dispose()
