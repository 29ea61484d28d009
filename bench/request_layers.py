"""What each middleware layer costs a single-report upload (issue 23), in process.

The aggregator's app (``create_app``, a temporary SQLite file) is called directly as an
ASGI application, with no server and no socket, for ``POST /v1/collections/{name}/reports``
carrying one fresh report. It times the real route 16 requests at a time (as wrk's 16
connections; the event loop's thread apart from the writer's, and the requests per
transaction), in alternate runs through the device shortcut (the app as served) and
through the router (the stack without the shortcut), and the writer thread's CPU for a
transaction of one report on its own, then the no-op route 16 at a time behind the
router's stack, for the same comparison in process. Each variant takes one user
middleware out of that stack
(``app.user_middleware``; Starlette rebuilds the stack), and a last variant answers the
route with a no-op endpoint behind the full stack, so the route's own work (judging,
decoding, the group-commit transaction) is seen beside the layers. Variants run in
interleaved rounds (every variant once per round, in a shuffled order); the result is the
median µs per request of each variant over the rounds, and its difference from the full
stack: the cost of the layer taken out. Timings are wall time on a loaded machine: read
the ranges over the rounds, not one number.

    python bench/request_layers.py [--requests 400] [--rounds 7] [--postgres URL]
"""

from __future__ import annotations

import asyncio
import random
import statistics
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from starlette.middleware import Middleware
from starlette.responses import Response
from starlette.types import Message

from _common import base_parser, emit, log, sized, start_marker
from _server import oue16_spec, postgres_database, report_bodies
from ldp_aggregator.app import create_app
from ldp_aggregator.collections import create_collection
from ldp_aggregator.ingest import _prepare
from ldp_aggregator.routes.device_shortcut import DeviceShortcut
from ldp_aggregator.settings import Settings
from ldp_aggregator.storage.migrate import upgrade
from ldp_aggregator.writer import ReportWriter
from ldp_shared.rand import seeded_rng
from ldp_shared.wire.reports import ReportBatch

TEMPLATE = "/v1/collections/{name}/reports"
ROUTE = TEMPLATE.format(name="ingest")


def _scope(body: bytes) -> dict[str, Any]:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": ROUTE,
        "raw_path": ROUTE.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"127.0.0.1"),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ],
        "client": ("127.0.0.1", 40000),
        "server": ("127.0.0.1", 8000),
    }


async def _call(app: FastAPI, body: bytes) -> int:
    status = 0
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.sleep(3600)  # a client that stays connected
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = int(message["status"])

    await app(_scope(body), receive, send)
    return status


def _with_stack(app: FastAPI, stack: list[Middleware]) -> None:
    app.user_middleware = list(stack)
    app.middleware_stack = None  # rebuilt on the next call


async def _noop_endpoint(name: str, batch: ReportBatch) -> Response:
    """The upload route's models and path, none of its work."""
    return Response(b'{"accepted":1}', media_type="application/json")


async def _cpu_us(app: FastAPI, bodies: list[bytes], concurrency: int = 1) -> float:
    """Process CPU µs per request over ``bodies`` sent ``concurrency`` at a time."""
    started = time.process_time()
    for start in range(0, len(bodies), concurrency):
        chunk = bodies[start : start + concurrency]
        statuses = await asyncio.gather(*(_call(app, body) for body in chunk))
        if any(status != 200 for status in statuses):
            raise RuntimeError(f"an upload was answered {statuses}")
    return (time.process_time() - started) / len(bodies) * 1e6


async def measure(requests: int, rounds: int, postgres: str | None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="ldp-layers-") as tmp, ExitStack() as stack:
        url = f"sqlite:///{Path(tmp) / 'layers.db'}"
        if postgres is not None:  # a fresh database of its own, dropped at the end
            url = stack.enter_context(postgres_database(postgres))
        app = create_app(Settings(database_url=url, migrate_on_startup=False))
        state = app.state.ldp
        upgrade(state.engine)
        config = create_collection(state.engine, oue16_spec("ingest")).config
        full = list(app.user_middleware)
        # the framework's route alone: the stack without the device shortcut, which
        # answers plain uploads before the router (routes/device_shortcut.py)
        routed = [m for m in full if m.cls is not DeviceShortcut]
        layers = [getattr(m.cls, "__name__", str(m.cls)) for m in routed]
        rng = seeded_rng(23)
        # the real route, whole stack, 16 requests at a time (as wrk's 16 connections),
        # alternately through the shortcut and through the router
        real_bodies = report_bodies(config, requests * (2 * rounds + 1), 1, rng)
        await _cpu_us(app, real_bodies[:requests], 16)  # warm-up: writer thread, caches
        reshuffler = getattr(app.state, "ldp_reshuffler", None)
        writer = None if reshuffler is None else reshuffler.writer
        real: dict[str, list[float]] = {"shortcut": [], "router": []}
        loop_share: dict[str, list[float]] = {"shortcut": [], "router": []}
        per_commit: list[float] = []
        chunk = 1
        for _ in range(rounds):
            for way, stack_of in (("shortcut", full), ("router", routed)):
                _with_stack(app, stack_of)
                bodies = real_bodies[chunk * requests : (chunk + 1) * requests]
                chunk += 1
                loop_before = time.thread_time()
                commits_before = 0 if writer is None else writer.transactions
                real[way].append(await _cpu_us(app, bodies, 16))
                loop_share[way].append((time.thread_time() - loop_before) / requests * 1e6)
                if writer is not None:
                    per_commit.append(requests / max(writer.transactions - commits_before, 1))
        _with_stack(app, full)
        if reshuffler is not None:
            reshuffler.stop()
        # one transaction of one report at a time, on a writer of its own: its CPU
        alone = _transaction_cpu_us(
            state, report_bodies(config, requests * (rounds + 1), 1, rng), requests, rounds
        )
        state.engine.dispose()
    # the layers, around a no-op route with the upload's path and models
    app.add_api_route(TEMPLATE, _noop_endpoint, methods=["POST"])
    app.router.routes.insert(0, app.router.routes.pop())  # matched before the real route
    variants: dict[str, list[Middleware]] = {"full stack": routed}
    noop_16: list[float] = []
    for layer, name in zip(routed, layers, strict=True):
        variants[f"without {name}"] = [m for m in routed if m is not layer]
    variants["no user middleware"] = []
    bodies = report_bodies(config, requests, 1, rng)
    shuffle = random.Random(23)
    samples: dict[str, list[float]] = {name: [] for name in variants}
    _with_stack(app, routed)
    await _cpu_us(app, bodies)  # warm-up
    for _ in range(rounds):
        names = list(variants)
        shuffle.shuffle(names)
        for name in names:
            _with_stack(app, variants[name])
            samples[name].append(await _cpu_us(app, bodies))
        _with_stack(app, routed)
        noop_16.append(await _cpu_us(app, bodies, 16))
    base = statistics.median(samples["full stack"])
    out: dict[str, Any] = {"requests_per_variant_round": requests, "rounds": rounds}
    out["database"] = "sqlite" if postgres is None else "postgresql"
    out["layers_outermost_first"] = layers
    out["real_route_cpu_us_per_request_16_at_a_time"] = _spread(real["shortcut"])
    # of which the event loop's thread (the rest: the writer thread, its transactions)
    out["real_route_event_loop_thread_cpu_us_per_request"] = _spread(loop_share["shortcut"])
    # the same requests through the router (the stack without the device shortcut)
    out["real_route_via_router_cpu_us_per_request_16_at_a_time"] = _spread(real["router"])
    out["real_route_via_router_event_loop_thread_cpu_us_per_request"] = _spread(
        loop_share["router"]
    )
    out["real_route_requests_per_transaction"] = _spread(per_commit) if per_commit else None
    out["noop_route_full_stack_cpu_us_per_request_16_at_a_time"] = _spread(noop_16)
    # the group-commit transaction of one single report, writer thread CPU µs (with
    # SQLite's log truncation)
    out["transaction_of_one_report_cpu_us"] = _spread(alone)
    out["noop_route_cpu_us_per_request"] = {
        name: {
            "median": round(statistics.median(values), 1),
            "range": [round(min(values), 1), round(max(values), 1)],
            "layer_cost": round(base - statistics.median(values), 1),
        }
        for name, values in samples.items()
    }
    return out


def _transaction_cpu_us(state: Any, bodies: list[bytes], n: int, rounds: int) -> list[float]:
    """Thread CPU µs of one writer transaction holding one report (judged beforehand),
    per round of ``n`` transactions after ``n`` to warm up."""
    collection = state.collections.cached("ingest")
    pending = [
        _prepare(collection, ReportBatch.model_validate_json(body), None)[1] for body in bodies
    ]
    writer = ReportWriter(state.engine)
    try:
        for one in pending[:n]:
            writer.write_together([one])
        out = []
        for r in range(rounds):
            started = time.thread_time()
            for one in pending[(r + 1) * n : (r + 2) * n]:
                writer.write_together([one])
            out.append((time.thread_time() - started) / n * 1e6)
    finally:
        writer.close()
    return out


def _spread(values: list[float]) -> dict[str, Any]:
    return {
        "median": round(statistics.median(values), 1),
        "range": [round(min(values), 1), round(max(values), 1)],
    }


def main() -> None:
    """Run the measurement and write ``bench/results/request_layers.json``."""
    parser = base_parser(__doc__)
    parser.add_argument("--requests", type=int, default=400, help="per variant and round")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument(
        "--postgres",
        default=None,
        help="a PostgreSQL URL: the real route on a fresh database of that server",
    )
    args = parser.parse_args()
    log("[request_layers] timing the middleware stack in process")
    requests, rounds = sized((args.requests, args.rounds), (100, 3), (10, 1), args)
    marker = start_marker()
    result = {**marker, **asyncio.run(measure(requests, rounds, args.postgres))}
    emit("request_layers", result, args.quick, args.output)


if __name__ == "__main__":
    main()
