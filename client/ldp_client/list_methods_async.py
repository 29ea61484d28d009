# The single source of both clients' list methods: scripts/unasync.py writes
# list_methods.py from this file. After changing it, run `python scripts/unasync.py`.
"""The lists of :class:`~ldp_client.async_client.AsyncLDPClient` (collections, models and
jobs), kept apart so that the client module stays readable in one sitting.

:class:`AsyncListMethods` is a mixin: the client supplies the transport (``_call``); the
requests are :mod:`ldp_client.listing`. Each list comes two ways:

* ``list_...(limit=None, cursor=None)``: a :class:`~ldp_client.listing.Page`, a list of
  the entries with ``next_cursor``. Without ``limit``, every entry (after ``cursor``),
  following the pages; with ``limit`` (1 to 1,000), that one page, whose ``next_cursor``
  (``None`` on the last page) is the ``cursor`` of the next.
* ``iter_...(page_size=100, cursor=None)``: the entries one by one, a page fetched when
  the one before is used up.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from functools import partial
from typing import TypeVar

from ldp_client import listing
from ldp_client.listing import Page, PageCall
from ldp_client.protocol import ApiCall
from ldp_shared.wire.lists import DEFAULT_LIMIT, MAX_LIMIT, JobSummary

__all__ = ["AsyncListMethods"]

T = TypeVar("T")


class AsyncListMethods:
    """List collections, naive Bayes models, itemset jobs and training jobs."""

    async def _call(self, call: ApiCall[T]) -> T:
        """One API call through the client's transport (the client defines it)."""
        raise NotImplementedError

    def _follow(self, call: PageCall[T], size: int, cursor: str | None) -> AsyncIterator[T]:
        """Every entry from ``cursor`` on, a page of ``size`` at a time (the arguments are
        checked now, before any request)."""
        call(size, cursor)
        return self._entries(call, size, cursor)

    async def _entries(self, call: PageCall[T], size: int, cursor: str | None) -> AsyncIterator[T]:
        while True:
            page = await self._call(call(size, cursor))
            for entry in page:
                yield entry
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    async def _list(self, call: PageCall[T], limit: int | None, cursor: str | None) -> Page[T]:
        """One page (``limit``), or every entry from ``cursor`` on (``limit=None``)."""
        if limit is not None:
            return await self._call(call(limit, cursor))
        return Page([entry async for entry in self._follow(call, MAX_LIMIT, cursor)])

    async def list_collections(
        self,
        *,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> Page[str]:
        """The collections' names, by name (analyst token): all of them, or one page of
        ``limit`` (see the module)."""
        return await self._list(listing.collections_call, limit, cursor)

    def iter_collections(
        self,
        *,
        page_size: int = DEFAULT_LIMIT,
        cursor: str | None = None,
    ) -> AsyncIterator[str]:
        """The collections' names one by one, by name (analyst token)."""
        return self._follow(listing.collections_call, page_size, cursor)

    async def list_naive_bayes(
        self,
        name: str,
        *,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> Page[str]:
        """The ids of a collection's naive Bayes models, by id (analyst token)."""
        return await self._list(partial(listing.naive_bayes_models_call, name), limit, cursor)

    def iter_naive_bayes(
        self,
        name: str,
        *,
        page_size: int = DEFAULT_LIMIT,
        cursor: str | None = None,
    ) -> AsyncIterator[str]:
        """The ids of a collection's naive Bayes models one by one (analyst token)."""
        return self._follow(partial(listing.naive_bayes_models_call, name), page_size, cursor)

    async def list_itemset_jobs(
        self,
        name: str,
        *,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> Page[JobSummary]:
        """A collection's mining jobs, by id (analyst token): each with its ``id``,
        ``status``, ``progress`` and ``created_day`` (read one with :meth:`itemset_job`)."""
        return await self._list(partial(listing.itemset_jobs_call, name), limit, cursor)

    def iter_itemset_jobs(
        self,
        name: str,
        *,
        page_size: int = DEFAULT_LIMIT,
        cursor: str | None = None,
    ) -> AsyncIterator[JobSummary]:
        """A collection's mining jobs one by one (analyst token)."""
        return self._follow(partial(listing.itemset_jobs_call, name), page_size, cursor)

    async def list_training_jobs(
        self,
        name: str,
        *,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> Page[JobSummary]:
        """A collection's training jobs, by id (analyst token): each with its ``id``,
        ``status``, ``progress`` and ``created_day`` (read one with :meth:`training_job`)."""
        return await self._list(partial(listing.training_jobs_call, name), limit, cursor)

    def iter_training_jobs(
        self,
        name: str,
        *,
        page_size: int = DEFAULT_LIMIT,
        cursor: str | None = None,
    ) -> AsyncIterator[JobSummary]:
        """A collection's training jobs one by one (analyst token)."""
        return self._follow(partial(listing.training_jobs_call, name), page_size, cursor)
