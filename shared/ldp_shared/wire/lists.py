"""Wire types of the lists (JSON over HTTP): one page of entries and where the next begins.

``GET /v1/collections`` answers a :class:`CollectionList`, ``GET .../models/naive-bayes``
a :class:`ModelList`, ``GET .../itemsets`` and ``GET .../training-jobs`` a
:class:`JobList`. Each takes ``limit`` (1 to :data:`MAX_LIMIT`, default
:data:`DEFAULT_LIMIT`) and ``cursor`` (the ``next_cursor`` of the page before, passed back
unchanged); ``next_cursor`` is ``null`` on the last page. Entries come in a stable order:
collections by name, models and jobs by id.
"""

from __future__ import annotations

from datetime import date

from pydantic import Field

from ldp_shared.wire.base import WireModel
from ldp_shared.wire.itemsets import JobStatus

DEFAULT_LIMIT = 100
"""Entries of a page when the request names no ``limit``."""

MAX_LIMIT = 1000
"""The largest ``limit`` a list takes (a larger one is refused, 422)."""

MAX_CURSOR_LENGTH = 200
"""The longest ``cursor`` a list takes (a cursor it answered is far shorter)."""

NEXT_CURSOR = "the cursor of the next page (pass it back as ?cursor=); null on the last page"


class CollectionList(WireModel):
    """One page of collection names, by name."""

    collections: list[str]
    next_cursor: str | None = Field(default=None, description=NEXT_CURSOR)


class ModelList(WireModel):
    """One page of a collection's model ids, by id."""

    models: list[str]
    next_cursor: str | None = Field(default=None, description=NEXT_CURSOR)


class JobSummary(WireModel):
    """A job as a list shows it: enough to find a lost id, nothing about any sender."""

    id: str
    status: JobStatus
    progress: str | None = Field(default=None, description="e.g. 'round 3 of 50', 'finished'")
    created_day: date = Field(description="the UTC day the job was created")


class JobList(WireModel):
    """One page of a collection's jobs of one kind, by id."""

    jobs: list[JobSummary]
    next_cursor: str | None = Field(default=None, description=NEXT_CURSOR)


__all__ = [
    "DEFAULT_LIMIT",
    "MAX_CURSOR_LENGTH",
    "MAX_LIMIT",
    "CollectionList",
    "JobList",
    "JobSummary",
    "ModelList",
]
