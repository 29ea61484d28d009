"""POST /v1/collections/{name}/reports: outcomes, idempotent retries, nothing half-written."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from ldp_aggregator.problems import READABLE_JSON_DEPTH
from ldp_shared.collection import CollectionConfig, build_config
from ldp_shared.schema import CollectionSpec
from ldp_shared.wire.reports import MAX_BATCH, encode_bits

from .conftest import Snapshot, packed_reports, report_dicts, snapshot, spec_payload
from .test_api_collections import slug

JSON = {"content-type": "application/json"}


def upload(client: TestClient, items: list[dict[str, str]], name: str = "survey") -> Any:
    return client.post(f"/v1/collections/{name}/reports", json={"reports": items})


def test_upload_and_outcomes(client: TestClient, engine: Engine, config: CollectionConfig) -> None:
    items = report_dicts(config, packed_reports(config, 120))
    response = upload(client, items)
    assert response.status_code == 200
    body = response.json()
    assert (body["accepted"], body["duplicate"], body["rejected"]) == (120, 0, 0)
    assert [o["id"] for o in body["outcomes"]] == [r["id"] for r in items]
    state = snapshot(engine, "survey")
    assert state.n_reports == state.rows == 120


def test_a_retried_batch_counts_once(
    client: TestClient, engine: Engine, config: CollectionConfig
) -> None:
    items = report_dicts(config, packed_reports(config, 30))
    upload(client, items)
    before = snapshot(engine, "survey")
    again = upload(client, items).json()
    assert (again["accepted"], again["duplicate"]) == (0, 30)
    assert {o["status"] for o in again["outcomes"]} == {"duplicate"}
    assert snapshot(engine, "survey") == before


def test_one_bad_report_leaves_the_others_stored(
    client: TestClient, engine: Engine, config: CollectionConfig
) -> None:
    items = report_dicts(config, packed_reports(config, 5))
    items[2] = {**items[2], "bits": "@@@@"}
    body = upload(client, items).json()
    assert [o["status"] for o in body["outcomes"]] == ["accepted"] * 2 + ["rejected"] + [
        "accepted"
    ] * 2
    assert body["outcomes"][2]["reason"] == "bits are not valid base64"
    assert snapshot(engine, "survey").rows == snapshot(engine, "survey").n_reports == 4


@pytest.fixture
def seeded(client: TestClient, engine: Engine, config: CollectionConfig) -> Iterator[Snapshot]:
    """The collection holds 25 reports; yields its state to compare against."""
    upload(client, report_dicts(config, packed_reports(config, 25, seed=5)))
    before = snapshot(engine, "survey")
    assert before.n_reports == before.rows == 25
    yield before
    assert snapshot(engine, "survey") == before, "a bad input changed the collection"


def _other_hash() -> str:
    other = build_config(CollectionSpec.model_validate(spec_payload(epsilon=3.0)))
    return other.config_hash


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda r: {**r, "bits": encode_bits(b"\x00\x00")}, "wrong length"),
        (lambda r: {**r, "bits": encode_bits(b"\x00" * 30)}, "wrong length"),
        (lambda r: {**r, "bits": "not-base64"}, "base64"),
        (lambda r: {**r, "config_hash": _other_hash()}, "config hash"),
        (lambda r: {**r, "id": "x"}, "report id"),
        (lambda r: {**r, "id": "a" * 200}, "report id"),
        (lambda r: {**r, "config_hash": "f" * 200}, "config hash"),
        (lambda r: {**r, "bits": "A" * 4000}, "wrong length"),
        (lambda r: {**r, "bits": encode_bits(b"\x0f\x00\x00")}, "padding"),
        (lambda r: {**r, "bits": encode_bits(b"\x00\x09\x00")}, "outside the domain"),
    ],
)
def test_a_bad_report_is_rejected_and_changes_nothing(
    client: TestClient, config: CollectionConfig, seeded: Snapshot, change: Any, reason: str
) -> None:
    item = change(report_dicts(config, packed_reports(config, 1, seed=99))[0])
    body = upload(client, [item]).json()
    assert body["rejected"] == 1
    assert reason in body["outcomes"][0]["reason"]


def test_unknown_collection_changes_nothing(
    client: TestClient, config: CollectionConfig, seeded: Snapshot
) -> None:
    response = upload(client, report_dicts(config, packed_reports(config, 3)), name="nope")
    assert response.status_code == 404 and slug(response) == "collection-not-found"


@pytest.mark.parametrize("body", [b'{"reports": [', b"reports", b'{"reports": [}]}'])
def test_malformed_json_changes_nothing(client: TestClient, seeded: Snapshot, body: bytes) -> None:
    response = client.post("/v1/collections/survey/reports", content=body, headers=JSON)
    assert response.status_code == 400 and slug(response) == "malformed-request"


def test_json_nested_too_deeply_says_so_and_the_stated_depth_is_read(
    client: TestClient, seeded: Snapshot
) -> None:
    def nested(depth: int) -> bytes:
        return b'{"reports": ' + b"[" * (depth - 1) + b"]" * (depth - 1) + b"}"

    deep = client.post("/v1/collections/survey/reports", content=nested(100_000), headers=JSON)
    assert deep.status_code == 400 and slug(deep) == "malformed-request"
    assert deep.json()["detail"].startswith(
        f"the body's JSON nests arrays and objects too deeply to be read: the aggregator"
        f" reads up to {READABLE_JSON_DEPTH} levels"
    )
    # the depth stated is read: the body is then judged by its shape
    read = client.post(
        "/v1/collections/survey/reports", content=nested(READABLE_JSON_DEPTH), headers=JSON
    )
    assert read.status_code == 422 and slug(read) == "invalid-request"


@pytest.mark.parametrize(
    "payload",
    [
        {},
        {"reports": []},
        {"reports": "all"},
        {"reports": [{"id": "abcdefgh", "config_hash": "x"}]},
        {"reports": [{"id": "abcdefgh", "config_hash": "x", "bits": "AA==", "ip": "1.2.3.4"}]},
        {"reports": [{"id": 12345678, "config_hash": "x", "bits": "AA=="}]},
        {"reports": [{"id": "abcdefgh", "config_hash": "x", "bits": "AA=="}] * (MAX_BATCH + 1)},
    ],
)
def test_wrong_shape_is_an_invalid_request(
    client: TestClient, seeded: Snapshot, payload: dict[str, Any]
) -> None:
    response = client.post("/v1/collections/survey/reports", json=payload)
    assert response.status_code == 422 and slug(response) == "invalid-request"
    assert response.json()["errors"]


def test_body_over_the_limit_is_refused(
    client: TestClient, config: CollectionConfig, seeded: Snapshot
) -> None:
    # settings fixture: 1,000,000 bytes
    items = report_dicts(config, packed_reports(config, 20))
    body = json.dumps({"reports": items, "padding": "x" * 1_000_000}).encode()
    response = client.post("/v1/collections/survey/reports", content=body, headers=JSON)
    assert response.status_code == 413 and slug(response) == "payload-too-large"


def test_chunked_body_over_the_limit_is_refused(
    client: TestClient, config: CollectionConfig, seeded: Snapshot
) -> None:
    items = report_dicts(config, packed_reports(config, 20))
    body = json.dumps({"reports": items}).encode()
    head, tail = body[:-2], body[-2:]

    def chunks() -> Iterator[bytes]:  # no Content-Length: sent chunked
        yield head
        for _ in range(200):
            yield b" " * 10_000  # JSON whitespace, far over the limit in total
        yield tail

    response = client.post("/v1/collections/survey/reports", content=chunks(), headers=JSON)
    assert response.status_code == 413 and slug(response) == "payload-too-large"


def test_chunked_body_under_the_limit_is_accepted(
    client: TestClient, engine: Engine, config: CollectionConfig
) -> None:
    body = json.dumps({"reports": report_dicts(config, packed_reports(config, 10))}).encode()

    def chunks() -> Iterator[bytes]:
        for start in range(0, len(body), 100):
            yield body[start : start + 100]

    response = client.post("/v1/collections/survey/reports", content=chunks(), headers=JSON)
    assert response.status_code == 200 and response.json()["accepted"] == 10
    assert snapshot(engine, "survey").n_reports == 10


def test_reports_need_no_token_but_a_bad_token_is_harmless(
    client: TestClient, config: CollectionConfig
) -> None:
    items = report_dicts(config, packed_reports(config, 2))
    response = client.post(
        "/v1/collections/survey/reports",
        json={"reports": items},
        headers={"Authorization": "Bearer nonsense"},
    )
    assert response.status_code == 200 and response.json()["accepted"] == 2
