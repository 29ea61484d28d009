"""Ingestion throughput of a real aggregator over HTTP, beside yardsticks (issue 12).

Load comes from wrk (``bench/wrk/reports.lua``: fresh report ids in every request; see
``bench/_wrk.py``), a C client that leaves the CPU to the server. One run measures:

1. single-report requests (one report per ``POST .../reports``, as a device sends) at
   ``--single-connections`` (16) against ``ldpcollect serve`` on SQLite, beside a no-op
   FastAPI route with the same models served the same way (``bench/_noop_app.py``):
   requests/s, p50/p99 latency, server CPU ms per request;
2. batches of ``--batch`` (1,000) reports at each of ``--batch-connections`` (1, 4):
   reports/s, beside the raw SQLite loop of ``bench/_raw_sqlite.py`` (the aggregator's
   schema, pragmas and statements, without and with a WAL truncation after every
   commit), its table grown from empty in batches as the service's was; each service
   run is compared with the loop's transactions over the same table sizes (the rows
   stored before and after the run), since a transaction costs more as the table grows;
3. PostgreSQL: one replica, then two replicas of one fresh database (each loaded by its
   own wrk process, numbers summed), single reports at 16 connections in total and
   batches at ``--pg-batch-connections`` (4) in total.

Every server's ``ldpcollect_reports_total`` (accepted/duplicate/rejected) is checked
against the stored count (``GET .../frequencies``) afterwards. Also: the SDK's
``submit_reports`` (httpx, one connection), the server's peak RSS. ``--mechanism NAME``:
one number in [0, 100] with that numeric mechanism instead of OUE d = 16 (results in
``ingestion-NAME.json``). Without wrk the script says so and runs the rest. Everything
(wrk, servers, PostgreSQL) shares one 2-vCPU machine.
"""

from __future__ import annotations

import re
import secrets
import time
from contextlib import ExitStack
from typing import Any

import httpx
from sqlalchemy.exc import OperationalError

from _common import base_parser, emit, log, sized, start_marker
from _ingestion_parts import fsync_latency, ratios
from _raw_sqlite import raw_sqlite_loop
from _server import (
    Server,
    bench_column,
    bench_spec,
    postgres_database,
    release_route,
    running_noop_server,
    running_server,
)
from _wrk import Target, measure, wrk_path, wrk_version
from ldp_client import LDPClient
from ldp_shared.codec import Privatizer
from ldp_shared.collection import CollectionConfig
from ldp_shared.rand import seeded_rng
from ldp_shared.wire.reports import encode_bits

REPORTS_ROUTE = "/v1/collections/{name}/reports"
POSTGRES_ADMIN_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"


def one_report_bits(config: CollectionConfig, seed: int = 7) -> tuple[str, int]:
    """A valid perturbed report of the collection: its base64 bits and packed size."""
    rng = seeded_rng(seed)
    packed = Privatizer(config).privatize_columns(
        {config.attributes[0].name: bench_column(config, 1, rng)}, rng=rng
    )
    return encode_bits(packed[0].tobytes()), int(packed.shape[1])


def server_counts(server: Server, name: str) -> dict[str, int]:
    """The server's ``ldpcollect_reports_total`` for the collection, by outcome."""
    response = httpx.get(f"{server.base_url}/metrics", headers=server.admin(), timeout=30.0)
    response.raise_for_status()
    counts = {"accepted": 0, "duplicate": 0, "rejected": 0}
    pattern = re.compile(r"^ldpcollect_reports_total\{(.*)\} (\S+)$", re.MULTILINE)
    for labels, value in pattern.findall(response.text):
        status = re.search(r'status="(\w+)"', labels)
        if f'collection="{name}"' in labels and status and status.group(1) in counts:
            counts[status.group(1)] += int(float(value))
    return counts


def stored_check(servers: list[Server], config: CollectionConfig) -> dict[str, Any]:
    """Stored reports (as released to the analyst) against what the servers accepted,
    once no request is in flight: wrk leaves up to one request per connection unanswered
    when it stops, which the server still stores (and counts) after it."""
    total = _settled_counts(servers, config.name)
    response = httpx.get(
        f"{servers[0].base_url}/v1/collections/{config.name}/{release_route(config)}",
        params={"attribute": config.attributes[0].name},
        headers=servers[0].analyst(),
        timeout=60.0,
    )
    response.raise_for_status()
    stored = int(response.json()["n_reports"])
    unchanged = _settled_counts(servers, config.name) == total
    return {
        "reports_stored": stored,
        "reports_accepted_by_servers": total["accepted"],
        "duplicate": total["duplicate"],
        "rejected": total["rejected"],
        "counts_unchanged_while_stored_was_read": unchanged,
        "stored_equals_accepted": stored == total["accepted"]
        and unchanged
        and total["duplicate"] == 0
        and total["rejected"] == 0,
    }


def _settled_counts(servers: list[Server], name: str, wait: float = 1.0) -> dict[str, int]:
    """The servers' report counts summed, once two reads ``wait`` seconds apart agree."""
    deadline = time.monotonic() + 60.0
    counts = [server_counts(server, name) for server in servers]
    while True:
        time.sleep(wait)
        again = [server_counts(server, name) for server in servers]
        if again == counts or time.monotonic() > deadline:
            return {key: sum(c[key] for c in again) for key in again[0]}
        counts = again


class Loader:
    """Runs the wrk measurements of one run with its common settings."""

    def __init__(self, wrk: str, args: Any) -> None:
        self.wrk, self.args = wrk, args

    def load(
        self, servers: list[Any], config: CollectionConfig, connections: int, batch: int
    ) -> dict[str, Any]:
        """``connections`` in total, spread evenly over ``servers``; every report carries
        the same valid bits of the collection."""
        share = [connections // len(servers)] * len(servers)
        share[0] += connections - sum(share)
        targets = [
            Target(s.process.pid, s.base_url + REPORTS_ROUTE.format(name=config.name), c)
            for s, c in zip(servers, share, strict=True)
        ]
        result = measure(
            self.wrk,
            targets,
            seconds=self.args.seconds,
            warmup=self.args.warmup,
            config_hash=config.config_hash,
            bits=one_report_bits(config)[0],
            batch=batch,
            threads=self.args.wrk_threads,
        )
        if result["non_2xx"] or result["socket_errors"]:
            log(f"[ingestion] {result['non_2xx']} non-2xx, {result['socket_errors']} errors")
        return result


def sdk_upload(server: Server, config: CollectionConfig, n: int, batch: int) -> dict[str, Any]:
    """``LDPClient.privatize_columns`` then ``submit_reports`` (httpx, one connection)."""
    rng = seeded_rng(2024)
    column = bench_column(config, n, rng)
    with LDPClient(server.base_url, rng=rng) as sdk:
        t0 = time.perf_counter()
        reports = sdk.privatize_columns(config.name, {config.attributes[0].name: column})
        privatize_seconds = time.perf_counter() - t0
        t0 = time.perf_counter()
        result = sdk.submit_reports(config.name, reports, batch_size=batch)
        submit_seconds = time.perf_counter() - t0
    return {
        "reports": n,
        "batch_size": batch,
        "accepted": result.accepted,
        "privatize_columns_seconds": privatize_seconds,
        "submit_reports_seconds": submit_seconds,
        "reports_per_second_submit": n / submit_seconds,
        "reports_per_second_privatize_and_submit": n / (privatize_seconds + submit_seconds),
    }


def sqlite_part(args: Any, loader: Loader | None) -> dict[str, Any]:
    """Single reports and batches against one server on SQLite, the SDK, the checks."""
    out: dict[str, Any] = {}
    with running_server() as server:
        log(f"[ingestion] aggregator (SQLite) pid {server.pid} at {server.base_url}")
        memory: dict[str, Any] = {"after_start": server.memory_kib()}
        with LDPClient(server.base_url, token=server.admin_token) as admin:
            config = admin.create_collection(bench_spec("ingest", args.mechanism))
        out["config"] = config
        if loader is not None:
            log(f"[ingestion] single reports, {args.single_connections} connections")
            out["single"] = loader.load([server], config, args.single_connections, 1)
            out["batches"] = []
            for connections in args.batch_connections:
                log(f"[ingestion] batches of {args.batch:,}, {connections} connection(s)")
                run = loader.load([server], config, connections, args.batch)
                stored = _settled_counts([server], config.name)["accepted"]
                run["table_rows"] = [stored - run["reports_answered_2xx"], stored]
                out["batches"].append(run)
            memory["after_wrk"] = server.memory_kib()
        log(f"[ingestion] SDK submit_reports of {args.sdk_n:,} reports")
        out["sdk"] = sdk_upload(server, config, args.sdk_n, args.batch)
        memory["at_end"] = server.memory_kib()
        out["memory"] = memory
        out["check"] = stored_check([server], config)
        out["database_bytes_at_end"] = server.database_bytes()
        out["fsync"] = fsync_latency(server.database.parent)
        out["command"] = " ".join(server.command)
    return out


def noop_part(args: Any, loader: Loader, config: CollectionConfig) -> dict[str, Any]:
    """The single-report measurement against the no-op route."""
    with running_noop_server() as noop:
        log(f"[ingestion] no-op app pid {noop.process.pid} at {noop.base_url}")
        result = loader.load([noop], config, args.single_connections, 1)
        result["command"] = " ".join(noop.command)
    return result


def postgres_part(args: Any, loader: Loader) -> dict[str, Any]:
    """One replica, then two replicas, of a fresh PostgreSQL database."""
    out: dict[str, Any] = {}
    with postgres_database(args.postgres_url) as url, ExitStack() as stack:
        out["database"] = url.rsplit("/", 1)[-1] + " (created for this run, dropped after)"
        tokens = (secrets.token_urlsafe(24), secrets.token_urlsafe(24))  # shared by both
        first = stack.enter_context(running_server(database_url=url, tokens=tokens))
        log(f"[ingestion] PostgreSQL replica 1, pid {first.pid}")
        with LDPClient(first.base_url, token=first.admin_token) as admin:
            config = admin.create_collection(bench_spec("ingest", args.mechanism))
        single, batches = args.single_connections, args.pg_batch_connections
        out["one_replica"] = {
            "single": loader.load([first], config, single, 1),
            "batches": loader.load([first], config, batches, args.batch),
        }
        second = stack.enter_context(running_server(database_url=url, tokens=tokens))
        log(f"[ingestion] PostgreSQL replica 2, pid {second.pid}")
        out["two_replicas"] = {
            "single": loader.load([first, second], config, single, 1),
            "batches": loader.load([first, second], config, batches, args.batch),
        }
        out["check"] = stored_check([first, second], config)
        out["command"] = " ".join(first.command).replace(url, "<fresh PostgreSQL database>")
    return out


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=None, help="per wrk run (10; quick 3)")
    parser.add_argument("--warmup", type=float, default=None, help="before each (2; quick 1)")
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--single-connections", type=int, default=16)
    parser.add_argument("--batch-connections", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--pg-batch-connections", type=int, default=4)
    parser.add_argument("--wrk-threads", type=int, default=1, help="threads per wrk process")
    parser.add_argument("--sdk-n", type=int, default=None, help="reports via the SDK (20,000)")
    parser.add_argument("--postgres-url", default=POSTGRES_ADMIN_URL)
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--mechanism", default="oue", help="oue (d = 16), or numeric (piecewise)")
    args = parser.parse_args()
    args.seconds = args.seconds or sized(10.0, 3.0, 0.5, args)
    args.warmup = args.warmup if args.warmup is not None else sized(2.0, 1.0, 0.2, args)
    args.sdk_n = args.sdk_n or sized(20_000, 5_000, 200, args)
    started = start_marker()

    wrk = wrk_path()
    wrk_info: dict[str, Any] = {"available": wrk is not None}
    if wrk is None:
        wrk_info["note"] = "wrk not found on PATH: the wrk measurements were skipped"
        log("[ingestion] wrk not found (bash bench/setup_peers.sh installs it): skipping wrk")
    else:
        wrk_info.update(version=wrk_version(wrk), threads_per_process=args.wrk_threads)

    loader = Loader(wrk, args) if wrk is not None else None
    sqlite = sqlite_part(args, loader)
    config: CollectionConfig = sqlite.pop("config")
    packed_bytes = one_report_bits(config)[1]

    noop = noop_part(args, loader, config) if loader is not None else None
    windows = [tuple(b["table_rows"]) for b in sqlite.get("batches", [])]
    covered = windows[-1][1] if windows else (20_000 if args.quick else 200_000)
    raw_total = max(args.batch, -(-covered // args.batch) * args.batch)
    if args.tiny:  # every step once, small
        raw_total = min(raw_total, 5 * args.batch)
    raw = {}
    for checkpoint in (False, True):
        log(f"[ingestion] raw SQLite loop, {raw_total:,} reports, checkpoint={checkpoint}")
        raw["with_checkpoint" if checkpoint else "without_checkpoint"] = raw_sqlite_loop(
            config,
            packed_bytes,
            reports_total=raw_total,
            batch=args.batch,
            checkpoint=checkpoint,
            rng=seeded_rng(99),
            windows=windows,
        )

    postgres: dict[str, Any] | None = None
    if loader is not None and not args.no_postgres:
        try:
            postgres = postgres_part(args, loader)
        except (OperationalError, ImportError) as error:
            reason = str(error).splitlines()[0]
            log(f"[ingestion] PostgreSQL skipped: {reason}")
            postgres = {"skipped": reason}

    result_doc = {
        **started,
        "description": (
            "Ingestion into a real aggregator (ldpcollect serve: uvicorn, 1 process, SQLite "
            "WAL in a temp dir; PostgreSQL replicas) over loopback HTTP, load from wrk "
            "with fresh report ids per request; beside a no-op FastAPI route (single "
            "reports) and the raw SQLite loop (batches); the load generator, the servers "
            "and PostgreSQL share the 2 vCPUs."
        ),
        "parameters": {
            "collection": (
                "one OUE attribute, d = 16, ε = 4"
                if args.mechanism == "oue"
                else f"one {args.mechanism} attribute on [0, 100], ε = 4"
            ),
            "mechanism": args.mechanism,
            "packed_report_bytes": packed_bytes,
            "seconds_per_wrk_run": args.seconds,
            "warmup_seconds_before_each": args.warmup,
            "batch": args.batch,
            "single_connections": args.single_connections,
            "batch_connections": args.batch_connections,
            "pg_batch_connections": args.pg_batch_connections,
            "server_command": sqlite["command"],
            "upload_rate_limit": "off (LDPCOLLECT_UPLOAD_RATE_PER_COLLECTION=0)",
        },
        "wrk": wrk_info,
        "sqlite_single_reports": sqlite.get("single"),
        "noop_single_reports": noop,
        "sqlite_batches": sqlite.get("batches"),
        "raw_sqlite_loop": raw,
        "raw_sqlite_note": (
            "the service truncates its write-ahead log after every transaction (PRAGMA "
            "wal_checkpoint(TRUNCATE), docs/privacy-at-rest.md), so the raw loop with "
            "checkpoint is the like-for-like one; without it is SQLite's own ceiling"
        ),
        "postgres": postgres,
        "sdk_submit_reports": sqlite["sdk"],
        "sqlite_check": sqlite["check"],
        "server_memory_kib": sqlite["memory"],
        "server_peak_rss_mib": sqlite["memory"]["at_end"]["VmHWM"] / 1024,
        "database_bytes_at_end": sqlite["database_bytes_at_end"],
        "disk_write_fsync_latency": sqlite["fsync"],
        "summary": ratios(sqlite, noop, raw, postgres),
    }
    result_name = "ingestion" if args.mechanism == "oue" else f"ingestion-{args.mechanism}"
    emit(result_name, result_doc, args.quick, args.output)


if __name__ == "__main__":
    main()
