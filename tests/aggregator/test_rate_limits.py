"""Upload limits: token buckets in reports (unit, on a fake clock) and the 429 answer."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from ldp_aggregator.app import create_app
from ldp_aggregator.rate_limits import Refusal, TokenBuckets, UploadLimits
from ldp_aggregator.settings import (
    DEFAULT_UPLOAD_BURST_PER_COLLECTION,
    DEFAULT_UPLOAD_RATE_PER_COLLECTION,
    Settings,
)
from ldp_shared.collection import CollectionConfig
from ldp_shared.wire.reports import MAX_BATCH

from .conftest import ADMIN, packed_reports, report_dicts, snapshot, spec_payload, state_of
from .test_api_collections import slug
from .test_metrics import scrape, value


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def refused(outcome: Refusal | None) -> Refusal:
    assert outcome is not None, "the upload was admitted"
    return outcome


# ------------------------------------------------------------------ the buckets


def test_a_bucket_admits_its_burst_then_tells_the_exact_wait() -> None:
    clock = Clock()
    limits = UploadLimits(10.0, 100, clock=clock)
    assert limits.admit("c", 60, None) is None
    assert limits.admit("c", 40, None) is None
    refusal = refused(limits.admit("c", 5, None))
    assert refusal.limit == "collection" and refusal.retry_after == pytest.approx(0.5)
    assert "10 reports per second" in refusal.detail and "retry after 1 s" in refusal.detail
    clock.now += 0.49
    assert limits.admit("c", 5, None) is not None
    clock.now += 0.01
    assert limits.admit("c", 5, None) is None


def test_an_idle_bucket_refills_to_its_burst_only() -> None:
    clock = Clock()
    limits = UploadLimits(10.0, 100, clock=clock)
    assert limits.admit("c", 100, None) is None
    clock.now += 1_000.0
    assert limits.admit("c", 100, None) is None
    assert refused(limits.admit("c", 1, None)).retry_after == pytest.approx(0.1)


def test_a_batch_over_the_burst_passes_when_full_and_pays_its_debt() -> None:
    clock = Clock()
    limits = UploadLimits(10.0, 100, clock=clock)
    assert limits.admit("c", 250, None) is None
    # 150 tokens owed: one more report waits until the bucket holds one again
    assert refused(limits.admit("c", 1, None)).retry_after == pytest.approx(15.1)
    assert refused(limits.admit("c", 500, None)).retry_after == pytest.approx(25.0)


def test_collections_have_their_own_buckets() -> None:
    limits = UploadLimits(1.0, 10, clock=Clock())
    assert limits.admit("a", 10, None) is None
    assert limits.admit("a", 1, None) is not None
    assert limits.admit("b", 10, None) is None


def test_a_refused_upload_takes_nothing_from_the_other_bucket() -> None:
    clock = Clock()
    # the address refuses: the collection keeps its tokens
    limits = UploadLimits(10.0, 100, address_rate=1.0, address_burst=5, clock=clock)
    assert limits.admit("c", 5, "192.0.2.1") is None
    assert refused(limits.admit("c", 3, "192.0.2.1")).limit == "address"
    assert limits.admit("c", 95, "192.0.2.2") is None
    assert refused(limits.admit("c", 1, "192.0.2.3")).limit == "collection"
    # the collection refuses: the address keeps its tokens
    limits = UploadLimits(1.0, 2, address_rate=1.0, address_burst=3, clock=clock)
    assert limits.admit("c", 2, "x") is None  # x keeps 1, c has 0
    assert refused(limits.admit("c", 1, "x")).limit == "collection"
    clock.now += 1.0  # x: 2, c: 1
    assert limits.admit("c", 1, "x") is None  # x: 1
    assert limits.admit("d", 1, "x") is None  # would be refused had the refusal taken one


def test_a_rate_of_zero_turns_a_limit_off() -> None:
    limits = UploadLimits(0.0, 1, clock=Clock())
    for _ in range(100):
        assert limits.admit("c", MAX_BATCH, "192.0.2.1") is None
    assert limits.tracked_addresses() == 0  # the address limit is off by default


def test_the_defaults_take_five_full_batches_at_once() -> None:
    clock = Clock()
    limits = UploadLimits(
        DEFAULT_UPLOAD_RATE_PER_COLLECTION, DEFAULT_UPLOAD_BURST_PER_COLLECTION, clock=clock
    )
    for _ in range(5):
        assert limits.admit("c", MAX_BATCH, None) is None
    assert refused(limits.admit("c", MAX_BATCH, None)).retry_after == pytest.approx(20.0)
    assert refused(limits.admit("c", 1, None)).retry_after == pytest.approx(0.002)


def test_the_address_table_is_bounded_and_holds_no_address() -> None:
    buckets = TokenBuckets(1.0, 5, max_keys=3)
    for key in ("a", "b", "c", "d"):
        buckets.take(key, 5, 0.0)
    assert len(buckets) == 3
    assert buckets.wait("a", 5, 0.0) == 0.0  # forgotten: it comes back full
    assert buckets.wait("d", 5, 0.0) == 5.0

    limits = UploadLimits(1.0, 10, address_rate=1.0, address_burst=5, clock=Clock())
    limits.admit("c", 1, "198.51.100.7")
    assert limits.tracked_addresses() == 1
    keys = list(limits._addresses._buckets)  # type: ignore[union-attr]
    assert all("198.51.100" not in key for key in keys)


@pytest.mark.parametrize(("rate", "burst"), [(0.0, 1), (float("inf"), 1), (1.0, 0)])
def test_a_bucket_needs_a_positive_rate_and_burst(rate: float, burst: int) -> None:
    with pytest.raises(ValueError):
        TokenBuckets(rate, burst)


# ------------------------------------------------------------------ the API


@pytest.fixture
def limited(settings: Settings) -> Iterator[TestClient]:
    """An app whose collections take 5 reports, then one every 1,000 s."""
    changes: dict[str, Any] = {
        "upload_rate_per_collection": 0.001,
        "upload_burst_per_collection": 5,
    }
    with TestClient(create_app(settings.model_copy(update=changes))) as client:
        assert client.post("/v1/collections", json=spec_payload(), headers=ADMIN).status_code == 201
        yield client


def post(client: TestClient, items: list[dict[str, str]], name: str = "survey") -> Any:
    return client.post(f"/v1/collections/{name}/reports", json={"reports": items})


def survey(client: TestClient) -> CollectionConfig:
    return CollectionConfig.model_validate(client.get("/v1/collections/survey").json())


def test_over_the_limit_is_a_429_with_retry_after_and_nothing_is_stored(
    limited: TestClient,
) -> None:
    config = survey(limited)
    engine: Engine = state_of(limited).engine
    assert post(limited, report_dicts(config, packed_reports(config, 5))).status_code == 200
    before = snapshot(engine, "survey")

    response = post(limited, report_dicts(config, packed_reports(config, 3, seed=1)))
    assert response.status_code == 429 and slug(response) == "rate-limited"
    assert response.headers["content-type"] == "application/problem+json"
    retry_after = response.headers["retry-after"]
    assert retry_after.isdigit() and 2_900 < int(retry_after) <= 3_000
    assert "collection 'survey'" in response.json()["detail"]
    assert snapshot(engine, "survey") == before

    samples = scrape(limited)
    rate_limited = "ldpcollect_rate_limited_reports_total"
    assert value(samples, rate_limited, collection="survey", limit="collection") == 3
    assert value(samples, "ldpcollect_reports_total", collection="survey", status="accepted") == 5
    # an unknown collection is a 404, whatever the limits
    assert (
        post(limited, report_dicts(config, packed_reports(config, 1)), "ghost").status_code == 404
    )


def test_a_refused_batch_is_accepted_once_the_bucket_refills(limited: TestClient) -> None:
    config = survey(limited)
    clock = Clock()
    state = state_of(limited)
    limits = UploadLimits(1.0, 5, clock=clock)
    limited.app.state.ldp = dataclasses.replace(state, upload_limits=limits)  # type: ignore[attr-defined]
    assert post(limited, report_dicts(config, packed_reports(config, 5))).status_code == 200
    batch = report_dicts(config, packed_reports(config, 3, seed=1))
    response = post(limited, batch)
    assert response.status_code == 429 and response.headers["retry-after"] == "3"
    clock.now += 3.0
    retried = post(limited, batch)
    assert retried.status_code == 200 and retried.json()["accepted"] == 3
    assert snapshot(state.engine, "survey").rows == 8


def test_the_address_limit(settings: Settings) -> None:
    changes: dict[str, Any] = {"upload_rate_per_address": 0.001, "upload_burst_per_address": 2}
    with TestClient(create_app(settings.model_copy(update=changes))) as client:
        assert client.post("/v1/collections", json=spec_payload(), headers=ADMIN).status_code == 201
        config = survey(client)
        assert post(client, report_dicts(config, packed_reports(config, 2))).status_code == 200
        response = post(client, report_dicts(config, packed_reports(config, 1, seed=1)))
        assert response.status_code == 429 and "from one address" in response.json()["detail"]
        assert "testclient" not in response.text
        assert snapshot(state_of(client).engine, "survey").rows == 2
        samples = scrape(client)
    rate_limited = "ldpcollect_rate_limited_reports_total"
    assert value(samples, rate_limited, collection="survey", limit="address") == 1
