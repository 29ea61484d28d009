"""A shuffler process killed with SIGKILL while devices upload: every blob it
acknowledged is in its file afterwards, and a restarted store holds exactly those."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

from ldp_aggregator.shuffler.store import BlobStore
from ldp_shared.sealing import to_text
from ldp_simulation.fleet import free_port

CLIENTS = 4
RUN_SECONDS = 1.5
"""At least this long under load; then until :data:`MIN_ACKNOWLEDGED` were acknowledged
(a loaded machine's fsyncs are slow), at most :data:`MAX_RUN_SECONDS`."""
MIN_ACKNOWLEDGED = 60
MAX_RUN_SECONDS = 60.0


def start_shuffler(database: Path, port: int) -> subprocess.Popen[bytes]:
    # the aggregator is unreachable: nothing is forwarded, everything stays held
    command = [sys.executable, "-c", "import sys; from ldp_simulation.cli import main;"
               " sys.exit(main(sys.argv[1:]))", "shuffle", "--aggregator",
               "http://127.0.0.1:9", "--database", str(database), "--port", str(port),
               "--min-batch", "1000000"]  # fmt: skip
    env = {**os.environ, "LDPCOLLECT_SHUFFLER_TOKEN": "a-shuffler-token-0123456789"}
    process = subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz").status_code == 200:
                return process
        except httpx.HTTPError:
            time.sleep(0.1)
    process.kill()
    raise AssertionError("the shuffler did not start")


def test_a_kill_9_loses_no_acknowledged_blob(tmp_path: Path) -> None:
    database = tmp_path / "shuffler.db"
    port = free_port()
    process = start_shuffler(database, port)
    acknowledged: list[bytes] = []
    lock = threading.Lock()
    stop = threading.Event()

    def device(seed: int) -> None:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
            for k in range(100_000):
                if stop.is_set():
                    return
                blob = bytes([1]) + seed.to_bytes(4, "big") + k.to_bytes(8, "big") + bytes(60)
                try:
                    answer = http.post(
                        "/v1/collections/survey/sealed-reports", json={"blobs": [to_text(blob)]}
                    )
                except httpx.HTTPError:
                    return  # died under this request: not acknowledged
                if answer.status_code == 202:
                    with lock:
                        acknowledged.append(blob)

    threads = [threading.Thread(target=device, args=(seed,)) for seed in range(CLIENTS)]
    for thread in threads:
        thread.start()
    time.sleep(RUN_SECONDS)
    deadline = time.monotonic() + MAX_RUN_SECONDS
    while time.monotonic() < deadline:
        with lock:
            if len(acknowledged) >= MIN_ACKNOWLEDGED:
                break
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    assert process.wait(timeout=30) == -signal.SIGKILL
    stop.set()
    for thread in threads:
        thread.join()
    assert len(acknowledged) > 50  # the test did run under load
    store = BlobStore(database)
    try:
        held = [blob for _, blob in store.take("survey", 10**9)]
    finally:
        store.close()
    assert set(acknowledged) <= set(held)
    assert len(held) <= len(acknowledged) + CLIENTS  # at most one in flight per device
