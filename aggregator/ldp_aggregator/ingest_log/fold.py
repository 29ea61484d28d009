"""``ldpcollect fold``: fold the log's reports into the database, a batch at a time.

Any number of workers share one durable pull consumer (explicit acknowledgement). Each
fetches messages holding about :data:`DEFAULT_BATCH` reports (a message holds one
report, or up to a thousand of one request's: the number fetched follows the reports
per message of the previous fetch) and writes them in one database transaction through
:meth:`~ldp_aggregator.writer.ReportWriter.write_together`, the direct mode's writer:
the reports are inserted skipping stored ids, in key order (the ids are random, so the
rows keep no log order), and the statistics delta is computed from the rows really
inserted only (:func:`~ldp_aggregator.storage.stats.statistics_of`). Only after the
commit are the messages acknowledged (explicitly, each: the ``all`` policy would let one
worker acknowledge another's uncommitted batch). The next batch is fetched while the
database writes this one. A worker killed between commit and acknowledgement has its
batch redelivered after the consumer's ``ack_wait``; the database then skips every id,
and nothing is counted twice. For the same reason a report retried after the stream's
deduplication window, or in another batch, is counted once here.

A report whose collection was closed or deleted after it was accepted is acknowledged
and dropped (counted in ``ldpcollect_fold_reports_total{outcome="dropped"}``). That is
why a worker first checks that a message is meant for its database: every message
names the database its ingest replica read the collection from (``Ldp-Database``,
:mod:`ldp_aggregator.storage.identity`). A worker that fetches a message naming another
database hands the whole fetch back to the stream unacknowledged and stops with a
:class:`~ldp_shared.errors.ConfigurationError` (``ldpcollect fold`` prints it on one
line and exits 2): started on the wrong ``--database-url``, or none, it would otherwise
find none of the collections and drop reports that were answered ``accepted``. A message
without the header (published before it existed) is folded as before.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from anyio import to_thread
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.errors import Error as NatsError
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.errors import Error as JetStreamError
from sqlalchemy import Engine, select

from ldp_aggregator.ingest_log.fold_metrics import FoldMetrics
from ldp_aggregator.ingest_log.stream import (
    CHUNK_REPORTS,
    DATABASE_HEADER,
    LogChunk,
    LogSettings,
    connect,
    ensure_stream,
)
from ldp_aggregator.storage.collections import StoredCollection
from ldp_aggregator.storage.identity import identity_of
from ldp_aggregator.storage.stats import statistics_of
from ldp_aggregator.storage.tables import collections
from ldp_aggregator.writer import Pending, ReportWriter
from ldp_shared.collection import CollectionConfig
from ldp_shared.errors import ConfigurationError, LDPError

logger = logging.getLogger("ldp_aggregator")

DEFAULT_BATCH = 10_000
DEFAULT_ACK_WAIT_SECONDS = 30.0
"""How long a delivered batch may stay unacknowledged before JetStream hands it to
another worker (a killed worker's batch comes back after this)."""
FETCH_SECONDS = 1.0
RETRY_SECONDS = 1.0
MAX_FETCH_MESSAGES = 1_000
"""Messages per fetch at most, so that a fetch receives at most this many times a
message's largest payload (:data:`~ldp_aggregator.ingest_log.stream.CHUNK_BYTES`:
128 MiB) whatever the messages turn out to be; one-report messages are fetched a
thousand at a time. Of what a fetch brings, a worker keeps messages of at most twice
its batch in reports and hands the rest back at once (negative acknowledgement)."""


@dataclass(frozen=True)
class FoldResult:
    """What one batch did: reports written, found stored already, dropped."""

    written: int
    duplicate: int
    dropped: int


class CollectionsById:
    """The collections messages name, by database id (configs never change; an id whose
    config hash differs from the message's is read again, then dropped if still so)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._known: dict[int, StoredCollection] = {}

    def get(self, collection_id: int, config_hash: str) -> StoredCollection | None:
        known = self._known.get(collection_id)
        if known is None or known.config.config_hash != config_hash:
            with self.engine.connect() as connection:
                row = connection.execute(
                    select(collections.c.config_json).where(collections.c.id == collection_id)
                ).one_or_none()
            if row is None:
                self._known.pop(collection_id, None)
                return None
            known = StoredCollection(collection_id, CollectionConfig.model_validate_json(row[0]))
            self._known[collection_id] = known
        return known if known.config.config_hash == config_hash else None


def fold_batch(writer: ReportWriter, by_id: CollectionsById, chunks: list[LogChunk]) -> FoldResult:
    """Write the reports of ``chunks`` in one transaction (see the module docstring).
    Raises the database's error when the batch could not be written: then nothing may
    be acked. A message whose collection is gone, or whose bits do not fit its ids, is
    dropped whole."""
    groups: dict[tuple[int, int], list[LogChunk]] = defaultdict(list)
    received = dropped = 0
    for chunk in chunks:
        received += len(chunk.report_ids)
        collection = by_id.get(chunk.collection_id, chunk.config_hash)
        if (
            collection is None
            or len(chunk.bits) != len(chunk.report_ids) * collection.config.report_bytes
        ):
            dropped += len(chunk.report_ids)
            continue
        groups[chunk.collection_id, chunk.period_start].append(chunk)
    pendings = [_pending(by_id, members) for _, members in sorted(groups.items())]
    written = 0
    if pendings:
        writer.write_together(pendings)
    for pending in pendings:
        if isinstance(pending.error, LDPError):  # closed or deleted since accepted
            dropped += len(pending.ids)
        elif pending.error is not None:
            raise pending.error
        else:
            written += len(pending.ids) - len(pending.stored_before)
    return FoldResult(written=written, duplicate=received - written - dropped, dropped=dropped)


def _pending(by_id: CollectionsById, members: list[LogChunk]) -> Pending:
    """The reports of one collection and period, each id once (an id twice in the batch,
    a retry past the dedup window or in another batch, is written once)."""
    first = members[0]
    collection = by_id.get(first.collection_id, first.config_hash)
    assert collection is not None
    ids = [report_id for chunk in members for report_id in chunk.report_ids]
    matrix = np.frombuffer(b"".join(chunk.bits for chunk in members), dtype=np.uint8).reshape(
        len(ids), collection.config.report_bytes
    )
    if len(set(ids)) != len(ids):
        firsts = {report_id: k for k, report_id in reversed(list(enumerate(ids)))}
        keep = sorted(firsts.values())
        ids = [ids[k] for k in keep]
        matrix = matrix[keep]
    return Pending(
        collection=collection,
        ids=ids,
        matrix=matrix,
        delta=statistics_of(collection.config, matrix),
        day=first.day,
        period_start=first.period_start,
    )


class FoldWorker:
    """One ``ldpcollect fold`` process's loop: fetch, write, acknowledge."""

    def __init__(
        self,
        settings: LogSettings,
        engine: Engine,
        metrics: FoldMetrics,
        *,
        batch: int = DEFAULT_BATCH,
        ack_wait_seconds: float = DEFAULT_ACK_WAIT_SECONDS,
    ) -> None:
        self.settings = settings
        self.writer = ReportWriter(engine)
        self.by_id = CollectionsById(engine)
        self.database = identity_of(engine)
        self.metrics = metrics
        self.batch = batch
        self.ack_wait_seconds = ack_wait_seconds
        self._per_message = float(CHUNK_REPORTS)  # until a fetch tells: few messages first

    async def run(self, stop: asyncio.Event) -> None:
        """Fold until ``stop`` is set (the batch in hand is finished first)."""
        client = await connect(self.settings, "ldpcollect-fold")
        try:
            js = client.jetstream(timeout=10.0)
            await ensure_stream(js, self.settings)
            config = ConsumerConfig(
                durable_name=self.settings.durable,
                ack_policy=AckPolicy.EXPLICIT,
                deliver_policy=DeliverPolicy.ALL,
                ack_wait=self.ack_wait_seconds,
                max_ack_pending=-1,  # every worker may hold a whole batch
                max_deliver=-1,  # a batch the database refused comes back until it fits
            )
            # the consumer as this worker is told (pull_subscribe leaves an existing one's
            # settings as they were, so a changed --ack-wait would be silently ignored)
            await js.add_consumer(self.settings.stream, config)
            subscription = await js.pull_subscribe(
                self.settings.subjects,
                durable=self.settings.durable,
                stream=self.settings.stream,
                config=config,
            )
            # the next batch is fetched (and parsed, in this event loop) while this one is
            # written by the database (in a thread, waiting on the server)
            fetching = asyncio.ensure_future(self._fetch(subscription))
            try:
                while not stop.is_set():
                    fetched = await fetching
                    await self._refuse_foreign(fetched)  # before the next fetch is asked for
                    fetching = asyncio.ensure_future(self._fetch(subscription))
                    for part in _parts(fetched, self.batch):
                        await self._fold(part)
                    if fetched:
                        await _flush(client)
            finally:
                await _give_back(fetching)
        finally:
            try:  # the writer is closed by its owner (its Reshuffler)
                await client.close()
            except (NatsError, OSError):  # the log is gone: nothing is left unacked to send
                logger.warning("the log's connection did not close cleanly")

    async def _fetch(
        self, subscription: JetStreamContext.PullSubscription
    ) -> list[tuple[Msg, LogChunk]]:
        """The next messages and their reports, about :attr:`batch` reports (as many
        messages as the previous fetch's reports per message make that, at most
        :data:`MAX_FETCH_MESSAGES`); none when the log had nothing for
        :data:`FETCH_SECONDS` or failed (then after :data:`RETRY_SECONDS`)."""
        wanted = max(1, min(MAX_FETCH_MESSAGES, round(self.batch / self._per_message)))
        try:
            messages = await subscription.fetch(wanted, timeout=FETCH_SECONDS)
        except (TimeoutError, NatsTimeoutError):
            self.metrics.set_lag(0)
            return []
        except (NatsError, JetStreamError) as error:  # a node lost: reconnecting
            logger.warning("fetching from the log failed: %s", type(error).__name__)
            await asyncio.sleep(RETRY_SECONDS)
            return []
        fetched: list[tuple[Msg, LogChunk]] = []
        for message in messages:
            try:
                fetched.append((message, LogChunk.decode(message.data)))
            except ValueError:  # nothing an aggregator published: never deliver it again
                logger.warning("a message of the log is not a report; terminated")
                try:
                    await message.term()
                except (NatsError, OSError):  # a node lost: it comes back, and is refused again
                    logger.warning("terminating a message failed; it will be delivered again")
        if fetched:
            reports = sum(len(chunk.report_ids) for _, chunk in fetched)
            self._per_message = reports / len(fetched)
        if messages:
            self.metrics.set_lag(messages[-1].metadata.num_pending)
            self.metrics.count_redelivered(sum(m.metadata.num_delivered > 1 for m in messages))
        kept, surplus = _within(fetched, 2 * self.batch)
        try:  # more than this worker should hold (one-report messages were followed by
            # batches'): handed back at once, for this or another worker's next fetch
            for message, _ in surplus:
                await message.nak()
        except (NatsError, OSError):  # a node lost: they come back after ack_wait
            logger.warning("a fetch's surplus was not given back; redelivered after ack_wait")
        return kept

    async def _refuse_foreign(self, fetched: list[tuple[Msg, LogChunk]]) -> None:
        """Stop (:class:`ConfigurationError`) at a message meant for another database,
        the fetch handed back unacknowledged for the workers of that database."""
        named = {(m.headers or {}).get(DATABASE_HEADER, self.database) for m, _ in fetched}
        others = named - {self.database}
        if not others:
            return
        await _hand_back(fetched)
        raise ConfigurationError(
            f"the log's reports are for another database (identity {min(others)}), not"
            f" this worker's ({self.database}): give `fold` the --database-url of the"
            " ingest replicas; nothing was folded or acknowledged"
        )

    async def _fold(self, part: list[tuple[Msg, LogChunk]]) -> None:
        """Write one transaction's messages, then acknowledge them."""
        chunks = [chunk for _, chunk in part]
        reports = sum(len(chunk.report_ids) for chunk in chunks)
        try:
            result = await to_thread.run_sync(fold_batch, self.writer, self.by_id, chunks)
        except Exception:  # the database: not acked, so they come back after ack_wait
            logger.exception("folding a batch of %d reports failed", reports)
            self.metrics.count_failed_batch()
            await asyncio.sleep(RETRY_SECONDS)
            return
        try:
            for message, _ in part:
                await message.ack()
        except (NatsError, OSError) as error:  # a node lost: redelivered, then skipped
            logger.warning("acknowledging a folded batch failed: %s", type(error).__name__)
        self.metrics.observe_batch(reports, result.written, result.duplicate, result.dropped)


def _within(
    fetched: list[tuple[Msg, LogChunk]], limit: int
) -> tuple[list[tuple[Msg, LogChunk]], list[tuple[Msg, LogChunk]]]:
    """The first messages of ``fetched`` that hold at most ``limit`` reports (at least
    one message), and the rest."""
    total = 0
    for k, (_, chunk) in enumerate(fetched):
        total += len(chunk.report_ids)
        if total > limit and k > 0:
            return fetched[:k], fetched[k:]
    return fetched, []


def _parts(fetched: list[tuple[Msg, LogChunk]], batch: int) -> Iterator[list[tuple[Msg, LogChunk]]]:
    """``fetched`` in runs of at most ``batch`` reports (a message of more is a run of
    its own), one transaction each."""
    part: list[tuple[Msg, LogChunk]] = []
    size = 0
    for message, chunk in fetched:
        if part and size + len(chunk.report_ids) > batch:
            yield part
            part, size = [], 0
        part.append((message, chunk))
        size += len(chunk.report_ids)
    if part:
        yield part


async def _flush(client: Client) -> None:
    """Send the batch's acknowledgements now. A node lost meanwhile (the flush times out
    while the client reconnects) is not the worker's end: acknowledgements that did not
    reach the stream make it redeliver the batch after ``ack_wait``, and the database
    then finds every id stored."""
    try:
        await client.flush()
    except (NatsError, OSError) as error:
        logger.warning("flushing acknowledgements failed: %s", type(error).__name__)


async def _give_back(fetching: asyncio.Future[list[tuple[Msg, LogChunk]]]) -> None:
    """On stopping: a batch fetched but not folded goes back to the stream at once
    (negative acknowledgement; unacknowledged, it would come back after ``ack_wait``)."""
    if not fetching.done():
        fetching.cancel()
    try:
        fetched = await fetching
    except asyncio.CancelledError:
        return
    await _hand_back(fetched)


async def _hand_back(fetched: list[tuple[Msg, LogChunk]]) -> None:
    """Give ``fetched`` back to the stream unacknowledged (negative acknowledgement)."""
    try:
        for message, _ in fetched:
            await message.nak()
    except (NatsError, OSError):  # the log is gone: they come back after ack_wait
        logger.warning("a fetched batch was not given back; redelivered after ack_wait")
