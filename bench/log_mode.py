"""Log mode against direct mode: single-report uploads, CPU per report, fold throughput.

One run, one machine, one fresh PostgreSQL database; a three-node NATS JetStream
cluster of ``nats-server`` processes on free loopback ports (stores in a temporary
folder, stream at 3 replicas); one direct-mode replica and one log-mode replica
(``serve --log``) side by side, with one fold worker (``ldpcollect fold``) running
throughout, as deployed.

* ``single``: wrk, single-report requests at 16 connections, direct and log
  interleaved (A, B, A, B, ...): requests/s, latency percentiles, the replica's CPU per
  acknowledged report, and (log mode) the three NATS nodes' CPU over the same run.
* ``batched``: per round, direct mode's batched path (batches of 1,000, 4 connections),
  then for each count of ``--fold-workers`` (1 and 2): with no fold worker running,
  the same load through the log replica (with the NATS nodes' CPU per report), then
  that many fresh fold workers started on the backlog: reports folded per second into
  PostgreSQL, from the first committed batch seen to the last, with the fold workers'
  and the NATS nodes' CPU per report over the same time, and the ratio to the direct
  batched path of the same round.
* ``database_rows``: the database tier alone: batches of the fold's size
  (:data:`~ldp_aggregator.ingest_log.fold.DEFAULT_BATCH`) written in this process by
  :func:`~ldp_aggregator.ingest_log.fold.fold_batch`, no log involved: rows/s.
* ``rewrite``: the periodic rewrite out of arrival order
  (:func:`~ldp_aggregator.storage.at_rest.rewrite_reports`) of everything the run stored,
  timed once: seconds, and seconds per million stored reports. The servers and fold
  workers run with ``LDPCOLLECT_RESHUFFLE_SECONDS=0`` (no periodic rewrite) so that no
  rewrite lands inside a timed run: one that did held the direct replica for a whole
  10 s run (0 requests) once the table held millions of reports.

These are the capacity plan's inputs (docs/log-mode.md).

Needs wrk (bench/setup_peers.sh), nats-server and a PostgreSQL server.
"""

from __future__ import annotations

import base64
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any
from uuid import uuid4

import httpx
from sqlalchemy import func, select

from _common import base_parser, emit, log, sized, start_marker
from _server import bench_spec, postgres_database, running_server
from _wrk import cpu_seconds, wrk_path, wrk_version
from ingestion import POSTGRES_ADMIN_URL, Loader, one_report_bits
from ldp_aggregator.ingest_log.fold import DEFAULT_BATCH, CollectionsById, fold_batch
from ldp_aggregator.ingest_log.stream import LogChunk, chunk_size
from ldp_aggregator.storage.at_rest import rewrite_reports
from ldp_aggregator.storage.collections import load_collection
from ldp_aggregator.storage.engine import make_engine
from ldp_aggregator.storage.tables import reports
from ldp_aggregator.writer import ReportWriter
from ldp_client import LDPClient
from ldp_shared.periods import stamp
from ldp_simulation.fleet import free_port, stop_process

STOP_SECONDS = 900.0
"""How long a stopped fold worker may take: its last rewrite of everything stored (a
worker killed in it would leave PostgreSQL finishing the copy under its table lock,
holding up the next timed run)."""
WRITTEN = re.compile(r'^ldpcollect_fold_reports_total\{outcome="written"\} (\S+)$', re.MULTILINE)
NATS = shutil.which("nats-server") or "/usr/sbin/nats-server"


@contextmanager
def nats_cluster(root: Path) -> Iterator[tuple[str, list[int]]]:
    """Three routed JetStream nodes; yields the ``--log`` URL and their pids."""
    ports = [(free_port(), free_port()) for _ in range(3)]
    routes = ",".join(f"nats://127.0.0.1:{route}" for _, route in ports)
    processes: list[subprocess.Popen[bytes]] = []
    try:
        for k, (port, route) in enumerate(ports):
            store = root / f"n{k}"
            store.mkdir()
            command = [NATS, "-a", "127.0.0.1", "-p", str(port), "-n", f"n{k}", "-js"]
            command += ["-sd", str(store), "--cluster_name", "bench"]
            command += ["--cluster", f"nats://127.0.0.1:{route}", "--routes", routes]
            processes.append(
                subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            )
        time.sleep(3.0)  # the JetStream meta leader is elected; serve waits for it anyway
        yield "nats://" + ",".join(f"127.0.0.1:{p}" for p, _ in ports), [p.pid for p in processes]
    finally:
        for process in processes:
            stop_process(process)


def fold_worker(
    database_url: str, log_url: str, log_path: Path, metrics_port: int = 0
) -> subprocess.Popen[bytes]:
    """An ``ldpcollect fold`` process (its metrics on ``metrics_port`` unless 0)."""
    env = dict(os.environ, LDPCOLLECT_DATABASE_URL=database_url, LDPCOLLECT_LOG_URL=log_url)
    command = [sys.executable, "-m", "ldp_aggregator.cli", "fold"]
    if metrics_port:
        command += ["--metrics-port", str(metrics_port)]
    with log_path.open("ab") as log_file:
        return subprocess.Popen(command, env=env, stdout=log_file, stderr=subprocess.STDOUT)


def stored(database_url: str, name: str) -> int:
    engine = make_engine(database_url)
    try:
        collection_id = load_collection(engine, name).id
        with engine.connect() as connection:
            query = select(func.count()).where(reports.c.collection_id == collection_id)
            return int(connection.execute(query.select_from(reports)).scalar_one())
    finally:
        engine.dispose()


def written_by(ports: list[int], known: list[int]) -> int:
    """The reports the fold workers on ``ports`` wrote so far, from their metrics
    (``known``: each worker's last answer, kept when one does not answer)."""
    for k, port in enumerate(ports):
        try:
            text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=2.0).text
        except httpx.HTTPError:  # starting, or stopping: its last count stands
            continue
        found = WRITTEN.search(text)
        if found is not None:
            known[k] = int(float(found.group(1)))
    return sum(known)


def fold_rate(
    database_url: str,
    log_url: str,
    name: str,
    timeout: float,
    log_path: Path,
    nats: list[int],
    workers: int = 1,
    idle: float = 5.0,
) -> dict[str, Any]:
    """Start ``workers`` fold workers on a backlog; reports/s from the first commit seen
    to the last (done once nothing changed for ``idle`` seconds). Progress is read from
    the workers' own metrics: counting the stored rows every 0.2 s, as this did before,
    made PostgreSQL scan an index of millions of entries five times a second beside the
    fold it measured. The table is counted once before and once after, as a check."""
    before = stored(database_url, name)
    ports = [free_port() for _ in range(workers)]
    processes = [fold_worker(database_url, log_url, log_path, port) for port in ports]
    known = [0] * workers

    def cpu() -> tuple[float, float]:
        return (
            sum(cpu_seconds(p.pid) for p in processes),
            sum(cpu_seconds(pid) for pid in nats),
        )

    cpu_before = cpu()
    cpu_after = cpu_before
    try:
        first: tuple[float, int] | None = None
        last = (time.monotonic(), 0)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            time.sleep(0.2)
            count = written_by(ports, known)
            now = time.monotonic()
            if count != last[1]:
                if first is None:
                    first = last
                last = (now, count)
                cpu_after = cpu()
            elif first is not None and now - last[0] > idle:
                break
    finally:
        stopping = time.monotonic()
        for process in processes:  # each rewrites what it stored once more as it stops
            stop_process(process, timeout=STOP_SECONDS)
        stop_seconds = time.monotonic() - stopping
        log(f"[log_mode] the fold workers' log ends: {log_path.read_text()[-1500:]!r}")
    if first is None:
        return {"workers": workers, "folded": 0, "note": "nothing was folded"}
    folded = max(last[1] - first[1], 1)
    return {
        "workers": workers,
        "stop_seconds": stop_seconds,
        "stored_before": before,
        "stored_after": stored(database_url, name),
        "written_by_the_workers": sum(known),
        "folded": last[1] - first[1],
        "seconds": last[0] - first[0],
        "reports_per_second": (last[1] - first[1]) / max(last[0] - first[0], 1e-9),
        "fold_worker_cpu_ms_per_report": 1e3 * (cpu_after[0] - cpu_before[0]) / folded,
        "nats_cpu_ms_per_report": 1e3 * (cpu_after[1] - cpu_before[1]) / folded,
    }


def database_rows(database_url: str, name: str, batches: int = 3) -> dict[str, Any]:
    """Rows/s of :func:`fold_batch` alone at the fold's batch size (fresh collection)."""
    engine = make_engine(database_url)
    writer = ReportWriter(engine)
    try:
        collection = load_collection(engine, name)
        config = collection.config
        bits = base64.b64decode(one_report_bits(config)[0])
        by_id = CollectionsById(engine)
        day, period_start = stamp(config.spec.period, None)
        rates = []
        step = chunk_size(config.report_bytes)
        for _ in range(batches):
            batch = [
                LogChunk(
                    collection.id,
                    config.config_hash,
                    period_start,
                    day,
                    tuple(uuid4().hex for _ in range(step)),
                    bits * step,
                )
                for _ in range(DEFAULT_BATCH // step)
            ]
            started = time.perf_counter()
            result = fold_batch(writer, by_id, batch)
            rates.append(result.written / (time.perf_counter() - started))
        return {"batch": DEFAULT_BATCH, "rows_per_second": rates}
    finally:
        writer.close()
        engine.dispose()


def rewrite_cost(database_url: str) -> dict[str, Any]:
    """One :func:`rewrite_reports` of the whole database, timed, with its size."""
    engine = make_engine(database_url)
    try:
        with engine.connect() as connection:
            rows = int(connection.execute(select(func.count()).select_from(reports)).scalar_one())
        started = time.perf_counter()
        done = rewrite_reports(engine)
        seconds = time.perf_counter() - started
        return {
            "stored_reports": rows,
            "rewritten": done,
            "seconds": seconds,
            "seconds_per_million_reports": seconds / max(rows, 1) * 1e6,
        }
    finally:
        engine.dispose()


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=None, help="per wrk run (10; quick 3)")
    parser.add_argument("--warmup", type=float, default=None, help="before each (2; quick 1)")
    parser.add_argument("--rounds", type=int, default=None, help="A/B pairs (3; quick 1)")
    parser.add_argument("--single-connections", type=int, default=16)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--batch-connections", type=int, default=4)
    parser.add_argument("--wrk-threads", type=int, default=1)
    parser.add_argument("--postgres-url", default=POSTGRES_ADMIN_URL)
    parser.add_argument(
        "--fold-workers", type=int, nargs="+", default=[1, 2], help="fold workers per backlog"
    )
    args = parser.parse_args()
    args.seconds = args.seconds or sized(10.0, 3.0, 0.5, args)
    args.warmup = args.warmup if args.warmup is not None else sized(2.0, 1.0, 0.2, args)
    args.rounds = args.rounds or sized(3, 1, 1, args)
    args.idle = sized(5.0, 5.0, 1.0, args)  # a fold is over once nothing changed this long
    started = start_marker()
    wrk = wrk_path()
    if wrk is None or not Path(NATS).is_file():
        sys.exit("log_mode: needs wrk (bench/setup_peers.sh) and nats-server")
    loader = Loader(wrk, args)
    os.environ["LDPCOLLECT_RESHUFFLE_SECONDS"] = "0"  # servers and fold workers: see `rewrite`
    out: dict[str, Any] = {
        "wrk": {"version": wrk_version(wrk)},
        "server_environment": {"LDPCOLLECT_RESHUFFLE_SECONDS": "0"},
        "single": [],
    }
    with (
        tempfile.TemporaryDirectory(prefix="ldp-bench-nats-") as tmp,
        nats_cluster(Path(tmp)) as (log_url, nats_pids),
        postgres_database(args.postgres_url) as url,
        ExitStack() as stack,
    ):
        tokens = ("bench-admin-" + os.urandom(8).hex(), "bench-analyst-" + os.urandom(8).hex())
        direct = stack.enter_context(running_server(database_url=url, tokens=tokens))
        os.environ["LDPCOLLECT_LOG_URL"] = log_url  # the next replica only
        try:
            logged = stack.enter_context(running_server(database_url=url, tokens=tokens))
        finally:
            del os.environ["LDPCOLLECT_LOG_URL"]
        with LDPClient(direct.base_url, token=direct.admin_token) as admin:
            direct_config = admin.create_collection(bench_spec("direct", "oue"))
            log_config = admin.create_collection(bench_spec("logged", "oue"))
        worker = fold_worker(url, log_url, Path(tmp) / "fold1.log")
        try:
            for round_ in range(args.rounds):
                log(f"[log_mode] round {round_ + 1}: direct, then log")
                a = loader.load([direct], direct_config, args.single_connections, 1)
                nats_before = sum(cpu_seconds(pid) for pid in nats_pids)
                b = loader.load([logged], log_config, args.single_connections, 1)
                b["nats_cpu_seconds"] = sum(cpu_seconds(pid) for pid in nats_pids) - nats_before
                b["nats_cpu_ms_per_request"] = 1e3 * b["nats_cpu_seconds"] / max(b["requests"], 1)
                out["single"].append({"direct": a, "log": b})
        finally:
            stop_process(worker)
        out["folded_while_loading"] = stored(url, "logged")
        log(f"[log_mode] folded while loading: {out['folded_while_loading']}")
        log((Path(tmp) / "fold1.log").read_text()[-1500:])
        out["batched"] = []
        for round_ in range(args.rounds):
            log(f"[log_mode] batches, round {round_ + 1}: direct, then backlogs folded")
            entry: dict[str, Any] = {
                "direct": loader.load([direct], direct_config, args.batch_connections, args.batch)
            }
            for workers in args.fold_workers:
                nats_before = sum(cpu_seconds(pid) for pid in nats_pids)
                backlog = loader.load([logged], log_config, args.batch_connections, args.batch)
                nats_cpu = sum(cpu_seconds(pid) for pid in nats_pids) - nats_before
                answered = max(backlog["reports_answered_2xx"], 1)
                backlog["nats_cpu_ms_per_report"] = 1e3 * nats_cpu / answered
                fold_log = Path(tmp) / f"fold-{round_}-{workers}.log"
                fold = fold_rate(
                    url, log_url, "logged", 600, fold_log, nats_pids, workers, args.idle
                )
                fold["over_batched_direct"] = fold.get("reports_per_second", 0.0) / max(
                    entry["direct"]["reports_per_second"], 1e-9
                )
                log(f"[log_mode] {workers} fold worker(s): {fold}")
                entry[f"published_{workers}"] = backlog
                entry[f"fold_{workers}"] = fold
            out["batched"].append(entry)
        with LDPClient(direct.base_url, token=direct.admin_token) as admin:
            admin.create_collection(bench_spec("rows", "oue"))
        out["database_rows"] = database_rows(url, "rows")
        log(f"[log_mode] database alone, batches of {DEFAULT_BATCH}: {out['database_rows']}")
        out["rewrite"] = rewrite_cost(url)
        log(f"[log_mode] one rewrite of everything stored: {out['rewrite']}")
        out["command_direct"] = " ".join(direct.command).replace(url, "<fresh PostgreSQL>")
    out["_started"], out["_load_at_start"] = started["_started"], started["_load_at_start"]
    emit("log_mode", out, args.quick, args.output)


if __name__ == "__main__":
    main()
