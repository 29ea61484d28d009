"""The shuffler's cost (issue 22): the shuffled path against the direct one, same run.

1. **Sealing and opening.** Per report (an OUE d = 16 + GRR d = 8 report's JSON, as the
   SDK seals it): HPKE seal on the device (:func:`ldp_shared.sealing.seal_report`) and
   open on the aggregator (:func:`ldp_shared.sealing.open_report`), µs per report, over
   ``reports`` reports, median of ``repeats`` runs.
2. **Through the shuffler, end to end.** ``ldpcollect serve`` (SQLite in a temporary
   folder) and ``ldpcollect shuffle`` as real processes on loopback. Interleaved A/B
   rounds of ``n`` reports each, uploaded 100 per request by the SDK: A, the direct path
   to an unshuffled collection (done when the last upload is answered, i.e. stored and
   counted); B, ``submit_shuffled`` to a shuffled collection of the same spec, with the
   shuffler's ``--min-batch n`` (done when the aggregator's status counts all ``n``, polled
   every 10 ms). Reported: reports/s of each path per round, and the added latency: B's
   time to counted minus A's, per pair (the shuffler's ``--interval`` is 60 s, so B is
   forwarded on the wake after its last upload, not by the timer).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from _common import base_parser, emit, log, sized, start_marker
from _server import running_server
from ldp_client import LDPClient
from ldp_shared.collection import build_config
from ldp_shared.schema import CollectionSpec
from ldp_shared.sealing import SealingKey, open_report, seal_report
from ldp_simulation.fleet import free_port, stop_process, wait_ready

VALUES16 = [f"v{k}" for k in range(16)]
VALUES8 = [f"w{k}" for k in range(8)]


def spec(name: str, shuffled: bool) -> dict[str, Any]:
    return {
        "name": name,
        "epsilon": 4.0,
        "shuffled": shuffled,
        "attributes": [
            {"name": "a", "domain": VALUES16, "mechanism": "oue"},
            {"name": "b", "domain": VALUES8, "mechanism": "grr"},
        ],
    }


def records(n: int, seed: int) -> list[dict[str, str]]:
    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, 16, n), rng.integers(0, 8, n)
    return [{"a": VALUES16[i], "b": VALUES8[j]} for i, j in zip(a, b, strict=True)]


def crypto_costs(reports: int, repeats: int) -> dict[str, Any]:
    config = build_config(CollectionSpec.model_validate(spec("costs", True)))
    with LDPClient("http://unused") as sdk:
        sdk._configs["costs"] = config  # privatize offline: no server needed
        made = sdk.privatize_many("costs", records(reports, 0))
    plaintexts = [r.model_dump_json().encode() for r in made]
    key = SealingKey.generate()
    public = SealingKey(public=key.public)
    keys = {key.key_id: key}
    seal_us, open_us = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        blobs = [seal_report(p, public, "costs", config.config_hash) for p in plaintexts]
        seal_us.append((time.perf_counter() - start) / reports * 1e6)
        start = time.perf_counter()
        for blob in blobs:
            open_report(blob, keys, "costs", config.config_hash)
        open_us.append((time.perf_counter() - start) / reports * 1e6)
    return {
        "reports": reports,
        "repeats": repeats,
        "report_json_bytes": len(plaintexts[0]),
        "blob_bytes": len(blobs[0]),
        "seal_us_per_report_median": statistics.median(seal_us),
        "open_us_per_report_median": statistics.median(open_us),
        "seal_us_per_report": seal_us,
        "open_us_per_report": open_us,
    }


def counted(http: httpx.Client, name: str, admin: dict[str, str]) -> int:
    return int(http.get(f"/v1/collections/{name}/status", headers=admin).json()["n_reports"])


def end_to_end(n: int, rounds: int) -> dict[str, Any]:
    token = "bench-shuffler-token-0123456789"
    with tempfile.TemporaryDirectory(prefix="ldp-bench-shuffler-") as tmp:
        os.environ.update(
            LDPCOLLECT_SHUFFLER_TOKEN=token,
            LDPCOLLECT_SHUFFLE_MIN_BATCH=str(n),
            LDPCOLLECT_SEALING_KEYS_FILE=str(Path(tmp) / "keys.json"),
        )
        with running_server() as server:
            port = free_port()
            command = [sys.executable, "-m", "ldp_aggregator.cli", "shuffle", "--aggregator",
                       server.base_url, "--database", str(Path(tmp) / "shuffler.db"),
                       "--port", str(port), "--min-batch", str(n), "--interval", "60"]  # fmt: skip
            env = {**os.environ, "LDPCOLLECT_SHUFFLER_TOKEN": token}
            shuffler = subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL)
            shuffler_url = f"http://127.0.0.1:{port}"
            try:
                wait_ready(shuffler_url, shuffler, None, what="the shuffler")
                return _rounds(server, shuffler_url, n, rounds)
            finally:
                stop_process(shuffler)


def _rounds(server: Any, shuffler_url: str, n: int, rounds: int) -> dict[str, Any]:
    admin = server.admin()
    with LDPClient(server.base_url, token=server.admin_token) as sdk:
        for name, shuffled in (("direct", False), ("shuffled", True)):
            sdk.create_collection(spec(name, shuffled))
    direct_s: list[float] = []
    shuffled_s: list[float] = []
    with LDPClient(server.base_url) as sdk, httpx.Client(base_url=server.base_url) as http:
        for k in range(rounds):
            for path in ("direct", "shuffled") if k % 2 == 0 else ("shuffled", "direct"):
                made = sdk.privatize_many(path, records(n, k))
                before = counted(http, path, admin)
                start = time.perf_counter()
                if path == "direct":
                    sdk.submit_reports(path, made, batch_size=100)
                else:
                    sdk.submit_shuffled(path, made, shuffler_url=shuffler_url, batch_size=100)
                while counted(http, path, admin) < before + n:
                    time.sleep(0.01)
                (direct_s if path == "direct" else shuffled_s).append(time.perf_counter() - start)
            log(f"round {k}: direct {direct_s[-1]:.3f} s, shuffled {shuffled_s[-1]:.3f} s")
    added = [s - d for s, d in zip(shuffled_s, direct_s, strict=True)]
    return {
        "reports_per_round": n,
        "rounds": rounds,
        "direct_reports_per_s": [n / s for s in direct_s],
        "shuffled_reports_per_s": [n / s for s in shuffled_s],
        "direct_reports_per_s_median": statistics.median(n / s for s in direct_s),
        "shuffled_reports_per_s_median": statistics.median(n / s for s in shuffled_s),
        "added_latency_s": added,
        "added_latency_s_median": statistics.median(added),
    }


def main() -> None:
    parser = base_parser(__doc__ or "")
    args = parser.parse_args()
    result: dict[str, Any] = start_marker()
    reports = sized(5000, 500, 50, args)
    result["sealing"] = crypto_costs(reports, sized(5, 3, 1, args))
    log(f"sealing: {result['sealing']['seal_us_per_report_median']:.1f} µs/report")
    n, rounds = sized(2000, 500, 100, args), sized(6, 2, 2, args)
    result["end_to_end"] = end_to_end(n, rounds)
    emit("shuffler", result, args.quick, args.output)


if __name__ == "__main__":
    main()
