"""Period arithmetic: starts, labels, bounds and windows (UTC, ISO weeks from Monday)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from ldp_shared.errors import InvalidQueryError
from ldp_shared.periods import (
    Window,
    parse_bound,
    parse_window,
    period_label,
    period_start,
    stamp,
)

THURSDAY = datetime(2026, 11, 26, 13, 47, 29, tzinfo=UTC)


@pytest.mark.parametrize(
    ("period", "start", "label"),
    [
        ("hour", datetime(2026, 11, 26, 13, tzinfo=UTC), "2026-11-26T13Z"),
        ("day", datetime(2026, 11, 26, tzinfo=UTC), "2026-11-26"),
        ("week", datetime(2026, 11, 23, tzinfo=UTC), "2026-W48"),
    ],
)
def test_a_period_starts_on_its_utc_boundary(period: str, start: datetime, label: str) -> None:
    assert period_start(THURSDAY, period) == int(start.timestamp())
    assert period_label(int(start.timestamp()), period) == label
    # the last instant of the period is still in it, the next one is not
    length = {"hour": 3600, "day": 86400, "week": 604800}[period]
    last = start + timedelta(seconds=length - 1)
    assert period_start(last, period) == int(start.timestamp())
    assert period_start(last + timedelta(seconds=1), period) == int(start.timestamp()) + length


def test_weeks_are_iso_weeks_across_a_year_end() -> None:
    # 2027-01-01 is a Friday: its ISO week is 2026-W53, which began on Monday 2026-12-28
    start = period_start(datetime(2027, 1, 1, tzinfo=UTC), "week")
    assert datetime.fromtimestamp(start, UTC) == datetime(2026, 12, 28, tzinfo=UTC)
    assert period_label(start, "week") == "2026-W53"
    assert parse_bound("2026-W53", "week", "from") == start


@pytest.mark.parametrize(
    ("text", "period", "expected"),
    [
        ("2026-11-26", "day", datetime(2026, 11, 26, tzinfo=UTC)),
        ("2026-11-26T13Z", "hour", datetime(2026, 11, 26, 13, tzinfo=UTC)),
        ("2026-11-26T13:59:59Z", "hour", datetime(2026, 11, 26, 13, tzinfo=UTC)),
        ("2026-11-26T01:00+02:00", "day", datetime(2026, 11, 25, tzinfo=UTC)),  # an offset
        ("2026-11-26", "week", datetime(2026, 11, 23, tzinfo=UTC)),
        ("2026-W48", "day", datetime(2026, 11, 23, tzinfo=UTC)),  # a week names its Monday
    ],
)
def test_a_bound_names_the_period_containing_it(text: str, period: str, expected: datetime) -> None:
    assert parse_bound(text, period, "from") == int(expected.timestamp())


@pytest.mark.parametrize("text", ["yesterday", "2026-13-01", "2026-W99", "", "26/11/2026"])
def test_a_bound_that_is_not_one_is_refused_naming_the_parameter(text: str) -> None:
    with pytest.raises(InvalidQueryError, match=r"^to=.* is not a period bound"):
        parse_bound(text, "day", "to")


def test_windows_default_clamp_and_refuse() -> None:
    now = THURSDAY
    assert parse_window(None, None, "day", now) is None
    window = parse_window("2026-11-20", None, "day", now)
    assert window == Window(
        "day", int(datetime(2026, 11, 20, tzinfo=UTC).timestamp()), period_start(now, "day")
    )
    assert window is not None and window.count == 7 and len(window.starts()) == 7
    assert window.describe() == "2026-11-20 … 2026-11-26"
    clamped = parse_window("2026-11-26", "2027-01-01", "day", now)  # the future is cut off
    assert clamped is not None and clamped.count == 1 and clamped.describe() == "2026-11-26"
    with pytest.raises(InvalidQueryError, match="starts after it ends"):
        parse_window("2026-11-25", "2026-11-24", "day", now)
    with pytest.raises(InvalidQueryError, match="in the future"):
        parse_window("2026-11-27", None, "day", now)


def test_a_stamp_is_no_finer_than_its_period() -> None:
    assert stamp("hour", THURSDAY) == (THURSDAY.date(), period_start(THURSDAY, "hour"))
    day, start = stamp("week", THURSDAY)
    assert day.isoformat() == "2026-11-23" and start == period_start(THURSDAY, "week")


def test_a_date_as_the_last_bound_takes_in_its_whole_span() -> None:
    hours = parse_window("2026-11-25", "2026-11-25", "hour", THURSDAY)
    assert hours is not None and hours.count == 24
    assert period_label(hours.last, "hour") == "2026-11-25T23Z"
    days = parse_window("2026-W47", "2026-W47", "day", THURSDAY)
    assert days is not None and days.describe() == "2026-11-16 … 2026-11-22"
    # an instant is an instant: the hour that contains it, either side
    one = parse_window("2026-11-25T10:30Z", "2026-11-25T10:59Z", "hour", THURSDAY)
    assert one is not None and one.count == 1
