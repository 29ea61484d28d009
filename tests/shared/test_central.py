"""The central guarantee a shuffled collection states (ldp_shared.central): a valid bound
at the estimate's n, the tighter of the two, cheap once cached, absent where it does not
apply; and the config's table of the closed form."""

from __future__ import annotations

import pytest

from ldp_shared import central
from ldp_shared.central import (
    CENTRAL_DELTA,
    ESTIMATE_CELLS,
    budget_point,
    grid_point,
    released_central,
    shuffled_config,
)
from ldp_shared.shuffling import (
    central_epsilon,
    closed_form_epsilon,
    numerical_cells,
    numerical_epsilon,
)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 100, 1_000, 12_345, 10**6, 10**9])
def test_the_grid_point_is_at_most_n_and_within_one_step(n: int) -> None:
    point = grid_point(n)
    assert 1 <= point <= n
    assert point > n / 2 ** (1 / 4) - 1  # the largest grid point: the next one is above n
    assert grid_point(n, 4) <= max(1, point // 2 + 1)


@pytest.mark.parametrize(
    ("epsilon0", "n"), [(0.5, 1_000), (1.0, 5_000), (2.0, 20_000), (4.0, 100_000), (8.0, 10**6)]
)
def test_the_released_bound_is_valid_and_never_looser_than_the_closed_form(
    epsilon0: float, n: int
) -> None:
    released = released_central(epsilon0, 0.0, n)
    assert released is not None
    exact = central_epsilon(epsilon0, n, CENTRAL_DELTA)
    # never below the bound computed at n itself (a bound at fewer reports is looser) …
    assert released.epsilon >= exact.epsilon - 1e-12
    # … and never above the closed form at n nor the local ε
    assert released.epsilon <= min(exact.epsilon_closed_form, epsilon0)
    assert released.bound_n <= n and released.n == n
    if released.bound == "numerical":
        assert released.epsilon == numerical_epsilon(epsilon0, released.bound_n, CENTRAL_DELTA)
        assert numerical_cells(epsilon0, released.bound_n, CENTRAL_DELTA) <= ESTIMATE_CELLS


def test_at_the_issue_vector_it_amplifies_and_a_repeated_call_is_served_from_the_cache(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    central._numerical.cache_clear()
    first = released_central(4.0, 0.0, 10**6)
    assert first is not None and first.bound == "numerical"
    # ε₀ = 4, n = 10⁶: closed form 0.2016, numerical at n 0.0494; at the budget's grid
    # point the numerical bound still beats the closed form clearly
    assert 0.0494 <= first.epsilon < 0.15

    # the expensive sum is computed once: a repeated call that reached it would raise here
    def not_again(*_: object) -> float:
        raise AssertionError("the numerical bound was computed again")

    monkeypatch.setattr(central, "numerical_epsilon", not_again)
    hits = central._numerical.cache_info().hits
    for _ in range(100):
        assert released_central(4.0, 0.0, 10**6) == first
    assert central._numerical.cache_info().hits == hits + 100


def test_no_central_bound_for_an_approximate_ldp_record_or_no_reports() -> None:
    assert released_central(1.0, 1e-9, 10_000) is None
    assert released_central(1.0, 0.0, 0) is None
    assert shuffled_config(1.0, 1e-9, 100).central == []


def test_too_few_reports_state_the_local_epsilon() -> None:
    released = released_central(8.0, 0.0, 100)
    assert released is not None
    assert (released.bound, released.epsilon) == ("local", 8.0)


def test_the_budget_point_respects_the_cell_budget() -> None:
    point = budget_point(1.0, 10**6, CENTRAL_DELTA)
    assert numerical_cells(1.0, point, CENTRAL_DELTA) <= ESTIMATE_CELLS
    following = next(p for p in map(grid_point, range(point + 1, 2 * point)) if p > point)
    assert numerical_cells(1.0, following, CENTRAL_DELTA) > ESTIMATE_CELLS  # the largest


def test_the_config_table_is_the_closed_form_from_the_release_minimum() -> None:
    table = shuffled_config(4.0, 0.0, 5_000)
    assert [row.n for row in table.central] == [5_000, 10_000, 100_000, 1_000_000]
    for row in table.central:
        assert row.epsilon == closed_form_epsilon(4.0, row.n, CENTRAL_DELTA)
    assert table.central[-1].epsilon == pytest.approx(0.2016, abs=1e-4)  # the issue's value
