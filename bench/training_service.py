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
"""

from __future__ import annotations

import os
import secrets
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import create_engine, text

from _common import base_parser, emit, log, sized, start_marker
from ldp_aggregator import training, training_rounds
from ldp_aggregator.collections import create_collection
from ldp_aggregator.ingest import ingest_batch
from ldp_aggregator.storage.engine import make_engine
from ldp_aggregator.storage.migrate import upgrade
from ldp_client.training import make_report, rebuild_mechanisms
from ldp_shared.codec import Privatizer
from ldp_shared.rand import seeded_rng
from ldp_shared.wire.reports import ReportBatch, encode_bits, new_report_id
from ldp_shared.wire.training import ParticipationReport, TrainingSpec
from ldp_simulation import train_fleet as fleet

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
        participation = training_rounds.issue_participation(engine, collection, job.id)
        c1, w1 = time.thread_time(), time.perf_counter()
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
        sizes["participation"] = len(participation.model_dump_json())
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


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    args = parser.parse_args()
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
