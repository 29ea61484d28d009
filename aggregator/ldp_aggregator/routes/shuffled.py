"""Shuffled collections: the sealing key devices seal to, and the shuffler's batches.

A collection created with ``"shuffled": true`` takes reports only here, from the shuffler
(its own bearer token), in batches of at least ``LDPCOLLECT_SHUFFLE_MIN_BATCH`` sealed
blobs (:mod:`ldp_shared.sealing`). Each blob is opened with the keyring's key it names,
and the reports inside are judged and stored by :mod:`ldp_aggregator.ingest` exactly as a
direct upload's. A blob that does not open (tampered, misdirected) or names a key this
aggregator does not hold is rejected and counted, and the rest of the batch goes on. The
answer carries counts only: nothing that would tell the shuffler which report was which.

A batch for a collection that is gone (404), closed (409 ``collection-closed``) or not
shuffled (409) is refused whole, before any blob is opened: the shuffler takes these
answers as final and drops what it holds for the collection (docs/shuffler.md). In log
mode (docs/log-mode.md) the new reports of a batch are published to the log, as a
direct upload's are, instead of being written to the database here.
"""

from __future__ import annotations

import threading
from pathlib import Path

from anyio import to_thread
from fastapi import APIRouter, Depends, FastAPI, Request, Response
from prometheus_client import CollectorRegistry, Counter, Histogram
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import to_json

from ldp_aggregator.auth import require_shuffler
from ldp_aggregator.deps import AppState, app_state
from ldp_aggregator.ingest import BatchOutcomes, ingest_batch_async
from ldp_aggregator.problems import logger, problem_responses
from ldp_aggregator.routes.reports import writer_of
from ldp_aggregator.sealing_keys import Keyring, KeyringFile
from ldp_aggregator.storage.collections import StoredCollection
from ldp_aggregator.storage.lifecycle import check_takes_reports
from ldp_shared.errors import (
    ConfigurationError,
    ConflictError,
    InvalidReportError,
    InvalidRequestError,
    TransportError,
)
from ldp_shared.request_model import RequestModel
from ldp_shared.sealing import (
    SUITE_NAME,
    SealingKey,
    UnknownKeyError,
    from_text,
    open_report,
    to_text,
)
from ldp_shared.wire.reports import MAX_BATCH, Report, ReportBatch

router = APIRouter(prefix="/v1/collections", tags=["shuffled"])
_CREATE_LOCK = threading.Lock()


class SealingKeyInfo(BaseModel):
    """The key devices seal a shuffled collection's reports to (docs/shuffler.md)."""

    model_config = ConfigDict(frozen=True)

    collection: str
    config_hash: str
    key_id: str = Field(description="hex SHA-256(public key)[:8]; a device recomputes it")
    public_key: str = Field(description="raw X25519 public key, unpadded base64url")
    suite: str = SUITE_NAME


class ShuffledBatch(RequestModel):
    """A shuffler's batch: sealed blobs (unpadded base64url), in the shuffler's random order."""

    blobs: list[str] = Field(min_length=1, max_length=MAX_BATCH)


class ShuffledBatchResult(BaseModel):
    """Counts only: how many reports were accepted, duplicates or rejected, and how many
    blobs did not open (``tampered``) or named a key not held (``unknown_key``)."""

    received: int
    accepted: int
    duplicate: int
    rejected: int
    tampered: int
    unknown_key: int


class ShuffledBatchMetrics:
    """What is recorded of each shuffled batch, on the app's metrics registry: per
    collection, how many batches and of what sizes, and the blobs that did not open.
    No time is kept (a scraper's samples are as fine as its interval, and its own)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.batches = Counter(
            "ldpcollect_shuffled_batches", "Shuffled batches received.", ["collection"],
            registry=registry,
        )  # fmt: skip
        self.sizes = Histogram(
            "ldpcollect_shuffled_batch_size", "Sealed reports per shuffled batch.",
            ["collection"], buckets=(100, 300, 1000, 3000, 10_000), registry=registry,
        )  # fmt: skip
        self.refused = Counter(
            "ldpcollect_sealed_reports_refused",
            "Sealed reports that did not open (tampered) or named a key not held.",
            ["collection", "reason"], registry=registry,
        )  # fmt: skip

    def record(self, collection: str, size: int, tampered: int, unknown_key: int) -> None:
        self.batches.labels(collection).inc()
        self.sizes.labels(collection).observe(size)
        self.refused.labels(collection, "tampered").inc(tampered)
        self.refused.labels(collection, "unknown_key").inc(unknown_key)


def batch_metrics_of(app: FastAPI) -> ShuffledBatchMetrics:
    """The app's :class:`ShuffledBatchMetrics`, registered on first use."""
    with _CREATE_LOCK:
        found: ShuffledBatchMetrics | None = getattr(app.state, "ldp_shuffled_metrics", None)
        if found is None:
            state = app.state.ldp
            assert isinstance(state, AppState)
            found = ShuffledBatchMetrics(state.metrics.registry)
            app.state.ldp_shuffled_metrics = found
        return found


def keyring_of(app: FastAPI) -> KeyringFile:
    """The app's keyring file, made on first use."""
    with _CREATE_LOCK:
        found: KeyringFile | None = getattr(app.state, "ldp_sealing_keyring", None)
        if found is None:
            state = app.state.ldp
            assert isinstance(state, AppState)
            found = KeyringFile(Path(state.settings.sealing_keys_file))
            app.state.ldp_sealing_keyring = found
        return found


def _usable(keyring: KeyringFile) -> Keyring:
    """The keyring, checked to have a current key. A file that cannot be made or read,
    or holds no current key, is the server's fault, not the request's: 503, with the
    reason in the server's log only (it names a file of the server)."""
    try:
        loaded = keyring.load()
        loaded.current()
    except ConfigurationError as error:
        if keyring.reported != error.detail:  # once, not per request
            keyring.reported = error.detail
            logger.error("the sealing keyring cannot be used: %s", error.detail)
        raise TransportError("the aggregator cannot use its sealing keys; retry later") from None
    keyring.reported = None
    return loaded


def _current_key(keyring: KeyringFile) -> SealingKey:
    return _usable(keyring).current()


async def _shuffled_collection(
    state: AppState, name: str, current: bool = False
) -> StoredCollection:
    """The shuffled collection ``name``: as first loaded here, or (``current``) as stored
    now; :class:`ConflictError` if it is not shuffled."""
    load = state.collections.get if current else state.collections.cached
    collection = await to_thread.run_sync(load, name)
    if not collection.config.spec.shuffled:
        raise ConflictError(
            f"collection {name!r} is not shuffled: its devices upload reports directly"
        )
    return collection


@router.get(
    "/{name}/sealing-key", response_model=SealingKeyInfo, responses=problem_responses(404, 409, 503)
)
async def sealing_key(name: str, request: Request) -> SealingKeyInfo:
    """The current key to seal this shuffled collection's reports to (no token needed)."""
    state = app_state(request)
    collection = await _shuffled_collection(state, name)
    key = await to_thread.run_sync(_current_key, keyring_of(request.app))
    return SealingKeyInfo(
        collection=collection.name,
        config_hash=collection.config.config_hash,
        key_id=key.key_id,
        public_key=to_text(key.public),
    )


def _open_all(
    keyring: KeyringFile, collection: StoredCollection, blobs: list[str]
) -> tuple[list[Report], int, int]:
    """The reports inside the blobs, and how many were tampered or of unknown keys."""
    keys = _usable(keyring).opening_keys()
    reports: list[Report] = []
    tampered = unknown = 0
    name, config_hash = collection.name, collection.config.config_hash
    for text in blobs:
        try:
            inner = open_report(from_text(text), keys, name, config_hash)
            reports.append(Report.model_validate_json(inner))
        except UnknownKeyError:
            unknown += 1
        except (InvalidReportError, ValidationError):
            tampered += 1
    return reports, tampered, unknown


@router.post(
    "/{name}/shuffled-batches",
    response_model=ShuffledBatchResult,
    responses=problem_responses(401, 403, 404, 409, 413, 422, 503),
    dependencies=[Depends(require_shuffler)],
)
async def shuffled_batch(name: str, batch: ShuffledBatch, request: Request) -> Response:
    """Open, judge and store a shuffler's batch (in log mode: publish it to the log); 422
    below the minimum batch size; 404, or 409 if closed or not shuffled, before any blob
    is opened."""
    state = app_state(request)
    log = getattr(request.app.state, "ldp_log", None)  # log mode: docs/log-mode.md
    # as stored now (not a copy cached before a delete and re-create), and open: a
    # refusal here is final for the shuffler, which drops the collection's blobs
    collection = await _shuffled_collection(state, name, current=True)
    await _check_takes_reports(log, state, collection)
    minimum = state.settings.shuffle_min_batch
    if len(batch.blobs) < minimum:
        raise InvalidRequestError(
            f"a shuffled batch needs at least {minimum} sealed reports (got"
            f" {len(batch.blobs)}): fewer would shrink the crowd each report hides in"
        )
    reports, tampered, unknown = await to_thread.run_sync(
        _open_all, keyring_of(request.app), collection, batch.blobs
    )
    counts = {"accepted": 0, "duplicate": 0, "rejected": 0}
    if reports:
        outcome = await _ingest(log, request.app, state, collection, ReportBatch(reports=reports))
        counts = {
            "accepted": outcome.accepted,
            "duplicate": outcome.duplicate,
            "rejected": outcome.rejected,
        }
    rejected = counts["rejected"] + tampered + unknown
    batch_metrics_of(request.app).record(collection.name, len(batch.blobs), tampered, unknown)
    state.metrics.count_reports(collection.name, counts["accepted"], counts["duplicate"], rejected)
    result = ShuffledBatchResult(
        received=len(batch.blobs), tampered=tampered, unknown_key=unknown, **counts
    )
    return Response(to_json(result.model_dump()), media_type="application/json")


async def _check_takes_reports(log: object, state: AppState, collection: StoredCollection) -> None:
    """:class:`~ldp_shared.errors.CollectionClosedError` for a closed collection (in log
    mode through the publisher's one-second trust, as a direct upload there)."""
    if log is None:
        await to_thread.run_sync(check_takes_reports, state.engine, collection)
        return
    from ldp_aggregator.ingest_log.publisher import LogPublisher

    assert isinstance(log, LogPublisher)
    await log.check_takes_reports(state.engine, collection)


async def _ingest(
    log: object, app: FastAPI, state: AppState, collection: StoredCollection, batch: ReportBatch
) -> BatchOutcomes:
    """The opened reports, judged as a direct upload's: into the database (direct mode)
    or, with ``log`` set, published to the log with the same message ids."""
    if log is None:
        return await ingest_batch_async(writer_of(app), collection, batch)
    # log mode only: nats is not even imported in direct mode
    from ldp_aggregator.ingest_log.publisher import LogPublisher, publish_batch

    assert isinstance(log, LogPublisher)
    return await publish_batch(log, collection, batch, state.engine)
