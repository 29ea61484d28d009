"""The demo's coverage line says what chance alone gives, so 'NO' in a table reads as
expected (a few) or as a fault (more than the binomial range allows)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import pytest

from ldp_simulation.demo import coverage_lines
from ldp_simulation.drift import chance_range


def _result(covered: int, intervals: int = 25) -> Any:
    return cast(
        Any,
        SimpleNamespace(
            intervals=intervals,
            covered=covered,
            coverage=covered / intervals,
            confidence=0.95,
            dataset="car",
            seconds=12.0,
        ),
    )


def test_the_binomial_range_of_25_intervals_at_95_percent() -> None:
    # P(X <= 20) = 0.007 and P(X <= 21) = 0.034 for X ~ Binomial(25, 0.95)
    assert chance_range(25, 0.95) == (21, 25)


@pytest.mark.parametrize("covered", [22, 25])
def test_the_line_states_what_to_expect_by_chance(covered: int) -> None:
    count, chance = coverage_lines(_result(covered), "95%")
    assert count.startswith(f"{covered} of the 25 95% intervals of the car tables")
    assert f"({covered / 25:.1%}) cover the true frequency" in count
    assert "chance alone leaves 0 to 4 of 25 uncovered in 95% of runs" in chance
    assert "a few 'NO's are expected, more than 4 would point to a fault" in chance
