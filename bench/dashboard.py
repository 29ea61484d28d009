"""Latency of the dashboard's pages against the API call behind them, as reports grow.

Starts ``ldpcollect serve`` on a free 127.0.0.1 port with a temporary SQLite file,
creates one OUE d = 16 collection, signs in to ``/ui`` through its form, fills the
collection through the HTTP API to each size in ``--sizes`` (default 10,000, 100,000
and 1,000,000 reports) and at each size times, in one run and alternating:

* ``GET /v1/collections/{name}/frequencies`` (the API, JSON): the peer;
* ``GET /ui/collections/{name}/frequencies`` (the same estimate as a page: template,
  chart data and table);
* ``GET /ui/collections/{name}/overview`` (configuration and release status, from the
  config and the sufficient statistics);
* ``GET /ui/collections/{name}/days`` (reports per day: it counts the stored reports by
  their day, the one page that reads the reports rather than the sufficient
  statistics, so it grows with ``n``).

Reported: p50/p95 per page and the ratio of each page's p50 to the API's.
"""

from __future__ import annotations

import re
import time
from typing import Any

import httpx

from _common import base_parser, emit, log, start_marker
from _ingestion_parts import percentiles, post_all
from _server import bench_spec, report_bodies, running_server
from estimation import FILL_BATCH
from ldp_client import LDPClient
from ldp_shared.rand import seeded_rng


def sign_in(http: httpx.Client, base: str, token: str) -> None:
    form = http.get(f"{base}/ui/sign-in").text
    found = re.search(r'name="csrf" value="([^"]+)"', form)
    assert found is not None
    response = http.post(f"{base}/ui/sign-in", data={"csrf": found.group(1), "token": token})
    if response.status_code != 303:
        raise RuntimeError(f"the benchmark could not sign in ({response.status_code})")


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=None)
    parser.add_argument("--requests", type=int, default=None, help="timed GETs per page (100)")
    args = parser.parse_args()
    sizes = sorted(args.sizes or ([1_000, 10_000] if args.quick else [10_000, 100_000, 1_000_000]))
    requests = args.requests or (20 if args.quick else 100)
    started = start_marker()
    rng = seeded_rng(78)

    with running_server() as server:
        log(f"[dashboard] aggregator pid {server.pid} at {server.base_url}")
        with LDPClient(server.base_url, token=server.admin_token) as admin:
            config = admin.create_collection(bench_spec("dashboard", "oue"))
        name, base = config.name, server.base_url
        pages = {
            "api_frequencies": (f"{base}/v1/collections/{name}/frequencies", server.analyst()),
            "ui_frequencies": (f"{base}/ui/collections/{name}/frequencies", {}),
            "ui_overview": (f"{base}/ui/collections/{name}/overview", {}),
            "ui_days": (f"{base}/ui/collections/{name}/days", {}),
        }
        stored = 0
        rows: list[dict[str, Any]] = []
        with httpx.Client(timeout=120.0) as http:
            sign_in(http, base, server.analyst_token)
            for size in sizes:
                need = size - stored
                log(f"[dashboard] filling to {size:,} reports (+{need:,})")
                while need > 0:
                    part = min(need, 200_000)
                    bodies = report_bodies(config, part, min(FILL_BATCH, part), rng)
                    stored += post_all(server, name, bodies, 1)[2]
                    need -= part
                latencies: dict[str, list[float]] = {key: [] for key in pages}
                for round_ in range(requests + 5):  # 5 warm-up rounds, pages alternating
                    for key, (url, headers) in pages.items():
                        t0 = time.perf_counter()
                        response = http.get(url, params={"attribute": "v"}, headers=headers)
                        seconds = time.perf_counter() - t0
                        response.raise_for_status()
                        if round_ >= 5:
                            latencies[key].append(seconds)
                if f">{stored:,}<" not in response.text:
                    raise RuntimeError(f"the per-day page does not count the {stored:,} reports")
                stats = {key: percentiles(values) for key, values in latencies.items()}
                api = stats["api_frequencies"]["p50_ms"]
                rows.append(
                    {
                        "reports_stored": stored,
                        "latency": stats,
                        "p50_ratio_to_api": {
                            key: stats[key]["p50_ms"] / api
                            for key in pages
                            if key != "api_frequencies"
                        },
                    }
                )
                log(
                    f"[dashboard] {stored:,} reports: p50 api {api:.2f} ms, frequencies page"
                    f" {stats['ui_frequencies']['p50_ms']:.2f} ms, overview"
                    f" {stats['ui_overview']['p50_ms']:.2f} ms, per day"
                    f" {stats['ui_days']['p50_ms']:.2f} ms"
                )
        command = server.command

    result = {
        **started,
        "description": (
            "Latency of the dashboard's frequencies, overview and per-day pages against GET"
            " /v1/collections/{name}/frequencies (one OUE attribute, d = 16), a real"
            " aggregator on SQLite over loopback HTTP, sequential requests alternating"
            " between the four, at several numbers of stored reports."
        ),
        "parameters": {
            "sizes": sizes,
            "requests_per_page": requests,
            "server_command": " ".join(command),
        },
        "results": rows,
        "summary": {
            "overview_p50_ms_largest": rows[-1]["latency"]["ui_overview"]["p50_ms"],
            "days_p50_ms_largest": rows[-1]["latency"]["ui_days"]["p50_ms"],
            "frequencies_page_p50_ratio_to_api_largest": rows[-1]["p50_ratio_to_api"][
                "ui_frequencies"
            ],
        },
    }
    emit("dashboard", result, args.quick, args.output)


if __name__ == "__main__":
    main()
