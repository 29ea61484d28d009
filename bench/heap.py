"""The server's heap setting (``ldp_aggregator/heap.py``) on and off, in interleaved pairs.

``ldpcollect serve`` and ``fold`` call ``retain_freed_memory()`` at start, so that large
arrays reuse pages the process already has instead of a fresh mapping faulted in page
by page. This script measures what that buys where the arrays are large: each arm is a
child process (``--child on|off``) that builds, in process on a SQLite file of the
aggregator's own code, a ``grr`` (d = 256) and two ``pem`` collections (max_length 12 and
16, ε = 4, default k: 344,064 and 458,752 counters) and times, batch after batch of 1,000
reports, the server's two steps whose arrays grow with the statistics:

* ``decode_reports`` of the batch (checks and the statistics delta);
* the writer's whole transaction (``ReportWriter.write_now``: insert, claim the shard,
  add the delta, commit, truncate the log);

The two arms alternate in ``--pairs`` pairs (order swapped each pair); a pair's ratio is
off ÷ on of the per-batch medians (above 1: the setting helps).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import base_parser, emit, log, sized, start_marker
from ingestion_open_domains import ARMS, MicroArm
from ldp_aggregator.heap import retain_freed_memory
from ldp_shared.codec import decode_reports

ARM_KEYS = ("grr", "pem_l12_e4", "pem_l16_e4")
STEPS = ("decode_reports_ms", "writer_transaction_ms")


def child(setting: str, batches: int) -> dict[str, Any]:
    """One arm's medians per step and collection (``setting``: on or off)."""
    applied = retain_freed_memory() if setting == "on" else False
    times: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory(prefix="ldp-bench-heap-") as tmp:
        arms = [MicroArm(arm, Path(tmp), batches, 1000) for arm in ARMS if arm.key in ARM_KEYS]
        try:
            for k in range(batches):
                for micro in arms:
                    rows = micro.packed[k * 1000 : (k + 1) * 1000]
                    t0 = time.perf_counter()
                    decode_reports(micro.config, rows)
                    decoded = time.perf_counter() - t0
                    pending = micro.pending(k)  # decodes again, as a request does: not timed
                    t0 = time.perf_counter()
                    micro.writer.write_now(pending)
                    written = time.perf_counter() - t0
                    entry = times.setdefault(micro.arm.key, {step: [] for step in STEPS})
                    for step, seconds in zip(STEPS, (decoded, written), strict=True):
                        entry[step].append(1e3 * seconds)
        finally:
            for micro in arms:
                micro.close()
    medians = {
        key: {step: statistics.median(values) for step, values in entry.items()}
        for key, entry in times.items()
    }
    return {"setting": setting, "applied": applied, "medians": medians}


def run_child(setting: str, batches: int) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--child", setting, "--batches", str(batches)],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parent,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def main() -> None:
    parser = base_parser(__doc__ or "")
    parser.add_argument("--pairs", type=int, default=None, help="A/B pairs (default 5)")
    parser.add_argument("--batches", type=int, default=None, help="batches per arm (default 40)")
    parser.add_argument("--child", choices=("on", "off"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    batches = args.batches or sized(40, 10, 2, args)
    if args.child:
        print(json.dumps(child(args.child, batches)))
        return
    pairs = args.pairs or sized(5, 2, 1, args)
    marker = start_marker()
    runs: list[dict[str, Any]] = []
    for pair in range(pairs):
        order = ("off", "on") if pair % 2 == 0 else ("on", "off")
        done = {setting: run_child(setting, batches) for setting in order}
        log(f"pair {pair + 1}/{pairs} done")
        runs.append({"pair": pair, "order": list(order), **done})
    ratios: dict[str, dict[str, Any]] = {}
    for key in ARM_KEYS:
        for step in STEPS:
            values = [
                run["off"]["medians"][key][step] / run["on"]["medians"][key][step] for run in runs
            ]
            ratios.setdefault(key, {})[f"{step}_off_over_on"] = {
                "median": statistics.median(values),
                "min": min(values),
                "max": max(values),
                "per_pair": values,
            }
            for setting in ("on", "off"):
                ratios[key][f"{step}_{setting}_median_of_pairs"] = statistics.median(
                    run[setting]["medians"][key][step] for run in runs
                )
    emit(
        "heap",
        {
            **marker,
            "parameters": {"pairs": pairs, "batches_per_arm": batches, "batch": 1000},
            "applied_on": all(run["on"]["applied"] for run in runs),
            "ratios": ratios,
            "runs": runs,
        },
        args.quick,
        args.output,
    )


if __name__ == "__main__":
    main()
