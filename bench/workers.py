"""One uvicorn worker against two (``ldpcollect serve --workers 2``), interleaved (issue 23).

Issue 23, item 4: two workers halved single-report throughput; the target is two
workers at least 1.3x one on PostgreSQL. Per engine (a fresh PostgreSQL database, then
a temporary SQLite file) two servers run side by side on the same database for the
whole part, ``--workers 1`` and ``--workers 2``, with the same tokens, no upload limit
and no periodic rewrite during the run (``LDPCOLLECT_RESHUFFLE_SECONDS=0``, for both).
Every pair loads each server once with wrk (``bench/_wrk.py``), the order alternating
from pair to pair: single-report requests at ``--single-connections`` (16), then batches
of ``--batch`` (1,000) at ``--batch-connections`` (4). Per run: requests/s and
reports/s, p50/p99, the CPU seconds of the server's processes (the supervisor and its
workers), of PostgreSQL's processes and of wrk, and how busy the whole machine was
(``/proc/stat``; ``other_cores_used``: the cores busy with anything else), which shows
whether two workers had a core to run on; on PostgreSQL also the transactions committed
(``pg_stat_database``) and reports per commit, the size of the group commits. Per pair:
two workers over one; summed up as median and range over the pairs.

    python bench/workers.py [--pairs 3] [--seconds 10] [--no-sqlite] [--no-postgres]

Everything (wrk, the servers, PostgreSQL) shares one machine; its cores are in the JSON.
The tiny size (``BENCH_TINY=1``) goes through every step once, on PostgreSQL when it
answers (else SQLite).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import create_engine
from sqlalchemy.exc import OperationalError
from sqlalchemy.pool import NullPool

from _common import base_parser, emit, log, sized, start_marker
from _server import bench_spec, postgres_database
from _wrk import CLOCK_TICKS, Target, cpu_seconds, measure, run_wrk, wrk_path, wrk_version
from ingestion import REPORTS_ROUTE, one_report_bits
from ldp_aggregator.storage.engine import make_engine
from ldp_aggregator.storage.migrate import upgrade
from ldp_client import LDPClient
from ldp_shared.collection import CollectionConfig
from ldp_simulation.fleet import free_port, stop_process

POSTGRES_ADMIN_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
TARGET_POSTGRES_RATIO = 1.3
START_TIMEOUT = 120.0
STATS_LAG = 1.5
"""Seconds for PostgreSQL's backends to flush their transaction counts (at most every
second, PGSTAT_MIN_INTERVAL); shorter at the tiny size, whose counts are not read."""


@dataclass
class Served:
    """One ``ldpcollect serve --workers N`` subprocess."""

    process: subprocess.Popen[bytes]
    workers: int
    base_url: str

    def cpu(self) -> dict[int, float]:
        """CPU seconds of the supervisor (or single process) and every process under it."""
        return _cpu_of([self.process.pid, *descendants(self.process.pid)])


def descendants(pid: int) -> list[int]:
    """Every live process whose ancestry leads to ``pid`` (read from ``/proc``)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):  # gone meanwhile
                stat = Path(f"/proc/{entry}/stat").read_text()
                parents[int(entry)] = int(stat[stat.rindex(")") + 2 :].split()[1])
    found, frontier = [], [pid]
    while frontier:
        children = [child for child, parent in parents.items() if parent in frontier]
        found += children
        frontier = children
    return found


def _cpu_of(pids: list[int]) -> dict[int, float]:
    out: dict[int, float] = {}
    for pid in pids:
        with contextlib.suppress(OSError):  # gone meanwhile
            out[pid] = cpu_seconds(pid)
    return out


def postgres_pids() -> list[int]:
    """The PostgreSQL server's processes (postmaster and backends) on this machine."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                if Path(f"/proc/{entry}/comm").read_text().strip() == "postgres":
                    pids.append(int(entry))
    return pids


def machine_jiffies() -> tuple[int, int]:
    """(busy, total) clock ticks of all cores so far (``/proc/stat``'s ``cpu`` line)."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = values[3] + values[4]  # idle, iowait
    total = sum(values[:8])  # without guest time, which user time already counts
    return total - idle, total


def _spent(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU seconds between two snapshots of the same processes (new ones from zero)."""
    return sum(seconds - before.get(pid, 0.0) for pid, seconds in after.items())


@contextmanager
def serving(database_url: str, tokens: tuple[str, str], logs: Path) -> Iterator[dict[int, Served]]:
    """``python -m ldp_aggregator.cli serve --workers N`` for N = 1 and 2, each on a free
    loopback port, started together on the migrated database (so neither migrates) and
    yielded once every worker is up; stopped on exit."""
    engine = make_engine(database_url)
    upgrade(engine)
    engine.dispose()
    env = dict(os.environ)
    env.update(
        LDPCOLLECT_DATABASE_URL=database_url,
        LDPCOLLECT_ADMIN_TOKEN=tokens[0],
        LDPCOLLECT_ANALYST_TOKEN=tokens[1],
        LDPCOLLECT_UPLOAD_RATE_PER_COLLECTION="0",
        LDPCOLLECT_RESHUFFLE_SECONDS="0",
    )
    servers: dict[int, Served] = {}
    try:
        for workers in (1, 2):
            port = free_port()
            command = [sys.executable, "-m", "ldp_aggregator.cli", "serve"]
            # info: uvicorn's start-up lines say when each worker is up (no access log)
            command += ["--workers", str(workers), "--port", str(port), "--log-level", "info"]
            with (logs / f"serve-{workers}.log").open("wb") as output:
                process = subprocess.Popen(
                    command, env=env, stdout=output, stderr=subprocess.STDOUT
                )
            servers[workers] = Served(process, workers, f"http://127.0.0.1:{port}")
        deadline = time.monotonic() + START_TIMEOUT
        for workers, served in servers.items():
            log_path = logs / f"serve-{workers}.log"
            while log_path.read_text().count("Application startup complete") < workers:
                if served.process.poll() is not None or time.monotonic() > deadline:
                    shown = log_path.read_text()[-2000:]
                    raise RuntimeError(f"serve --workers {workers} did not start: {shown}")
                time.sleep(0.2)
            while httpx.get(served.base_url + "/readyz", timeout=5.0).status_code != 200:
                time.sleep(0.2)
        yield servers
    finally:
        for served in servers.values():
            stop_process(served.process, timeout=30.0)


class Runner:
    """The wrk runs of one part, with the CPU accounting of every process involved."""

    def __init__(
        self, wrk: str, args: Any, config: CollectionConfig, engine: str, database_url: str
    ) -> None:
        self.wrk, self.args, self.config, self.engine = wrk, args, config, engine
        self.bits = one_report_bits(config)[0]
        self.database_url = database_url

    def commits(self) -> int | None:
        """PostgreSQL: the transactions committed in the database so far (the statistics
        lag up to a second behind: callers leave :data:`STATS_LAG` after the load)."""
        if self.engine != "postgresql":
            return None
        probe = create_engine(self.database_url, poolclass=NullPool)
        try:
            with probe.connect() as connection:
                query = (
                    "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
                )
                return int(connection.exec_driver_sql(query).scalar_one())
        finally:
            probe.dispose()

    def load(self, served: Served, connections: int, batch: int) -> dict[str, Any]:
        url = served.base_url + REPORTS_ROUTE.format(name=self.config.name)
        target = Target(served.process.pid, url, connections)
        options = {"config_hash": self.config.config_hash, "bits": self.bits, "batch": batch}
        if self.args.warmup > 0:
            run_wrk(self.wrk, [target], seconds=self.args.warmup, **options)
        if self.engine == "postgresql":
            time.sleep(self.args.stats_lag)  # the warm-up's commits into the statistics first
        commits_before = self.commits()
        server_before = served.cpu()
        postgres = postgres_pids() if self.engine == "postgresql" else []
        postgres_before = _cpu_of(postgres)
        busy_before, total_before = machine_jiffies()
        result = measure(self.wrk, [target], seconds=self.args.seconds, warmup=0, **options)
        busy, total = machine_jiffies()
        server = _spent(server_before, served.cpu())
        database = _spent(postgres_before, _cpu_of(postgres_pids())) if postgres else None
        requests = max(result["requests"], 1)
        result.update(
            workers=served.workers,
            server_cpu_seconds=server,  # the supervisor and all its workers
            server_cpu_ms_per_request=1e3 * server / requests,
            server_cores_used=server / result["seconds"],
            postgres_cpu_seconds=database,
            postgres_cores_used=None if database is None else database / result["seconds"],
            wrk_cores_used=result["wrk_cpu_seconds"] / result["seconds"],
            machine_busy_share=(busy - busy_before) / max(total - total_before, 1),
        )
        # the cores busy with anything else: other sessions on this machine, the kernel
        busy_cores = (busy - busy_before) / CLOCK_TICKS / result["seconds"]
        known = server + (database or 0.0) + result["wrk_cpu_seconds"]
        result["other_cores_used"] = busy_cores - known / result["seconds"]
        if commits_before is not None:
            time.sleep(self.args.stats_lag)
            commits = (self.commits() or 0) - commits_before  # includes this probe's own
            result["postgres_commits"] = commits
            result["reports_per_commit"] = result["reports_answered_2xx"] / max(commits, 1)
        return result


def _summary(values: list[float | None]) -> dict[str, float] | None:
    """Median and range of the values there are (a ratio over a run of nothing is none)."""
    there = [value for value in values if value is not None]
    if not there:
        return None
    return {"median": statistics.median(there), "min": min(there), "max": max(there)}


def stored_check(
    served: Served,
    config: CollectionConfig,
    runs: list[dict[str, Any]],
    admin: str,
    settle: float,
) -> dict[str, Any]:
    """Reports stored against those wrk saw accepted (2xx) and those it sent: every
    answered report is stored once, and at most the ones sent are (wrk stops with up to one
    request per connection unanswered, which the server still stores)."""
    time.sleep(settle)  # the requests wrk left in flight
    response = httpx.get(
        f"{served.base_url}/v1/collections/{config.name}/frequencies",
        params={"attribute": config.attributes[0].name},
        headers={"Authorization": f"Bearer {admin}"},
        timeout=120.0,
    )
    response.raise_for_status()
    stored = int(response.json()["n_reports"])
    warmups = len(runs)  # each run had a warm-up, which wrk's summary does not count
    answered = sum(run["reports_answered_2xx"] for run in runs)
    return {
        "reports_stored": stored,
        "reports_answered_2xx_in_measured_runs": answered,
        "reports_sent_in_measured_runs": sum(run["reports_sent"] for run in runs),
        "non_2xx": sum(run["non_2xx"] for run in runs),
        "socket_errors": sum(run["socket_errors"] for run in runs),
        "stored_at_least_answered": stored >= answered,
        "note": f"stored also holds the reports of {warmups} warm-up runs",
    }


# fmt: off
SUMMED = ("requests_per_second", "reports_per_second", "p99_ms", "server_cores_used",
          "postgres_cores_used", "wrk_cores_used", "machine_busy_share", "other_cores_used",
          "reports_per_commit")
# fmt: on


def _value(run: dict[str, Any], key: str) -> float | None:
    return run["latency_ms"]["p99"] if key == "p99_ms" else run.get(key)


def _ratios_line(pair: dict[str, Any]) -> str:
    shown = {k: pair[f"{k}_ratio"] for k in ("single", "batches")}
    return ", ".join(f"{k} {'-' if v is None else f'{v:.2f}'}" for k, v in shown.items())


def engine_part(args: Any, wrk: str, engine: str, database_url: str, tmp: Path) -> dict[str, Any]:
    """``--pairs`` interleaved pairs of one worker and two on one database."""
    tokens = (secrets.token_urlsafe(24), secrets.token_urlsafe(24))
    runs: list[dict[str, Any]] = []
    pairs: list[dict[str, Any]] = []
    logs = tmp / engine
    logs.mkdir()
    with serving(database_url, tokens, logs) as servers:
        with LDPClient(servers[1].base_url, token=tokens[0]) as admin:
            config = admin.create_collection(bench_spec("workers"))
        runner = Runner(wrk, args, config, engine, database_url)
        kinds = {
            "single": (args.single_connections, 1),
            "batches": (args.batch_connections, args.batch),
        }
        for index in range(args.pairs):
            order = (1, 2) if index % 2 == 0 else (2, 1)
            pair: dict[str, Any] = {"order": list(order)}
            for kind, (connections, batch) in kinds.items():
                measured = {}
                for n in order:
                    log(f"[workers] {engine} pair {index + 1}: {kind}, {n} worker(s)")
                    measured[n] = runner.load(servers[n], connections, batch)
                    runs.append(measured[n])
                pair[kind] = measured
                key = "requests_per_second" if kind == "single" else "reports_per_second"
                one = measured[1][key]
                pair[f"{kind}_ratio"] = measured[2][key] / one if one > 0 else None
            pairs.append(pair)
            log(f"[workers] {engine} pair {index + 1}: two/one {_ratios_line(pair)}")
        check = stored_check(servers[1], config, runs, tokens[0], args.settle)
    summary = {
        f"{kind}_ratio_two_over_one": _summary([p[f"{kind}_ratio"] for p in pairs])
        for kind in ("single", "batches")
    }
    for kind in ("single", "batches"):
        for n in (1, 2):
            runs_n = [p[kind][n] for p in pairs]
            summary[f"{kind}_{n}_worker"] = {
                key: _summary([_value(run, key) for run in runs_n]) for key in SUMMED
            }
    return {"summary": summary, "pairs": pairs, "check": check}


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=None, help="interleaved pairs (3; quick 1)")
    parser.add_argument("--seconds", type=float, default=None, help="per wrk run (10; quick 3)")
    parser.add_argument("--warmup", type=float, default=None, help="before each (2; quick 1)")
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--single-connections", type=int, default=16)
    parser.add_argument("--batch-connections", type=int, default=4)
    parser.add_argument("--postgres-url", default=POSTGRES_ADMIN_URL)
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--no-sqlite", action="store_true")
    args = parser.parse_args()
    args.pairs = args.pairs or sized(3, 1, 1, args)
    args.seconds = args.seconds or sized(10.0, 3.0, 1.0, args)
    args.warmup = args.warmup if args.warmup is not None else sized(2.0, 1.0, 0.5, args)
    args.stats_lag, args.settle = sized(STATS_LAG, STATS_LAG, 0.1, args), sized(2.0, 2.0, 0.5, args)
    started = start_marker()
    wrk = wrk_path()
    if wrk is None:
        log("[workers] wrk not found (bash bench/setup_peers.sh installs it): nothing to measure")
        emit("workers", {**started, "wrk": {"available": False}}, args.quick, args.output)
        return
    parts: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="ldp-bench-workers-") as folder:
        tmp = Path(folder)
        if not args.no_postgres:
            try:
                with postgres_database(args.postgres_url) as url:
                    parts["postgresql"] = engine_part(args, wrk, "postgresql", url, tmp)
            except (OperationalError, ImportError) as error:  # no server, or no psycopg
                log(f"[workers] PostgreSQL skipped: {error}")
                parts["postgresql"] = {"skipped": str(error).splitlines()[0]}
        tiny_done = args.tiny and "summary" in parts.get("postgresql", {})
        if not args.no_sqlite and not tiny_done:  # tiny: every step once, on one engine
            url = f"sqlite:///{tmp / 'workers.db'}"
            parts["sqlite"] = engine_part(args, wrk, "sqlite", url, tmp)
    postgres_single = (
        parts.get("postgresql", {}).get("summary", {}).get("single_ratio_two_over_one")
    )
    result = {
        **started,
        "description": (
            "ldpcollect serve --workers 1 against --workers 2 on the same database, "
            "single-report requests and batches under wrk, in interleaved pairs; "
            "ratios are two workers over one, per pair"
        ),
        "parameters": {
            **{k: getattr(args, k) for k in ("pairs", "seconds", "warmup", "batch")},
            "single_connections": args.single_connections,
            "batch_connections": args.batch_connections,
            "collection": "one OUE attribute, d = 16, epsilon = 4",
            "server_environment": {
                "LDPCOLLECT_UPLOAD_RATE_PER_COLLECTION": "0",
                "LDPCOLLECT_RESHUFFLE_SECONDS": "0",
            },
        },
        "wrk": {"available": True, "version": wrk_version(wrk)},
        "target": {
            "postgresql_single_ratio_at_least": TARGET_POSTGRES_RATIO,
            "met": None
            if postgres_single is None
            else postgres_single["min"] >= TARGET_POSTGRES_RATIO,
        },
        **parts,
    }
    emit("workers", result, args.quick, args.output)


if __name__ == "__main__":
    main()
