"""Statistics shards on PostgreSQL: writers of one collection do not queue for one row,
and closing or deleting the collection still waits for every writer.

Two transactions stand for two replicas (each its own connection); the waits are bounded
by ``lock_timeout``, so a writer that would queue fails the test instead of hanging it.
"""

from __future__ import annotations

import base64
import threading
from collections.abc import Iterator
from contextlib import ExitStack

import numpy as np
import pytest
from sqlalchemy import Engine, text
from sqlalchemy.exc import OperationalError
from tests.engines import POSTGRES_URL, drop_schema, new_postgres_schema

from ldp_aggregator import writer as writer_module
from ldp_aggregator.collections import create_collection
from ldp_aggregator.ingest import ingest_batch
from ldp_aggregator.storage.collections import StoredCollection
from ldp_aggregator.storage.engine import make_engine
from ldp_aggregator.storage.lifecycle import refusal_to_write, set_closed
from ldp_aggregator.storage.migrate import upgrade
from ldp_aggregator.storage.reports import insert_reports_returning
from ldp_aggregator.storage.stats import (
    STATS_SHARDS,
    Stats,
    add_to_shard,
    claim_shard,
    read_stats,
)
from ldp_shared.errors import CollectionClosedError
from ldp_shared.periods import stamp
from ldp_shared.schema import CollectionSpec
from ldp_shared.wire.reports import BatchResult, ReportBatch

from .conftest import packed_reports, report_dicts, snapshot, spec_payload

pytestmark = pytest.mark.skipif(not POSTGRES_URL, reason="no PostgreSQL server answers")

TODAY = stamp("day")[1]
"""The period the writers of these tests add to (every test runs within seconds)."""


@pytest.fixture
def pg() -> Iterator[Engine]:
    url = new_postgres_schema()
    engine = make_engine(url)
    upgrade(engine)
    yield engine
    engine.dispose()
    drop_schema(url)


@pytest.fixture
def survey(pg: Engine) -> StoredCollection:
    return create_collection(pg, CollectionSpec.model_validate(spec_payload()))


def one_report(survey: StoredCollection) -> Stats:
    length = survey.config.stats_length
    return Stats(n_reports=1, sums=np.ones(length, dtype=np.int64))


def test_two_writers_of_one_collection_hold_different_shards_at_once(
    pg: Engine, survey: StoredCollection
) -> None:
    length = survey.config.stats_length
    with pg.connect() as first, pg.connect() as second:
        first.begin()
        assert refusal_to_write(first, survey) is None
        held = claim_shard(first, survey.id, TODAY, length)
        second.begin()
        second.execute(text("SET LOCAL lock_timeout = '2s'"))  # a queued writer fails here
        assert refusal_to_write(second, survey) is None
        other = claim_shard(second, survey.id, TODAY, length)
        assert held is not None and other is not None
        assert (held.shard, other.shard) == (0, 1)
        add_to_shard(second, survey.id, other, one_report(survey))
        second.commit()  # while the first still holds its shard
        add_to_shard(first, survey.id, held, one_report(survey))
        first.commit()
    with pg.connect() as connection:
        stats = read_stats(connection, survey.id, length)
    assert stats.n_reports == 2 and stats.sums.tolist() == [2] * length


def test_ingestion_goes_on_while_another_writer_holds_a_shard(
    pg: Engine, survey: StoredCollection
) -> None:
    """The shape of two replicas: one transaction stays open on a shard (a slow replica)
    while batches of the other commit; with one row per collection they would queue."""
    accepted: list[int] = []

    def ingest() -> None:
        for seed in range(3):
            items = report_dicts(survey.config, packed_reports(survey.config, 50, seed))
            batch = ReportBatch.model_validate({"reports": items})
            accepted.append(ingest_batch(pg, survey, batch).accepted)

    with pg.connect() as slow:
        slow.begin()
        assert claim_shard(slow, survey.id, TODAY, survey.config.stats_length) is not None
        other = threading.Thread(target=ingest)
        other.start()
        other.join(20)
        finished = not other.is_alive()
        slow.rollback()  # lets a queued writer go on if there was one
    other.join(20)
    assert finished, "ingestion queued behind the open transaction"
    assert accepted == [50, 50, 50]
    state = snapshot(pg, "survey")
    assert state.n_reports == state.rows == 150


def test_every_shard_held_a_writer_waits_for_shard_0(pg: Engine, survey: StoredCollection) -> None:
    length = survey.config.stats_length
    with ExitStack() as stack:
        for shard in range(STATS_SHARDS):  # one writer per shard, as many replicas
            holder = stack.enter_context(pg.connect())
            holder.begin()
            claimed = claim_shard(holder, survey.id, TODAY, length)
            assert claimed is not None and claimed.shard == shard
        with pg.connect() as late:
            late.begin()
            late.execute(text("SET LOCAL lock_timeout = '300ms'"))
            with pytest.raises(OperationalError, match="lock timeout"):
                claim_shard(late, survey.id, TODAY, length)
            late.rollback()


def test_closing_waits_for_a_writer_and_then_refuses_the_next(
    pg: Engine, survey: StoredCollection
) -> None:
    closed = threading.Event()
    with pg.connect() as writer:
        writer.begin()
        assert refusal_to_write(writer, survey) is None  # holds the row FOR SHARE

        def close() -> None:
            set_closed(pg, survey, True)
            closed.set()

        closing = threading.Thread(target=close)
        closing.start()
        assert not closed.wait(0.5)  # waits for the writer's transaction
        claimed = claim_shard(writer, survey.id, TODAY, survey.config.stats_length)
        assert claimed is not None
        add_to_shard(writer, survey.id, claimed, one_report(survey))
        writer.commit()
    closing.join(10)
    assert closed.is_set()
    items = report_dicts(survey.config, packed_reports(survey.config, 5, 9))
    with pytest.raises(CollectionClosedError):
        ingest_batch(pg, survey, ReportBatch.model_validate({"reports": items}))
    with pg.connect() as connection:
        assert read_stats(connection, survey.id, survey.config.stats_length).n_reports == 1


def test_an_id_another_replica_stores_meanwhile_counts_once(
    pg: Engine, survey: StoredCollection, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two replicas store the same new id at once: the second insert waits for the first
    and, once it commits, answers that it stored only the other id (no lookup, no retry:
    with both replicas racing on many ids, retries could run out)."""
    both, other = report_dicts(survey.config, packed_reports(survey.config, 2, 11))
    answers: list[BatchResult] = []
    lookups: list[int] = []
    real = writer_module.existing_ids
    monkeypatch.setattr(
        writer_module, "existing_ids", lambda *args: lookups.append(1) or real(*args)
    )

    def second_replica() -> None:
        batch = ReportBatch.model_validate({"reports": [both, other]})
        answers.append(ingest_batch(pg, survey, batch))

    with pg.connect() as first:
        first.begin()
        bits = base64.b64decode(both["bits"])
        day, period = stamp("day")
        stored = insert_reports_returning(first, survey.id, [(both["id"], bits)], day, period)
        assert stored == {both["id"]}
        waiting = threading.Thread(target=second_replica)
        waiting.start()
        waiting.join(0.5)
        assert waiting.is_alive()  # its insert waits for ours
        first.commit()
    waiting.join(20)
    assert [o.status for o in answers[0].outcomes] == ["duplicate", "accepted"]
    assert lookups == []
    with pg.connect() as connection:
        assert read_stats(connection, survey.id, survey.config.stats_length).n_reports == 1
