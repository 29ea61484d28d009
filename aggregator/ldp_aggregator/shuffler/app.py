"""The shuffler's HTTP app and its forwarder.

``POST /v1/collections/{name}/sealed-reports`` takes ``{"blobs": [...]}`` (unpadded
base64url sealed reports, :mod:`ldp_shared.sealing`), stores them durably
(:class:`~ldp_aggregator.shuffler.store.BlobStore`) and answers 202 ``{"held": n}``
only then. The app reads nothing of the request but its path and body: no address, no
header, no time; it writes no access log.

The forwarder wakes after each upload and every ``interval`` seconds. For each
collection holding at least ``min_batch`` blobs it takes them (up to
:data:`~ldp_shared.wire.reports.MAX_BATCH`), puts them in uniformly random order with
:class:`secrets.SystemRandom` (Fisher–Yates over the operating system's CSPRNG), posts
them as one batch to the aggregator's ``/v1/collections/{name}/shuffled-batches`` with
the shuffler token, and deletes them only after a 200.

The aggregator's verdict on a collection (:mod:`~ldp_aggregator.shuffler.verdicts`,
cached for ``check_seconds``) decides the rest. An upload for a collection the
aggregator does not have (404) or that is not shuffled (409) is refused before its body
is read. When a batch is answered with such a refusal, or ``collection-closed``, every
blob held for the collection is dropped and counted
(``ldpcollect_shuffler_blobs_dropped_total{reason}`` on ``/metrics``, and one log line
with the collection and the count). Any other answer (a connection error, 5xx, 429, a
misconfigured token) keeps the blobs held, to be tried again later.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import re
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
from anyio import to_thread
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, generate_latest
from pydantic import Field

from ldp_aggregator.shuffler.store import BlobStore
from ldp_aggregator.shuffler.verdicts import Refusal, Verdicts, permanent_refusal
from ldp_aggregator.telemetry import no_telemetry
from ldp_shared.errors import InvalidReportError, problem_type
from ldp_shared.request_model import RequestModel
from ldp_shared.sealing import blob_key_id, from_text, to_text
from ldp_shared.wire.reports import MAX_BATCH

__all__ = ["ShufflerSettings", "create_shuffler_app"]

MAX_BLOB_BYTES = 64 * 1024
MAX_BODY_BYTES = 8 * 1024 * 1024
_RANDOM = secrets.SystemRandom()
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_LOG = logging.getLogger("ldpcollect.shuffler")
_REFUSED = {
    "not-found": ("Collection not found", "the aggregator has no collection {name!r}"),
    "not-shuffled": (
        "Not a shuffled collection",
        "collection {name!r} is not shuffled: its devices upload reports to the aggregator"
        " directly",
    ),
    "closed": ("Collection closed", "collection {name!r} is closed to new reports"),
}


@dataclass(frozen=True)
class ShufflerSettings:
    aggregator_url: str
    token: str
    database: Path
    min_batch: int = 100
    interval: float = 5.0
    check_seconds: float = 30.0  # how long the aggregator's verdict on a name is kept
    transport: httpx.AsyncBaseTransport | None = None  # tests: the aggregator in process


class SealedUpload(RequestModel):
    """What a device posts: sealed blobs of one collection."""

    blobs: list[str] = Field(min_length=1, max_length=1000)


def _problem(status: int, title: str, detail: str, kind: str = "about:blank") -> JSONResponse:
    return JSONResponse(
        {"type": kind, "title": title, "status": status, "detail": detail},
        status_code=status,
        media_type="application/problem+json",
    )


def _refused(name: str, refusal: Refusal) -> JSONResponse:
    """The problem an upload for a collection the aggregator refuses is answered with."""
    title, detail = _REFUSED[refusal.reason]
    return _problem(refusal.status, title, detail.format(name=name), problem_type(refusal.error))


class Forwarder:
    """Sends full batches to the aggregator in random order, deletes what it acknowledged,
    and drops what it refuses for good. ``shuffler``: the source of the batches' order,
    the operating system's CSPRNG unless a test injects a seeded one."""

    def __init__(
        self, settings: ShufflerSettings, store: BlobStore, shuffler: random.Random = _RANDOM
    ) -> None:
        self.settings = settings
        self.store = store
        self.shuffler = shuffler
        self.wake = asyncio.Event()
        self.http = httpx.AsyncClient(
            base_url=settings.aggregator_url, transport=settings.transport, timeout=60.0
        )
        self.verdicts = Verdicts(self.http, settings.check_seconds)
        self.registry = CollectorRegistry()
        self.dropped = Counter(
            "ldpcollect_shuffler_blobs_dropped",
            "Held blobs dropped because the aggregator refuses their collection for good.",
            ["reason"],
            registry=self.registry,
        )

    async def drop(self, collection: str, refusal: Refusal) -> int:
        """Drop every blob held for ``collection``, count them and say so in one log line."""
        self.verdicts.remember(collection, refusal)
        dropped = await to_thread.run_sync(self.store.drop, collection)
        if dropped:
            self.dropped.labels(refusal.reason).inc(dropped)
            _LOG.warning(
                "ldpcollect shuffler: dropped %d held blobs of collection %r: the aggregator"
                " refuses its batches for good (%s)",
                dropped,
                collection,
                refusal.reason,
            )
        return dropped

    async def forward_ready(self) -> int:
        """Forward every collection holding ``min_batch`` blobs; the blobs forwarded.

        A collection the aggregator refuses for good (by its cached verdict, or by its
        answer to the batch) has its blobs dropped, however few it holds."""
        forwarded = 0
        counts = await to_thread.run_sync(self.store.counts)
        for collection, held in counts.items():
            verdict = await self.verdicts.check(collection)
            if isinstance(verdict, Refusal):
                await self.drop(collection, verdict)
                continue
            if held < self.settings.min_batch:
                continue
            rows = await to_thread.run_sync(self.store.take, collection, MAX_BATCH)
            self.shuffler.shuffle(rows)
            body = {"blobs": [to_text(blob) for _, blob in rows]}
            try:
                answer = await self.http.post(
                    f"/v1/collections/{collection}/shuffled-batches",
                    json=body,
                    headers={"Authorization": f"Bearer {self.settings.token}"},
                )
            except httpx.HTTPError:
                continue  # held; tried again at the next wake
            if answer.status_code == 200:
                await to_thread.run_sync(self.store.release, [i for i, _ in rows])
                forwarded += len(rows)
                continue
            refusal = permanent_refusal(answer)
            if refusal is not None:
                await self.drop(collection, refusal)
            elif answer.status_code < 500 and answer.status_code not in (408, 429):
                # not transient, not the collection's fault: the operator's to fix
                _LOG.warning(
                    "ldpcollect shuffler: the aggregator answered %d to a batch of %r;"
                    " the blobs stay held",
                    answer.status_code,
                    collection,
                )
        return forwarded

    async def run(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.wake.wait(), self.settings.interval)
            self.wake.clear()
            with contextlib.suppress(Exception):  # never dies; what failed stays held
                await self.forward_ready()


def _decode(blobs: list[str]) -> list[bytes]:
    decoded = []
    for text in blobs:
        blob = from_text(text)
        if len(blob) > MAX_BLOB_BYTES:
            raise InvalidReportError(f"a sealed report is at most {MAX_BLOB_BYTES} bytes")
        blob_key_id(blob)  # version and length
        decoded.append(blob)
    return decoded


def create_shuffler_app(
    settings: ShufflerSettings, *, shuffler: random.Random = _RANDOM
) -> FastAPI:
    """The shuffler app; its forwarder runs while the app does. ``shuffler`` orders the
    batches: the operating system's CSPRNG; a seeded generator only in tests."""
    store = BlobStore(settings.database)
    forwarder = Forwarder(settings, store, shuffler)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        task = asyncio.create_task(forwarder.run())
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            await forwarder.http.aclose()
            store.close()

    app = FastAPI(
        title="ldpcollect shuffler", lifespan=lifespan, openapi_url=None, **no_telemetry()
    )
    app.state.forwarder = forwarder

    @app.post("/v1/collections/{name}/sealed-reports", status_code=202)
    async def sealed_reports(name: str, request: Request) -> JSONResponse:
        if _NAME.fullmatch(name) is None:
            return _problem(404, "Not a collection name", f"{name[:64]!r} is no collection name")
        verdict = await forwarder.verdicts.check(name)
        if isinstance(verdict, Refusal):
            return _refused(name, verdict)
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_BODY_BYTES:
                return _problem(413, "Body too large", f"at most {MAX_BODY_BYTES} bytes a request")
        try:
            upload = SealedUpload.model_validate_json(bytes(body))
            blobs = _decode(upload.blobs)
        except (ValueError, InvalidReportError) as error:
            detail = str(error).splitlines()[0]
            return _problem(422, "Not sealed reports", detail)
        await to_thread.run_sync(store.hold, name, blobs)
        forwarder.wake.set()
        return JSONResponse({"held": len(blobs)}, status_code=202)

    @app.get("/metrics")
    async def metrics() -> Response:
        """Counts only: the blobs dropped, by reason (nothing about a sender)."""
        return Response(generate_latest(forwarder.registry), media_type=CONTENT_TYPE_LATEST)

    @app.get("/healthz")
    @app.get("/readyz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    return app
