"""Every script in ``bench/`` runs at its tiny size and prints one JSON object.

``BENCH_TINY=1`` (``bench/_common.py``) makes each script go through all its steps at
the smallest sizes, so that none can rot unseen (an import that moved, a renamed
argument). Only that it runs and what it prints are checked, never a timing. The
scripts run with this environment's python: where one needs the peers' environment
(``bench/.venv-peers``) or ``../shared/data`` and they are absent, it says so in its
JSON and still exits 0. They run a few at a time, each in its own process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
SCRIPTS = sorted(path.stem for path in BENCH.glob("*.py") if not path.name.startswith("_"))
WORKERS = 3
TIMEOUT = 100.0
ONE_THREAD = {  # several scripts at once on a small machine: no BLAS thread pools
    name: "1"
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")
}


@dataclass(frozen=True)
class Run:
    returncode: int
    stdout: str
    stderr: str
    seconds: float


def _run(name: str) -> Run:
    env = {**os.environ, "BENCH_TINY": "1", "PYTHONDONTWRITEBYTECODE": "1", **ONE_THREAD}
    start = time.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, str(BENCH / f"{name}.py")],
            cwd=BENCH.parent,
            env=env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as expired:
        return Run(-1, "", f"timed out after {TIMEOUT} s: {expired.stderr!r}", TIMEOUT)
    return Run(done.returncode, done.stdout, done.stderr, time.perf_counter() - start)


@cache
def _all_runs() -> dict[str, Run]:
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        return dict(zip(SCRIPTS, pool.map(_run, SCRIPTS), strict=True))


def test_every_script_is_covered() -> None:
    assert len(SCRIPTS) >= 20
    assert "perturbation" in SCRIPTS and "per_record" in SCRIPTS


@pytest.mark.parametrize("name", SCRIPTS)
def test_script_runs_tiny_and_prints_json(name: str) -> None:
    run = _all_runs()[name]
    assert run.returncode == 0, f"{name} exited {run.returncode}:\n{run.stderr[-3000:]}"
    document = json.loads(run.stdout)
    assert isinstance(document, dict) and document, f"{name} printed no JSON object"
