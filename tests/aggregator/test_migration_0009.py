"""Migration 0009: a training token's issuing second becomes the coarse end of its hold
(docs/training-jobs.md), and back on downgrade. Runs on the test engine (SQLite, or
PostgreSQL under ``LDPCOLLECT_TEST_ENGINE=postgresql``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import Engine, text
from tests.aggregator.conftest import spec_payload
from tests.aggregator.training_helpers import spec
from tests.engines import database_url

from ldp_aggregator import training
from ldp_aggregator.collections import create_collection
from ldp_aggregator.storage.engine import make_engine
from ldp_aggregator.storage.migrate import alembic_config, head_revision, upgrade
from ldp_shared.schema import CollectionSpec
from ldp_shared.wire.training import TrainingSpec

ISSUED = 1_800_000_007
HOLD = 60
# token: (round, used); the job's open round is 1
TOKENS = {"open": (1, 0), "used": (1, 1), "closed": (0, 0)}


@pytest.fixture
def at_0008(db_path: Path) -> Iterator[Engine]:
    engine = make_engine(database_url(db_path))
    upgrade(engine, "0008")
    yield engine
    engine.dispose()


def downgrade(engine: Engine, revision: str) -> None:
    config = alembic_config()
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.downgrade(config, revision)


def column(engine: Engine, name: str) -> dict[str, int | None]:
    """The column ``name`` of every token, by the token's name in :data:`TOKENS`."""
    with engine.connect() as connection:
        rows = connection.execute(text(f"SELECT token_hash, {name} FROM training_tokens"))
        return {bytes(token).rstrip(b".").decode(): value for token, value in rows}


def test_the_issuing_second_becomes_the_end_of_the_hold_and_back(at_0008: Engine) -> None:
    collection = create_collection(at_0008, CollectionSpec.model_validate(spec_payload("train")))
    job_spec = TrainingSpec.model_validate(spec(participation_seconds=HOLD - 0.5))
    job = training.create_job(at_0008, collection, job_spec)
    with at_0008.begin() as connection:
        connection.execute(text("UPDATE training_rounds SET round = 1"))
        for token, (round_, used) in TOKENS.items():
            connection.execute(
                text(
                    "INSERT INTO training_tokens (job_id, token_hash, round, role, issued_unix,"
                    " used) VALUES (:job, :token, :round, 'gradient', :issued, :used)"
                ),
                {
                    "job": job.id,
                    "token": token.encode().ljust(32, b"."),
                    "round": round_,
                    "issued": ISSUED,
                    "used": used,
                },
            )

    upgrade(at_0008)
    end = 1_800_000_120  # ISSUED + 60 rounded up to a multiple of 60
    assert column(at_0008, "held_until") == {"open": end, "used": None, "closed": None}

    downgrade(at_0008, "0008")
    assert column(at_0008, "issued_unix") == {"open": end - HOLD, "used": 0, "closed": 0}
    upgrade(at_0008)
    assert column(at_0008, "held_until")["open"] == end
    with at_0008.connect() as connection:
        version = connection.execute(text("SELECT version_num FROM alembic_version"))
        assert version.scalar_one() == head_revision()
