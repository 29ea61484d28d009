"""A device process for the ledger's crash and concurrency tests (run as a script).

python ledger_worker.py crash LEDGER LOG BLOCK_AT
    Submit batches of 5 reports forever. The transport appends the size of every
    batch that leaves the device to LOG (one line each, fsynced) before it is
    served; at batch BLOCK_AT (0: never) it writes "blocked" to LOG.blocked and
    hangs. The test kills the process with SIGKILL.

python ledger_worker.py limit LEDGER LIMIT GO
    Wait for the file GO, then submit one record at a time under
    DevicePolicy(max_reports_per_collection=LIMIT) until the policy refuses; print
    the number of reports sent.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import httpx

from ldp_client import DevicePolicy, LDPClient, PrivacyPolicyError
from ldp_shared.schema import AttributeSpec, CollectionSpec, ReleasePolicy

if __package__:  # imported by the tests (for SPEC)
    from .fake_aggregator import FakeAggregator
else:  # run as a script: its folder is on sys.path
    from fake_aggregator import FakeAggregator

SPEC = CollectionSpec(
    name="plain",
    epsilon=2.0,
    attributes=[AttributeSpec(name="browser", domain=["firefox", "chrome", "safari", "other"])],
    release=ReleasePolicy(min_reports=1),
)
RECORD = {"browser": "chrome"}


def crash(ledger: str, log: str, block_at: int) -> None:
    server = FakeAggregator()
    server.add(SPEC)
    batches = 0

    def handler(request: httpx.Request) -> httpx.Response:
        nonlocal batches
        if request.method == "POST":
            batches += 1
            size = request.content.count(b'"config_hash"')
            descriptor = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            os.write(descriptor, f"{size}\n".encode())
            os.fsync(descriptor)
            os.close(descriptor)
            if batches == block_at:
                Path(log + ".blocked").write_text("blocked")
                time.sleep(3600)
        return server(request)

    with LDPClient(
        "http://aggregator.test", transport=httpx.MockTransport(handler), ledger=ledger
    ) as client:
        while True:
            client.submit("plain", [RECORD] * 5)


def limit(ledger: str, max_reports: int, go: str) -> None:
    server = FakeAggregator()
    server.add(SPEC)
    policy = DevicePolicy(max_reports_per_collection=max_reports)
    sent = 0
    with LDPClient(
        "http://aggregator.test", transport=server.transport, ledger=ledger, policy=policy
    ) as client:
        client.get_config("plain")
        Path(go + f".ready-{os.getpid()}").write_text("ready")
        while not Path(go).exists():
            time.sleep(0.005)
        for _ in range(10 * max_reports):
            try:
                sent += client.submit("plain", [RECORD]).accepted
            except PrivacyPolicyError:
                break
    print(sent)


if __name__ == "__main__":
    mode, *args = sys.argv[1:]
    if mode == "crash":
        crash(args[0], args[1], int(args[2]))
    else:
        limit(args[0], int(args[1]), args[2])
