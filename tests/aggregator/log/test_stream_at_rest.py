"""What the log's files tell an attacker who reads them after the reports were folded.

A JetStream file store writes each message as a record: length, sequence number,
publish time (nanoseconds since the epoch), subject, headers (our ``Nats-Msg-Id``),
payload (the JSON of one request's reports: their ids and packed bits), checksum. These tests read a
node's store directory byte for byte once every report is folded, and check what is
still there for each way an operator can run the stream (docs/privacy-at-rest.md):

* ``limits`` retention: every report is still there, with its id, its bits, its
  message's sequence number and publish time (the reports of one request share them),
  until ``log_max_age_seconds``;
* ``workqueue`` retention (the default): the stream deletes a message once folded;
  once every message of a block file is deleted the file is removed, and nothing of a
  report is found (what a block that still holds unfolded messages keeps of its
  deleted ones is not measured here);
* ``workqueue`` on three nodes (3 replicas): the stream's RAFT log, in the same store
  directory, still holds the last messages (ids, bits, publish times) after folding;
* ``jetstream { cipher }``: the blocks are encrypted, no id is found.
"""

from __future__ import annotations

import asyncio
import base64
import json
import struct
import time
from pathlib import Path
from typing import Literal

import nats
import pytest
from fastapi.testclient import TestClient

from ldp_aggregator.app import create_app
from ldp_aggregator.ingest_log.stream import DEFAULT_STREAM, LogChunk
from ldp_aggregator.settings import Settings
from ldp_aggregator.storage.engine import make_engine
from ldp_shared.collection import CollectionConfig

from ..conftest import ADMIN, ADMIN_TOKEN, ANALYST_TOKEN, spec_payload
from ..forensics import seeded_requests
from .cluster import nats_cluster
from .conftest import require_nats_server
from .test_log_outcomes import PATIENCE, folding, wait_stored

REPORTS = 200
CIPHER_KEY = "a-test-key-never-used-elsewhere-0123456789"


async def _stream_messages(urls: list[str]) -> int:
    client = await nats.connect(urls, connect_timeout=5)
    try:
        info = await client.jetstream(timeout=5).stream_info(DEFAULT_STREAM)
        return int(info.state.messages)
    finally:
        await client.close()


def wait_stream_empty(urls: list[str]) -> None:
    """Until the stream holds no message (every ack of a work queue reached it), at most
    ``PATIENCE`` seconds."""
    deadline = time.monotonic() + PATIENCE
    while (left := asyncio.run(_stream_messages(urls))) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert left == 0, f"{left} messages still in the stream"


def store_bytes(store: Path) -> bytes:
    return b"".join(path.read_bytes() for path in sorted(store.rglob("*")) if path.is_file())


def reports_in(blob: bytes) -> dict[str, bytes]:
    """Every report an attacker decodes from the messages' payloads found in ``blob``:
    its packed bits by id."""
    found: dict[str, bytes] = {}
    decoder = json.JSONDecoder()
    start = blob.find(b'{"c":')
    while start != -1:
        try:
            _, end = decoder.raw_decode(blob[start:].decode("latin-1"))
            chunk = LogChunk.decode(blob[start : start + end])
        except ValueError:  # a record cut by a block's end, or bytes that only look so
            start = blob.find(b'{"c":', start + 1)
            continue
        size = len(chunk.bits) // len(chunk.report_ids)
        for k, report_id in enumerate(chunk.report_ids):
            found[report_id] = chunk.bits[k * size : (k + 1) * size]
        start = blob.find(b'{"c":', start + end)
    return found


def publish_times(blob: bytes, subject: bytes) -> list[int]:
    """The publish times (ns) of the records of ``subject`` found in ``blob``: the eight
    bytes before the subject's two-byte length are the record's time."""
    times: list[int] = []
    start = blob.find(subject)
    while start != -1:
        if start >= 10:
            (length,) = struct.unpack_from("<H", blob, start - 2)
            if length == len(subject):
                times.append(struct.unpack_from("<q", blob, start - 10)[0])
        start = blob.find(subject, start + 1)
    return times


@pytest.mark.parametrize(
    ("retention", "cipher", "nodes"),
    [
        ("limits", None, 1),
        ("workqueue", None, 1),
        ("limits", CIPHER_KEY, 1),
        ("workqueue", None, 3),
    ],
)
def test_what_the_stream_files_keep_after_folding(
    pg_url: str,
    tmp_path: Path,
    retention: Literal["limits", "workqueue"],
    cipher: str | None,
    nodes: int,
) -> None:
    require_nats_server()
    with nats_cluster(tmp_path / "nats", nodes, cipher) as cluster:
        settings = Settings(
            database_url=pg_url,
            admin_token=ADMIN_TOKEN,
            analyst_token=ANALYST_TOKEN,
            upload_rate_per_collection=0,
            log_url=cluster.url,
            log_replicas=nodes,
            log_retention=retention,
        )
        engine = make_engine(pg_url)
        before = time.time_ns()
        with TestClient(create_app(settings)) as http:
            created = http.post("/v1/collections", json=spec_payload(), headers=ADMIN)
            config = CollectionConfig.model_validate(created.json())
            requests = seeded_requests(config, REPORTS // 20, seed=5, largest=20, smallest=20)
            for items in requests:
                assert http.post("/v1/collections/survey/reports", json={"reports": items}).json()[
                    "accepted"
                ] == len(items)
            with folding(settings, engine):
                wait_stored(engine, REPORTS)
                if retention == "workqueue":
                    wait_stream_empty(
                        [node.url for node in cluster.nodes]
                    )  # the acks reached the stream
        after = time.time_ns()
        engine.dispose()
        cluster.stop()  # what a copied disk holds once the server is gone
        blob = store_bytes(cluster.nodes[0].store)  # each node holds a whole replica

    ids = [r["id"].encode() for items in requests for r in items]
    found = [k for k, report_id in enumerate(ids) if report_id in blob]
    found_ids = len(found)
    decoded = reports_in(blob)
    found_bits = sum(
        decoded.get(r["id"]) == base64.b64decode(r["bits"]) for items in requests for r in items
    )
    times = publish_times(blob, b"ldpcollect.reports.1")
    print(
        f"{retention} cipher={cipher is not None} nodes={nodes}: {len(blob):,} bytes;"
        f" {found_ids}/{REPORTS} ids,"
        f" {found_bits}/{REPORTS} bits, {len(times)} publish times; positions {found[:3]}..."
    )
    if retention == "workqueue" and nodes > 1:
        # a replicated stream's RAFT log, in the same store directory, still holds the
        # last messages, with their times, until it is compacted
        assert 0 < found_ids < REPORTS
        assert found_bits == found_ids
        assert len(times) >= found_ids // 20
        assert all(before <= t <= after for t in times)
        return
    if cipher is not None or retention == "workqueue":
        assert found_ids == found_bits == 0
        assert times == []
        return
    # without a cipher, the folded reports are all still readable in the files ...
    assert found_ids == found_bits == REPORTS
    # ... with the instant each request's message was published, to the nanosecond
    assert len(times) >= len(requests)
    assert all(before <= t <= after for t in times)
