"""The shuffler's part played by hand, for tests of the aggregator's side: seal wire
reports to a collection's published key, post the blobs as one batch with the shuffler's
token (no shuffler app needed)."""

from __future__ import annotations

import json
from typing import Any

import httpx
from fastapi.testclient import TestClient

from ldp_shared.sealing import SealingKey, seal_report, to_text
from ldp_shared.wire.reports import MAX_BATCH

from .conftest import SHUFFLER


def seal_all(client: TestClient, name: str, reports: list[dict[str, Any]]) -> list[str]:
    """Each wire report sealed to ``name``'s published key (unpadded base64url)."""
    published = client.get(f"/v1/collections/{name}/sealing-key")
    assert published.status_code == 200, published.text
    info = published.json()
    key = SealingKey.published(info["key_id"], info["public_key"])
    return [
        to_text(seal_report(json.dumps(r).encode(), key, name, info["config_hash"]))
        for r in reports
    ]


def post_batch(client: TestClient, name: str, blobs: list[str]) -> httpx.Response:
    """One shuffled batch, as the shuffler posts it."""
    return client.post(
        f"/v1/collections/{name}/shuffled-batches", json={"blobs": blobs}, headers=SHUFFLER
    )


def submit_sealed(client: TestClient, name: str, reports: list[dict[str, Any]]) -> int:
    """Seal ``reports`` and post them in batches of at most :data:`MAX_BATCH`; the reports
    the aggregator accepted."""
    blobs = seal_all(client, name, reports)
    accepted = 0
    for start in range(0, len(blobs), MAX_BATCH):
        answer = post_batch(client, name, blobs[start : start + MAX_BATCH])
        assert answer.status_code == 200, answer.text
        accepted += int(answer.json()["accepted"])
    return accepted
