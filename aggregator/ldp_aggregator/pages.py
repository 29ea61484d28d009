"""Pages of the lists (:mod:`ldp_shared.wire.lists`): keyset pagination on one string key.

A list is ordered by one unique key (a collection's name, a model's or a job's id). A
page asks the database for the entries after the cursor's key, one more than ``limit``:
that extra entry says whether a next page exists, and the last key shown becomes the
next cursor. So a page costs one indexed query whatever its depth, and an entry
created or deleted meanwhile never shifts the others between pages.

The cursor is the key in unpadded base64url: opaque to a client, which passes it back
unchanged. A cursor that is not one (not base64url, or not a key any list can have)
is refused with :class:`~ldp_shared.errors.InvalidQueryError` (422), before any query.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import ColumnElement, Select

from ldp_shared.errors import InvalidQueryError
from ldp_shared.wire.lists import DEFAULT_LIMIT

T = TypeVar("T")
S = TypeVar("S", bound=Select[Any])

_KEY = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
"""What every list's key looks like (collection names, model and job ids)."""


def encode_cursor(key: str) -> str:
    """The cursor of the page after ``key``: ``key`` in unpadded base64url."""
    return base64.urlsafe_b64encode(key.encode("utf-8")).decode("ascii").rstrip("=")


def decode_cursor(cursor: str) -> str:
    """The key a cursor of :func:`encode_cursor` holds; :class:`InvalidQueryError` for
    anything else."""
    try:
        raw = base64.b64decode(cursor + "=" * (-len(cursor) % 4), altchars=b"-_", validate=True)
        key = raw.decode("ascii")
    except (binascii.Error, UnicodeError, ValueError):
        key = ""
    if _KEY.fullmatch(key) is None or encode_cursor(key) != cursor:
        shown = cursor if len(cursor) <= 40 else cursor[:40] + "..."
        raise InvalidQueryError(
            f"cursor={shown!r} is not a cursor this list answered: pass back a next_cursor"
            " unchanged, or leave cursor out for the first page"
        )
    return key


@dataclass(frozen=True)
class PageQuery:
    """Which page: at most ``limit`` entries whose key comes after ``after``."""

    limit: int = DEFAULT_LIMIT
    after: str | None = None

    @classmethod
    def parse(cls, limit: int, cursor: str | None) -> PageQuery:
        return cls(limit, None if cursor is None else decode_cursor(cursor))

    def select(self, query: S, key: ColumnElement[str]) -> S:
        """``query`` ordered by ``key``, from after the cursor, one entry more than the page."""
        if self.after is not None:
            query = query.where(key > self.after)
        return query.order_by(key).limit(self.limit + 1)

    def cut(self, rows: Sequence[T], key: Callable[[T], str]) -> tuple[list[T], str | None]:
        """The page's entries among the rows of :meth:`select`, and the next cursor."""
        shown = list(rows[: self.limit])
        more = len(rows) > self.limit and shown
        return shown, encode_cursor(key(shown[-1])) if more else None
