"""Ingestion throughput of a real aggregator over HTTP (loopback only).

Starts ``ldpcollect serve`` (uvicorn, one process) on a free 127.0.0.1 port with a
temporary SQLite file, creates one OUE d = 16 collection (``--mechanism NAME``: one
number in [0, 100] with that numeric mechanism instead, results in
``ingestion-NAME.json``) and measures:

* batch upload: ``n`` (default 200,000) pre-privatized reports posted as JSON bodies of
  1,000 reports with httpx (bodies built before the clock starts), one connection and
  then several concurrent connections: reports/s and per-batch latency;
* the SDK path: ``LDPClient.submit_reports`` on reports made by
  ``LDPClient.privatize_columns`` (serialisation in the SDK included);
* single-report requests: ``--single`` (default 2,000) requests of one report each,
  sequentially: requests/s and latency; then the same over each of
  ``--single-connections`` concurrent connections (default 8), where group commit lets
  concurrent requests share a transaction;
* the aggregator's peak resident memory (``VmHWM`` of ``/proc/<pid>/status``).

The benchmark client runs on the same 2-vCPU machine as the server and competes with it.
"""

from __future__ import annotations

import json
import os
import statistics
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from _common import base_parser, emit, log, start_marker
from _server import (
    Server,
    bench_column,
    bench_spec,
    release_route,
    report_bodies,
    running_server,
)
from ldp_client import LDPClient
from ldp_shared.rand import seeded_rng

TARGET_REPORTS_PER_SECOND = 20_000
HEADERS = {"Content-Type": "application/json"}


def percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)

    def pick(q: float) -> float:
        return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]

    return {
        "mean_ms": statistics.fmean(values) * 1e3,
        "p50_ms": pick(0.50) * 1e3,
        "p95_ms": pick(0.95) * 1e3,
        "p99_ms": pick(0.99) * 1e3,
        "max_ms": ordered[-1] * 1e3,
    }


def post_all(
    server: Server, name: str, bodies: list[bytes], connections: int
) -> tuple[float, list[float], int]:
    """Post every body, spread over ``connections`` threads; (seconds, latencies, accepted)."""
    url = f"{server.base_url}/v1/collections/{name}/reports"
    latencies: list[float] = []
    accepted = [0] * connections
    errors: list[str] = []
    lock = threading.Lock()

    def worker(k: int) -> None:
        mine = bodies[k::connections]
        local: list[float] = []
        with httpx.Client(timeout=120.0) as http:
            for body in mine:
                t0 = time.perf_counter()
                response = http.post(url, content=body, headers=HEADERS)
                local.append(time.perf_counter() - t0)
                if response.status_code != 200:
                    errors.append(f"{response.status_code}: {response.text[:300]}")
                    return
                accepted[k] += json.loads(response.content)["accepted"]
        with lock:
            latencies.extend(local)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(connections)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - start
    if errors:
        raise RuntimeError(f"upload failed: {errors[0]}")
    return elapsed, latencies, sum(accepted)


def fsync_latency(directory: Path, count: int = 50) -> dict[str, float]:
    """How long one small write + fsync takes where the database lives (SQLite's
    ``synchronous=FULL`` does at least one per committed transaction)."""
    path = directory / "fsync-probe"
    latencies: list[float] = []
    with path.open("wb") as handle:
        for _ in range(count):
            t0 = time.perf_counter()
            handle.write(b"x" * 4096)
            handle.flush()
            os.fsync(handle.fileno())
            latencies.append(time.perf_counter() - t0)
    path.unlink()
    return percentiles(latencies)


def stored_reports(server: Server, name: str, route: str = "frequencies") -> int:
    response = httpx.get(
        f"{server.base_url}/v1/collections/{name}/{route}",
        params={"attribute": "v"},
        headers=server.analyst(),
        timeout=60.0,
    )
    response.raise_for_status()
    return int(response.json()["n_reports"])


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=None, help="reports per upload run (200,000)")
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--single", type=int, default=None, help="single-report requests (2,000)")
    parser.add_argument("--sdk-n", type=int, default=None, help="reports via the SDK (100,000)")
    parser.add_argument(
        "--connections", type=int, nargs="+", default=[1, 4], help="concurrent connections"
    )
    parser.add_argument(
        "--mechanism", default="oue", help="oue (d = 16), or a numeric mechanism (piecewise, ...)"
    )
    parser.add_argument(
        "--single-connections",
        type=int,
        nargs="*",
        default=[8],
        help="concurrent connections for single-report requests, after the sequential run",
    )
    args = parser.parse_args()
    n = args.n or (5_000 if args.quick else 200_000)
    single = args.single or (200 if args.quick else 2_000)
    sdk_n = args.sdk_n or (5_000 if args.quick else 100_000)
    started = start_marker()
    rng = seeded_rng(2024)

    with running_server() as server:
        log(f"[ingestion] aggregator pid {server.pid} at {server.base_url}")
        memory: dict[str, Any] = {"after_start": server.memory_kib()}
        with LDPClient(server.base_url, token=server.admin_token) as admin:
            config = admin.create_collection(bench_spec("ingest", args.mechanism))
        name = config.name

        # warm-up: a few batches (counted in the database, not in the timings)
        warm = report_bodies(config, 5 * args.batch, args.batch, rng)
        post_all(server, name, warm, 1)
        total_accepted = 5 * args.batch

        uploads: list[dict[str, Any]] = []
        for connections in args.connections:
            log(f"[ingestion] building {n:,} reports")
            bodies = report_bodies(config, n, args.batch, rng)
            body_bytes = sum(map(len, bodies))
            log(f"[ingestion] posting {n:,} reports, {connections} connection(s)")
            elapsed, latencies, accepted = post_all(server, name, bodies, connections)
            total_accepted += accepted
            uploads.append(
                {
                    "connections": connections,
                    "reports": n,
                    "batch_size": args.batch,
                    "requests": len(bodies),
                    "accepted": accepted,
                    "seconds": elapsed,
                    "reports_per_second": n / elapsed,
                    "request_body_bytes_per_report": body_bytes / n,
                    "batch_latency": percentiles(latencies),
                    "meets_target": n / elapsed >= TARGET_REPORTS_PER_SECOND,
                }
            )
            memory[f"after_upload_{connections}_connections"] = server.memory_kib()

        log(f"[ingestion] SDK submit_reports of {sdk_n:,} reports")
        column = bench_column(config, sdk_n, rng)
        with LDPClient(server.base_url, rng=rng) as sdk:
            t0 = time.perf_counter()
            reports = sdk.privatize_columns(name, {"v": column})
            privatize_seconds = time.perf_counter() - t0
            t0 = time.perf_counter()
            result = sdk.submit_reports(name, reports, batch_size=args.batch)
            submit_seconds = time.perf_counter() - t0
        total_accepted += result.accepted
        sdk_out = {
            "reports": sdk_n,
            "batch_size": args.batch,
            "accepted": result.accepted,
            "privatize_columns_seconds": privatize_seconds,
            "submit_reports_seconds": submit_seconds,
            "reports_per_second_submit": sdk_n / submit_seconds,
            "reports_per_second_privatize_and_submit": sdk_n / (privatize_seconds + submit_seconds),
        }
        memory["after_sdk"] = server.memory_kib()

        log(f"[ingestion] {single:,} single-report requests")
        bodies = report_bodies(config, single, 1, rng)
        elapsed, latencies, accepted = post_all(server, name, bodies, 1)
        total_accepted += accepted
        single_out = {
            "requests": single,
            "accepted": accepted,
            "seconds": elapsed,
            "requests_per_second": single / elapsed,
            "latency": percentiles(latencies),
        }
        concurrent_single: list[dict[str, Any]] = []
        for connections in args.single_connections:
            log(f"[ingestion] {single:,} single-report requests, {connections} connections")
            bodies = report_bodies(config, single, 1, rng)
            elapsed, latencies, accepted = post_all(server, name, bodies, connections)
            total_accepted += accepted
            concurrent_single.append(
                {
                    "connections": connections,
                    "requests": single,
                    "accepted": accepted,
                    "seconds": elapsed,
                    "requests_per_second": single / elapsed,
                    "latency": percentiles(latencies),
                }
            )
        memory["at_end"] = server.memory_kib()
        fsync = fsync_latency(server.database.parent)
        stored = stored_reports(server, name, release_route(config))
        database_bytes = server.database_bytes()
        command = server.command

    best = max(u["reports_per_second"] for u in uploads)
    result_doc = {
        **started,
        "description": (
            "Reports/s into a real aggregator (ldpcollect serve: uvicorn, 1 process, SQLite "
            "WAL in a temp dir) over loopback HTTP with httpx; bodies pre-built; the "
            "client shares the 2 vCPUs with the server."
        ),
        "parameters": {
            "collection": (
                "one OUE attribute, d = 16, ε = 4"
                if args.mechanism == "oue"
                else f"one {args.mechanism} attribute on [0, 100], ε = 4"
            ),
            "mechanism": args.mechanism,
            "n_per_upload_run": n,
            "batch": args.batch,
            "single_requests": single,
            "sdk_reports": sdk_n,
            "target_reports_per_second": TARGET_REPORTS_PER_SECOND,
            "server_command": " ".join(command),
        },
        "batch_upload": uploads,
        "sdk_submit_reports": sdk_out,
        "single_report_requests": single_out,
        "single_report_requests_concurrent": concurrent_single,
        "server_memory_kib": memory,
        "server_peak_rss_mib": memory["at_end"]["VmHWM"] / 1024,
        "database_bytes_at_end": database_bytes,
        "disk_write_fsync_latency": fsync,
        "sqlite_note": (
            "the aggregator runs SQLite in WAL mode with synchronous=FULL: each committed "
            "batch waits for an fsync, which bounds single-report requests per second"
        ),
        "reports_stored_at_end": stored,
        "reports_accepted_total": total_accepted,
        "all_accepted_reports_stored": stored == total_accepted,
        "summary": {
            "best_reports_per_second": best,
            "meets_target": best >= TARGET_REPORTS_PER_SECOND,
            "single_requests_per_second": single_out["requests_per_second"],
            "peak_rss_mib": memory["at_end"]["VmHWM"] / 1024,
        },
    }
    result_name = "ingestion" if args.mechanism == "oue" else f"ingestion-{args.mechanism}"
    emit(result_name, result_doc, args.quick, args.output)


if __name__ == "__main__":
    main()
