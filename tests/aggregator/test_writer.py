"""Group commit: concurrent requests share a transaction, each answered after its commit."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy import Connection, Engine, event, insert, text
from sqlalchemy.exc import OperationalError
from tests.engines import POSTGRES_URL, drop_schema, new_postgres_schema

from ldp_aggregator import writer as writer_module
from ldp_aggregator.collections import create_collection
from ldp_aggregator.ingest import BatchOutcomes, ingest_batch, ingest_batch_async
from ldp_aggregator.storage.collections import StoredCollection
from ldp_aggregator.storage.lifecycle import delete_collection, set_closed
from ldp_aggregator.storage.reports import count_reports
from ldp_aggregator.storage.stats import ClaimedShard, empty_stats_rows
from ldp_aggregator.storage.tables import collection_stats
from ldp_aggregator.writer import ReportWriter
from ldp_shared.errors import (
    CollectionClosedError,
    CollectionNotFoundError,
    CorruptStatisticsError,
)
from ldp_shared.periods import stamp
from ldp_shared.schema import CollectionSpec
from ldp_shared.wire.reports import BatchResult, ReportBatch

from .conftest import Snapshot, _migrated, snapshot, spec_payload
from .forensics import seeded_requests
from .test_ingest import expected_sums

DEADLINE_SECONDS = 30


@dataclass(frozen=True)
class Gate:
    entered: threading.Event  # the first transaction has begun
    open: threading.Event  # it may go on


def hold_first_transaction(monkeypatch: pytest.MonkeyPatch) -> Gate:
    """The first transaction waits, before it locks anything, until the gate opens."""
    gate = Gate(threading.Event(), threading.Event())
    real = writer_module.claim_shard

    def held(connection: Connection, collection_id: int, *lengths: int) -> ClaimedShard | None:
        if not gate.entered.is_set():
            gate.entered.set()
            assert gate.open.wait(DEADLINE_SECONDS)
        return real(connection, collection_id, *lengths)

    monkeypatch.setattr(writer_module, "claim_shard", held)
    return gate


def uploads_behind_a_held_transaction(
    writer: ReportWriter, collection: StoredCollection, gate: Gate, batches: list[ReportBatch]
) -> list[BatchOutcomes]:
    """Upload ``batches[0]`` from a thread and hold its transaction, queue the others from
    an event loop behind it (the upload route's way), then let it go; their answers."""
    first = threading.Thread(
        target=ingest_batch,
        args=(writer.engine, collection, batches[0]),
        kwargs={"writer": writer},
    )
    first.start()
    assert gate.entered.wait(DEADLINE_SECONDS)

    async def the_others() -> list[BatchOutcomes]:
        waiting = [
            asyncio.create_task(ingest_batch_async(writer, collection, batch))
            for batch in batches[1:]
        ]
        while writer.queued < len(waiting):
            await asyncio.sleep(0.005)
        gate.open.set()
        return await asyncio.gather(*waiting)

    answers = asyncio.run(the_others())
    first.join(DEADLINE_SECONDS)
    return answers


def run_grouped(
    writer: ReportWriter,
    jobs: list[tuple[StoredCollection, list[dict[str, str]]]],
    gate: Gate,
) -> list[BatchResult | BaseException]:
    """Start ``jobs[0]``, queue the others behind its held transaction, then let it go."""
    results: list[BatchResult | BaseException] = [RuntimeError("not run")] * len(jobs)

    def work(k: int) -> None:
        collection, items = jobs[k]
        batch = ReportBatch.model_validate({"reports": items})
        try:
            results[k] = ingest_batch(writer.engine, collection, batch, writer=writer)
        except BaseException as error:
            results[k] = error

    threads = [threading.Thread(target=work, args=(k,)) for k in range(len(jobs))]
    threads[0].start()
    assert gate.entered.wait(DEADLINE_SECONDS)
    for thread in threads[1:]:
        thread.start()
    until(lambda: writer.queued == len(jobs) - 1)
    gate.open.set()
    for thread in threads:
        thread.join(DEADLINE_SECONDS)
    return results


def until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + DEADLINE_SECONDS
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def test_requests_that_arrive_during_a_commit_share_the_next_transaction(
    store: Engine, store_survey: StoredCollection, monkeypatch: pytest.MonkeyPatch
) -> None:
    requests = seeded_requests(store_survey.config, 8, seed=1)
    writer = ReportWriter(store)
    gate = hold_first_transaction(monkeypatch)
    results = run_grouped(writer, [(store_survey, items) for items in requests], gate)
    assert [r.accepted for r in results if isinstance(r, BatchResult)] == [len(i) for i in requests]
    assert writer.transactions == 2  # the first request alone, then the seven together
    everything = [report for items in requests for report in items]
    n = len(everything)
    assert snapshot(store, "survey") == Snapshot(n, n, expected_sums(store_survey, everything))


def test_requests_waiting_in_an_event_loop_share_the_next_transaction(
    store: Engine, store_survey: StoredCollection, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The upload route's way: coroutines wait for the writer's thread without a thread of
    their own, join one transaction, and each gets its own answer."""
    requests = seeded_requests(store_survey.config, 6, seed=6)
    writer = ReportWriter(store)
    gate = hold_first_transaction(monkeypatch)

    batches = [ReportBatch.model_validate({"reports": items}) for items in requests]
    answers = uploads_behind_a_held_transaction(writer, store_survey, gate, batches)
    writer.close()
    assert [a.accepted for a in answers] == [len(items) for items in requests[1:]]
    assert writer.transactions == 2
    everything = [report for items in requests for report in items]
    n = len(everything)
    assert snapshot(store, "survey") == Snapshot(n, n, expected_sums(store_survey, everything))


def test_an_id_sent_twice_in_one_transaction_counts_once(
    store: Engine, store_survey: StoredCollection, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second, third = seeded_requests(store_survey.config, 3, seed=2)
    retried = [second[0], *third]  # a client retrying concurrently
    writer = ReportWriter(store)
    gate = hold_first_transaction(monkeypatch)
    results = run_grouped(
        writer, [(store_survey, first), (store_survey, second), (store_survey, retried)], gate
    )
    assert writer.transactions == 2
    done = [r for r in results if isinstance(r, BatchResult)]
    assert len(done) == 3
    statuses = [o.status for r in done[1:] for o in r.outcomes if o.id == second[0]["id"]]
    assert sorted(statuses) == ["accepted", "duplicate"]
    everything = first + second + third
    n = len(everything)
    assert snapshot(store, "survey") == Snapshot(n, n, expected_sums(store_survey, everything))


def test_a_failing_request_does_not_fail_the_others_of_its_transaction(
    store: Engine, store_survey: StoredCollection, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = create_collection(store, CollectionSpec.model_validate(spec_payload(name="broken")))
    with store.begin() as connection:  # statistics of the wrong length: reading them fails
        rows = empty_stats_rows(broken.id, stamp("day")[1])
        connection.execute(insert(collection_stats), [{**row, "sums": b"\x00"} for row in rows])
    first, second, third = seeded_requests(store_survey.config, 3, seed=3)
    bad = [{**report, "config_hash": broken.config.config_hash} for report in third]
    writer = ReportWriter(store)
    gate = hold_first_transaction(monkeypatch)
    results = run_grouped(
        writer, [(store_survey, first), (broken, bad), (store_survey, second)], gate
    )
    assert isinstance(results[1], CorruptStatisticsError)
    assert [r.accepted for r in (results[0], results[2]) if isinstance(r, BatchResult)] == [
        len(first),
        len(second),
    ]
    n = len(first) + len(second)
    assert snapshot(store, "survey") == Snapshot(n, n, expected_sums(store_survey, first + second))


def test_no_request_is_answered_before_its_commit_and_a_failed_commit_stores_nothing(
    store: Engine, store_survey: StoredCollection, monkeypatch: pytest.MonkeyPatch
) -> None:
    requests = seeded_requests(store_survey.config, 4, seed=4)
    ingest_batch(store, store_survey, ReportBatch.model_validate({"reports": requests[0]}))
    before = snapshot(store, "survey")

    def failing(*_args: Any) -> None:
        raise OperationalError("INSERT", {}, Exception("disk I/O error"))

    monkeypatch.setattr(writer_module, "insert_reports", failing)
    monkeypatch.setattr(writer_module, "insert_reports_returning", failing)
    writer = ReportWriter(store)
    gate = hold_first_transaction(monkeypatch)
    results = run_grouped(writer, [(store_survey, items) for items in requests[1:]], gate)
    assert all(isinstance(r, OperationalError) for r in results)
    assert snapshot(store, "survey") == before


@pytest.mark.parametrize("how", ["closed", "deleted"])
def test_a_closed_or_deleted_collection_is_refused_inside_the_shared_transaction(
    store: Engine, store_survey: StoredCollection, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    other = create_collection(store, CollectionSpec.model_validate(spec_payload(name="other")))
    if how == "closed":
        set_closed(store, other, closed=True)
    else:
        delete_collection(store, other)
    first, second, third = seeded_requests(store_survey.config, 3, seed=4)
    late = [{**report, "config_hash": other.config.config_hash} for report in third]
    writer = ReportWriter(store)
    gate = hold_first_transaction(monkeypatch)
    results = run_grouped(
        writer, [(store_survey, first), (other, late), (store_survey, second)], gate
    )
    expected = CollectionClosedError if how == "closed" else CollectionNotFoundError
    assert isinstance(results[1], expected)
    assert writer.transactions == 2  # refused without failing the group's transaction
    n = len(first) + len(second)
    assert snapshot(store, "survey") == Snapshot(n, n, expected_sums(store_survey, first + second))
    with store.connect() as connection:
        assert count_reports(connection, other.id) == 0


@pytest.fixture
def postgres_store() -> Iterator[Engine]:
    """A migrated schema on the test PostgreSQL server, whatever engine the others use."""
    if not POSTGRES_URL:
        pytest.skip("no PostgreSQL server answers (CI=true makes this an error)")
    url = new_postgres_schema()
    yield from _migrated(url)
    drop_schema(url)


def test_the_writer_keeps_its_server_connection_and_opens_a_new_one_when_dropped(
    postgres_store: Engine,
) -> None:
    """On a database server the writer commits on one connection kept open (no pool
    ping per transaction); a connection the server drops costs no request an error: the
    transaction that finds out is written again on a new connection."""
    survey = create_collection(postgres_store, CollectionSpec.model_validate(spec_payload()))
    requests = seeded_requests(survey.config, 4, seed=11)
    writer = ReportWriter(postgres_store)
    checkouts: list[object] = []

    def checked_out(*args: object) -> None:
        checkouts.append(args)

    try:
        first = ingest_batch(postgres_store, survey, _batch(requests[0]), writer=writer)
        event.listen(postgres_store, "checkout", checked_out)
        second = ingest_batch(postgres_store, survey, _batch(requests[1]), writer=writer)
        event.remove(postgres_store, "checkout", checked_out)
        assert (first.accepted, second.accepted) == (len(requests[0]), len(requests[1]))
        assert checkouts == []  # the second transaction ran on the kept connection
        # the server drops the writer's connection (only that one: other tests' and
        # other runs' connections to the same server must live)
        kept = writer._kept._connection
        assert kept is not None
        pid = kept.exec_driver_sql("SELECT pg_backend_pid()").scalar_one()
        kept.rollback()
        with postgres_store.connect() as admin:
            admin.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
        third = ingest_batch(postgres_store, survey, _batch(requests[2]), writer=writer)
        fourth = ingest_batch(postgres_store, survey, _batch(requests[3]), writer=writer)
    finally:
        writer.close()
    assert (third.accepted, fourth.accepted) == (len(requests[2]), len(requests[3]))
    assert writer.transactions == 4
    everything = [report for items in requests for report in items]
    n = len(everything)
    assert snapshot(postgres_store, "survey") == Snapshot(n, n, expected_sums(survey, everything))


def _batch(items: list[dict[str, str]]) -> ReportBatch:
    return ReportBatch.model_validate({"reports": items})
