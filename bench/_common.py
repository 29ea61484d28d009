"""Helpers shared by the benchmark scripts: machine info, timing, JSON output.

Every benchmark prints exactly one JSON object to stdout and writes the same object to
``bench/results/<name>.json`` (``<name>-quick.json`` for ``--quick`` smoke runs, which
are not committed).

``BENCH_TINY=1`` in the environment (or ``--tiny``) runs a script at the smallest size
that still goes through every step, in a few seconds: ``tests/bench`` runs every script
so, to see that none has rotted. It implies ``--quick``; its figures mean nothing.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.metadata
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
RESULTS_DIR = BENCH_DIR / "results"
DATA_DIR = REPO_ROOT.parent / "shared" / "data"
TINY_RESULTS_DIR = Path(tempfile.gettempdir()) / "ldpcollect-bench-tiny"
"""Where tiny runs write their JSON (never into ``bench/results``)."""


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _memory_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return None


def _git_commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return out.stdout.strip() or None


def machine_info() -> dict[str, Any]:
    """What the numbers were measured on."""
    affinity = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    return {
        "cpu_count": os.cpu_count(),
        "cpus_usable": len(affinity) if affinity is not None else None,
        "cpu_model": _cpu_model(),
        "memory_gib": _memory_gib(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        # which environment ran it, without this machine's path
        "python_environment": Path(sys.prefix).name,
        "numpy": np.__version__,
        "randomgen": _version("randomgen"),
        "ldpcollect": _version("ldpcollect"),
        "pure_ldp": _version("pure-ldp"),
        "multi_freq_ldpy": _version("multi-freq-ldpy"),
        "numba": _version("numba"),
        "diffprivlib": _version("diffprivlib"),
        "opendp": _version("opendp"),
        "git_commit": _git_commit(),
        "load_average_1_5_15": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "note": (
            "a shared 2-vCPU virtual machine: other sessions may run at the same time, "
            "see load_average; timings are the best and the median of several repeats"
        ),
    }


def tiny() -> bool:
    """Whether this is a tiny run (``BENCH_TINY=1``): every step, the smallest sizes."""
    return os.environ.get("BENCH_TINY", "") not in ("", "0")


class _Parser(argparse.ArgumentParser):
    """Parses ``--tiny`` (or ``BENCH_TINY=1``) as ``--quick`` plus ``tiny``."""

    def parse_args(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        parsed = super().parse_args(*args, **kwargs)
        if parsed.tiny or tiny():
            os.environ["BENCH_TINY"] = "1"  # for the scripts' child processes too
            parsed.tiny = parsed.quick = True
        return parsed


def sized(normal: Any, quick: Any, tiny_size: Any, args: Any) -> Any:
    """The size of a run: ``tiny_size`` when tiny, ``quick`` with ``--quick``, else ``normal``."""
    if getattr(args, "tiny", False):
        return tiny_size
    return quick if args.quick else normal


def base_parser(description: str) -> argparse.ArgumentParser:
    parser = _Parser(description=description)
    parser.add_argument(
        "--quick", action="store_true", help="small smoke run (a few seconds); not committed"
    )
    parser.add_argument(
        "--tiny",
        action="store_true",
        help="the smallest run through every step (as BENCH_TINY=1; implies --quick)",
    )
    parser.add_argument(
        "--output",
        type=Path,
        default=None,
        help="where to write the JSON (default bench/results/<name>[-quick].json)",
    )
    return parser


def command_line() -> str:
    """The command that produced a result, relative to the repository root."""
    script = Path(sys.argv[0]).resolve()
    try:
        shown = str(script.relative_to(REPO_ROOT))
    except ValueError:
        shown = str(script)
    return " ".join(["python", shown, *sys.argv[1:]])


def _clean(value: Any) -> Any:
    """JSON-safe: numpy scalars to Python, non-finite floats to None."""
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    if isinstance(value, np.ndarray):
        return [_clean(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def emit(name: str, result: dict[str, Any], quick: bool, output: Path | None) -> Path:
    """Print the result as one JSON object and write it to ``bench/results``."""
    document = {
        "benchmark": name,
        "load_average_at_start": result.pop("_load_at_start", None),
        "quick": quick,
        "command": command_line(),
        "started_utc": result.pop("_started", None),
        "finished_utc": utc_now(),
        "machine": machine_info(),
        **result,
    }
    text = json.dumps(_clean(document), indent=2, allow_nan=False)
    results = TINY_RESULTS_DIR if tiny() else RESULTS_DIR
    path = output or results / (f"{name}-quick.json" if quick else f"{name}.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(text + "\n")
    tmp.replace(path)
    print(text)
    return path


def start_marker() -> dict[str, Any]:
    """Keys for :func:`emit`: when the run started and the machine's load then."""
    load = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    return {"_started": utc_now(), "_load_at_start": load}


def utc_now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def timed(fn: Callable[[], Any], repeats: int = 1) -> tuple[list[float], Any]:
    """Wall-clock seconds of ``repeats`` calls of ``fn`` and the last call's result."""
    times: list[float] = []
    result: Any = None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return times, result


def summary(times: list[float], records: int) -> dict[str, Any]:
    """Timings of ``records`` records: ``seconds_per_100k`` from the best repeat, the
    median's beside it."""
    best, med = min(times), statistics.median(times)
    return {
        "records_timed": records,
        "repeats": len(times),
        "seconds_all": [round(t, 6) for t in times],
        "seconds_per_100k": best / records * 1e5,
        "seconds_per_100k_median": med / records * 1e5,
        "microseconds_per_record": best / records * 1e6,
    }


def log(message: str) -> None:
    """Progress on stderr (stdout carries only the JSON)."""
    print(message, file=sys.stderr, flush=True)


def zipf_frequencies(d: int, s: float = 1.1) -> np.ndarray:
    """``f_v ∝ 1/(v+1)^s``: a Zipf-like distribution over ``d`` values."""
    weights = 1.0 / np.arange(1, d + 1, dtype=np.float64) ** s
    return weights / weights.sum()
