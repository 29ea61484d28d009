"""``/metrics``: prometheus_client's exposition, parsed back with its parser; no label about
a client; a registry per app; database errors; the metrics token."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families
from pydantic import SecretStr

from ldp_aggregator.app import create_app
from ldp_aggregator.metrics import Metrics
from ldp_aggregator.settings import Settings
from ldp_shared.collection import CollectionConfig

from .conftest import ADMIN, ADMIN_TOKEN, ANALYST, packed_reports, report_dicts, state_of
from .test_api_collections import slug

REPORTS = "/v1/collections/{name}/reports"
METRICS_TOKEN = "metrics-token-for-tests-0123456789"

# every label name any ldpcollect series may carry (``le``: histogram buckets)
SERVER_LABELS = {"method", "route", "status", "collection", "limit", "error", "le"}


Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def samples_of(text: str) -> Samples:
    """Every sample of an exposition as (name, labels) → value, via prometheus_client's parser."""
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def scrape(client: TestClient, **headers: str) -> Samples:
    """The samples of ``/metrics``."""
    response = client.get("/metrics", headers=headers)
    assert response.status_code == 200, response.text
    return samples_of(response.text)


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def upload(
    client: TestClient, config: CollectionConfig, n: int, seed: int = 0
) -> list[dict[str, str]]:
    items = report_dicts(config, packed_reports(config, n, seed))
    assert client.post("/v1/collections/survey/reports", json={"reports": items}).status_code == 200
    return items


def test_requests_reports_and_batches_are_counted(
    client: TestClient, config: CollectionConfig
) -> None:
    items = report_dicts(config, packed_reports(config, 6))
    items[0] = {**items[0], "bits": "!"}
    client.post("/v1/collections/survey/reports", json={"reports": items})
    client.post("/v1/collections/survey/reports", json={"reports": items[1:3]})
    client.get("/no/such/path")
    response = client.get("/metrics")
    assert response.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    samples = scrape(client)

    reports = "ldpcollect_reports_total"
    assert value(samples, reports, collection="survey", status="accepted") == 5
    assert value(samples, reports, collection="survey", status="duplicate") == 2
    assert value(samples, reports, collection="survey", status="rejected") == 1
    assert value(samples, "ldpcollect_report_batches_total") == 2
    assert value(samples, "ldpcollect_report_batch_size_count") == 2
    assert value(samples, "ldpcollect_report_batch_size_sum") == 8
    assert value(samples, "ldpcollect_report_batch_size_bucket", le="2.0") == 1
    # one request per transaction here (they came one after the other)
    assert value(samples, "ldpcollect_group_commit_size_count") == 2
    assert value(samples, "ldpcollect_group_commit_size_sum") == 2
    assert value(samples, "ldpcollect_report_batch_size_bucket", le="5.0") == 1
    assert value(samples, "ldpcollect_report_batch_size_bucket", le="10.0") == 2

    requests = "ldpcollect_http_requests_total"
    route = REPORTS
    assert value(samples, requests, method="POST", route=route, status="200") == 2
    assert value(samples, requests, method="GET", route="unmatched", status="404") == 1
    assert value(samples, requests, method="POST", route="/v1/collections", status="201") == 1
    latency = "ldpcollect_http_request_duration_seconds"
    assert value(samples, f"{latency}_count", method="POST", route=route) == 2
    assert value(samples, f"{latency}_bucket", method="POST", route=route, le="+Inf") == 2
    assert 0 < value(samples, f"{latency}_sum", method="POST", route=route) < 60
    assert state_of(client).metrics.reports("accepted") == 5
    assert state_of(client).metrics.reports("accepted", "other") == 0


def test_no_label_says_anything_about_a_client(
    client: TestClient, config: CollectionConfig
) -> None:
    address, agent = "203.0.113.9", "curious-agent/1.0"
    spoof = {"User-Agent": agent, "X-Forwarded-For": address, "X-Real-IP": address}
    items = report_dicts(config, packed_reports(config, 3))
    client.post("/v1/collections/survey/reports", json={"reports": items}, headers=spoof)
    client.post("/v1/collections/no-such-thing/reports", json={"reports": items}, headers=spoof)
    client.get("/v1/collections/a-raw-path-123", headers=spoof)
    client.request("BREW", "/v1/collections/survey", headers=spoof)
    text = client.get("/metrics").text
    for secret in (address, agent, "testclient", "no-such-thing", "a-raw-path-123", "BREW"):
        assert secret not in text
    for item in items:
        assert item["id"] not in text and item["bits"] not in text
    names = {
        name
        for family in text_string_to_metric_families(text)
        if family.name.startswith("ldpcollect_")
        for sample in family.samples
        for name in sample.labels
    }
    assert names <= SERVER_LABELS
    collections = {
        labels.get("collection")
        for family in text_string_to_metric_families(text)
        for labels in (s.labels for s in family.samples)
    } - {None}
    assert collections == {"survey"}  # an unknown collection never becomes a label value
    assert 'method="other"' in text


def test_openmetrics_is_served_when_asked(client: TestClient, config: CollectionConfig) -> None:
    upload(client, config, 2)
    accept = "application/openmetrics-text; version=1.0.0; charset=utf-8"
    response = client.get("/metrics", headers={"Accept": accept})
    assert response.headers["content-type"].startswith("application/openmetrics-text")
    assert response.text.endswith("# EOF\n")
    assert 'ldpcollect_reports_total{collection="survey",status="accepted"} 2.0' in response.text


def test_every_app_has_its_own_registry(tmp_path: Path) -> None:
    apps = [create_app(Settings(database_url=f"sqlite:///{tmp_path / f'{i}.db'}")) for i in (1, 2)]
    with TestClient(apps[0]) as first, TestClient(apps[1]) as second:
        for _ in range(3):
            first.get("/healthz")
        requests = "ldpcollect_http_requests_total"
        labels = {"method": "GET", "route": "/healthz", "status": "200"}
        assert value(scrape(first), requests, **labels) == 3
        assert value(scrape(second), requests, **labels) == 0
    assert not [m.name for m in REGISTRY.collect() if m.name.startswith("ldpcollect")]


def test_database_errors_are_counted(tmp_path: Path) -> None:
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'missing-dir' / 'x.db'}", migrate_on_startup=False
    )
    with TestClient(create_app(settings)) as down:
        assert down.get("/readyz").status_code == 503
        assert down.get("/v1/collections/anything").status_code == 503
        samples = scrape(down)
    assert value(samples, "ldpcollect_database_errors_total", error="OperationalError") == 2


def test_group_commit_hook_feeds_its_histogram() -> None:
    metrics = Metrics()
    for uploads in (1, 7, 30):
        metrics.observe_group_commit(uploads)
    body, _ = metrics.exposition(None)
    samples = samples_of(body.decode())
    assert value(samples, "ldpcollect_group_commit_size_count") == 3
    assert value(samples, "ldpcollect_group_commit_size_sum") == 38
    assert value(samples, "ldpcollect_group_commit_size_bucket", le="10.0") == 2


# ------------------------------------------------------------------ the metrics token


@pytest.fixture
def guarded(settings: Settings) -> Iterator[TestClient]:
    app = create_app(settings.model_copy(update={"metrics_token": SecretStr(METRICS_TOKEN)}))
    with TestClient(app, raise_server_exceptions=False) as test_client:
        yield test_client


def test_open_by_default(client: TestClient) -> None:
    assert client.get("/metrics").status_code == 200


def test_the_metrics_token_guards_metrics(guarded: TestClient) -> None:
    missing = guarded.get("/metrics")
    assert missing.status_code == 401 and slug(missing) == "unauthenticated"
    assert missing.headers["www-authenticate"] == "Bearer"
    assert missing.headers["content-type"] == "application/problem+json"
    wrong = guarded.get("/metrics", headers={"Authorization": "Bearer not-the-token"})
    assert wrong.status_code == 401 and slug(wrong) == "unauthenticated"
    analyst = guarded.get("/metrics", headers=ANALYST)
    assert analyst.status_code == 403 and slug(analyst) == "forbidden"
    assert (
        guarded.get("/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}).status_code
        == 200
    )
    assert guarded.get("/metrics", headers=ADMIN).status_code == 200
    # the metrics token is no role: it opens nothing else
    listing = guarded.get("/v1/collections", headers={"Authorization": f"Bearer {METRICS_TOKEN}"})
    assert listing.status_code == 401
    kept = guarded.app.state.ldp.settings  # type: ignore[attr-defined]
    assert kept.metrics_token is None and METRICS_TOKEN not in kept.model_dump_json()
    assert ADMIN_TOKEN not in kept.model_dump_json()
