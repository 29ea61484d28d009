"""The SDK's lists (sync and async): one page with ``limit`` and its ``next_cursor``, every
entry without, an iterator that follows the cursors, and a bad page never sent."""

from __future__ import annotations

from datetime import date
from typing import Any

import httpx
import pytest

from ldp_client import InvalidQueryError
from ldp_client.listing import Page
from ldp_shared.errors import CollectionNotFoundError
from ldp_shared.wire.lists import DEFAULT_LIMIT, MAX_LIMIT, JobSummary

COLLECTIONS = [f"c-{i:02d}" for i in range(7)]
JOBS = [
    {"id": f"job-{i:02d}-0123456789ab", "status": "done", "progress": "finished"}
    | {"created_day": "2026-03-0" + str(i + 1)}
    for i in range(5)
]
MODELS = [f"model-{i:02d}" for i in range(3)]


class ListServer:
    """The four lists, paged as the aggregator pages them (the cursor: the last key shown),
    never more than ``max_page`` entries a page."""

    def __init__(self, max_page: int = MAX_LIMIT) -> None:
        self.max_page = max_page
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        path = request.url.path
        field, entries, key = {
            "/v1/collections": ("collections", COLLECTIONS, str),
            "/v1/collections/survey/models/naive-bayes": ("models", MODELS, str),
            "/v1/collections/survey/itemsets": ("jobs", JOBS, lambda job: job["id"]),
            "/v1/collections/survey/training-jobs": ("jobs", JOBS[:2], lambda job: job["id"]),
        }[path]
        limit = min(int(request.url.params.get("limit", DEFAULT_LIMIT)), self.max_page)
        cursor = request.url.params.get("cursor")
        after = [entry for entry in entries if cursor is None or key(entry) > cursor]
        shown = after[:limit]
        next_cursor = key(shown[-1]) if len(after) > limit else None
        return httpx.Response(200, json={field: shown, "next_cursor": next_cursor})

    def pages(self) -> list[dict[str, str]]:
        return [dict(request.url.params) for request in self.requests]


def drain(client: Any, entries: Any) -> list[Any]:
    """The entries of an ``iter_...`` of either client."""
    if hasattr(entries, "__anext__"):

        async def collect() -> list[Any]:
            return [entry async for entry in entries]

        return client._runner.run(collect())  # type: ignore[no-any-return]
    return list(entries)


def test_a_limit_asks_for_one_page_and_gives_its_cursor(make: Any) -> None:
    server = ListServer()
    client = make(server)
    first = client.list_collections(limit=3)
    assert isinstance(first, Page) and first == COLLECTIONS[:3]
    assert first.next_cursor == "c-02"
    second = client.list_collections(limit=3, cursor=first.next_cursor)
    assert second == COLLECTIONS[3:6] and second.next_cursor == "c-05"
    last = client.list_collections(limit=3, cursor=second.next_cursor)
    assert last == ["c-06"] and last.next_cursor is None
    assert server.pages() == [
        {"limit": "3"},
        {"limit": "3", "cursor": "c-02"},
        {"limit": "3", "cursor": "c-05"},
    ]
    assert all(request.headers["authorization"] == "Bearer t" for request in server.requests)


def test_without_a_limit_every_entry_comes_page_after_page(make: Any) -> None:
    server = ListServer(max_page=2)  # an aggregator whose pages are shorter than asked
    client = make(server)
    everything = client.list_collections()
    assert everything == COLLECTIONS and everything.next_cursor is None
    assert [page.get("cursor") for page in server.pages()] == [None, "c-01", "c-03", "c-05"]
    assert {page["limit"] for page in server.pages()} == {str(MAX_LIMIT)}
    assert client.list_collections(cursor="c-04") == ["c-05", "c-06"]


def test_the_iterators_follow_the_cursors(make: Any) -> None:
    server = ListServer()
    client = make(server)
    assert drain(client, client.iter_collections(page_size=3)) == COLLECTIONS
    assert [page["limit"] for page in server.pages()] == ["3", "3", "3"]
    assert drain(client, client.iter_collections(cursor="c-05")) == ["c-06"]
    assert drain(client, client.iter_naive_bayes("survey", page_size=1)) == MODELS
    jobs = drain(client, client.iter_itemset_jobs("survey", page_size=2))
    assert [job.id for job in jobs] == [job["id"] for job in JOBS]


def test_jobs_are_listed_with_id_status_and_day(make: Any) -> None:
    client = make(ListServer())
    itemset_jobs = client.list_itemset_jobs("survey")
    assert all(isinstance(job, JobSummary) for job in itemset_jobs)
    assert itemset_jobs[0].created_day == date(2026, 3, 1)
    assert [job.model_dump(mode="json") for job in itemset_jobs] == JOBS
    page = client.list_training_jobs("survey", limit=1)
    assert [job.id for job in page] == [JOBS[0]["id"]] and page.next_cursor == JOBS[0]["id"]
    assert client.list_naive_bayes("survey", limit=2) == MODELS[:2]


@pytest.mark.parametrize(
    "bad",
    [{"limit": 0}, {"limit": MAX_LIMIT + 1}, {"limit": True}, {"limit": "5"}, {"cursor": ""}],
)
def test_a_bad_page_is_refused_before_any_request(make: Any, bad: dict[str, Any]) -> None:
    server = ListServer()
    client = make(server)
    for call in (
        lambda: client.list_collections(**bad),
        lambda: client.list_itemset_jobs("survey", **bad),
        lambda: client.list_training_jobs("survey", **bad),
        lambda: client.list_naive_bayes("survey", **bad),
    ):
        with pytest.raises(InvalidQueryError):
            call()
    sizes = {"page_size": bad["limit"]} if "limit" in bad else bad
    with pytest.raises(InvalidQueryError):
        client.iter_collections(**sizes)  # refused at the call, not at the first entry
    with pytest.raises(CollectionNotFoundError):
        client.iter_training_jobs("No Such/Name")
    assert server.requests == []


def test_a_page_repr_shows_its_cursor() -> None:
    page = Page(["a", "b"], "b")
    assert page == ["a", "b"] and repr(page) == "Page(['a', 'b'], next_cursor='b')"
    assert Page().next_cursor is None and Page() == []
