"""The ledger across processes: a device killed mid-run, two devices sharing one file.

The device processes are ``ledger_worker.py`` run as scripts.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ldp_client import LDPClient, Ledger

from .fake_aggregator import FakeAggregator
from .ledger_worker import SPEC

WORKER = Path(__file__).with_name("ledger_worker.py")
DEADLINE = 120.0  # seconds before a stuck worker fails the test (not a performance bound)


def start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WORKER), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for(condition: Callable[[], bool], process: subprocess.Popen[str]) -> None:
    """Poll ``condition`` until it holds; fail if the worker died or the deadline passed."""
    deadline = time.monotonic() + DEADLINE
    while not condition():
        if process.poll() is not None:
            pytest.fail(f"worker ended early ({process.returncode}): {process.stderr.read()}")
        if time.monotonic() > deadline:
            process.kill()
            pytest.fail("worker never reached the awaited state")
        time.sleep(0.01)


def sent_reports(log: Path) -> int:
    """Reports that left the device: the batch sizes the worker's transport logged."""
    lines = log.read_text().split("\n")[:-1]  # complete lines only
    return sum(int(line) for line in lines)


@pytest.mark.parametrize("block_at", [3, 0], ids=["killed-while-sending", "killed-anywhere"])
def test_a_device_killed_mid_run_leaves_a_sound_ledger_that_counts_every_sent_report(
    tmp_path: Path, block_at: int
):
    ledger_path, log = tmp_path / "ledger.sqlite3", tmp_path / "sent.log"
    worker = start("crash", str(ledger_path), str(log), str(block_at))
    if block_at:
        wait_for(lambda: Path(f"{log}.blocked").exists(), worker)
    else:
        wait_for(lambda: log.exists() and log.read_text().count("\n") >= 40, worker)
    worker.send_signal(signal.SIGKILL)
    worker.communicate(timeout=DEADLINE)
    assert worker.returncode == -signal.SIGKILL

    sent = sent_reports(log)
    epsilon = FakeAggregator().add(SPEC).epsilon
    assert sent >= (15 if block_at else 200)
    with Ledger(ledger_path) as ledger:
        assert ledger.inconsistencies() == []
        spent = ledger.spending("plain")
        # charged before sending: at least everything sent (a crash may over-count)
        assert spent.reports >= sent and spent.charged >= sent
        assert spent.epsilon >= sent * epsilon * (1 - 1e-12)
        if block_at:
            assert spent.reports == sent  # nothing was made but not sent
        # the file is not left locked: another device run can charge and send
        server = FakeAggregator()
        server.add(SPEC)
        with LDPClient("http://a.test", transport=server.transport, ledger=ledger) as client:
            client.submit("plain", [{"browser": "safari"}] * 5)
        assert ledger.spending("plain").reports == spent.reports + 5


def test_two_processes_sharing_a_ledger_never_pass_the_report_limit(tmp_path: Path):
    ledger_path, go = tmp_path / "ledger.sqlite3", tmp_path / "go"
    limit = 25
    workers = [start("limit", str(ledger_path), str(limit), str(go)) for _ in range(2)]
    for worker in workers:
        wait_for(lambda w=worker: Path(f"{go}.ready-{w.pid}").exists(), worker)
    go.write_text("go")
    sent = []
    for worker in workers:
        out, err = worker.communicate(timeout=DEADLINE)
        assert worker.returncode == 0, err
        sent.append(int(out))
    # each worker alone would send up to 10·limit: together they stop at the limit exactly
    assert sum(sent) == limit
    with Ledger(ledger_path) as ledger:
        assert ledger.spending("plain").reports == limit
        assert ledger.inconsistencies() == []
