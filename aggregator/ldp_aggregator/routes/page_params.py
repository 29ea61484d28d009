"""The ``limit`` and ``cursor`` query parameters of every list (:mod:`ldp_aggregator.pages`)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Query

from ldp_aggregator.pages import PageQuery
from ldp_shared.wire.lists import DEFAULT_LIMIT, MAX_CURSOR_LENGTH, MAX_LIMIT


def _page_query(
    limit: Annotated[
        int,
        Query(ge=1, le=MAX_LIMIT, description=f"entries per page, 1 to {MAX_LIMIT}"),
    ] = DEFAULT_LIMIT,
    cursor: Annotated[
        str | None,
        Query(
            min_length=1,
            max_length=MAX_CURSOR_LENGTH,
            description="the next_cursor of the page before (absent: the first page)",
        ),
    ] = None,
) -> PageQuery:
    """The page asked for; 422 ``invalid-query`` for a cursor no list answered."""
    return PageQuery.parse(limit, cursor)


Page = Annotated[PageQuery, Depends(_page_query)]
