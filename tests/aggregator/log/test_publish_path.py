"""Log mode's paths that need no cluster: the open-collection check an ingest replica
remembers for a second (never a refusal), the acknowledgements it accepts, what a
stopping fold worker does with a batch it fetched, the readiness check (a stream without
a leader is not ready; a short timeout of its own), and the nats-py it needs."""

from __future__ import annotations

import asyncio
import tomllib
from datetime import date
from pathlib import Path
from typing import Any, cast

import pytest
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.errors import ConnectionClosedError, FlushTimeoutError
from nats.js import JetStreamContext
from nats.js.api import ClusterInfo, PubAck
from packaging.requirements import Requirement

from ldp_aggregator.ingest_log import fold as fold_module
from ldp_aggregator.ingest_log import publisher as publisher_module
from ldp_aggregator.ingest_log.fold import FoldResult, FoldWorker, _flush, _give_back
from ldp_aggregator.ingest_log.fold_metrics import FoldMetrics
from ldp_aggregator.ingest_log.publisher import LogPublisher, LogUnavailableError
from ldp_aggregator.ingest_log.stream import LogChunk, LogSettings
from ldp_aggregator.storage.collections import StoredCollection
from ldp_shared.errors import CollectionClosedError

ROOT = Path(__file__).resolve().parents[3]


class FakeCollection:
    def __init__(self, collection_id: int) -> None:
        self.id = collection_id


def offline_publisher() -> LogPublisher:
    settings = LogSettings(servers=("nats://127.0.0.1:1",))
    return LogPublisher(settings, cast(Client, None), cast(JetStreamContext, None))


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every read of a collection's row the publisher makes (collection ids); collection
    2 is closed, the others open."""
    made: list[int] = []

    def check(engine: Any, collection: FakeCollection) -> None:
        made.append(collection.id)
        if collection.id == 2:
            raise CollectionClosedError("closed")

    monkeypatch.setattr(publisher_module, "check_takes_reports", check)
    return made


def check(publisher: LogPublisher, collection_id: int) -> None:
    collection = cast(StoredCollection, FakeCollection(collection_id))
    asyncio.run(publisher.check_takes_reports(cast(Any, None), collection))


def test_an_open_collection_is_read_once_a_second(
    reads: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    publisher = offline_publisher()
    now = [1000.0]
    monkeypatch.setattr(publisher_module, "monotonic", lambda: now[0])
    for _ in range(5):
        check(publisher, 1)
    check(publisher, 3)
    assert reads == [1, 3]
    now[0] += publisher_module.OPEN_RECHECK_SECONDS + 0.01
    check(publisher, 1)
    assert reads == [1, 3, 1]


def test_a_refusal_is_never_remembered(reads: list[int]) -> None:
    publisher = offline_publisher()
    for _ in range(3):
        with pytest.raises(CollectionClosedError):
            check(publisher, 2)
    assert reads == [2, 2, 2]


def test_only_this_streams_acknowledgement_counts() -> None:
    publisher = offline_publisher()
    ours = PubAck(stream=publisher.settings.stream, seq=7, duplicate=True)
    assert publisher._ack_or_raise(ours) is ours
    with pytest.raises(LogUnavailableError):
        publisher._ack_or_raise(PubAck(stream="SOMEONE_ELSES", seq=7))
    with pytest.raises(TimeoutError):  # a failed publish fails the request
        publisher._ack_or_raise(TimeoutError())


class FakeMessage:
    def __init__(self) -> None:
        self.naked = False

    async def nak(self) -> None:
        self.naked = True


def test_a_stopping_fold_worker_gives_its_fetched_batch_back() -> None:
    """Fetched but not written: negatively acknowledged at once; a fetch still under
    way is cancelled (its messages come back after ack_wait)."""

    async def stop_with(done: bool) -> tuple[list[FakeMessage], asyncio.Future[Any]]:
        messages = [FakeMessage(), FakeMessage()]
        fetching: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        if done:
            fetching.set_result([(message, None) for message in messages])
        await _give_back(fetching)
        return messages, fetching

    messages, fetching = asyncio.run(stop_with(True))
    assert [m.naked for m in messages] == [True, True]
    messages, fetching = asyncio.run(stop_with(False))
    assert fetching.cancelled() and not any(m.naked for m in messages)


class AckLost(FakeMessage):
    async def ack(self) -> None:
        raise ConnectionClosedError


class FlushLost:
    async def flush(self) -> None:
        raise FlushTimeoutError


def test_a_node_lost_while_acknowledging_does_not_end_the_worker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """After the commit, acknowledgements that cannot be sent (the node went away) are
    logged, not raised: the batch comes back after ack_wait and is found stored."""
    asyncio.run(_flush(cast(Client, FlushLost())))  # no exception

    def written(*_: object) -> FoldResult:
        return FoldResult(written=3, duplicate=0, dropped=0)

    monkeypatch.setattr(fold_module, "fold_batch", written)
    worker = FoldWorker.__new__(FoldWorker)  # no database, no log: only _fold runs
    worker.metrics, worker.writer, worker.by_id = FoldMetrics(), None, None  # type: ignore[assignment]
    chunk = LogChunk(1, "h" * 64, 0, date(2026, 11, 23), ("a" * 8, "b" * 8, "c" * 8), b"xyz")
    asyncio.run(worker._fold([(cast(Msg, AckLost()), chunk)]))
    counted = worker.metrics.registry.get_sample_value(
        "ldpcollect_fold_reports_total", {"outcome": "written"}
    )
    assert counted == 3


class FakeStreamInfo:
    """What ``stream_info`` answers: ``cluster`` None on a single server."""

    def __init__(self, cluster: ClusterInfo | None) -> None:
        self.cluster = cluster


class FakeManager:
    """A JetStream API that answers ``stream_info`` with ``info``, recording the timeout
    of the context it was asked through."""

    def __init__(self, info: FakeStreamInfo, timeouts: list[float], timeout: float) -> None:
        self.info, self.timeouts, self.timeout = info, timeouts, timeout

    async def stream_info(self, name: str) -> FakeStreamInfo:
        self.timeouts.append(self.timeout)
        return self.info


class FakeClient:
    is_connected = True

    def __init__(self, info: FakeStreamInfo, timeouts: list[float]) -> None:
        self.info, self.timeouts = info, timeouts

    def jsm(self, timeout: float) -> FakeManager:
        return FakeManager(self.info, self.timeouts, timeout)


def connected_publisher(cluster: ClusterInfo | None) -> tuple[LogPublisher, list[float]]:
    """A publisher whose connection answers ``stream_info`` with ``cluster`` (through its
    publishing context, with its timeout, or through a context of its own)."""
    timeouts: list[float] = []
    info = FakeStreamInfo(cluster)
    settings = LogSettings(servers=("nats://127.0.0.1:1",))
    js = FakeManager(info, timeouts, publisher_module.PUBLISH_TIMEOUT)
    client = FakeClient(info, timeouts)
    return LogPublisher(settings, cast(Client, client), cast(JetStreamContext, js)), timeouts


def test_a_stream_without_a_leader_is_not_ready() -> None:
    """Two nodes of three killed: the node left answers ``stream_info`` at once, with no
    leader, while every publish fails. /readyz used to answer 200 then."""
    leaderless, _ = connected_publisher(ClusterInfo(leader=None, name="c"))
    with pytest.raises(LogUnavailableError, match="no leader"):
        asyncio.run(leaderless.check())
    for ready in (ClusterInfo(leader="n0", name="c"), None):  # led, or a single server
        publisher, _ = connected_publisher(ready)
        asyncio.run(publisher.check())


def test_the_readiness_check_waits_two_seconds_at_most() -> None:
    """A probe is answered 503 fast when the log does not answer: the check asks with a
    timeout of its own, not the publishes' 10 s."""
    publisher, timeouts = connected_publisher(ClusterInfo(leader="n0", name="c"))
    asyncio.run(publisher.check())
    assert timeouts == [publisher_module.READY_TIMEOUT]
    assert publisher_module.READY_TIMEOUT <= 2.0 < publisher_module.PUBLISH_TIMEOUT


def test_the_declared_nats_py_has_what_the_publisher_calls() -> None:
    """``publish_async`` and ``JetStreamContext._init_async_reply`` came with nats-py
    2.8.0: the aggregator extra must not allow an older one."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    extra = pyproject["project"]["optional-dependencies"]["aggregator"]
    (nats_py,) = [Requirement(r) for r in extra if Requirement(r).name == "nats-py"]
    assert "2.7.2" not in nats_py.specifier and "2.8.0" in nats_py.specifier
    assert hasattr(JetStreamContext, "publish_async")
    assert hasattr(JetStreamContext, "_init_async_reply")
