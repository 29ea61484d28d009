"""Periods: the coarse UTC time slots (hour, day or ISO week) that statistics are kept in.

The aggregator counts each accepted report in the statistics of the period in which it
accepted it; the client never chooses. A period is named by the Unix time (seconds, UTC)
of its first instant, its *start*: hours and days start on multiples of 3,600 and 86,400
seconds, weeks on Mondays at 00:00 UTC (ISO 8601 weeks). Windows of estimates are given
as period bounds, both included: ``from`` and ``to`` name the periods containing the
instants written (``2026-11-26``, ``2026-11-26T13:00Z``, or an ISO week ``2026-W48``); a
date or a week as ``to`` takes in the whole day or week.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Literal, get_args

from ldp_shared.errors import InvalidQueryError

PeriodName = Literal["hour", "day", "week"]
"""How finely a collection's statistics are kept in time (``day`` unless chosen)."""

PERIOD_NAMES: tuple[str, ...] = get_args(PeriodName)

PERIOD_SECONDS: dict[str, int] = {"hour": 3_600, "day": 86_400, "week": 604_800}

_MONDAY = 4 * 86_400
"""1970-01-05, the first Monday of the Unix epoch: the origin of ISO weeks."""

_ISO_WEEK = re.compile(r"^(\d{4})-W(\d{2})$")

MAX_WINDOW_PERIODS = 10_000
"""The longest window a trend lists period by period (more than a year of hours)."""


def period_start(at: datetime, period: str) -> int:
    """The start (Unix seconds, UTC) of the ``period`` that contains instant ``at``
    (a naive ``at`` is taken as UTC)."""
    length = PERIOD_SECONDS[period]
    seconds = int((at if at.tzinfo else at.replace(tzinfo=UTC)).timestamp() // 1)
    origin = _MONDAY if period == "week" else 0
    return (seconds - origin) // length * length + origin


def start_instant(start: int) -> datetime:
    """The instant (UTC) of a period start."""
    return datetime.fromtimestamp(start, tz=UTC)


def period_label(start: int, period: str) -> str:
    """The period's name in ISO 8601: ``2026-11-26T13Z``, ``2026-11-26`` or ``2026-W48``."""
    instant = start_instant(start)
    if period == "hour":
        return instant.strftime("%Y-%m-%dT%HZ")
    if period == "day":
        return instant.date().isoformat()
    year, week, _ = instant.isocalendar()
    return f"{year:04d}-W{week:02d}"


def parse_bound(text: str, period: str, name: str, *, end: bool = False) -> int:
    """The start of the ``period`` that a window bound names: an ISO date, an ISO week
    ``YYYY-Www`` or an ISO date and time (UTC unless an offset is given). A date or a
    week covers its whole span: as the first bound (``from``) it names the period of
    the span's first instant, as the last (``end``: ``to``) that of its last instant,
    so that ``to=2026-11-26`` takes in every hour of that day. :class:`InvalidQueryError`
    naming the parameter ``name`` for anything else."""
    cleaned = text.strip()
    week = _ISO_WEEK.match(cleaned)
    try:
        if week is not None:
            monday = date.fromisocalendar(int(week.group(1)), int(week.group(2)), 1)
            first, span = _midnight(monday), 7 * 86_400
        elif len(cleaned) == 10:  # a date alone
            first, span = _midnight(date.fromisoformat(cleaned)), 86_400
        else:
            if cleaned.endswith(("z", "Z")):
                cleaned = cleaned[:-1] + "+00:00"
            if len(cleaned) == 13 and cleaned[10] in "Tt":  # an hour alone: 2026-11-26T13
                cleaned += ":00"
            first, span = datetime.fromisoformat(cleaned), 0
        instant = first + timedelta(seconds=span - 1) if end and span else first
        return period_start(instant, period)
    except (ValueError, OverflowError, OSError):
        raise InvalidQueryError(
            f"{name}={text!r} is not a period bound: give an ISO 8601 date (2026-11-26),"
            " date and time (2026-11-26T13:00Z) or week (2026-W48)"
        ) from None


def _midnight(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


@dataclass(frozen=True)
class Window:
    """The periods ``first … last`` (starts, both included) of one ``period`` length."""

    period: str
    first: int
    last: int

    @property
    def count(self) -> int:
        """How many periods the window spans."""
        return (self.last - self.first) // PERIOD_SECONDS[self.period] + 1

    def starts(self) -> list[int]:
        """The start of every period of the window, in time order."""
        return list(range(self.first, self.last + 1, PERIOD_SECONDS[self.period]))

    def describe(self) -> str:
        first, last = period_label(self.first, self.period), period_label(self.last, self.period)
        return first if first == last else f"{first} … {last}"


def parse_window(
    first: str | None, last: str | None, period: str, now: datetime | None = None
) -> Window | None:
    """The window ``from`` … ``to`` of a query (``None``: neither given, all periods).

    A missing ``from`` is the beginning of time; a missing ``to`` is the current period.
    Refused (:class:`InvalidQueryError`): a bound that is not one, ``from`` after ``to``,
    and a window that starts after the current period.
    """
    if first is None and last is None:
        return None
    current = period_start(now or datetime.now(UTC), period)
    start = 0 if first is None else parse_bound(first, period, "from")
    end = current if last is None else parse_bound(last, period, "to", end=True)
    if start > current:
        raise InvalidQueryError(
            f"the window starts in the future: from={period_label(start, period)} is after"
            f" the current {period}, {period_label(current, period)}"
        )
    if start > end:
        raise InvalidQueryError(
            f"the window starts after it ends: from={period_label(start, period)} is after"
            f" to={period_label(end, period)}"
        )
    return Window(period=period, first=start, last=min(end, current))


def stamp(period: str, at: datetime | None = None) -> tuple[date, int]:
    """What the aggregator stores with a report accepted at ``at`` (default now): its
    day and its period start, neither finer than the period (a weekly collection's
    reports carry the Monday of their week as their day)."""
    start = period_start(at or datetime.now(UTC), period)
    instant = start_instant(start)
    return instant.date(), start
