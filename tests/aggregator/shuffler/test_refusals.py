"""The shuffler refuses uploads for collections the aggregator does not take, and drops
(and counts) what it holds once the aggregator refuses it for good; what fails for a
while (connection errors, 5xx, 429, 503) stays held and is forwarded later."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ldp_aggregator.shuffler.app import ShufflerSettings, create_shuffler_app
from ldp_shared.errors import PROBLEM_TYPE_BASE
from ldp_shared.sealing import SealingKey, seal_report, to_text

from ..conftest import ADMIN, problem
from .conftest import MIN_BATCH, Parties, TestClient

NOT_SHUFFLED = {
    "name": "plain",
    "epsilon": 1.0,
    "attributes": [{"name": "c", "domain": ["a", "b"], "mechanism": "grr"}],
}


def _blobs(parties: Parties, name: str, n: int) -> list[str]:
    """``n`` blobs sealed to ``name``'s key (their content does not matter here)."""
    info = parties.aggregator.get(f"/v1/collections/{name}/sealing-key").json()
    key = SealingKey.published(info["key_id"], info["public_key"])
    return [to_text(seal_report(b"{}", key, name, info["config_hash"])) for _ in range(n)]


def _held(client: TestClient) -> dict[str, int]:
    counts: dict[str, int] = client.app.state.forwarder.store.counts()  # type: ignore[attr-defined]
    return counts


def _dropped(client: TestClient, reason: str) -> float:
    text = client.get("/metrics").text
    line = f'ldpcollect_shuffler_blobs_dropped_total{{reason="{reason}"}} '
    found = [row for row in text.splitlines() if row.startswith(line)]
    return float(found[0].split()[-1]) if found else 0.0


def test_an_upload_for_no_collection_or_an_unshuffled_one_is_refused(parties: Parties) -> None:
    blob = {"blobs": [to_text(b"\x01" + bytes(80))]}
    absent = parties.shuffler.post("/v1/collections/nowhere/sealed-reports", json=blob)
    assert "no collection 'nowhere'" in problem(absent, 404, "collection-not-found")
    created = parties.aggregator.post("/v1/collections", json=NOT_SHUFFLED, headers=ADMIN)
    assert created.status_code == 201
    plain = parties.shuffler.post("/v1/collections/plain/sealed-reports", json=blob)
    assert "is not shuffled" in problem(plain, 409, "conflict")
    assert _held(parties.shuffler) == {}


def test_a_verdict_is_cached_for_check_seconds(parties: Parties) -> None:
    now = [0.0]
    verdicts = parties.shuffler.app.state.forwarder.verdicts  # type: ignore[attr-defined]
    verdicts.clock = lambda: now[0]
    parties.create()
    blobs = {"blobs": _blobs(parties, "survey", 1)}
    url = "/v1/collections/survey/sealed-reports"
    assert parties.shuffler.post(url, json=blobs).status_code == 202
    gone = parties.aggregator.delete("/v1/collections/survey?confirm=survey", headers=ADMIN)
    assert gone.status_code == 204
    now[0] += verdicts.ttl - 1  # still the cached verdict
    assert parties.shuffler.post(url, json=blobs).status_code == 202
    now[0] += 2  # expired: asked again
    problem(parties.shuffler.post(url, json=blobs), 404, "collection-not-found")


@pytest.mark.parametrize("how", ["closed", "not-found"])
def test_blobs_the_aggregator_refuses_for_good_are_dropped_and_counted(
    parties: Parties, how: str, caplog: pytest.LogCaptureFixture
) -> None:
    parties.create()
    blobs = _blobs(parties, "survey", MIN_BATCH + 3)
    answer = parties.shuffler.post("/v1/collections/survey/sealed-reports", json={"blobs": blobs})
    assert answer.status_code == 202
    if how == "closed":
        closed = parties.aggregator.post("/v1/collections/survey/close", headers=ADMIN)
        assert closed.status_code == 200, closed.text
    else:
        gone = parties.aggregator.delete("/v1/collections/survey?confirm=survey", headers=ADMIN)
        assert gone.status_code == 204
    with caplog.at_level(logging.WARNING, logger="ldpcollect.shuffler"):
        assert parties.forward() == 0
    assert _held(parties.shuffler) == {}
    assert _dropped(parties.shuffler, how) == MIN_BATCH + 3
    (line,) = [r.getMessage() for r in caplog.records if r.name == "ldpcollect.shuffler"]
    assert f"dropped {MIN_BATCH + 3} held blobs of collection 'survey'" in line
    assert not any(blob[:16] in line for blob in blobs)  # nothing of a blob
    assert parties.forward() == 0 and len(parties.forwarded) == 1  # refused once, not again


def test_a_refused_collection_below_min_batch_is_dropped_too(parties: Parties) -> None:
    """Blobs of a collection deleted before its batch filled would otherwise sit forever."""
    parties.create()
    url = "/v1/collections/survey/sealed-reports"
    assert parties.shuffler.post(url, json={"blobs": _blobs(parties, "survey", 3)}).is_success
    parties.aggregator.delete("/v1/collections/survey?confirm=survey", headers=ADMIN)
    verdicts = parties.shuffler.app.state.forwarder.verdicts  # type: ignore[attr-defined]
    verdicts.clock = lambda: 1e12  # the cached verdict has expired
    assert parties.forward() == 0
    assert _held(parties.shuffler) == {} and _dropped(parties.shuffler, "not-found") == 3
    assert parties.forwarded == []


class _Flaky(httpx.AsyncBaseTransport):
    """An aggregator that takes the collection but answers its batches from a script."""

    def __init__(self) -> None:
        self.answers: list[httpx.Response | Exception] = []
        self.batches = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            return httpx.Response(200, json={"collection": "survey"})
        self.batches += 1
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


@pytest.fixture
def flaky(tmp_path: Path) -> Iterator[tuple[TestClient, _Flaky]]:
    transport = _Flaky()
    settings = ShufflerSettings(
        aggregator_url="http://aggregator",
        token="t",
        database=tmp_path / "shuffler.db",
        min_batch=2,
        interval=3600.0,
        transport=transport,
    )
    with TestClient(create_shuffler_app(settings), base_url="http://shuffler") as client:
        client.app.state.forwarder.wake.set = lambda: None  # type: ignore[attr-defined]
        yield client, transport


def _forward(client: TestClient) -> int:
    forwarder = client.app.state.forwarder  # type: ignore[attr-defined]
    return int(client.portal.call(forwarder.forward_ready))  # type: ignore[union-attr]


def _problem(status: int, slug: str) -> httpx.Response:
    body = {"type": PROBLEM_TYPE_BASE + slug, "title": "t", "status": status, "detail": "d"}
    return httpx.Response(status, json=body)


TRANSIENT = [
    httpx.ConnectError("refused"),
    httpx.ReadTimeout("slow"),
    _problem(500, "internal-error"),
    _problem(503, "storage-full"),
    _problem(429, "rate-limited"),
    httpx.Response(502, text="bad gateway"),
    httpx.Response(404, text="<html>not here</html>"),  # a proxy's 404: not the aggregator's
    _problem(401, "unauthenticated"),  # the operator's token: fixed, then forwarded
]


@pytest.mark.parametrize("failure", TRANSIENT, ids=lambda f: type(f).__name__ + str(f)[:24])
def test_what_fails_for_a_while_stays_held_and_is_forwarded_later(
    flaky: tuple[TestClient, _Flaky], failure: httpx.Response | Exception
) -> None:
    client, aggregator = flaky
    blobs = [to_text(b"\x01" + bytes([k]) * 80) for k in range(3)]
    assert client.post("/v1/collections/survey/sealed-reports", json={"blobs": blobs}).is_success
    aggregator.answers = [failure, failure, httpx.Response(200, json={})]
    assert _forward(client) == 0 and _forward(client) == 0
    assert _held(client) == {"survey": 3}
    assert _forward(client) == 3 and aggregator.batches == 3
    assert _held(client) == {}


def test_a_permanent_answer_drops_only_its_collection(flaky: tuple[TestClient, _Flaky]) -> None:
    client, aggregator = flaky
    for name in ("survey", "other"):
        blobs = [to_text(b"\x01" + bytes([k]) * 80) for k in range(2)]
        url = f"/v1/collections/{name}/sealed-reports"
        assert client.post(url, json={"blobs": blobs}).is_success
    aggregator.answers = [_problem(409, "conflict"), _problem(503, "storage-full")]
    assert _forward(client) == 0
    assert sum(_held(client).values()) == 2 and _dropped(client, "not-shuffled") == 2
