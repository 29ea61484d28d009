"""Ingestion of open-domain reports (flh, pem) beside grr over HTTP (issue "open domains").

The target: batches of reports of the open-domain mechanisms are ingested within 20 % of
the ``grr`` path's reports/s, i.e. at a ratio of at least 0.80 to grr in the same pair.
Five one-attribute collections on one ``ldpcollect serve`` (uvicorn, SQLite WAL in a temp
folder, the product's settings; ``bench/_server.py``), one per arm:

* ``grr``: GRR over d = 256 listed strings, ε = 4 (the yardstick);
* ``flh_e4`` / ``flh_e8``: FLH over open strings, default k = 1024, ε = 4 and ε = 8;
* ``pem_l12_e4`` / ``pem_l16_e4``: PEM with max_length 12 and 16, ε = 4, default k.

Each arm's reports are made once by ``ldp_shared.codec.Privatizer`` (``--reports``,
100,000, from a Zipf vocabulary of random strings) and posted with fresh ids as JSON
batches of ``--batch`` (1,000) over ``--connections`` (1 and 4) keep-alive connections
(``http.client``, one thread each, bodies built before the clock starts). A pair is one
fresh server (fresh database, a few untimed warm-up batches per arm) in which, at each
connection count, every arm posts its reports in ``--slices`` (5) slices interleaved arm
by arm (order rotated from slice to slice, every other slice reversed), so that load from
elsewhere on the machine and the growing reports table fall on every arm alike. An arm's
reports/s in a pair is its reports over its summed posting time; ratios to grr are taken
within a pair. Per run also: batch latency, server CPU per batch, requests per
transaction (group commit).

Then, in-process on SQLite engines of the aggregator's own code (``make_engine``, its
migrations and ``insert_collection``), where the time of a batch goes at these statistics
sizes: the writer's whole transaction (``ReportWriter.write_now``: lock, insert 1,000
reports, ``claim_shard``/``add_to_shard``, commit, WAL truncation), interleaved across the
arms; the statistics steps alone (``claim_shard``, ``add_to_shard``, commit, truncation),
with the bytes each commit appended to the WAL; the numpy parts alone (``decode_sums``,
``encode_sums`` of the sum, the batch's ``decode_reports``). And one what-if that is not
the product: the same transaction if it appended the batch's non-zero cells to a delta
table (a table of the bench's temporary file) and added only ``n_reports`` to the shard
row, which shows what a sparse delta design would cost per transaction.
"""

from __future__ import annotations

import http.client
import json
import re
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import numpy as np
from numpy.typing import NDArray

from _common import base_parser, emit, log, sized, start_marker, zipf_frequencies
from _server import Server, running_server
from _wrk import cpu_seconds
from ldp_aggregator.storage.at_rest import WalTruncator
from ldp_aggregator.storage.collections import insert_collection, utc_today
from ldp_aggregator.storage.engine import make_engine
from ldp_aggregator.storage.migrate import upgrade
from ldp_aggregator.storage.stats import STATS_SHARDS, add_to_shard, claim_shard, delta_of
from ldp_aggregator.storage.stats_codec import decode_sums, encode_sums
from ldp_aggregator.writer import Pending, ReportWriter
from ldp_client import LDPClient
from ldp_shared.codec import Privatizer, decode_reports
from ldp_shared.collection import CollectionConfig, build_config
from ldp_shared.periods import stamp
from ldp_shared.rand import seeded_rng
from ldp_shared.schema import CollectionSpec
from ldp_shared.wire.reports import encode_bits, new_report_id

TARGET_RATIO = 0.80
"""Within 20 % of grr's reports/s."""
HEADERS = {"Content-Type": "application/json"}
VOCABULARY = 5_000
GRR_DOMAIN = [f"value-{i:03d}" for i in range(256)]


@dataclass(frozen=True)
class Arm:
    key: str
    label: str
    attribute: dict[str, Any]
    epsilon: float


ARMS = [
    Arm("grr", "grr, d = 256, ε = 4", {"mechanism": "grr", "domain": GRR_DOMAIN}, 4.0),
    Arm("flh_e4", "flh, open strings, ε = 4, default k", {"mechanism": "flh"}, 4.0),
    Arm("flh_e8", "flh, open strings, ε = 8, default k", {"mechanism": "flh"}, 8.0),
    Arm(
        "pem_l12_e4",
        "pem, max_length 12, ε = 4, default k",
        {"mechanism": "pem", "max_length": 12},
        4.0,
    ),
    Arm(
        "pem_l16_e4",
        "pem, max_length 16, ε = 4, default k",
        {"mechanism": "pem", "max_length": 16},
        4.0,
    ),
]
MICRO_EXTRA = [
    # the most statistics a default pem attribute keeps (2^19 counters): measured in-process only
    Arm(
        "pem_l16_e8",
        "pem, max_length 16, ε = 8, default k",
        {"mechanism": "pem", "max_length": 16},
        8.0,
    ),
]


def spec_of(arm: Arm, name: str) -> CollectionSpec:
    return CollectionSpec.model_validate(
        {
            "name": name,
            "attributes": [{"name": "v", **arm.attribute}],
            "epsilon": arm.epsilon,
            "release": {"min_reports": 1},
        }
    )


def vocabulary(rng: np.random.Generator) -> list[str]:
    """Distinct random lowercase strings of 3 to 12 bytes (valid for every arm)."""
    words: set[str] = set()
    letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", dtype=np.uint8)
    while len(words) < VOCABULARY:
        length = int(rng.integers(3, 13))
        words.add(letters[rng.integers(0, 26, size=length)].tobytes().decode("ascii"))
    return sorted(words)


def make_packed(config: CollectionConfig, n: int, rng: np.random.Generator) -> NDArray[np.uint8]:
    """``n`` perturbed reports of the collection (Zipf(1.1) over its values)."""
    domain = GRR_DOMAIN if config.attributes[0].domain else vocabulary(rng)
    index = rng.choice(len(domain), size=n, p=zipf_frequencies(len(domain)))
    column = [domain[i] for i in index]
    packed: NDArray[np.uint8] = Privatizer(config).privatize_columns({"v": column}, rng=rng)
    return packed


def bodies_of(config: CollectionConfig, packed: NDArray[np.uint8], batch: int) -> list[bytes]:
    """JSON bodies of ``POST .../reports`` with fresh ids (the ``ReportBatch`` layout)."""
    head = '{"id":"%s","config_hash":"' + config.config_hash + '","bits":"%s"}'
    bits = [encode_bits(row.tobytes()) for row in packed]
    out: list[bytes] = []
    for start in range(0, len(bits), batch):
        items = [head % (new_report_id(), b) for b in bits[start : start + batch]]
        out.append(('{"reports":[' + ",".join(items) + "]}").encode("ascii"))
    return out


def post_all(base_url: str, name: str, bodies: list[bytes], connections: int) -> dict[str, Any]:
    """Post every body over ``connections`` keep-alive connections, one thread each."""
    parts = urlsplit(base_url)
    path = f"/v1/collections/{name}/reports"
    latencies: list[float] = []
    accepted = [0] * connections
    errors: list[str] = []
    lock = threading.Lock()
    gate = threading.Barrier(connections + 1)

    def worker(k: int) -> None:
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=300)
        conn.connect()
        mine, local = bodies[k::connections], []
        gate.wait()
        try:
            for body in mine:
                t0 = time.perf_counter()
                conn.request("POST", path, body=body, headers=HEADERS)
                response = conn.getresponse()
                data = response.read()
                local.append(time.perf_counter() - t0)
                if response.status != 200:
                    errors.append(f"{response.status}: {data[:300]!r}")
                    return
                accepted[k] += json.loads(data)["accepted"]
        finally:
            conn.close()
            with lock:
                latencies.extend(local)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(connections)]
    for thread in threads:
        thread.start()
    gate.wait()
    start, cpu0 = time.perf_counter(), time.process_time()
    for thread in threads:
        thread.join()
    elapsed, client_cpu = time.perf_counter() - start, time.process_time() - cpu0
    if errors:
        raise RuntimeError(f"upload failed: {errors[0]}")
    return {
        "seconds": elapsed,
        "accepted": sum(accepted),
        "latencies": latencies,
        "client_cpu_seconds": client_cpu,
    }


def percentiles_ms(latencies: list[float]) -> dict[str, float]:
    ordered = sorted(latencies)
    last = len(ordered) - 1
    return {
        "p50": 1e3 * ordered[len(ordered) // 2],
        "p99": 1e3 * ordered[min(last, round(0.99 * last))],
    }


def metrics(server: Server) -> dict[str, float]:
    """Group commits (count, requests) and accepted reports per collection, from /metrics."""
    text = httpx.get(f"{server.base_url}/metrics", headers=server.admin(), timeout=30).text
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("ldpcollect_group_commit_size_count"):
            out["transactions"] = float(line.split()[-1])
        elif line.startswith("ldpcollect_group_commit_size_sum"):
            out["requests"] = float(line.split()[-1])
        elif line.startswith("ldpcollect_reports_total{"):
            found = re.search(r'collection="([^"]+)".*status="accepted"', line) or re.search(
                r'status="accepted".*collection="([^"]+)"', line
            )
            if found:
                out[f"accepted:{found.group(1)}"] = float(line.split()[-1])
    return out


def stored_reports(server: Server, config: CollectionConfig) -> int | None:
    """``n_reports`` as released to the analyst (from the statistics)."""
    mechanism = config.spec_of(config.attributes[0]).mechanism
    base = f"{server.base_url}/v1/collections/{config.name}"
    if mechanism == "pem":
        url, params = f"{base}/heavy-hitters", {"attribute": "v", "k": 1}
    elif mechanism == "flh":
        url, params = f"{base}/frequencies", {"attribute": "v", "values": "abc"}
    else:
        url, params = f"{base}/frequencies", {"attribute": "v"}
    response = httpx.get(url, params=params, headers=server.analyst(), timeout=300)
    response.raise_for_status()
    value = response.json().get("n_reports")
    return None if value is None else int(value)


def spread(values: list[float]) -> dict[str, float]:
    return {"min": min(values), "median": statistics.median(values), "max": max(values)}


def slice_order(pair: int, piece: int) -> list[Arm]:
    """The arms' order in one slice: rotated by pair and slice, every other one reversed."""
    shift = (pair + piece) % len(ARMS)
    order = ARMS[shift:] + ARMS[:shift]
    return order[::-1] if (pair + piece) % 2 else order


def http_part(args: Any, packed: dict[str, NDArray[np.uint8]]) -> dict[str, Any]:
    """Every pair on a fresh server; within it each connection count, the arms' reports
    posted in ``args.slices`` slices, interleaved arm by arm."""
    runs: list[dict[str, Any]] = []
    checks: list[dict[str, Any]] = []
    server_seconds: list[float] = []
    command = ""
    for pair in range(args.pairs):
        with running_server() as server:
            born = time.monotonic()
            log(f"[open-domains] pair {pair + 1}/{args.pairs}: server pid {server.pid}")
            configs: dict[str, CollectionConfig] = {}
            with LDPClient(server.base_url, token=server.admin_token) as admin:
                for arm in ARMS:
                    configs[arm.key] = admin.create_collection(spec_of(arm, f"od-{arm.key}"))
            warmup = args.warmup * args.batch
            for arm in ARMS:  # warm-up, not timed: imports, caches, the first pages
                warm = bodies_of(configs[arm.key], packed[arm.key][:warmup], args.batch)
                post_all(server.base_url, configs[arm.key].name, warm, 1)
            rows = warmup * len(ARMS)
            order_conns = args.connections if pair % 2 == 0 else args.connections[::-1]
            for connections in order_conns:
                total = {arm.key: _empty_run(pair, connections, arm, rows) for arm in ARMS}
                for piece in range(args.slices):
                    for arm in slice_order(pair, piece):
                        config, run = configs[arm.key], total[arm.key]
                        part = np.array_split(packed[arm.key], args.slices)[piece]
                        bodies = bodies_of(config, part, args.batch)
                        before, cpu0 = metrics(server), cpu_seconds(server.pid)
                        result = post_all(server.base_url, config.name, bodies, connections)
                        cpu1, after = cpu_seconds(server.pid), metrics(server)
                        if result["accepted"] != len(part):
                            raise RuntimeError(f"{arm.key}: {result['accepted']} of {len(part)}")
                        run["reports"] += len(part)
                        run["batches"] += len(bodies)
                        run["seconds"] += result["seconds"]
                        run["client_cpu_seconds"] += result["client_cpu_seconds"]
                        run["server_cpu_seconds"] += cpu1 - cpu0
                        run["transactions"] += after["transactions"] - before["transactions"]
                        run["requests"] += after["requests"] - before["requests"]
                        run["latencies"].extend(result["latencies"])
                        rows += len(part)
                for arm in ARMS:
                    run = _finish_run(total[arm.key], rows)
                    runs.append(run)
                    log(
                        f"[open-domains]   {connections} conn {arm.key:11s} "
                        f"{run['reports_per_second']:9,.0f} reports/s, "
                        f"server CPU {run['server_cpu_ms_per_batch']:.1f} ms/batch, "
                        f"{run['requests_per_transaction']:.2f} requests/transaction"
                    )
            final = metrics(server)
            for arm in ARMS:
                config = configs[arm.key]
                sent = warmup + sum(
                    r["reports"] for r in runs if r["pair"] == pair and r["arm"] == arm.key
                )
                stored = stored_reports(server, config)
                counted = int(final.get(f"accepted:{config.name}", -1))
                checks.append(
                    {
                        "pair": pair,
                        "arm": arm.key,
                        "accepted_by_responses": sent,
                        "accepted_by_metrics": counted,
                        "n_reports_released": stored,
                        "equal": stored == sent == counted,
                    }
                )
            server_seconds.append(time.monotonic() - born)
            command = " ".join(server.command)
    return {
        "runs": runs,
        "checks": checks,
        "server_lifetimes_s": server_seconds,
        "command": command,
    }


def _empty_run(pair: int, connections: int, arm: Arm, rows: int) -> dict[str, Any]:
    return {
        "pair": pair,
        "connections": connections,
        "arm": arm.key,
        "table_rows_at_start": rows,
        "reports": 0,
        "batches": 0,
        "seconds": 0.0,
        "client_cpu_seconds": 0.0,
        "server_cpu_seconds": 0.0,
        "transactions": 0.0,
        "requests": 0.0,
        "latencies": [],
    }


def _finish_run(run: dict[str, Any], rows: int) -> dict[str, Any]:
    latencies = run.pop("latencies")
    return {
        **run,
        "table_rows_at_end": rows,
        "reports_per_second": run["reports"] / run["seconds"],
        "latency_ms": percentiles_ms(latencies),
        "server_cpu_ms_per_batch": 1e3 * run["server_cpu_seconds"] / run["batches"],
        "server_cpu_share_of_one_core": run["server_cpu_seconds"] / run["seconds"],
        "requests_per_transaction": run["requests"] / max(run["transactions"], 1.0),
    }


def summarize(args: Any, runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per connection count and arm: reports/s, ratio to grr per pair, verdict."""
    out: dict[str, Any] = {}
    for connections in args.connections:
        mine = [r for r in runs if r["connections"] == connections]
        grr = {r["pair"]: r for r in mine if r["arm"] == "grr"}
        per_arm: dict[str, Any] = {}
        for arm in ARMS:
            arm_runs = sorted((r for r in mine if r["arm"] == arm.key), key=lambda r: r["pair"])
            rates = [r["reports_per_second"] for r in arm_runs]
            ratios = [
                r["reports_per_second"] / grr[r["pair"]]["reports_per_second"] for r in arm_runs
            ]
            ms_per_batch = [1e3 * r["seconds"] / r["batches"] for r in arm_runs]
            extra_ms = [
                ms - 1e3 * grr[r["pair"]]["seconds"] / grr[r["pair"]]["batches"]
                for ms, r in zip(ms_per_batch, arm_runs, strict=True)
            ]
            entry: dict[str, Any] = {
                "reports_per_second": {**spread(rates), "per_pair": rates},
                "wall_ms_per_batch_median": statistics.median(ms_per_batch),
                "server_cpu_ms_per_batch_median": statistics.median(
                    [r["server_cpu_ms_per_batch"] for r in arm_runs]
                ),
                "latency_p50_ms_median": statistics.median(
                    [r["latency_ms"]["p50"] for r in arm_runs]
                ),
                "latency_p99_ms_median": statistics.median(
                    [r["latency_ms"]["p99"] for r in arm_runs]
                ),
                "requests_per_transaction_median": statistics.median(
                    [r["requests_per_transaction"] for r in arm_runs]
                ),
            }
            if arm.key != "grr":
                median_ratio = statistics.median(ratios)
                entry.update(
                    ratio_to_grr={**spread(ratios), "per_pair": ratios},
                    extra_wall_ms_per_batch_vs_grr_median=statistics.median(extra_ms),
                    extra_server_cpu_ms_per_batch_vs_grr_median=entry[
                        "server_cpu_ms_per_batch_median"
                    ]
                    - statistics.median([r["server_cpu_ms_per_batch"] for r in grr.values()]),
                    meets_target=median_ratio >= TARGET_RATIO,
                    every_pair_meets_target=min(ratios) >= TARGET_RATIO,
                )
            per_arm[arm.key] = entry
        out[f"{connections}_connections"] = per_arm
    return out


# ---- in-process: where a batch's time goes -------------------------------------------------


def _median_ms(times: list[float]) -> float:
    return 1e3 * statistics.median(times)


class MicroArm:
    """One arm's collection on an aggregator-made SQLite file, with pre-made batches."""

    def __init__(self, arm: Arm, folder: Path, batches: int, batch: int) -> None:
        self.arm = arm
        self.config = build_config(spec_of(arm, f"micro-{arm.key}"))
        self.path = folder / f"{arm.key}.db"
        self.engine = make_engine(f"sqlite:///{self.path}")
        upgrade(self.engine)
        self.collection = insert_collection(self.engine, self.config)
        rng = seeded_rng(sum(arm.key.encode()))
        self.packed = make_packed(self.config, batches * batch, rng)
        self.batch = batch
        self.writer = ReportWriter(self.engine)
        self.wal = WalTruncator(self.engine)
        self.times: dict[str, list[float]] = {}
        with self.engine.begin() as connection:  # the what-if's table (bench file only)
            connection.exec_driver_sql(
                "CREATE TABLE what_if_stats_delta (id INTEGER PRIMARY KEY,"
                " collection_id INTEGER NOT NULL, cells BLOB NOT NULL, counts BLOB NOT NULL)"
            )

    def time(self, key: str, seconds: float) -> None:
        self.times.setdefault(key, []).append(seconds)

    def pending(self, k: int) -> Pending:
        rows = self.packed[k * self.batch : (k + 1) * self.batch]
        return Pending(
            collection=self.collection,
            ids=[new_report_id() for _ in range(len(rows))],
            matrix=rows,
            delta=delta_of(decode_reports(self.config, rows)),
            day=utc_today(),
            period_start=stamp("day")[1],
        )

    def writer_transaction(self, k: int) -> None:
        """The writer's whole transaction for one batch of 1,000 (as the server runs it)."""
        pending = self.pending(k)
        t0 = time.perf_counter()
        self.writer.write_now(pending)
        self.time("writer_transaction", time.perf_counter() - t0)

    def stats_steps(self, k: int) -> None:
        """The statistics steps alone, one transaction (no reports inserted)."""
        config, cid = self.config, self.collection.id
        delta = self.pending(k).delta
        wal = Path(f"{self.path}-wal")
        with self.engine.connect() as connection:
            t0 = time.perf_counter()
            transaction = connection.begin()
            claimed = claim_shard(
                connection, cid, stamp("day")[1], config.stats_length, config.float_stats_length
            )
            assert claimed is not None
            t1 = time.perf_counter()
            add_to_shard(connection, cid, claimed, delta)
            t2 = time.perf_counter()
            transaction.commit()
            t3 = time.perf_counter()
            self.time("wal_bytes", float(wal.stat().st_size) if wal.exists() else 0.0)
            self.wal.truncate()
            t4 = time.perf_counter()
        for key, seconds in (
            ("claim_shard", t1 - t0),
            ("add_to_shard", t2 - t1),
            ("commit", t3 - t2),
            ("wal_truncate", t4 - t3),
            ("stats_transaction", t4 - t0),
        ):
            self.time(key, seconds)

    def sparse_what_if(self, k: int) -> None:
        """What-if, not the product: the statistics steps if a transaction appended the
        batch's non-zero cells (uint32 index, int32 count) to a delta table and added only
        ``n_reports`` to the shard row, leaving the blob to a periodic fold."""
        delta = self.pending(k).delta
        with self.engine.connect() as connection:
            t0 = time.perf_counter()
            cells = np.flatnonzero(delta.sums)
            row = (
                self.collection.id,
                cells.astype("<u4").tobytes(),
                delta.sums[cells].astype("<i4").tobytes(),
            )
            with connection.begin():
                connection.exec_driver_sql(
                    "UPDATE collection_stats SET n_reports = n_reports + ?"
                    " WHERE collection_id = ? AND shard = 0 AND period_start = ?",
                    (delta.n_reports, self.collection.id, stamp("day")[1]),
                )
                connection.exec_driver_sql(
                    "INSERT INTO what_if_stats_delta (collection_id, cells, counts)"
                    " VALUES (?, ?, ?)",
                    row,
                )
            self.wal.truncate()
            self.time("what_if_sparse_delta_transaction", time.perf_counter() - t0)
        self.time("what_if_delta_bytes", float(len(row[1]) + len(row[2])))

    def numpy_parts(self, k: int) -> None:
        """decode/encode of the blob and the batch's decode_reports, without SQL."""
        length = self.config.stats_length
        blob = encode_sums(np.arange(length, dtype=np.int64))
        rows = self.packed[k * self.batch : (k + 1) * self.batch]
        t0 = time.perf_counter()
        sums = decode_sums(bytes(blob), length)
        t1 = time.perf_counter()
        delta = delta_of(decode_reports(self.config, rows))
        t2 = time.perf_counter()
        encode_sums(sums + delta.sums)
        t3 = time.perf_counter()
        self.time("decode_sums", t1 - t0)
        self.time("decode_reports_of_batch", t2 - t1)
        self.time("encode_sums", t3 - t2)

    def close(self) -> None:
        self.writer.close()
        self.wal.close()
        self.engine.dispose()

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "stats_counters": self.config.stats_length,
            "stats_bytes_per_shard": 8 * self.config.stats_length,
            "database_bytes_at_end": sum(
                p.stat().st_size for p in self.path.parent.glob(self.path.name + "*")
            ),
        }
        for key, values in self.times.items():
            if key in ("wal_bytes", "what_if_delta_bytes"):
                out[f"{key}_median"] = statistics.median(values)
            else:
                out[f"{key}_ms_median"] = _median_ms(values)
                out[f"{key}_ms_min"] = 1e3 * min(values)
        return out


def micro_part(args: Any) -> dict[str, Any]:
    """Interleaved across the arms, round after round."""
    arms = ARMS + MICRO_EXTRA
    with tempfile.TemporaryDirectory(prefix="ldp-bench-od-") as tmp:
        micro = [MicroArm(arm, Path(tmp), args.micro_batches, args.batch) for arm in arms]
        try:
            steps: list[Callable[[MicroArm, int], None]] = [
                MicroArm.writer_transaction,
                MicroArm.stats_steps,
                MicroArm.sparse_what_if,
                MicroArm.numpy_parts,
            ]
            for k in range(args.micro_batches):
                for step in steps:
                    for m in micro[k % len(micro) :] + micro[: k % len(micro)]:
                        step(m, k)
            out = {m.arm.key: m.summary() for m in micro}
        finally:
            for m in micro:
                m.close()
    grr = out["grr"]
    for key, entry in out.items():
        if key != "grr":
            entry["extra_writer_transaction_ms_vs_grr"] = (
                entry["writer_transaction_ms_median"] - grr["writer_transaction_ms_median"]
            )
            entry["extra_stats_transaction_ms_vs_grr"] = (
                entry["stats_transaction_ms_median"] - grr["stats_transaction_ms_median"]
            )
            entry["extra_decode_reports_ms_vs_grr"] = (
                entry["decode_reports_of_batch_ms_median"]
                - grr["decode_reports_of_batch_ms_median"]
            )
    return out


def arm_info(config: CollectionConfig) -> dict[str, Any]:
    randomizer = config.randomizers[0]
    published = randomizer.published() if hasattr(randomizer, "published") else {}
    return {
        "report_bytes": config.report_bytes,
        "stats_counters": config.stats_length,
        "stats_bytes_per_shard": 8 * config.stats_length,
        "stats_shards": STATS_SHARDS,
        "stats_bytes_per_collection": 8 * config.stats_length * STATS_SHARDS,
        **{k: published[k] for k in ("hashes", "buckets", "levels") if k in published},
    }


def explain(summary: dict[str, Any], micro: dict[str, Any]) -> dict[str, Any]:
    """Per arm: the extra wall time per batch over grr (HTTP) beside the extra in-process
    time of one statistics transaction, step by step, and of one batch's decode (at 1
    connection one batch is one transaction; the writer's whole transaction also inserts
    1,000 reports, whose time varies more than the difference)."""
    out: dict[str, Any] = {}
    for arm in ARMS[1:]:
        entry: dict[str, Any] = {}
        for key, per_arm in summary.items():
            entry[f"extra_wall_ms_per_batch_http_{key}"] = per_arm[arm.key][
                "extra_wall_ms_per_batch_vs_grr_median"
            ]
        m, grr = micro[arm.key], micro["grr"]
        entry["extra_stats_transaction_ms_in_process"] = m["extra_stats_transaction_ms_vs_grr"]
        entry["extra_stats_transaction_ms_by_step"] = {
            step: m[f"{step}_ms_median"] - grr[f"{step}_ms_median"]
            for step in ("claim_shard", "add_to_shard", "commit", "wal_truncate")
        }
        entry["extra_decode_reports_ms_in_process"] = m["extra_decode_reports_ms_vs_grr"]
        entry["extra_writer_transaction_ms_in_process"] = m["extra_writer_transaction_ms_vs_grr"]
        entry["stats_blob_decode_plus_encode_numpy_ms"] = (
            m["decode_sums_ms_median"] + m["encode_sums_ms_median"]
        )
        entry["wal_bytes_per_stats_commit"] = m["wal_bytes_median"]
        entry["grr_wal_bytes_per_stats_commit"] = grr["wal_bytes_median"]
        entry["what_if_sparse_delta_extra_stats_transaction_ms_vs_grr"] = (
            m["what_if_sparse_delta_transaction_ms_median"] - grr["stats_transaction_ms_median"]
        )
        out[arm.key] = entry
    return out


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--reports", type=int, default=None, help="per arm and run (100,000)")
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--connections", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--pairs", type=int, default=None, help="fresh servers (4; quick 1)")
    parser.add_argument("--slices", type=int, default=5, help="interleaved slices per run")
    parser.add_argument("--warmup", type=int, default=5, help="untimed batches per arm and server")
    parser.add_argument("--micro-batches", type=int, default=None, help="in-process (40)")
    args = parser.parse_args()
    args.reports = args.reports or sized(100_000, 10_000, 2_000, args)
    args.pairs = args.pairs or (1 if args.quick else 4)
    args.micro_batches = args.micro_batches or sized(40, 5, 2, args)
    if args.tiny:  # every step once, small
        args.connections, args.slices, args.warmup = args.connections[:1], 1, 1
    started = start_marker()
    t_start = time.monotonic()

    packed: dict[str, NDArray[np.uint8]] = {}
    arms: dict[str, Any] = {}
    for arm in ARMS:
        # the server draws the salt at creation: the packed bits need only the layout,
        # which the salt does not change, so one local config per arm makes them
        config = build_config(spec_of(arm, f"od-{arm.key}"))
        t0 = time.perf_counter()
        packed[arm.key] = make_packed(config, args.reports, seeded_rng(17))
        arms[arm.key] = {
            "label": arm.label,
            **arm_info(config),
            "privatize_seconds": time.perf_counter() - t0,
        }
    for arm in MICRO_EXTRA:
        arms[arm.key] = {
            "label": arm.label + " (in-process only)",
            **arm_info(build_config(spec_of(arm, "x"))),
        }
    log(f"[open-domains] {args.reports:,} reports made per arm")

    http = http_part(args, packed)
    log("[open-domains] in-process breakdown")
    micro = micro_part(args)
    summary = summarize(args, http["runs"])
    verdict = {
        arm.key: {
            key: {
                "median_ratio_to_grr": per_arm[arm.key]["ratio_to_grr"]["median"],
                "meets_target": per_arm[arm.key]["meets_target"],
                "every_pair_meets_target": per_arm[arm.key]["every_pair_meets_target"],
            }
            for key, per_arm in summary.items()
        }
        for arm in ARMS[1:]
    }
    result = {
        **started,
        "description": (
            "Batches of open-domain reports (flh, pem) ingested by a real aggregator "
            "(ldpcollect serve: uvicorn, 1 process, SQLite WAL in a temp folder) over "
            "loopback HTTP beside grr (d = 256), interleaved: each pair is one run of every "
            "arm at one connection count on a fresh server, arm order rotated; then the "
            "statistics steps of one transaction timed in-process on the aggregator's "
            "SQLite engine. Client (Python threads) and server share the 2 vCPUs."
        ),
        "parameters": {
            "reports_per_arm_and_run": args.reports,
            "batch": args.batch,
            "connections": args.connections,
            "pairs": args.pairs,
            "slices_per_run": args.slices,
            "warmup_batches_per_arm_and_server": args.warmup,
            "micro_batches": args.micro_batches,
            "target_ratio_to_grr": TARGET_RATIO,
            "vocabulary": f"{VOCABULARY:,} random strings of 3-12 bytes, Zipf(1.1)",
            "reshuffle": "product default (300 s); see server_lifetimes_s",
        },
        "arms": arms,
        "summary": summary,
        "verdict": verdict,
        "where_the_time_goes": explain(summary, micro),
        "in_process": micro,
        "checks": http["checks"],
        "stored_equals_accepted": all(c["equal"] for c in http["checks"]),
        "server_lifetimes_s": http["server_lifetimes_s"],
        "server_command": http["command"],
        "runs": http["runs"],
        "wall_seconds": time.monotonic() - t_start,
    }
    emit("ingestion_open_domains", result, args.quick, args.output)


if __name__ == "__main__":
    main()
