"""wrk, the load generator of ``bench/ingestion.py``: run it, read its JSON summary.

wrk (https://github.com/wg/wrk, Debian package ``wrk``) is an event-driven C client;
``bench/wrk/reports.lua`` builds each request's body with fresh report ids and prints
one ``WRK_JSON {...}`` line when done. Several wrk processes can run at once, one per
server (replicas); each gets its own id tag. :func:`measure` adds what wrk cannot see:
the servers' CPU time (``utime + stime`` of ``/proc/<pid>/stat``) and wrk's own, which
shows whether the load generator could have been the bottleneck.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _common import log

SCRIPT = Path(__file__).resolve().parent / "wrk" / "reports.lua"
MARKER = "WRK_JSON "
REQUEST_TIMEOUT = "30s"
_TAGS = itertools.count()
_TAG_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def wrk_path() -> str | None:
    """The ``wrk`` executable on PATH, or ``None``."""
    return shutil.which("wrk")


def wrk_version(path: str) -> str:
    """wrk's first version line (``wrk -v`` exits 1 after printing it)."""
    out = subprocess.run([path, "-v"], capture_output=True, text=True, check=False)
    return (out.stdout or out.stderr).splitlines()[0].strip()


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used so far."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime


@dataclass(frozen=True)
class Target:
    """One server to load: its process id and its collection's upload URL."""

    pid: int
    url: str
    connections: int


def _tag() -> str:
    """Four id characters no other wrk process of this run uses."""
    n, out = next(_TAGS), []
    for _ in range(4):
        n, d = divmod(n, 64)
        out.append(_TAG_ALPHABET[d])
    return "".join(out)


def run_wrk(
    wrk: str,
    targets: list[Target],
    *,
    seconds: float,
    config_hash: str,
    bits: str,
    batch: int,
    threads: int = 1,
) -> tuple[list[dict[str, Any]], float]:
    """One wrk process per target, all at once; their summaries and wrk's CPU seconds."""
    processes = []
    for target in targets:
        command = [
            wrk,
            f"-t{min(threads, target.connections)}",
            f"-c{target.connections}",
            f"-d{max(1, round(seconds))}s",  # wrk takes whole seconds
            f"--timeout={REQUEST_TIMEOUT}",
            "-s",
            str(SCRIPT),
            target.url,
            "--",
            config_hash,
            bits,
            str(batch),
            _tag(),
        ]
        processes.append(subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    summaries: list[dict[str, Any]] = []
    wrk_cpu = 0.0
    for process in processes:
        assert process.stdout is not None and process.stderr is not None
        out, err = process.stdout.read().decode(), process.stderr.read().decode()
        _, status, usage = os.wait4(process.pid, 0)  # reaps it, with its CPU time
        process.returncode = os.waitstatus_to_exitcode(status)
        wrk_cpu += usage.ru_utime + usage.ru_stime
        lines = [line for line in out.splitlines() if line.startswith(MARKER)]
        if process.returncode != 0 or not lines:
            raise RuntimeError(f"wrk failed: {err.strip() or out[-500:]}")
        summaries.append(json.loads(lines[-1][len(MARKER) :]))
    return summaries, wrk_cpu


def measure(
    wrk: str,
    targets: list[Target],
    *,
    seconds: float,
    warmup: float,
    config_hash: str,
    bits: str,
    batch: int,
    threads: int = 1,
) -> dict[str, Any]:
    """Warm up, then load every target at once for ``seconds``: requests/s and reports/s
    summed over the targets, latency (the worst target's, percentile by percentile),
    server and wrk CPU seconds per request."""
    total = sum(t.connections for t in targets)

    def load(duration: float) -> tuple[list[dict[str, Any]], float]:
        return run_wrk(
            wrk,
            targets,
            seconds=duration,
            config_hash=config_hash,
            bits=bits,
            batch=batch,
            threads=threads,
        )

    if warmup > 0:
        load(warmup)
    before = [cpu_seconds(t.pid) for t in targets]
    summaries, wrk_cpu = load(seconds)
    server_cpu = sum(cpu_seconds(t.pid) for t in targets) - sum(before)
    requests = sum(s["requests"] for s in summaries)
    per_second = sum(s["requests"] / s["duration_s"] for s in summaries)
    duration = max(s["duration_s"] for s in summaries)
    keys = ("mean", "p50", "p90", "p99", "max")
    latency = {k: max(s["latency_ms"][k] for s in summaries) for k in keys}
    non_2xx = sum(s["non_2xx"] for s in summaries)
    socket_errors = sum(sum(s["socket_errors"].values()) for s in summaries)
    log(
        f"[wrk] {total} connection(s) x {len(targets)} target(s), batch {batch}: "
        f"{per_second:,.0f} requests/s, p50 {latency['p50']:.1f} ms, p99 {latency['p99']:.1f} ms"
    )
    return {
        "connections": total,
        "targets": len(targets),
        "batch": batch,
        "seconds": duration,
        "requests": requests,
        "requests_per_second": per_second,
        "reports_per_second": per_second * batch,
        "latency_ms": latency,
        "non_2xx": non_2xx,
        "socket_errors": socket_errors,
        "reports_answered_2xx": (requests - non_2xx) * batch,
        "reports_sent": sum(s["reports_sent"] for s in summaries),
        "server_cpu_seconds": server_cpu,
        "server_cpu_ms_per_request": 1e3 * server_cpu / max(requests, 1),
        "wrk_cpu_seconds": wrk_cpu,
        "wrk_cpu_share_of_one_core": wrk_cpu / duration,
        "per_target": summaries if len(summaries) > 1 else None,
    }
