"""The committer of training jobs' device requests (:mod:`ldp_aggregator.training_commit`):
requests that arrive while it commits share the next transaction, each is answered after
that commit, a refusal leaves the others of its group alone, any other failure is retried
request by request, and places never share a transaction with reports."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Connection, Engine, text
from tests.engines import POSTGRES_URL, drop_schema, new_postgres_schema

from ldp_aggregator.storage.engine import make_engine
from ldp_aggregator.training_commit import ISSUE, REPORT, Kind, TrainingCommitter
from ldp_shared.errors import RateLimitedError


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    engine = make_engine(f"sqlite:///{tmp_path / 'commit.db'}")
    with engine.begin() as connection:
        connection.execute(text("CREATE TABLE t (x TEXT)"))
    return engine


def stored(engine: Engine) -> list[str]:
    with engine.connect() as connection:
        return sorted(str(x) for x in connection.execute(text("SELECT x FROM t")).scalars())


def insert(value: str, then: Callable[[], None] | None = None) -> Callable[[Connection], str]:
    def run(connection: Connection) -> str:
        connection.execute(text("INSERT INTO t VALUES (:x)"), {"x": value})
        if then is not None:
            then()
        return value

    return run


async def behind_a_busy_commit(
    committer: TrainingCommitter, queued: list[tuple[Kind, Callable[[Connection], Any]]]
) -> list[Any]:
    """Run ``queued`` while the committer is busy with a first request, so that they
    are all waiting when it takes its next group; their outcomes (value or error)."""
    started, release = threading.Event(), threading.Event()

    def first(connection: Connection) -> str:
        started.set()
        assert release.wait(10)
        return insert("first")(connection)

    head = asyncio.ensure_future(committer.run(REPORT, "j", first))
    while not started.is_set():
        await asyncio.sleep(0.005)
    runs: list[Awaitable[Any]] = [committer.run(kind, "j", run) for kind, run in queued]
    tasks = [asyncio.ensure_future(run) for run in runs]
    await asyncio.sleep(0.05)  # every task has queued its request
    release.set()
    assert await head == "first"
    return list(await asyncio.gather(*tasks, return_exceptions=True))


def test_requests_that_wait_share_one_transaction(engine: Engine) -> None:
    committer = TrainingCommitter(engine)
    queued: list[tuple[Kind, Callable[[Connection], Any]]] = [
        (REPORT, insert(f"r{i}")) for i in range(10)
    ]
    outcomes = asyncio.run(behind_a_busy_commit(committer, queued))
    assert outcomes == [f"r{i}" for i in range(10)]
    assert committer.groups == 2  # the first alone, then the ten together
    assert len(stored(engine)) == 11


def test_a_refusal_leaves_the_rest_of_its_group(engine: Engine) -> None:
    committer = TrainingCommitter(engine)

    def refused(_connection: Connection) -> str:
        raise RateLimitedError("every place is held", retry_after=1)

    queued: list[tuple[Kind, Callable[[Connection], Any]]] = [
        (ISSUE, insert("a")),
        (ISSUE, refused),
        (ISSUE, insert("b")),
    ]
    outcomes = asyncio.run(behind_a_busy_commit(committer, queued))
    assert outcomes[0] == "a" and outcomes[2] == "b"
    assert isinstance(outcomes[1], RateLimitedError)
    assert committer.groups == 2 and stored(engine) == ["a", "b", "first"]


def test_a_failure_is_retried_request_by_request(engine: Engine) -> None:
    committer = TrainingCommitter(engine)

    def broken() -> None:
        raise RuntimeError("a bug after a write")

    queued: list[tuple[Kind, Callable[[Connection], Any]]] = [
        (REPORT, insert("a")),
        (REPORT, insert("bad", then=broken)),
        (REPORT, insert("c")),
    ]
    outcomes = asyncio.run(behind_a_busy_commit(committer, queued))
    assert outcomes[0] == "a" and outcomes[2] == "c"
    assert isinstance(outcomes[1], RuntimeError)
    # the group was rolled back (nothing of "bad" kept), the others committed alone
    assert stored(engine) == ["a", "c", "first"]
    assert committer.groups == 3


def test_places_and_reports_never_share_a_transaction(engine: Engine) -> None:
    committer = TrainingCommitter(engine)
    seen: dict[str, Any] = {}

    def note(name: str) -> Callable[[Connection], str]:
        def run(connection: Connection) -> str:
            seen[name] = connection.get_transaction()
            return insert(name)(connection)

        return run

    queued: list[tuple[Kind, Callable[[Connection], Any]]] = [
        (ISSUE, note("place1")),
        (REPORT, note("report1")),
        (ISSUE, note("place2")),
        (REPORT, note("report2")),
    ]
    asyncio.run(behind_a_busy_commit(committer, queued))
    assert seen["place1"] is seen["place2"] and seen["report1"] is seen["report2"]
    assert seen["place1"] is not seen["report1"]
    assert committer.groups == 3  # the first, then one of each kind


def test_close_stops_the_thread_and_gives_its_connection_back(engine: Engine) -> None:
    committer = TrainingCommitter(engine)
    assert asyncio.run(committer.run(REPORT, "j", insert("a"))) == "a"
    thread = committer._thread
    assert thread is not None and thread.is_alive() and committer._kept._connection is not None
    committer.close()
    assert not thread.is_alive() and committer._kept._connection is None
    # a request after it starts the thread again
    assert asyncio.run(committer.run(REPORT, "j", insert("b"))) == "b"
    committer.close()
    assert stored(engine) == ["a", "b"]


@pytest.fixture
def postgres_engine() -> Iterator[Engine]:
    if not POSTGRES_URL:
        pytest.skip("no PostgreSQL server answers (CI=true makes this an error)")
    url = new_postgres_schema()
    engine = make_engine(url)
    with engine.begin() as connection:
        connection.execute(text("CREATE TABLE t (x TEXT)"))
    yield engine
    engine.dispose()
    drop_schema(url)


def test_a_request_alone_survives_the_server_dropping_the_kept_connection(
    postgres_engine: Engine,
) -> None:
    """The thread keeps its connection between transactions (no pool ping): when the
    server dropped it, the one request of the next group is run again on a new one."""
    engine = postgres_engine
    committer = TrainingCommitter(engine)

    def backend_pid(connection: Connection) -> int:
        return int(connection.execute(text("SELECT pg_backend_pid()")).scalar_one())

    async def scenario() -> list[Any]:
        pid = await committer.run(REPORT, "j", backend_pid)
        with engine.connect() as admin:
            admin.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
        return [await committer.run(REPORT, "j", insert("after")), committer.groups]

    try:
        assert asyncio.run(scenario()) == ["after", 2]
    finally:
        committer.close()
    assert stored(engine) == ["after"]
