"""``ldpcollect simulate --periods N``: a drifting population counted day by day in an
in-process aggregator, its trend read through the API's function and set against the
truth. A fixed seed, a few days: the tables have one row per day, the truth drifts as
stated, and most intervals cover it."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from ldp_simulation.cli import main
from ldp_simulation.drift import (
    OSES,
    DriftOptions,
    chance_range,
    format_drift,
    simulate_drift,
)

PERIODS = 4
CLIENTS = 24_000


def test_the_trend_follows_the_drift_and_covers_the_truth() -> None:
    result = simulate_drift(DriftOptions(periods=PERIODS, clients=CLIENTS, seed=7))
    days = [
        (datetime.now(UTC) - timedelta(days=PERIODS - 1 - k)).date().isoformat()
        for k in range(PERIODS)
    ]
    assert list(result.rows) == [f"os = {value}" for value in OSES] + ["minutes"]
    for rows in result.rows.values():
        assert [row.point.period for row in rows] == days  # the last day is today
        assert all(row.point.n_reports == CLIENTS // PERIODS for row in rows)
        assert all(row.point.estimate is not None for row in rows)  # no day withheld
    android = result.rows["os = android"]
    minutes = result.rows["minutes"]
    # the truth drifts as stated, and so does the estimate
    assert android[0].truth == pytest.approx(0.60, abs=0.02)
    assert android[-1].truth == pytest.approx(0.35, abs=0.02)
    assert minutes[0].truth == pytest.approx(30, abs=1) and minutes[-1].truth > 59
    assert android[0].point.estimate > android[-1].point.estimate + 0.15  # type: ignore[operator]
    assert minutes[-1].point.estimate > minutes[0].point.estimate + 20  # type: ignore[operator]
    assert result.intervals == 4 * PERIODS
    assert result.covered >= 13  # at 95%, 12 or fewer of 16 happens in under 1% of runs
    low, high = chance_range(result.intervals, result.confidence)
    assert (low, high) == (13, 16)
    text = format_drift(result)
    assert f"{result.covered} of 16 intervals" in text and "15.2 are expected" in text
    lines = [line for line in text.splitlines() if re.match(r"  \d{4}-\d{2}-\d{2} ", line)]
    assert len(lines) == 4 * PERIODS
    assert all(line.rstrip().endswith(("yes", "NO")) for line in lines)


def test_a_wrong_interval_would_be_caught() -> None:
    """The coverage count is not vacuous: intervals shifted off the truth cover none."""
    result = simulate_drift(DriftOptions(periods=2, clients=4_000, seed=3))
    for name, rows in result.rows.items():
        result.rows[name] = [
            replace(row, point=replace(row.point, ci_low=row.truth + 1, ci_high=row.truth + 2))
            for row in rows
        ]
    assert result.covered == 0 and "0 of 8 intervals" in format_drift(result)


def test_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["simulate", "--periods", "3", "--clients", "12000", "--seed", "5"]
    assert main([*argv, "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["periods"] == 3 and body["per_period"] == 4_000 and body["period"] == "day"
    assert set(body["trends"]) == {"os = android", "os = ios", "os = other", "minutes"}
    assert all(len(rows) == 3 for rows in body["trends"].values())
    assert body["covered"] >= 9 and body["intervals"] == 12
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.startswith("ldpcollect simulate --periods 3: 4,000 devices a day for 3 days")
    assert "covered?" in out and "cover the truth" in out


def test_periods_and_a_url_exclude_each_other(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["simulate", "--periods", "3", "--url", "http://127.0.0.1:9"])
    assert exit_.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err
    assert main(["simulate", "--periods", "30", "--clients", "10000"]) == 2
    assert "1,000 a day" in capsys.readouterr().err
