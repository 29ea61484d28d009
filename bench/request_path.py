"""Single-report uploads through two builds of the aggregator and the no-op, interleaved.

Issue 23: the request path a device takes, one report per ``POST .../reports``. Three
servers run side by side for the whole run, each on its own temporary SQLite file: the
aggregator of this tree, the aggregator of another checkout (``--base``: a tree whose
``aggregator``, ``shared``, ``client`` and ``simulation`` folders are put first on the
server's ``PYTHONPATH``, e.g. ``git worktree add /tmp/base HEAD``; left out without it),
and the async no-op route of ``bench/_noop_app.py`` with the same models. Every round
loads each of them once with wrk (``--connections``, 16), in an order shuffled per round
with a fixed seed, so the machine's load falls on all three alike. Per round: requests/s,
p50/p99, server CPU ms per request, and this tree's ratios to the no-op of the same
round (requests/s, CPU per request) and to the base.

    python bench/request_path.py --base /tmp/base [--rounds 5] [--seconds 8]

``--batch N`` sends N reports a request instead (e.g. ``--batch 1000 --connections 4``).
``--base-without httptools,uvloop`` runs the base (``--base``, or this tree when it is not
given) with those modules unimportable: an A/B of an optional dependency that the server
picks up when it is installed. ``--postgres URL`` gives each aggregator a fresh database
of its own on that PostgreSQL server instead of a SQLite file.
"""

from __future__ import annotations

import os
import random
import statistics
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from _common import base_parser, emit, log, sized, start_marker
from _server import bench_spec, postgres_database, running_noop_server, running_server
from _wrk import wrk_path
from ingestion import Loader
from ldp_client import LDPClient

PACKAGES = ("aggregator", "shared", "client", "simulation")


def _started(
    stack: ExitStack, base: Path | None, without: list[str], postgres: str | None
) -> dict[str, Any]:
    servers: dict[str, Any] = {}

    def database() -> str | None:
        return None if postgres is None else stack.enter_context(postgres_database(postgres))

    paths = [str(base / p) for p in PACKAGES] if base is not None else []
    if without:
        paths.insert(0, _hiding(stack, without))
    if paths:
        kept = os.environ.get("PYTHONPATH")
        os.environ["PYTHONPATH"] = os.pathsep.join(paths + ([kept] if kept else []))
        try:
            servers["base"] = stack.enter_context(running_server(database_url=database()))
        finally:
            if kept is None:
                del os.environ["PYTHONPATH"]
            else:
                os.environ["PYTHONPATH"] = kept
    servers["tree"] = stack.enter_context(running_server(database_url=database()))
    servers["noop"] = stack.enter_context(running_noop_server())
    return servers


def _hiding(stack: ExitStack, modules: list[str]) -> str:
    """A folder whose packages of these names fail to import, to put first on a path."""
    folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-without-")))
    for name in modules:
        (folder / name).mkdir()
        (folder / name / "__init__.py").write_text(f"raise ImportError('{name}: hidden')\n")
    return str(folder)


def _summary(runs: list[dict[str, Any]], key: str) -> dict[str, float]:
    values = [run[key] for run in runs]
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def main() -> None:
    parser = base_parser(__doc__)
    parser.add_argument("--base", type=Path, default=None, help="another checkout to compare")
    parser.add_argument(
        "--base-without",
        default="",
        help="modules the base runs without, comma-separated (its tree: --base or this one)",
    )
    parser.add_argument("--postgres", default=None, help="a PostgreSQL admin URL (else SQLite)")
    parser.add_argument("--rounds", type=int, default=None, help="interleaved rounds (5)")
    parser.add_argument("--seconds", type=float, default=None, help="per wrk run (8)")
    parser.add_argument("--warmup", type=float, default=None, help="before each run (2)")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--batch", type=int, default=1, help="reports per request (1)")
    parser.add_argument("--wrk-threads", type=int, default=1)
    args = parser.parse_args()
    args.rounds = args.rounds or sized(5, 2, 1, args)
    args.seconds = args.seconds or sized(8.0, 3.0, 1.0, args)
    args.warmup = args.warmup if args.warmup is not None else sized(2.0, 1.0, 0.5, args)
    wrk = wrk_path()
    if wrk is None:
        log("[request_path] wrk is not installed (bench/setup_peers.sh installs it): skipped")
        emit("request_path", {"skipped": "wrk is not installed"}, args.quick, args.output)
        return
    loader = Loader(wrk, args)
    marker = start_marker()
    shuffle = random.Random(23)
    runs: dict[str, list[dict[str, Any]]] = {}
    ratios: list[dict[str, float]] = []
    with ExitStack() as stack:
        without = [m for m in args.base_without.split(",") if m]
        servers = _started(stack, args.base, without, args.postgres)
        configs = {}
        for name, server in servers.items():
            if name != "noop":
                with LDPClient(server.base_url, token=server.admin_token) as admin:
                    configs[name] = admin.create_collection(bench_spec("ingest"))
        configs["noop"] = configs["tree"]
        runs = {name: [] for name in servers}
        for r in range(args.rounds):
            order = list(servers)
            shuffle.shuffle(order)
            log(f"[request_path] round {r + 1}/{args.rounds}: {', '.join(order)}")
            now = {
                n: loader.load([servers[n]], configs[n], args.connections, args.batch)
                for n in order
            }
            for name, result in now.items():
                result["latency_ms_p99"] = result["latency_ms"]["p99"]
                runs[name].append(result)
            tree, noop = now["tree"], now["noop"]
            pair = {
                "requests_per_second_vs_noop": tree["requests_per_second"]
                / noop["requests_per_second"],
                "cpu_per_request_vs_noop": tree["server_cpu_ms_per_request"]
                / noop["server_cpu_ms_per_request"],
            }
            if "base" in now:
                base = now["base"]
                pair["base_requests_per_second_vs_noop"] = (
                    base["requests_per_second"] / noop["requests_per_second"]
                )
                pair["base_cpu_per_request_vs_noop"] = (
                    base["server_cpu_ms_per_request"] / noop["server_cpu_ms_per_request"]
                )
                pair["requests_per_second_vs_base"] = (
                    tree["requests_per_second"] / base["requests_per_second"]
                )
                pair["cpu_per_request_vs_base"] = (
                    tree["server_cpu_ms_per_request"] / base["server_cpu_ms_per_request"]
                )
            ratios.append(pair)
    keys = ("requests_per_second", "latency_ms_p99", "server_cpu_ms_per_request")
    result: dict[str, Any] = {
        **marker,
        "connections": args.connections,
        "batch": args.batch,
        "base": str(args.base) if args.base else None,
        "base_without": without,
        "database": "postgresql" if args.postgres else "sqlite",
        "rounds": args.rounds,
        "seconds": args.seconds,
        "servers": {n: {k: _summary(rs, k) for k in keys} for n, rs in runs.items()},
        "ratios": {k: _summary(ratios, k) for k in ratios[0]},
        "per_round_ratios": ratios,
        "runs": runs,
    }
    emit("request_path", result, args.quick, args.output)


if __name__ == "__main__":
    main()
