"""The SDK's side of a shuffled collection: it seals to a key it checked, binds each blob
to the config it verified, and sends the blobs to the shuffler, never to the aggregator."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from ldp_client import LDPClient
from ldp_shared.collection import build_config
from ldp_shared.errors import ConfigurationError
from ldp_shared.schema import CollectionSpec
from ldp_shared.sealing import SealingKey, from_text, open_report, to_text
from ldp_shared.wire.reports import Report

SPEC = {
    "name": "poll",
    "epsilon": 1.0,
    "shuffled": True,
    "attributes": [{"name": "c", "domain": ["a", "b", "c"], "mechanism": "grr"}],
}
KEY = SealingKey.generate()


def network(key_document: dict[str, Any], posted: list[httpx.Request]) -> httpx.MockTransport:
    config = build_config(CollectionSpec.model_validate(SPEC))

    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.host == "shuffler":
            posted.append(request)
            return httpx.Response(202, json={"held": len(json.loads(request.content)["blobs"])})
        if request.url.path == "/v1/collections/poll":
            return httpx.Response(200, content=config.model_dump_json())
        if request.url.path == "/v1/collections/poll/sealing-key":
            return httpx.Response(200, json={"config_hash": config.config_hash, **key_document})
        return httpx.Response(404)

    return httpx.MockTransport(handle)


def key_document(key: SealingKey = KEY) -> dict[str, str]:
    return {"key_id": key.key_id, "public_key": to_text(key.public)}


def test_blobs_go_to_the_shuffler_and_open_to_the_reports() -> None:
    posted: list[httpx.Request] = []
    transport = network(key_document(), posted)
    with LDPClient("http://aggregator", transport=transport, retries=0) as sdk:
        reports = sdk.privatize_many("poll", [{"c": "a"}, {"c": "b"}, {"c": "c"}])
        held = sdk.submit_shuffled("poll", reports, shuffler_url="http://shuffler", batch_size=2)
        config_hash = sdk.get_config("poll").config_hash
    assert held == 3 and len(posted) == 2
    assert all(r.url.path == "/v1/collections/poll/sealed-reports" for r in posted)
    blobs = [b for request in posted for b in json.loads(request.content)["blobs"]]
    opened = [open_report(from_text(b), {KEY.key_id: KEY}, "poll", config_hash) for b in blobs]
    assert [Report.model_validate_json(o) for o in opened] == reports


def test_a_key_whose_id_does_not_name_it_is_refused() -> None:
    other = SealingKey.generate()
    forged = {"key_id": KEY.key_id, "public_key": to_text(other.public)}
    posted: list[httpx.Request] = []
    with LDPClient("http://aggregator", transport=network(forged, posted), retries=0) as sdk:
        reports = sdk.privatize_many("poll", [{"c": "a"}])
        with pytest.raises(ConfigurationError, match="does not match its id"):
            sdk.submit_shuffled("poll", reports, shuffler_url="http://shuffler")
    assert posted == []


def test_a_key_published_for_another_config_is_refused() -> None:
    posted: list[httpx.Request] = []
    transport = network({**key_document(), "config_hash": "0" * 64}, posted)
    with LDPClient("http://aggregator", transport=transport, retries=0) as sdk:
        reports = sdk.privatize_many("poll", [{"c": "a"}])
        with pytest.raises(ConfigurationError, match="another config"):
            sdk.submit_shuffled("poll", reports, shuffler_url="http://shuffler")
    assert posted == []


def test_submit_refuses_a_shuffled_collection_before_spending_epsilon(tmp_path: Any) -> None:
    posted: list[httpx.Request] = []
    ledger = tmp_path / "ledger.db"
    transport = network(key_document(), posted)
    with LDPClient("http://aggregator", transport=transport, retries=0, ledger=ledger) as sdk:
        with pytest.raises(ConfigurationError, match="submit_shuffled"):
            sdk.submit("poll", [{"c": "a"}])
        assert sdk.ledger is not None
        assert sdk.ledger.spending("poll").reports == 0
    assert posted == []
