"""Training jobs on the aggregator: its CPU and wall time per device, and the wire bytes.

Each simulated device runs the aggregator's own functions in this process (no HTTP):
``issue_participation`` (a place), then, after the device computed its report with the
SDK, ``accept_report`` (which closes the round when it is full). The aggregator's part is
timed with the thread's CPU clock and the wall clock around those two calls only (the
device's computation is left out); PostgreSQL's own processes are not in the CPU time,
so its wall time is the number to compare. Beside it, in the same run and on the same
engine, one collection report uploaded alone (``ingest_batch`` of one report): the
project's own single-report path, as the ratio's baseline. The wire bytes are the JSON
bodies a device receives and sends.

    python bench/training_service.py            # 3,000 devices, SQLite and PostgreSQL
    python bench/training_service.py --quick    # 300

PostgreSQL is used when ``LDPCOLLECT_TEST_POSTGRES_URL`` (or the default local server)
answers; the result says when it does not.

With ``--http`` it measures what a user meets instead: ``ldpcollect serve`` on a free
port and a temporary SQLite file, and the fleet of ``ldpcollect train`` (the SDK's
devices, 16 at a time: a place, then the report, two requests each) against it. Pairs
are interleaved on the same server: a whole training job of ``--devices`` devices in
rounds of ``--round-size``, then ``--uploads`` single-report uploads (one report per
request, 16 at a time, the SDK's request). The server's CPU is read from
``/proc/<pid>/stat`` around each half; the 429s and the requests per device from its
``/metrics``; the load average before and after each job.

    python bench/training_service.py --http --devices 10000 --round-size 20 --pairs 1
"""

from __future__ import annotations

import asyncio
import os
import secrets
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
from sqlalchemy import create_engine, text

from _common import base_parser, emit, log, sized, start_marker
from ldp_aggregator import training, training_rounds
from ldp_aggregator.collections import create_collection
from ldp_aggregator.ingest import ingest_batch
from ldp_aggregator.storage.engine import make_engine
from ldp_aggregator.storage.migrate import upgrade
from ldp_client import AsyncLDPClient
from ldp_client.protocol import submit_reports_call
from ldp_client.training import make_report, rebuild_mechanisms
from ldp_shared.codec import Privatizer
from ldp_shared.rand import seeded_rng
from ldp_shared.wire.reports import ReportBatch, encode_bits, new_report_id
from ldp_shared.wire.training import Participation, ParticipationReport, TrainingSpec
from ldp_simulation import train_fleet as fleet
from ldp_simulation.fleet import aggregator_process

PG_URL = os.environ.get(
    "LDPCOLLECT_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)


def _postgres() -> tuple[str | None, str]:
    """A URL on a fresh schema and the schema, or ``None`` and why not."""
    try:
        admin = create_engine(PG_URL, connect_args={"connect_timeout": 5})
        schema = f"ldp_bench_{secrets.token_hex(4)}"
        with admin.begin() as connection:
            connection.execute(text(f'CREATE SCHEMA "{schema}"'))
        admin.dispose()
    except Exception as error:  # no server: say so in the result
        return None, f"PostgreSQL at {PG_URL} did not answer: {type(error).__name__}"
    separator = "&" if "?" in PG_URL else "?"
    return f"{PG_URL}{separator}options={quote(f'-csearch_path={schema}')}", schema


def run(database_url: str, devices: int, round_size: int) -> dict[str, Any]:
    engine = make_engine(database_url)
    upgrade(engine)
    collection = create_collection(engine, fleet._collection_spec())
    data = fleet.load_breast_cancer()
    records = fleet.device_records(data, fleet.split(data)[0], devices)
    spec = TrainingSpec(
        layout=fleet.layout_of(data),
        epsilon=4.0,
        round_size=round_size,
        rounds=devices // round_size,
    )
    job = training.create_job(engine, collection, spec)
    rng = seeded_rng(1)
    cpu, wall, closing, sizes = [], [], [], {"participation": 0, "report": 0}
    for record in records:
        c0, w0 = time.thread_time(), time.perf_counter()
        with engine.begin() as connection:
            answer = training_rounds.issue_in(connection, collection, job.id)
        c1, w1 = time.thread_time(), time.perf_counter()
        participation = Participation.model_validate_json(answer)  # the device: not timed
        mechanisms = rebuild_mechanisms(participation)  # the device: not timed
        body = ParticipationReport(
            report=encode_bits(make_report(participation, mechanisms, record, rng))
        )
        c2, w2 = time.thread_time(), time.perf_counter()
        result = training_rounds.accept_report(
            engine, collection, job.id, participation.token, body
        )
        c3, w3 = time.thread_time(), time.perf_counter()
        cpu.append((c1 - c0) + (c3 - c2))
        wall.append((w1 - w0) + (w3 - w2))
        if result.round_closed:
            closing.append(w3 - w2)
        sizes["participation"] = len(answer)
        sizes["report"] = len(body.model_dump_json())
    # the baseline: one categorical report per upload, same engine
    config = collection.config
    packed = Privatizer(config).privatize_many([{"diagnosis": "benign"}] * devices, seeded_rng(2))
    base_cpu, base_wall = [], []
    for row in packed:
        batch = ReportBatch.model_validate(
            {
                "reports": [
                    {
                        "id": new_report_id(),
                        "config_hash": config.config_hash,
                        "bits": encode_bits(row.tobytes()),
                    }
                ]
            }
        )
        c0, w0 = time.thread_time(), time.perf_counter()
        ingest_batch(engine, collection, batch)
        base_cpu.append(time.thread_time() - c0)
        base_wall.append(time.perf_counter() - w0)
    engine.dispose()
    per_device_cpu = statistics.fmean(cpu)
    per_upload_cpu = statistics.fmean(base_cpu)
    return {
        "devices": devices,
        "round_size": round_size,
        "aggregator_cpu_seconds_per_1e5_devices": per_device_cpu * 1e5,
        "aggregator_wall_ms_per_device_median": statistics.median(wall) * 1e3,
        "round_close_wall_ms_median": statistics.median(closing) * 1e3 if closing else None,
        "single_report_upload_cpu_seconds_per_1e5": per_upload_cpu * 1e5,
        "single_report_upload_wall_ms_median": statistics.median(base_wall) * 1e3,
        "cpu_ratio_device_to_single_upload": per_device_cpu / per_upload_cpu,
        "wall_ratio_device_to_single_upload": statistics.median(wall)
        / statistics.median(base_wall),
        "json_bytes_participation_received": sizes["participation"],
        "json_bytes_report_sent": sizes["report"],
        "report_bytes_before_base64": job.gradient.report_bytes,
    }


# ---------------------------------------------------------------------- over HTTP


def _server_cpu(pid: int) -> float:
    """User plus system CPU seconds of process ``pid`` so far (``/proc/<pid>/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _requests(base_url: str) -> dict[str, int]:
    """Requests answered so far, by ``METHOD route status`` (the server's ``/metrics``)."""
    counts: dict[str, int] = {}
    for line in httpx.get(f"{base_url}/metrics", timeout=10).text.splitlines():
        if not line.startswith("ldpcollect_http_requests_total{"):
            continue
        labels, value = line[len("ldpcollect_http_requests_total{") :].rsplit("} ", 1)
        parts = dict(item.split("=", 1) for item in labels.split('",'))
        key = " ".join(parts[k].strip('"') for k in ("method", "route", "status"))
        counts[key] = counts.get(key, 0) + int(float(value))
    return counts


def _fleet(base_url: str, admin: str, analyst: str, devices: int, round_size: int) -> Any:
    options = fleet.TrainOptions(
        devices=devices,
        epsilon=4.0,
        round_size=round_size,
        rounds=devices // round_size,
        seed=1,
        progress=False,
    )
    return fleet.simulate_training([base_url], admin, analyst, options)


async def _uploads(base_url: str, count: int, concurrency: int = 16) -> None:
    """``count`` reports of the demo collection, one per request, ``concurrency`` at once."""
    async with AsyncLDPClient(base_url, rng=seeded_rng(3)) as client:
        reports = await client.privatize_many(fleet.COLLECTION, [{"diagnosis": "benign"}] * count)
        queue = list(reversed(reports))

        async def loop() -> None:
            while queue:
                report = queue.pop()
                await client._call(submit_reports_call(fleet.COLLECTION, [report]))

        await asyncio.gather(*(loop() for _ in range(concurrency)))


def run_http(devices: int, round_size: int, pairs: int, uploads: int) -> dict[str, Any]:
    admin, analyst = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
    out: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="ldp-bench-train-http-") as folder:
        url = f"sqlite:///{Path(folder) / 'bench.db'}"
        with aggregator_process(url, admin, analyst) as server:
            pid, base = server.process.pid, server.base_url
            for pair in range(pairs):
                log(f"[training_service] http pair {pair + 1}/{pairs}: {devices:,} devices")
                load_before = list(os.getloadavg())
                before, c0, w0 = _requests(base), _server_cpu(pid), time.perf_counter()
                result = _fleet(base, admin, analyst, devices, round_size)
                c1, w1 = _server_cpu(pid), time.perf_counter()
                after = _requests(base)
                log(f"[training_service] http pair {pair + 1}/{pairs}: {uploads:,} uploads")
                asyncio.run(_uploads(base, uploads))
                c2, w2 = _server_cpu(pid), time.perf_counter()
                diff = {k: v - before.get(k, 0) for k, v in after.items() if v != before.get(k)}
                refused = sum(v for k, v in diff.items() if k.endswith(" 429"))
                per_device = (c1 - c0) / result.devices
                per_upload = (c2 - c1) / uploads
                out.append(
                    {
                        "devices": result.devices,
                        "round_size": result.round_size,
                        "rounds": result.rounds,
                        "wall_seconds": w1 - w0,
                        "server_cpu_seconds": c1 - c0,
                        "server_cpu_ms_per_device": per_device * 1e3,
                        "uploads": uploads,
                        "upload_wall_seconds": w2 - w1,
                        "server_cpu_ms_per_single_upload": per_upload * 1e3,
                        "cpu_ratio_device_to_single_upload": per_device / per_upload,
                        "participation_429s": refused,
                        "requests": diff,
                        "accuracy": result.accuracy,
                        "requests_per_device": sum(
                            v for k, v in diff.items() if "/participations" in k
                        )
                        / result.devices,
                        "load_average_before": load_before,
                        "load_average_after": list(os.getloadavg()),
                    }
                )

    def span(key: str) -> list[float]:
        values = [pair[key] for pair in out]
        return [min(values), max(values)]

    return {
        "pairs": out,
        "wall_seconds_range": span("wall_seconds"),
        "cpu_ratio_range": span("cpu_ratio_device_to_single_upload"),
        "participation_429s_range": span("participation_429s"),
    }


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--http", action="store_true", help="over HTTP (see the docstring)")
    parser.add_argument("--devices", type=int, default=None, help="devices per job (--http)")
    parser.add_argument("--round-size", type=int, default=20, help="round size (--http)")
    parser.add_argument("--pairs", type=int, default=2, help="interleaved pairs (--http)")
    parser.add_argument("--uploads", type=int, default=3000, help="single uploads (--http)")
    args = parser.parse_args()
    if args.http:
        started = start_marker()
        devices = args.devices or sized(10_000, 1_000, 100, args)
        result = run_http(devices, args.round_size, args.pairs, args.uploads)
        name = "training_service_http"
        emit(name, {**started, "http": result}, args.quick, args.output)
        return
    devices, round_size = sized((3000, 100), (300, 30), (20, 10), args)
    started = start_marker()
    engines: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="ldp-bench-train-") as folder:
        log("[training_service] sqlite")
        engines["sqlite"] = run(f"sqlite:///{Path(folder) / 'bench.db'}", devices, round_size)
    pg_url, schema = _postgres()
    if pg_url is None:
        engines["postgresql"] = {"skipped": schema}
    else:
        log("[training_service] postgresql")
        try:
            engines["postgresql"] = run(pg_url, devices, round_size)
        finally:
            admin = create_engine(PG_URL)
            with admin.begin() as connection:
                connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
            admin.dispose()
    emit("training_service", {**started, "engines": engines}, args.quick, args.output)


if __name__ == "__main__":
    main()
