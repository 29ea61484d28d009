"""Estimation latency of a real aggregator as the number of stored reports grows.

Starts ``ldpcollect serve`` on a free 127.0.0.1 port with a temporary SQLite file,
creates one OUE d = 16 collection, fills it through the HTTP API (batches of 10,000
pre-privatized reports) to each size in ``--sizes`` (default 10,000, 100,000 and
1,000,000 reports) and at each size times ``GET /v1/collections/{name}/frequencies``
(``--requests`` sequential requests per post-processing after a warm-up). The estimate
reads the sufficient statistics only, so its latency should not grow with ``n``.

``--mechanism NAME`` (a numeric mechanism: ``piecewise``, ``duchi``, ...) makes the
attribute one number in [0, 100] and times ``GET /v1/collections/{name}/means`` instead
(no post-processing); the results go to ``estimation-NAME.json``.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import httpx

from _common import base_parser, emit, log, start_marker
from _ingestion_parts import percentiles, post_all
from _server import bench_spec, release_route, report_bodies, running_server
from ldp_client import LDPClient
from ldp_shared.rand import seeded_rng

TARGET_MS = 50.0
FILL_BATCH = 10_000
POSTPROCESS = ("none", "norm-sub", "simplex")


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=None)
    parser.add_argument("--requests", type=int, default=None, help="timed GETs per case (300)")
    parser.add_argument("--mechanism", default="oue", help="oue (d = 16), or a numeric one")
    args = parser.parse_args()
    sizes = sorted(args.sizes or ([1_000, 10_000] if args.quick else [10_000, 100_000, 1_000_000]))
    requests = args.requests or (30 if args.quick else 300)
    started = start_marker()
    rng = seeded_rng(77)

    with running_server() as server:
        log(f"[estimation] aggregator pid {server.pid} at {server.base_url}")
        with LDPClient(server.base_url, token=server.admin_token) as admin:
            config = admin.create_collection(bench_spec("estimate", args.mechanism))
        name = config.name
        route = release_route(config)
        methods = POSTPROCESS if route == "frequencies" else ("none",)
        url = f"{server.base_url}/v1/collections/{name}/{route}"
        stored = 0
        fill_seconds = 0.0
        rows: list[dict[str, Any]] = []
        with httpx.Client(timeout=60.0, headers=server.analyst()) as http:
            for size in sizes:
                need = size - stored
                log(f"[estimation] filling to {size:,} reports (+{need:,})")
                while need > 0:  # build and post in slices to bound the memory of bodies
                    part = min(need, 200_000)
                    bodies = report_bodies(config, part, min(FILL_BATCH, part), rng)
                    seconds, _, accepted = post_all(server, name, bodies, 1)
                    fill_seconds += seconds
                    stored += accepted
                    need -= part
                per_method: dict[str, Any] = {}
                for method in methods:
                    params = {"attribute": "v"}
                    if route == "frequencies":
                        params["postprocess"] = method
                    for _ in range(20):  # warm-up
                        http.get(url, params=params).raise_for_status()
                    latencies: list[float] = []
                    for _ in range(requests):
                        t0 = time.perf_counter()
                        response = http.get(url, params=params)
                        latencies.append(time.perf_counter() - t0)
                        response.raise_for_status()
                    body = response.json()
                    if body["n_reports"] != stored:
                        raise RuntimeError(f"n_reports {body['n_reports']} != stored {stored}")
                    per_method[method] = {"requests": requests, **percentiles(latencies)}
                rows.append(
                    {
                        "reports_stored": stored,
                        "latency_by_postprocess": per_method,
                        "p50_ms_none": per_method["none"]["p50_ms"],
                        "max_p95_ms": max(m["p95_ms"] for m in per_method.values()),
                    }
                )
                log(f"[estimation] {stored:,} reports: p50 {per_method['none']['p50_ms']:.2f} ms")
        peak = server.memory_kib()
        database_bytes = server.database_bytes()
        command = server.command

    small, large = rows[0], rows[-1]
    growth = large["p50_ms_none"] / small["p50_ms_none"]
    result = {
        **started,
        "description": (
            f"Latency of GET /v1/collections/{{name}}/{route} ("
            + (
                "one OUE attribute, d = 16"
                if args.mechanism == "oue"
                else f"one {args.mechanism} attribute on [0, 100]"
            )
            + ") against a real aggregator over loopback HTTP, at several numbers of stored "
            "reports; sequential requests from httpx with keep-alive."
        ),
        "parameters": {
            "mechanism": args.mechanism,
            "sizes": sizes,
            "requests_per_case": requests,
            "fill_batch": FILL_BATCH,
            "target_ms": TARGET_MS,
            "server_command": " ".join(command),
        },
        "fill": {
            "reports": stored,
            "seconds_posting": fill_seconds,
            "reports_per_second": stored / fill_seconds,
            "batch_size": FILL_BATCH,
        },
        "results": rows,
        "server_memory_kib_at_end": peak,
        "database_bytes_at_end": database_bytes,
        "summary": {
            "p50_ms_smallest": small["p50_ms_none"],
            "p50_ms_largest": large["p50_ms_none"],
            "p50_growth_largest_over_smallest": growth,
            "worst_p95_ms": max(r["max_p95_ms"] for r in rows),
            "median_of_p50s_ms": statistics.median(r["p50_ms_none"] for r in rows),
            "meets_target": all(r["max_p95_ms"] < TARGET_MS for r in rows),
        },
    }
    result_name = "estimation" if args.mechanism == "oue" else f"estimation-{args.mechanism}"
    emit(result_name, result, args.quick, args.output)


if __name__ == "__main__":
    main()
