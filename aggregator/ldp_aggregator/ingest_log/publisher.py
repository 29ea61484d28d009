"""Log mode's ingest path: judge a batch as direct mode does, publish its new reports.

The judging is :mod:`ldp_aggregator.ingest`'s own (the same reasons, the same period
stamped at acceptance). Then, instead of a database transaction, the new valid reports
of the request become JetStream messages: one for a single report, one per
:func:`~ldp_aggregator.ingest_log.stream.chunk_size` reports of a batch
(:class:`~ldp_aggregator.ingest_log.stream.LogChunk`), so that a batch costs the log,
the ingest replica and the fold workers a few messages, not one per report. The
messages are written to the connection at once, without waiting for each other's
acknowledgement (``publish_async``: one reply subscription for every publish of the
replica, so concurrent requests share the connection's writes as direct mode's requests
share a group commit); the request is answered once the stream has acknowledged each of
them, which on a cluster means stored by a majority of the stream's replicas. The
reports of a message the stream answers as a duplicate of one in its deduplication
window (the same report, or the same batch, sent again) are ``duplicate``; every other
one is ``accepted``: durably in the log, and counted once a fold worker has folded it
(``ldpcollect fold``; a report sent again in another batch is stored once there). A
publish that fails or times out fails the request with 503, and the client's retry,
with the same ids, is deduplicated by the stream or, later, by the database.
"""

from __future__ import annotations

import asyncio
import logging
from time import monotonic

from anyio import to_thread
from nats.aio.client import Client
from nats.errors import Error as NatsError
from nats.js import JetStreamContext
from nats.js.api import PubAck
from nats.js.errors import Error as JetStreamError
from sqlalchemy import Engine

from ldp_aggregator.ingest import INLINE_BATCH, BatchOutcomes, _prepare, _result
from ldp_aggregator.ingest_log.stream import (
    DATABASE_HEADER,
    LogChunk,
    LogSettings,
    chunk_size,
    connect,
    ensure_stream,
)
from ldp_aggregator.storage.collections import StoredCollection
from ldp_aggregator.storage.identity import identity_of, known_identity
from ldp_aggregator.storage.lifecycle import check_takes_reports
from ldp_aggregator.writer import Pending
from ldp_shared.errors import TransportError
from ldp_shared.wire.reports import ReportBatch

logger = logging.getLogger("ldp_aggregator")

PUBLISH_TIMEOUT = 10.0
"""Seconds one publish waits for the stream's acknowledgement (a cluster that lost a
node elects a new leader for the stream within a few seconds)."""
READY_TIMEOUT = 2.0
"""Seconds the readiness check (``/readyz``) waits for the stream's answer: a probe is
answered 503 within about this long when the log does not answer, not after
:data:`PUBLISH_TIMEOUT`."""
OPEN_RECHECK_SECONDS = 1.0
"""How long a replica trusts that a collection takes reports before it reads the
collection's row again (one read per collection and second, not one per request; a
report accepted in the second after a close is dropped at fold time, as one accepted
just before the close and folded after it)."""
MAX_PENDING_PUBLISHES = 100_000
"""Publishes awaiting their acknowledgement across the replica (nats-py's limit for
``publish_async``; more wait for room, up to :data:`PUBLISH_TIMEOUT`)."""


class LogUnavailableError(TransportError):
    """The log did not acknowledge a publish: nothing of the batch may be assumed stored
    (a retry with the same ids is safe). Answered as 503, as an unreachable database."""


class LogPublisher:
    """One replica's connection to the log, used from its event loop."""

    def __init__(self, settings: LogSettings, client: Client, js: JetStreamContext) -> None:
        self.settings = settings
        self.client = client
        self.js = js
        self._open_until: dict[int, float] = {}  # collection id -> monotonic deadline

    async def check_takes_reports(self, engine: Engine, collection: StoredCollection) -> None:
        """:func:`~ldp_aggregator.storage.lifecycle.check_takes_reports`, trusted for
        :data:`OPEN_RECHECK_SECONDS` once passed (a refusal is never remembered)."""
        now = monotonic()
        if self._open_until.get(collection.id, 0.0) > now:
            return
        self._open_until.pop(collection.id, None)
        await to_thread.run_sync(check_takes_reports, engine, collection)
        self._open_until[collection.id] = now + OPEN_RECHECK_SECONDS

    @classmethod
    async def open(cls, settings: LogSettings) -> LogPublisher:
        """Connect and make sure the stream exists."""
        client = await connect(settings, "ldpcollect-ingest")
        js = client.jetstream(
            timeout=PUBLISH_TIMEOUT, publish_async_max_pending=MAX_PENDING_PUBLISHES
        )
        await ensure_stream(js, settings)
        # the one reply subscription of publish_async, made before requests race to make it
        await js._init_async_reply()
        return cls(settings, client, js)

    async def close(self) -> None:
        """Wait for what is in flight, then close (at once when the log is unreachable)."""
        try:
            if self.client.is_connected:
                await self.client.drain()
                return
        except (NatsError, OSError):  # the log went away meanwhile
            pass
        try:
            await self.client.close()
        except (NatsError, OSError) as error:  # nothing left to lose: published is acked
            logger.warning("closing the log's connection: %s", type(error).__name__)

    async def check(self) -> None:
        """Raise :class:`LogUnavailableError` unless connected, the stream answers within
        :data:`READY_TIMEOUT`, and, on a cluster, the stream has a leader: the stream's
        state an upload needs (readiness). A cluster that lost most of its nodes still
        answers ``stream_info`` from the node left, with no leader, while every publish
        fails."""
        if not self.client.is_connected:
            raise LogUnavailableError("the log (NATS) is not connected")
        try:
            info = await self.client.jsm(timeout=READY_TIMEOUT).stream_info(self.settings.stream)
        except (TimeoutError, NatsError, JetStreamError) as error:
            raise LogUnavailableError(
                f"the log's stream {self.settings.stream} does not answer: {type(error).__name__}"
            ) from None
        if info.cluster is not None and not info.cluster.leader:
            raise LogUnavailableError(
                f"the log's stream {self.settings.stream} has no leader (too few of its"
                " replicas' nodes are up): it takes no reports"
            )

    def _ack_or_raise(self, answer: PubAck | BaseException) -> PubAck:
        """The stream's acknowledgement, checked to come from this stream (instead of
        a ``Nats-Expected-Stream`` header on every message, which every fold worker
        would have to parse again)."""
        if isinstance(answer, BaseException):
            raise answer
        if answer.stream != self.settings.stream:
            logger.error("the log's subjects are taken by stream %s", answer.stream)
            raise LogUnavailableError(f"the reports went to the stream {answer.stream}")
        return answer

    async def publish(self, pending: Pending, database: str) -> set[str]:
        """Publish the reports of ``pending``, each message stamped with the identity of
        the ``database`` that holds their collection (``Ldp-Database``: a fold worker
        folds only its own database's); the ids the stream had already (those of its
        duplicate messages). Returns once every message is acknowledged."""
        collection = pending.collection
        subject = self.settings.subject(collection.id)
        step = chunk_size(collection.config.report_bytes, self.client.max_payload)
        messages = [
            LogChunk(
                collection_id=collection.id,
                config_hash=collection.config.config_hash,
                period_start=pending.period_start,
                day=pending.day,
                report_ids=tuple(pending.ids[start : start + step]),
                bits=pending.matrix[start : start + step].tobytes(),
            )
            for start in range(0, len(pending.ids), step)
        ]
        futures: list[asyncio.Future[PubAck]] = []
        try:
            async with asyncio.timeout(PUBLISH_TIMEOUT):
                for message in messages:
                    futures.append(
                        await self.js.publish_async(
                            subject,
                            message.encode(),
                            wait_stall=PUBLISH_TIMEOUT,
                            headers={
                                "Nats-Msg-Id": message.message_id,
                                DATABASE_HEADER: database,
                            },
                        )
                    )
                answers = await asyncio.gather(*futures, return_exceptions=True)
            acks = [self._ack_or_raise(answer) for answer in answers]
        except (TimeoutError, NatsError, JetStreamError) as error:
            for future in futures:  # no ack will be waited for: free their places
                future.cancel()
            logger.warning("publishing to the log failed: %s", type(error).__name__)
            raise LogUnavailableError(
                "the log did not acknowledge the reports; send the same batch again later"
            ) from None
        return {
            report_id
            for message, ack in zip(messages, acks, strict=True)
            if ack.duplicate
            for report_id in message.report_ids
        }


async def publish_batch(
    publisher: LogPublisher, collection: StoredCollection, batch: ReportBatch, engine: Engine
) -> BatchOutcomes:
    """:func:`~ldp_aggregator.ingest.ingest_batch_async` in log mode: the same judging,
    then the new valid reports go to the log. A closed or deleted collection is refused
    as in direct mode (409/404: its row is read, without a lock, before publishing; a
    collection closed after that check has its reports dropped at fold time)."""
    if len(batch.reports) <= INLINE_BATCH:
        judged, pending = _prepare(collection, batch, None)
    else:
        judged, pending = await to_thread.run_sync(_prepare, collection, batch, None)
    await publisher.check_takes_reports(engine, collection)
    if pending is None:
        return _result(batch, judged, set())
    database = known_identity(engine)
    if database is None:  # read once per engine, not in the event loop
        database = await to_thread.run_sync(identity_of, engine)
    return _result(batch, judged, await publisher.publish(pending, database))
