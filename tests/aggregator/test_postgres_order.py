"""Arrival order in PostgreSQL's files, read as a database superuser would.

The reader (``forensics.postgres_files``) sees ``ctid`` and ``xmin`` through SQL and the
heap's and primary-key index's files through ``pg_read_binary_file``. Between two
rewrites both follow commit order (the test says so: it is what remains); a rewrite
leaves one ``xmin``, heap and index in key order (the ids are random: no arrival order)
and no dead statistics rows.
Runs like ``test_postgres.py``: skipped without a server, an error under ``CI=true``;
the reader needs a superuser (``CHECKPOINT``, ``pg_read_binary_file``), likewise.
"""

from __future__ import annotations

import os
import threading

import pytest
from sqlalchemy import Engine, create_engine, text

from ldp_aggregator.collections import create_collection
from ldp_aggregator.ingest import ingest_batch
from ldp_aggregator.storage.collections import StoredCollection
from ldp_aggregator.storage.stats import STATS_SHARDS
from ldp_aggregator.writer import ReportWriter
from ldp_shared.schema import CollectionSpec
from ldp_shared.wire.reports import BatchResult, ReportBatch

from .conftest import assert_stored_and_recounted, spec_payload
from .forensics import Arrival, Leak, measure, seeded_requests
from .forensics.postgres_files import (
    heap_file,
    index_positions,
    read_relation,
    system_columns,
)
from .test_postgres import BASE_URL, pg, pg_url  # noqa: F401  (fixtures)
from .test_writer import hold_first_transaction, run_grouped

REQUESTS = 40
SEED = 20240612
NO_ORDER = 0.15  # five standard deviations of ρ without association at ~800 reports


def _superuser(url: str) -> bool:
    probe = create_engine(url)
    try:
        with probe.connect() as connection:
            return bool(
                connection.execute(
                    text("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
                ).scalar_one()
            )
    finally:
        probe.dispose()


SUPERUSER = bool(BASE_URL) and _superuser(BASE_URL)
if BASE_URL and not SUPERUSER and os.environ.get("CI", "").lower() == "true":
    raise RuntimeError("CI must run the PostgreSQL order tests as a superuser")
pytestmark = [
    pytest.mark.skipif(not BASE_URL, reason="no PostgreSQL server answers"),
    pytest.mark.skipif(bool(BASE_URL) and not SUPERUSER, reason="the reader needs a superuser"),
]


@pytest.fixture
def survey(pg: Engine) -> StoredCollection:  # noqa: F811
    return create_collection(pg, CollectionSpec.model_validate(spec_payload()))


def ingest_in_order(writer: ReportWriter, survey: StoredCollection, count: int) -> Arrival:
    requests = seeded_requests(survey.config, count, SEED)
    for items in requests:
        batch = ReportBatch.model_validate({"reports": items})
        assert ingest_batch(writer.engine, survey, batch, writer=writer).accepted == len(items)
    return Arrival.of_requests(requests)


def read_everything(pg: Engine, arrival: Arrival) -> tuple[dict[str, Leak], int, int, int]:  # noqa: F811
    """The leaks by ctid, xmin, heap file and index file; distinct xmins; the heap's
    tuples and id copies."""
    known = set(arrival.ids)
    with pg.connect() as connection:
        by_ctid, by_xmin = system_columns(connection)
        heap = heap_file(read_relation(connection, "reports"), known)
        index = index_positions(read_relation(connection, "pk_reports"), known)
    leaks = {
        "ctid": measure("ctid", arrival, by_ctid),
        "xmin": measure("xmin", arrival, by_xmin),
        "heap": measure("heap file", arrival, heap.positions),
        "index": measure("index file", arrival, index),
    }
    return leaks, len(set(by_xmin.values())), heap.tuples, heap.copies


def statistics_tuples(pg: Engine) -> int:  # noqa: F811
    with pg.connect() as connection:
        return heap_file(read_relation(connection, "collection_stats"), set()).tuples


def test_a_rewrite_removes_the_commit_order_the_heap_keeps(
    pg: Engine,  # noqa: F811
    survey: StoredCollection,
) -> None:
    writer = ReportWriter(pg)
    arrival = ingest_in_order(writer, survey, REQUESTS)
    n = len(arrival.ids)
    leaks, xmins, tuples, copies = read_everything(pg, arrival)
    # what remains between two rewrites: one xmin per transaction, the heap in commit order
    assert xmins == REQUESTS
    for name in ("ctid", "xmin", "heap"):
        assert leaks[name].recovered == n and leaks[name].spearman > 0.99, leaks[name].line()
        assert leaks[name].adjacent_same_request > 0.9, leaks[name].line()
    # dead versions of the statistics shard, one per commit
    assert statistics_tuples(pg) > STATS_SHARDS

    assert writer.rewrite() and not writer.needs_rewrite
    leaks, xmins, tuples, copies = read_everything(pg, arrival)
    assert xmins == 1 and tuples == copies == n  # a fresh file: no dead or stray copies
    assert statistics_tuples(pg) == STATS_SHARDS  # one live tuple per shard, no dead ones
    with pg.connect() as connection:  # the layout depends on the stored rows alone
        in_heap = connection.execute(text("SELECT report_id FROM reports ORDER BY ctid"))
        by_key = connection.execute(text("SELECT report_id FROM reports ORDER BY report_id"))
        assert in_heap.scalars().all() == by_key.scalars().all()
    for name in ("ctid", "heap", "index"):
        assert leaks[name].recovered == n
        assert abs(leaks[name].spearman) < NO_ORDER, leaks[name].line()
        assert leaks[name].adjacent_same_request < 3 * leaks[name].base_rate, leaks[name].line()
    assert_stored_and_recounted(pg, "survey", set(arrival.ids))


def test_vacuum_full_and_cluster_keep_the_order(
    pg: Engine,  # noqa: F811
    survey: StoredCollection,
) -> None:
    """Why the rewrite is a copy: VACUUM FULL keeps heap order and xmin, CLUSTER keeps xmin."""
    arrival = ingest_in_order(ReportWriter(pg), survey, REQUESTS // 2)
    autocommit = pg.execution_options(isolation_level="AUTOCOMMIT")
    with autocommit.connect() as connection:
        connection.execute(text("VACUUM FULL reports"))
    leaks, *_ = read_everything(pg, arrival)
    assert leaks["heap"].spearman > 0.99 and leaks["xmin"].spearman > 0.99
    with autocommit.connect() as connection:
        connection.execute(text("CLUSTER reports USING pk_reports"))
    leaks, *_ = read_everything(pg, arrival)
    assert abs(leaks["heap"].spearman) < NO_ORDER and leaks["xmin"].spearman > 0.99


def test_concurrent_requests_share_one_xmin_and_are_stored_in_key_order(
    pg: Engine,  # noqa: F811
    survey: StoredCollection,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    requests = seeded_requests(survey.config, 6, SEED)
    writer = ReportWriter(pg)
    results = run_grouped(
        writer, [(survey, items) for items in requests], hold_first_transaction(monkeypatch)
    )
    assert all(isinstance(r, BatchResult) for r in results) and writer.transactions == 2
    with pg.connect() as connection:
        by_ctid, by_xmin = system_columns(connection)
    grouped = [report["id"] for items in requests[1:] for report in items]
    assert len({by_xmin[i] for i in grouped}) == 1
    assert by_xmin[grouped[0]] != by_xmin[requests[0][0]["id"]]
    assert sorted(grouped, key=by_ctid.__getitem__) == sorted(grouped)


def test_rewrites_during_ingestion_from_two_replicas_lose_nothing(
    pg: Engine,  # noqa: F811
    survey: StoredCollection,
) -> None:
    replicas = [ReportWriter(pg), ReportWriter(pg)]
    requests = seeded_requests(survey.config, 48, SEED)
    acknowledged: set[str] = set()
    errors: list[BaseException] = []
    lock = threading.Lock()
    stop = threading.Event()

    twice = threading.Event()  # two rewrites have run: the rest of the ingestion follows them

    def ingest(k: int) -> None:
        try:
            for n, items in enumerate(requests[k::6]):
                if n == 1:  # a fast database must not finish before the rewrites start
                    twice.wait(timeout=60)
                batch = ReportBatch.model_validate({"reports": items})
                writer = replicas[k % 2]
                if ingest_batch(pg, survey, batch, writer=writer).accepted == len(items):
                    with lock:
                        acknowledged.update(report["id"] for report in items)
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    rewrites: list[bool] = []

    def rewrite() -> None:
        while not stop.wait(0.05):  # as the Reshuffler would, only far more often
            rewrites.append(replicas[0].rewrite())
            if sum(rewrites) >= 2:
                twice.set()

    rewriter = threading.Thread(target=rewrite)
    threads = [threading.Thread(target=ingest, args=(k,)) for k in range(6)]
    rewriter.start()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stop.set()
    rewriter.join()
    assert errors == [] and sum(rewrites) >= 2
    assert len(acknowledged) == sum(len(items) for items in requests)
    assert_stored_and_recounted(pg, "survey", acknowledged)
