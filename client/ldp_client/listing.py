"""The lists seen from the client, without I/O (shared by both clients).

Every list of the aggregator answers a page (:mod:`ldp_shared.wire.lists`): at most
``limit`` entries (1 to :data:`~ldp_shared.wire.lists.MAX_LIMIT`) after ``cursor``, and
the ``next_cursor`` to continue with (``None`` on the last page). The call builders here
describe one page's request as an :class:`~ldp_client.protocol.ApiCall` whose answer is a
:class:`Page`: a plain list of the entries that also carries ``next_cursor``. A ``limit``
out of range is refused before any request (:class:`~ldp_shared.errors.InvalidQueryError`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

from ldp_client import itemsets, naive_bayes
from ldp_client.protocol import ApiCall, collection_path
from ldp_shared.errors import InvalidQueryError
from ldp_shared.wire.lists import MAX_LIMIT, CollectionList, JobList, JobSummary, ModelList

__all__ = [
    "Page",
    "PageCall",
    "check_limit",
    "collections_call",
    "itemset_jobs_call",
    "naive_bayes_models_call",
    "training_jobs_call",
]

T = TypeVar("T")


class Page(list[T]):
    """One page of a list: its entries (it is a list of them) and ``next_cursor``, to pass
    back as ``cursor`` for the next page (``None``: this page is the last)."""

    def __init__(self, entries: Iterable[T] = (), next_cursor: str | None = None) -> None:
        super().__init__(entries)
        self.next_cursor = next_cursor

    def __repr__(self) -> str:
        return f"Page({list(self)!r}, next_cursor={self.next_cursor!r})"


PageCall = Callable[[int, str | None], ApiCall[Page[T]]]
"""``(limit, cursor)`` → the request of that page of one list."""


def check_limit(limit: object) -> int:
    """``limit`` if a list takes it (a whole number from 1 to ``MAX_LIMIT``), else
    :class:`InvalidQueryError`."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidQueryError(
            f"limit must be a whole number from 1 to {MAX_LIMIT}, got {limit!r}"
        )
    return limit


def _params(limit: int, cursor: str | None) -> dict[str, str]:
    params = {"limit": str(check_limit(limit))}
    if cursor is not None:
        if not isinstance(cursor, str) or not cursor:
            raise InvalidQueryError(f"cursor must be a next_cursor of this list, got {cursor!r}")
        params["cursor"] = cursor
    return params


def _collections(content: bytes) -> Page[str]:
    answer = CollectionList.model_validate_json(content)
    return Page(answer.collections, answer.next_cursor)


def _models(content: bytes) -> Page[str]:
    answer = ModelList.model_validate_json(content)
    return Page(answer.models, answer.next_cursor)


def _jobs(content: bytes) -> Page[JobSummary]:
    answer = JobList.model_validate_json(content)
    return Page(answer.jobs, answer.next_cursor)


def collections_call(limit: int, cursor: str | None = None) -> ApiCall[Page[str]]:
    """``GET /v1/collections`` (analyst): a page of the collections' names, by name."""
    return ApiCall("GET", "/v1/collections", _collections, _params(limit, cursor), auth=True)


def naive_bayes_models_call(name: str, limit: int, cursor: str | None = None) -> ApiCall[Page[str]]:
    """``GET .../models/naive-bayes`` (analyst): a page of the model ids, by id."""
    path = naive_bayes.models_path(name)
    return ApiCall("GET", path, _models, _params(limit, cursor), auth=True)


def itemset_jobs_call(
    name: str, limit: int, cursor: str | None = None
) -> ApiCall[Page[JobSummary]]:
    """``GET .../itemsets`` (analyst): a page of the mining jobs, by id."""
    path = itemsets.itemsets_path(name)
    return ApiCall("GET", path, _jobs, _params(limit, cursor), auth=True)


def training_jobs_call(
    name: str, limit: int, cursor: str | None = None
) -> ApiCall[Page[JobSummary]]:
    """``GET .../training-jobs`` (analyst): a page of the training jobs, by id."""
    path = collection_path(name) + "/training-jobs"
    return ApiCall("GET", path, _jobs, _params(limit, cursor), auth=True)
