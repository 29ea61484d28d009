"""50 concurrent SDK clients against two aggregator replicas on one PostgreSQL schema.

Two ``ldpcollect serve`` processes share the database, as behind a load balancer. Each
client (a thread with an :class:`~ldp_client.LDPClient` of its own) privatizes its
records, uploads them to one replica in small batches, then sends its first batches again
to the other replica, as a client that retries elsewhere after a timeout. Every report
must be acknowledged (``accepted``) exactly once, every resent one answer ``duplicate``,
every acknowledged report be stored once, and the statistics equal a recount of the
stored rows.
"""

from __future__ import annotations

import threading

import pytest

from ldp_aggregator.storage.engine import make_engine
from ldp_client import LDPClient
from ldp_shared.rand import seeded_rng
from ldp_shared.wire.reports import BatchResult
from ldp_simulation.fleet import aggregator_process

from .conftest import ADMIN_TOKEN, ANALYST_TOKEN, assert_stored_and_recounted, make_records
from .test_kill9 import create
from .test_postgres import BASE_URL, pg_url  # noqa: F401  (fixture)

pytestmark = pytest.mark.skipif(not BASE_URL, reason="no PostgreSQL server answers")

CLIENTS = 50
RECORDS = 200
BATCH = 25
RESENT = 50


def test_fifty_clients_on_two_replicas_count_every_report_once(pg_url: str) -> None:  # noqa: F811
    results: dict[int, tuple[BatchResult, BatchResult]] = {}
    errors: list[BaseException] = []

    def client(k: int, urls: list[str]) -> None:
        try:
            with (
                LDPClient(urls[k % 2], timeout=60, rng=seeded_rng(k)) as first,
                LDPClient(urls[(k + 1) % 2], timeout=60) as other,
            ):
                reports = first.privatize_many("survey", make_records(RECORDS, seed=k))
                sent = first.submit_reports("survey", reports, batch_size=BATCH)
                again = other.submit_reports("survey", reports[:RESENT], batch_size=BATCH)
                results[k] = (sent, again)
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    with (
        aggregator_process(pg_url, ADMIN_TOKEN, ANALYST_TOKEN) as one,
        aggregator_process(pg_url, ADMIN_TOKEN, ANALYST_TOKEN) as two,
    ):
        create(one.base_url)
        urls = [one.base_url, two.base_url]
        threads = [threading.Thread(target=client, args=(k, urls)) for k in range(CLIENTS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
    assert errors == [] and len(results) == CLIENTS

    acknowledged: set[str] = set()
    for sent, again in results.values():
        assert (sent.accepted, sent.duplicate, sent.rejected) == (RECORDS, 0, 0)
        assert (again.accepted, again.duplicate, again.rejected) == (0, RESENT, 0)
        ids = {outcome.id for outcome in sent.outcomes}
        assert len(ids) == RECORDS and {o.id for o in again.outcomes} <= ids
        assert acknowledged.isdisjoint(ids)
        acknowledged |= ids
    engine = make_engine(pg_url)
    try:
        stored = assert_stored_and_recounted(engine, "survey", acknowledged)
    finally:
        engine.dispose()
    assert stored == acknowledged and len(stored) == CLIENTS * RECORDS
