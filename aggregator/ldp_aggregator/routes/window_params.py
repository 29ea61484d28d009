"""The ``from`` and ``to`` query parameters of every windowed estimate
(:mod:`ldp_shared.periods`: period bounds, both included)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query

WindowFrom = Annotated[
    str | None,
    Query(
        alias="from",
        max_length=64,
        description=(
            "first period of the window, ISO 8601: a date (2026-11-26), a date and time"
            " (2026-11-26T13:00Z) or a week (2026-W48), taken as the collection's period"
            " that contains it; absent with to absent: all periods"
        ),
    ),
]

WindowTo = Annotated[
    str | None,
    Query(
        alias="to",
        max_length=64,
        description="last period of the window, included (absent: the current period)",
    ),
]
