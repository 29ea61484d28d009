"""The lists: collections, naive Bayes models, itemset and training jobs, a page at a time
(``limit`` and an opaque ``cursor``, ``next_cursor`` null on the last page), in a stable
order, behind the analyst token, with 422 problem documents for a bad page."""

from __future__ import annotations

import base64
from datetime import UTC, date, datetime
from typing import Any

import pytest
from sqlalchemy import Engine, update
from tests.aggregator.conftest import (
    ADMIN,
    ANALYST,
    TestClient,
    packed_reports,
    problem,
    report_dicts,
    spec_payload,
)
from tests.aggregator.training_helpers import spec as training_spec

from ldp_aggregator.storage.collections import load_collection
from ldp_aggregator.storage.jobs import STALE_AFTER_SECONDS, insert_job, jobs
from ldp_aggregator.storage.models import insert_model
from ldp_shared.collection import CollectionConfig
from ldp_shared.wire.lists import DEFAULT_LIMIT, MAX_LIMIT, JobList

COLLECTIONS = "/v1/collections"
ITEMSETS = "/v1/collections/survey/itemsets"
TRAINING = "/v1/collections/survey/training-jobs"
MODELS = "/v1/collections/survey/models/naive-bayes"
LISTS = [COLLECTIONS, ITEMSETS, TRAINING, MODELS]
"""Every list (each answers its entries under its own field)."""

FIELD = {COLLECTIONS: "collections", ITEMSETS: "jobs", TRAINING: "jobs", MODELS: "models"}


def walk(client: TestClient, path: str, limit: int) -> list[list[Any]]:
    """Every page of a list, following ``next_cursor`` from the first page."""
    pages: list[list[Any]] = []
    params: dict[str, Any] = {"limit": limit}
    while True:
        response = client.get(path, params=params, headers=ANALYST)
        assert response.status_code == 200, response.text
        body = response.json()
        assert set(body) == {FIELD[path], "next_cursor"}
        pages.append(body[FIELD[path]])
        assert len(pages[-1]) <= limit
        if body["next_cursor"] is None:
            return pages
        params["cursor"] = body["next_cursor"]


@pytest.fixture
def survey(client: TestClient, config: CollectionConfig) -> TestClient:
    """The collection ``survey`` with 40 reports (its release minimum is 20)."""
    body = {"reports": report_dicts(config, packed_reports(config, 40))}
    assert client.post(f"{COLLECTIONS}/survey/reports", json=body).json()["accepted"] == 40
    return client


def test_collections_come_a_page_at_a_time_by_name(client: TestClient) -> None:
    names = ["delta", "alpha", "echo", "charlie", "bravo"]
    for name in names:
        assert client.post(COLLECTIONS, json=spec_payload(name=name), headers=ADMIN).is_success
    first = client.get(COLLECTIONS, params={"limit": 2}, headers=ANALYST).json()
    assert first["collections"] == ["alpha", "bravo"] and first["next_cursor"]
    assert walk(client, COLLECTIONS, 2) == [["alpha", "bravo"], ["charlie", "delta"], ["echo"]]
    assert walk(client, COLLECTIONS, 5) == [sorted(names)]  # a full page is the last
    assert walk(client, COLLECTIONS, MAX_LIMIT) == [sorted(names)]
    # an entry created between two pages lands where its name puts it, shifting nothing
    second = client.get(
        COLLECTIONS, params={"limit": 2, "cursor": first["next_cursor"]}, headers=ANALYST
    )
    client.post(COLLECTIONS, json=spec_payload(name="aardvark"), headers=ADMIN)
    assert second.json()["collections"] == ["charlie", "delta"]
    again = client.get(
        COLLECTIONS, params={"limit": 2, "cursor": first["next_cursor"]}, headers=ANALYST
    )
    assert again.json()["collections"] == ["charlie", "delta"]


def store_models(engine: Engine, collection: str, ids: dict[str, int]) -> None:
    """Naive Bayes models of ``collection`` (id → day of January 2026), stored directly:
    a list reads their ids only."""
    collection_id = load_collection(engine, collection).id
    with engine.begin() as connection:
        for model_id, day in ids.items():
            insert_model(
                connection,
                model_id=model_id,
                collection_id=collection_id,
                kind="naive-bayes",
                created_day=date(2026, 1, day),
                model_json="{}",
            )


def test_without_a_limit_a_page_holds_the_default(client: TestClient, engine: Engine) -> None:
    client.post(COLLECTIONS, json=spec_payload(name="survey"), headers=ADMIN)
    store_models(engine, "survey", {f"model-{i:04d}": 1 for i in range(DEFAULT_LIMIT + 1)})
    body = client.get(MODELS, headers=ANALYST).json()
    assert body["models"] == [f"model-{i:04d}" for i in range(DEFAULT_LIMIT)]
    assert body["next_cursor"] is not None
    rest = client.get(MODELS, params={"cursor": body["next_cursor"]}, headers=ANALYST).json()
    assert rest == {"models": [f"model-{DEFAULT_LIMIT:04d}"], "next_cursor": None}


def test_model_ids_come_by_id_whatever_their_day(client: TestClient, engine: Engine) -> None:
    client.post(COLLECTIONS, json=spec_payload(name="survey"), headers=ADMIN)
    client.post(COLLECTIONS, json=spec_payload(name="other"), headers=ADMIN)
    store_models(engine, "survey", {"mmmmmmmm": 3, "zzzzzzzz": 1, "aaaaaaaa": 2})
    store_models(engine, "other", {"bbbbbbbb": 1, "nnnnnnnn": 2})
    assert walk(client, MODELS, 2) == [["aaaaaaaa", "mmmmmmmm"], ["zzzzzzzz"]]


def test_itemset_jobs_are_listed_with_id_status_and_day(survey: TestClient) -> None:
    started = []
    for support in (0.2, 0.3, 0.4):
        query = {"min_support": support, "wait_seconds": 30}
        response = survey.post(ITEMSETS, json=query, headers=ANALYST)
        assert response.status_code == 200, response.text
        started.append(response.json()["id"])
    survey.post(TRAINING, json=training_spec(), headers=ANALYST)  # another kind of job
    pages = walk(survey, ITEMSETS, 2)
    assert [len(page) for page in pages] == [2, 1]
    listed = [entry for page in pages for entry in page]
    assert [entry["id"] for entry in listed] == sorted(started)
    today = datetime.now(UTC).date().isoformat()
    for entry in listed:
        # what a lost id is found by, and nothing finer than a day
        assert entry == {"id": entry["id"], "status": "done", "progress": "finished"} | {
            "created_day": today
        }
    JobList.model_validate({"jobs": listed})


def test_a_lost_itemset_job_is_listed_as_failed(survey: TestClient, engine: Engine) -> None:
    collection = load_collection(engine, "survey")
    with engine.begin() as connection:
        insert_job(connection, "lost-job-0123456789", collection.id, "itemsets", "{}")
        insert_job(connection, "queued-job-0123456789", collection.id, "itemsets", "{}")
        connection.execute(
            update(jobs)
            .where(jobs.c.id == "lost-job-0123456789")
            .values(updated_unix=jobs.c.updated_unix - STALE_AFTER_SECONDS - 10)
        )
    listed = survey.get(ITEMSETS, headers=ANALYST).json()["jobs"]
    assert [(entry["id"], entry["status"]) for entry in listed] == [
        ("lost-job-0123456789", "failed"),
        ("queued-job-0123456789", "queued"),
    ]


def test_training_jobs_are_listed_with_id_status_and_day(survey: TestClient) -> None:
    created = []
    for _ in range(3):
        response = survey.post(TRAINING, json=training_spec(), headers=ANALYST)
        assert response.status_code == 201, response.text
        created.append(response.json()["id"])
    survey.post(ITEMSETS, json={"min_support": 0.3}, headers=ANALYST)  # another kind of job
    pages = walk(survey, TRAINING, 1)
    assert [len(page) for page in pages] == [1, 1, 1]
    listed = [entry for page in pages for entry in page]
    assert [entry["id"] for entry in listed] == sorted(created)
    assert {entry["status"] for entry in listed} == {"running"}
    assert {entry["progress"] for entry in listed} == {"round 0 of 3"}
    # another collection's jobs are its own
    other = survey.post(COLLECTIONS, json=spec_payload(name="other"), headers=ADMIN)
    assert other.is_success
    empty = survey.get("/v1/collections/other/training-jobs", headers=ANALYST)
    assert empty.json() == {"jobs": [], "next_cursor": None}


@pytest.mark.parametrize("path", LISTS)
def test_lists_need_the_analyst_token_and_an_existing_collection(
    client: TestClient, config: CollectionConfig, path: str
) -> None:
    problem(client.get(path), 401, "unauthenticated")
    assert client.get(path, headers=ANALYST).status_code == 200
    assert client.get(path, headers=ADMIN).status_code == 200
    if path != COLLECTIONS:
        missing = client.get(path.replace("survey", "nowhere"), headers=ANALYST)
        problem(missing, 404, "collection-not-found")


def _cursor(key: str) -> str:
    return base64.urlsafe_b64encode(key.encode()).decode().rstrip("=")


BAD_PAGES: list[tuple[dict[str, Any], str]] = [
    ({"limit": 0}, "invalid-request"),
    ({"limit": -1}, "invalid-request"),
    ({"limit": MAX_LIMIT + 1}, "invalid-request"),
    ({"limit": "ten"}, "invalid-request"),
    ({"limit": 1.5}, "invalid-request"),
    ({"cursor": ""}, "invalid-request"),
    ({"cursor": "x" * 201}, "invalid-request"),
    ({"cursor": "not base64!"}, "invalid-query"),
    ({"cursor": _cursor("survey") + "=="}, "invalid-query"),  # padded: not as answered
    ({"cursor": _cursor("a\x00b")}, "invalid-query"),  # no key holds a NUL
    ({"cursor": _cursor("é")}, "invalid-query"),
    ({"cursor": _cursor("x" * 65)}, "invalid-query"),
    ({"cursor": "\x00"}, "invalid-query"),
]


@pytest.mark.parametrize("path", LISTS)
@pytest.mark.parametrize(("params", "slug"), BAD_PAGES)
def test_a_bad_page_is_a_422_problem(
    client: TestClient, config: CollectionConfig, path: str, params: dict[str, Any], slug: str
) -> None:
    detail = problem(client.get(path, params=params, headers=ANALYST), 422, slug)
    assert ("limit" if "limit" in params else "cursor") in detail


def test_a_cursor_is_opaque_but_any_key_is_a_place(client: TestClient) -> None:
    for name in ("alpha", "bravo", "charlie"):
        client.post(COLLECTIONS, json=spec_payload(name=name), headers=ADMIN)
    # a key that names no collection still places the page: after it, by name
    page = client.get(COLLECTIONS, params={"cursor": _cursor("b")}, headers=ANALYST)
    assert page.json() == {"collections": ["bravo", "charlie"], "next_cursor": None}
