"""Ingestion before and after periods (``bench/periods.py``): the loop, and its A/B runs.

As a script, ``python bench/_periods_loop.py BATCHES [BATCH_SIZE] [SEED]`` with
``PYTHONPATH`` naming one tree's package folders (``shared``, ``client``, ``aggregator``,
``simulation``): a fresh SQLite database (the aggregator's migrations and pragmas) in a
temporary folder, one OUE d = 16 collection (ε = 4), reports made by the SDK's
``Privatizer`` from a fixed seed, then ``ingest_batch`` with a ``ReportWriter`` for
``BATCHES`` batches of ``BATCH_SIZE`` (after 5 untimed ones). It prints one JSON object:
the loop's reports/s (wall clock), the process's CPU time (all threads) and the bytes
it wrote to storage (``/proc/self/io``, Linux) per 1,000 reports, and the file the
code was imported from. It calls
only what the code had before periods too (no ``at=``, no ``period``).

:func:`ingestion_ab` runs it under HEAD and under the commit before periods, each
extracted with ``git archive`` into a temporary folder (the repository is not touched),
in interleaved pairs.
"""

from __future__ import annotations

import base64
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from ldp_aggregator.ingest import ingest_batch
from ldp_aggregator.storage.collections import insert_collection
from ldp_aggregator.storage.engine import make_engine
from ldp_aggregator.storage.migrate import upgrade
from ldp_aggregator.writer import ReportWriter
from ldp_shared.codec import Privatizer
from ldp_shared.collection import CollectionConfig, build_config
from ldp_shared.schema import CollectionSpec

try:
    from ldp_shared.wire.reports import Report, ReportBatch, encode_bits
except ImportError:  # the commit before periods had the wire types in one module
    from ldp_shared.wire import Report, ReportBatch, encode_bits  # type: ignore[attr-defined,no-redef]

WARM_UP = 5
OUE16 = [f"value-{i:02d}" for i in range(16)]
PACKAGE_DIRS = ("shared", "client", "aggregator", "simulation")


def config_of(
    name: str, attributes: list[dict[str, Any]], epsilon: float = 4.0
) -> CollectionConfig:
    spec = {"name": name, "epsilon": epsilon, "attributes": attributes}
    return build_config(CollectionSpec.model_validate({**spec, "release": {"min_reports": 1}}))


def batches_of(
    config: CollectionConfig, packed: np.ndarray, size: int, gen: np.random.Generator
) -> list[ReportBatch]:
    """Packed reports as request models of ``size`` reports each, built unvalidated (as a
    parsed request body holds them), with ids from ``gen`` (22 URL-safe characters)."""
    raw = gen.integers(0, 256, size=(len(packed), 16), dtype=np.uint8)
    ids = [base64.urlsafe_b64encode(row.tobytes()).decode("ascii")[:22] for row in raw]
    reports = [
        Report.model_construct(
            id=i, config_hash=config.config_hash, bits=encode_bits(row.tobytes())
        )
        for i, row in zip(ids, packed, strict=True)
    ]
    return [
        ReportBatch.model_construct(reports=reports[start : start + size])
        for start in range(0, len(reports), size)
    ]


def written_bytes() -> int | None:
    """Bytes this process caused to be written to storage so far (Linux), else ``None``."""
    try:
        lines = Path("/proc/self/io").read_text().splitlines()
    except OSError:
        return None
    return next(int(line.split()[1]) for line in lines if line.startswith("write_bytes:"))


def main() -> None:
    batches, size, seed = (int(a) for a in [*sys.argv[1:], "1000", "20261126"][:3])
    gen = np.random.default_rng(seed)
    config = config_of("loop", [{"name": "v", "domain": OUE16, "mechanism": "oue"}])
    column = [OUE16[i] for i in gen.integers(0, len(OUE16), size=(batches + WARM_UP) * size)]
    made = batches_of(config, Privatizer(config).privatize_columns({"v": column}, gen), size, gen)
    with tempfile.TemporaryDirectory() as folder:
        engine = make_engine(f"sqlite:///{folder}/loop.db")
        upgrade(engine)
        collection = insert_collection(engine, config)
        writer = ReportWriter(engine)
        try:
            for batch in made[:WARM_UP]:
                ingest_batch(engine, collection, batch, writer=writer)
            start, cpu, written = time.perf_counter(), time.process_time(), written_bytes()
            accepted = sum(
                ingest_batch(engine, collection, batch, writer=writer).accepted
                for batch in made[WARM_UP:]
            )
            seconds, cpu = time.perf_counter() - start, time.process_time() - cpu  # all threads
            after = written_bytes()
        finally:
            writer.close()
            engine.dispose()
    code = sys.modules[ingest_batch.__module__].__file__
    found = {"reports_per_second": accepted / seconds, "cpu_ms_per_1000": 1e6 * cpu / accepted}
    if written is not None and after is not None:
        found["kib_written_per_1000"] = (after - written) / 1.024 / accepted
    print(json.dumps({**found, "code": code}))


# ---- the A/B runs (bench/periods.py) ------------------------------------------------------


def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, check=True)
    return done.stdout.decode()


def before_periods(root: Path) -> str:
    """The commit before the one that added ``shared/ldp_shared/periods.py``."""
    added = git(root, "log", "--diff-filter=A", "--format=%H", "--", "shared/ldp_shared/periods.py")
    return git(root, "rev-parse", "--short", f"{added.split()[-1]}^").strip()


def extract(root: Path, commit: str, folder: Path) -> None:
    """The package folders of ``commit`` of the repository at ``root``, under ``folder``."""
    archive = subprocess.run(
        ["git", "-C", str(root), "archive", commit, *(f"{p}/ldp_{p}" for p in PACKAGE_DIRS)],
        capture_output=True,
        check=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(folder, filter="data")


def loop_once(tree: Path, batches: int) -> dict[str, Any]:
    """One run of this script under the code of ``tree``, and the load before it."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(tree / p) for p in PACKAGE_DIRS)}
    load = os.getloadavg()[0]
    command = [sys.executable, __file__, str(batches)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    found = json.loads(done.stdout)
    found["code"] = str(Path(found["code"]).relative_to(tree))  # checks it was tree's
    return {**found, "load_1min": load}


def ingestion_ab(root: Path, pairs: int, batches: int) -> dict[str, Any]:
    """Reports/s of the loop under HEAD (after) and before periods of the repository at
    ``root``, in ``pairs``
    interleaved pairs (every other pair starts with the older code)."""
    from _freq_peers import spread

    arms: dict[str, list[dict[str, Any]]] = {"after": [], "before": []}
    with tempfile.TemporaryDirectory() as folder:
        try:
            commits = {"after": git(root, "rev-parse", "--short", "HEAD").strip()}
            commits["before"] = before_periods(root)
            for arm, commit in commits.items():
                extract(root, commit, Path(folder) / arm)
        except (OSError, subprocess.CalledProcessError, IndexError) as error:
            return {"skipped": f"no git history to compare with: {error}"}
        for pair in range(pairs):
            for arm in ("after", "before") if pair % 2 == 0 else ("before", "after"):
                arms[arm].append(loop_once(Path(folder) / arm, batches))
                rate = arms[arm][-1]["reports_per_second"]
                print(f"ingestion {pair + 1} {arm}: {rate:,.0f} reports/s", file=sys.stderr)
    rates = {arm: [r["reports_per_second"] for r in runs] for arm, runs in arms.items()}
    cpu = {arm: [r["cpu_ms_per_1000"] for r in runs] for arm, runs in arms.items()}
    kib = {arm: [r.get("kib_written_per_1000", 0.0) for r in runs] for arm, runs in arms.items()}
    ratios = [a / b for a, b in zip(rates["after"], rates["before"], strict=True)]
    cpu_ratios = [a / b for a, b in zip(cpu["after"], cpu["before"], strict=True)]
    return {
        "after_commit": commits["after"],
        "before_commit": commits["before"],
        "batches_timed": batches,
        "batch_size": 1_000,
        "pairs": pairs,
        "reports_per_second": {arm: spread(values) for arm, values in rates.items()},
        "ratio_after_over_before": {**spread(ratios), "per_pair": ratios},
        "ratio_range_holds_1": min(ratios) <= 1.0 <= max(ratios),
        "cpu_ms_per_1000_reports": {arm: spread(values) for arm, values in cpu.items()},
        "cpu_ratio_after_over_before": {**spread(cpu_ratios), "per_pair": cpu_ratios},
        "kib_written_per_1000_reports": {arm: spread(values) for arm, values in kib.items()},
        "load_1min": spread([r["load_1min"] for runs in arms.values() for r in runs]),
        "runs": arms,
    }


if __name__ == "__main__":
    main()
