"""Log mode and shuffled collections (docs/log-mode.md, docs/shuffler.md): a shuffler's
batch is opened and judged by the ingest replica, and its new reports are published to
the log like a direct upload's batch, in the same messages; a fold worker stores and
counts them. Against a real three-node JetStream cluster and PostgreSQL."""

from __future__ import annotations

import asyncio
from pathlib import Path

import nats
from fastapi.testclient import TestClient

from ldp_aggregator.app import create_app
from ldp_aggregator.ingest_log.stream import LogChunk, log_settings_of
from ldp_aggregator.storage.collections import load_collection
from ldp_aggregator.storage.engine import make_engine
from ldp_shared.collection import CollectionConfig

from ..conftest import ADMIN, assert_stored_and_recounted, problem, spec_payload
from ..forensics import seeded_requests
from ..shuffler.conftest import MIN_BATCH, SHUFFLER_TOKEN
from ..shuffler.sealing_helpers import post_batch, seal_all
from .cluster import NatsCluster
from .test_log_outcomes import folding, log_settings, stored, wait_stored


async def _messages(servers: list[str], stream: str) -> list[tuple[str, LogChunk]]:
    """The ``Nats-Msg-Id`` and the reports of every message in ``stream``, in order."""
    client = await nats.connect(servers=servers)
    try:
        js = client.jetstream()
        last = (await js.stream_info(stream)).state.last_seq
        found = []
        for seq in range(1, last + 1):
            message = await js.get_msg(stream, seq)
            header = str((message.headers or {}).get("Nats-Msg-Id"))
            found.append((header, LogChunk.decode(message.data or b"")))
        return found
    finally:
        await client.close()


async def _last_seq(servers: list[str], stream: str) -> int:
    client = await nats.connect(servers=servers)
    try:
        return int((await client.jetstream().stream_info(stream)).state.last_seq)
    finally:
        await client.close()


def test_a_shuffled_batch_goes_through_the_log(
    pg_url: str, cluster: NatsCluster, tmp_path: Path
) -> None:
    settings = log_settings(
        pg_url,
        cluster,
        shuffler_token=SHUFFLER_TOKEN,
        sealing_keys_file=str(tmp_path / "keys.json"),
        shuffle_min_batch=MIN_BATCH,
    )
    engine = make_engine(pg_url)
    with TestClient(create_app(settings), raise_server_exceptions=False) as http:
        created = http.post("/v1/collections", json=spec_payload(shuffled=True), headers=ADMIN)
        assert created.status_code == 201, created.text
        config = CollectionConfig.model_validate(created.json())
        reports = [
            r for request in seeded_requests(config, 3, seed=5, smallest=20) for r in request
        ]
        blobs = seal_all(http, "survey", reports)
        first = post_batch(http, "survey", blobs)
        assert first.status_code == 200, first.text
        assert first.json()["accepted"] == len(reports)
        # accepted = in the log: nothing is in the database before a fold worker runs
        assert stored(engine) == 0
        # a shuffler's retry (the same blobs) is deduplicated by the stream: the same message
        again = post_batch(http, "survey", blobs).json()
        assert (again["accepted"], again["duplicate"]) == (0, len(reports))
        # published like a direct upload's batch: one message for the batch's reports
        collection_id = load_collection(engine, "survey").id
        log = log_settings_of(settings)
        servers = [node.url for node in cluster.nodes]
        published = asyncio.run(_messages(servers, log.stream))
        assert len(published) == 1
        header, chunk = published[0]
        assert (header, chunk.collection_id) == (chunk.message_id, collection_id)
        assert sorted(chunk.report_ids) == sorted(r["id"] for r in reports)
        with folding(settings, engine):
            wait_stored(engine, len(reports))
        ids = {r["id"] for r in reports}
        assert assert_stored_and_recounted(engine, "survey", ids) == ids
        metrics = http.get("/metrics").text
        assert 'ldpcollect_shuffled_batches_total{collection="survey"} 2.0' in metrics
        # closed: the whole batch refused before a blob is opened, nothing published
        assert http.post("/v1/collections/survey/close", headers=ADMIN).status_code == 200
        problem(post_batch(http, "survey", blobs), 409, "collection-closed")
        assert asyncio.run(_last_seq(servers, log.stream)) == 1
    engine.dispose()
