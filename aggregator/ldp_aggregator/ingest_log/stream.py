"""The JetStream stream of log mode: its settings, its creation, and its messages.

One message per request's accepted reports (:class:`LogChunk`; a batch of more than
:func:`chunk_size` reports is split), on the subject ``<prefix>.<collection id>``. A
message of one report has the header ``Nats-Msg-Id: <collection id>.<report id>``, so
the stream drops a retry of that report within its deduplication window; a message of
several has ``Nats-Msg-Id: <collection id>:<digest of its ids>`` (report ids never hold
a colon), so the stream drops the same batch sent again, and a report re-sent in a
different batch is stored once by the fold (the database's unique key). Every message
also has the header ``Ldp-Database: <identity>`` (:data:`DATABASE_HEADER`): the random
id of the database the ingest replica read the collection from
(:mod:`ldp_aggregator.storage.identity`), so that a fold worker on another database
refuses it instead of finding no such collection and dropping it. The payload
holds only what folding needs (JSON): the collection's id and config hash, the period
and day the aggregator stamped at acceptance (as coarse as the collection's period),
the report ids and their packed bits. No address, header or arrival time of the
request is in it; the stream itself keeps a sequence number and a publish time per
message until retention removes it (docs/privacy-at-rest.md).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import logging
from dataclasses import dataclass
from datetime import date
from urllib.parse import urlsplit

from nats.aio.client import Client
from nats.errors import Error as NatsError
from nats.js import JetStreamContext
from nats.js.api import DiscardPolicy, RetentionPolicy, StorageType, StreamConfig
from nats.js.errors import APIError, NotFoundError
from nats.js.errors import Error as JetStreamError

from ldp_aggregator.settings import Settings
from ldp_shared.errors import ConfigurationError, TransportError
from ldp_shared.wire.reports import ids_match_pattern

logger = logging.getLogger("ldp_aggregator")

CONNECT_SECONDS = 10.0
DATABASE_HEADER = "Ldp-Database"
"""The header naming the database a message's reports belong to (see the module)."""
DEFAULT_STREAM = "LDPCOLLECT_REPORTS"
DEFAULT_SUBJECT_PREFIX = "ldpcollect.reports"
DEFAULT_DURABLE = "ldpcollect-fold"
DEFAULT_REPLICAS = 3
DEFAULT_DEDUP_SECONDS = 120.0
"""JetStream's own default window (two minutes): a retry within it is dropped by the
stream; an older one is counted once at fold time, by the database's unique key."""
DEFAULT_MAX_AGE_SECONDS = 7 * 86_400.0
"""A message older than a week is dropped by the stream, folded or not (folding is
seconds behind in normal operation; with the work-queue retention a folded report is
deleted at once, so this bounds what a stopped fleet of fold workers leaves)."""


@dataclass(frozen=True)
class LogSettings:
    """Where the log is and how its stream is made (``LDPCOLLECT_LOG_*`` settings)."""

    servers: tuple[str, ...]
    stream: str = DEFAULT_STREAM
    subject_prefix: str = DEFAULT_SUBJECT_PREFIX
    replicas: int = DEFAULT_REPLICAS
    dedup_seconds: float = DEFAULT_DEDUP_SECONDS
    max_age_seconds: float = DEFAULT_MAX_AGE_SECONDS
    durable: str = DEFAULT_DURABLE
    work_queue: bool = True
    """Delete a message once a fold worker acknowledged it (``False``: keep it until
    ``max_age_seconds``, a log that can be replayed)."""

    @property
    def subjects(self) -> str:
        return f"{self.subject_prefix}.>"

    def subject(self, collection_id: int) -> str:
        return f"{self.subject_prefix}.{collection_id}"


def parse_log_url(url: str) -> tuple[str, ...]:
    """``nats://h1:p1,h2:p2`` as the server URLs ``nats-py`` takes; a bad one is a
    :class:`ConfigurationError` (one line)."""
    scheme, separator, rest = url.partition("://")
    if scheme not in ("nats", "tls") or not separator or not rest:
        raise ConfigurationError(
            f"the log URL must look like nats://host:port,...; got {redact_log_url(url)!r}"
        )
    servers: list[str] = []
    for part in rest.split(","):
        server = f"{scheme}://{part.strip()}"
        try:
            parsed = urlsplit(server)
            port = parsed.port
        except ValueError:
            port = None
            parsed = None
        if parsed is None or not parsed.hostname or (port is None and ":" in parsed.netloc):
            raise ConfigurationError(
                f"not a NATS server address in the log URL: {redact_log_url(part)!r}"
            )
        servers.append(server)
    return tuple(servers)


def redact_log_url(url: str) -> str:
    """``url`` (one server or several, comma-separated) as a message or a log line may
    show it: a password as ``***`` (``nats://admin:***@h1:4222``), and so a token given
    alone (``nats://***@h1:4222``; NATS takes a user without a password as a token)."""

    def one(part: str) -> str:
        prefix, separator, rest = part.partition("://")
        if not separator:
            prefix, rest = "", part
        if "@" not in rest:
            return part
        userinfo, _, host = rest.rpartition("@")
        user, colon, _ = userinfo.partition(":")
        shown = f"{user}:***" if colon else "***"
        return f"{prefix}{separator}{shown}@{host}"

    return ",".join(one(part) for part in url.split(","))


async def connect(settings: LogSettings, name: str) -> Client:
    """A connection to the cluster that reconnects for ever once made (a node killed is
    survived); :class:`~ldp_shared.errors.TransportError` when no node answers within
    :data:`CONNECT_SECONDS` at first."""
    client = Client()

    async def disconnected() -> None:
        if not client.is_closed:  # closed: this process is stopping, nothing was lost
            logger.warning("log connection lost; reconnecting to another node")

    try:
        await asyncio.wait_for(
            client.connect(
                servers=list(settings.servers),
                name=name,
                max_reconnect_attempts=-1,
                reconnect_time_wait=0.25,  # type: ignore[arg-type]  # seconds; annotated int, used as a float
                connect_timeout=2,
                allow_reconnect=True,
                error_cb=_log_error,
                disconnected_cb=disconnected,
                reconnected_cb=_log_reconnected,
            ),
            CONNECT_SECONDS,
        )
    except (TimeoutError, NatsError, OSError):
        where = redact_log_url(",".join(settings.servers))
        raise TransportError(f"the log does not answer at {where}") from None
    return client


async def _log_error(error: Exception) -> None:  # one line, not nats-py's traceback
    logger.debug("log connection: %s: %s", type(error).__name__, error)


async def _log_reconnected() -> None:
    logger.warning("log connection restored")


CHECK_REQUEST_SECONDS = 5.0
"""How long :func:`check_log` waits for one answer of the JetStream API (a request that
times out is made again until :func:`ensure_stream`'s deadline)."""


def check_log(settings: LogSettings) -> None:
    """Connect, make sure the stream exists (:func:`ensure_stream`: created unless it
    exists) and close. ``ldpcollect serve --log`` and ``ldpcollect fold`` check this before
    they start, so a dead log or a stream that cannot be created is one line
    (:class:`~ldp_shared.errors.TransportError`), not a traceback."""

    async def once() -> None:
        client = await connect(settings, "ldpcollect-check")
        try:
            await ensure_stream(client.jetstream(timeout=CHECK_REQUEST_SECONDS), settings)
        finally:
            with contextlib.suppress(NatsError, OSError):  # the log went away meanwhile
                await client.close()

    asyncio.run(once())


REPLICAS_NEED_A_CLUSTER = 10074
"""JetStream's error code for "replicas > 1 not supported in non-clustered mode"."""
SUBJECTS_OVERLAP = 10065
"""JetStream's error code for "subjects overlap with an existing stream"."""
STREAM_REFUSALS = frozenset({REPLICAS_NEED_A_CLUSTER, SUBJECTS_OVERLAP})
"""Refusals of the stream's creation that no retry changes: reported at once."""


async def ensure_stream(js: JetStreamContext, settings: LogSettings) -> None:
    """Create the stream unless it exists (its configuration is then the operator's:
    an existing stream is not changed, so retention set by hand stays). A cluster that
    is still electing its JetStream leader is waited for, up to :data:`CONNECT_SECONDS`;
    a refusal no retry changes (:data:`STREAM_REFUSALS`) is a
    :class:`~ldp_shared.errors.TransportError` at once."""
    deadline = asyncio.get_running_loop().time() + CONNECT_SECONDS
    while True:
        try:
            await _create_unless_exists(js, settings)
            return
        except (TimeoutError, NatsError, JetStreamError) as error:
            refused = isinstance(error, APIError) and error.err_code in STREAM_REFUSALS
            if refused or asyncio.get_running_loop().time() > deadline:
                raise TransportError(_stream_error(settings, error)) from None
            await asyncio.sleep(0.5)


def _stream_error(settings: LogSettings, error: Exception) -> str:
    """One line for the stream that could not be created or read: what JetStream said,
    and what to set when that is a setting's doing."""
    what = f"the log's stream {settings.stream} cannot be created or read"
    if not isinstance(error, APIError):
        return f"{what}: {type(error).__name__}: {error}"
    if not error.description:  # no responders: no server of the log runs JetStream
        return f"{what}: {type(error).__name__} (no JetStream answered: is it enabled?)"
    line = f"{what}: {error.description} (NATS error {error.err_code})"
    if error.err_code == REPLICAS_NEED_A_CLUSTER:
        line += (
            f"; the log is a single node, where a stream has one replica, not"
            f" {settings.replicas}: set LDPCOLLECT_LOG_REPLICAS=1"
        )
    elif error.err_code == SUBJECTS_OVERLAP:
        line += (
            f"; another stream holds {settings.subjects}: set LDPCOLLECT_LOG_STREAM to"
            " that stream's name"
        )
    return line


async def _create_unless_exists(js: JetStreamContext, settings: LogSettings) -> None:
    try:
        await js.stream_info(settings.stream)
        return
    except NotFoundError:
        pass
    await js.add_stream(
        StreamConfig(
            name=settings.stream,
            subjects=[settings.subjects],
            retention=RetentionPolicy.WORK_QUEUE if settings.work_queue else RetentionPolicy.LIMITS,
            storage=StorageType.FILE,
            num_replicas=settings.replicas,
            duplicate_window=settings.dedup_seconds,
            max_age=settings.max_age_seconds,
            discard=DiscardPolicy.OLD,
        )
    )


CHUNK_REPORTS = 1_000
"""At most this many reports in one message."""
CHUNK_BYTES = 128 * 1024
"""And a message's payload below this size (NATS refuses payloads over its
``max_payload``, 1 MiB by default)."""


PAYLOAD_HEADROOM = 1024
"""Bytes of a message left for its JSON keys and the collection's fields."""


def chunk_size(report_bytes: int, max_payload: int = CHUNK_BYTES + PAYLOAD_HEADROOM) -> int:
    """Reports per message for reports of ``report_bytes`` packed bytes: base64 (4/3) plus
    an id of at most 64 characters and JSON's quotes and comma, under :data:`CHUNK_BYTES`
    and under the server's ``max_payload`` (less :data:`PAYLOAD_HEADROOM`)."""
    per_report = (4 * report_bytes) // 3 + 4 + 64 + 3
    room = min(CHUNK_BYTES, max_payload - PAYLOAD_HEADROOM)
    return max(1, min(CHUNK_REPORTS, room // per_report))


@dataclass(frozen=True)
class LogChunk:
    """Accepted reports of one request, one collection and one period, as the stream
    carries them (everything folding needs): ``bits`` is their packed bits one after
    the other, in the order of ``report_ids``."""

    collection_id: int
    config_hash: str
    period_start: int
    day: date
    report_ids: tuple[str, ...]
    bits: bytes

    @property
    def message_id(self) -> str:
        """The ``Nats-Msg-Id``: the stream's deduplication key (see the module)."""
        if len(self.report_ids) == 1:
            return message_id(self.collection_id, self.report_ids[0])
        digest = hashlib.sha256("\n".join(self.report_ids).encode("ascii")).hexdigest()
        return f"{self.collection_id}:{digest[:32]}"

    def encode(self) -> bytes:
        """JSON: ``i`` is the id of a one-report message, else the list of ids."""
        ids: str | list[str] = (
            self.report_ids[0] if len(self.report_ids) == 1 else list(self.report_ids)
        )
        return json.dumps(
            {
                "c": self.collection_id,
                "h": self.config_hash,
                "p": self.period_start,
                "d": self.day.isoformat(),
                "i": ids,
                "b": base64.b64encode(self.bits).decode("ascii"),
            },
            separators=(",", ":"),
        ).encode("ascii")

    @classmethod
    def decode(cls, payload: bytes) -> LogChunk:
        """The reports of a message; ``ValueError`` for anything no aggregator published
        (whatever the payload makes the parser raise). Every id must have a report id's
        shape; the bits' length is checked against the collection's by the fold."""
        try:
            data = json.loads(payload)
            ids = data["i"]
            report_ids = (ids,) if isinstance(ids, str) else tuple(ids)
            if not isinstance(ids, str | list) or not 0 < len(report_ids) <= CHUNK_REPORTS:
                raise ValueError("no list of report ids")
            if set(map(type, report_ids)) != {str} or not ids_match_pattern(report_ids):
                raise ValueError("not a report id")
            collection_id, period_start = int(data["c"]), int(data["p"])
            if not 0 < collection_id < 2**31 or not -(2**63) <= period_start < 2**63:
                raise ValueError("a number out of the database's range")
            return cls(
                collection_id=collection_id,
                config_hash=str(data["h"]),
                period_start=period_start,
                day=date.fromisoformat(data["d"]),
                report_ids=report_ids,
                bits=base64.b64decode(data["b"], validate=True),
            )
        except Exception as error:  # a message is data: any failure of it refuses it
            raise ValueError(f"not a report message: {type(error).__name__}") from None


def message_id(collection_id: int, report_id: str) -> str:
    """The ``Nats-Msg-Id`` of a one-report message."""
    return f"{collection_id}.{report_id}"


def log_settings_of(settings: Settings) -> LogSettings:
    """The log's settings from the aggregator's (``LDPCOLLECT_LOG_*``)."""
    if settings.log_url is None:
        raise ConfigurationError("log mode needs a log URL (--log or LDPCOLLECT_LOG_URL)")
    return LogSettings(
        servers=parse_log_url(settings.log_url),
        stream=settings.log_stream,
        replicas=settings.log_replicas,
        dedup_seconds=settings.log_dedup_seconds,
        max_age_seconds=settings.log_max_age_seconds,
        work_queue=settings.log_retention == "workqueue",
    )
