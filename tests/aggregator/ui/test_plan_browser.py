"""The planner form in a real browser: reached from the navigation, filled in and sent
with the keyboard, its table read back; an open domain at a given F₂ with the parameters
the planner chose; an impossible target shown above the form."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ldp_shared.planner import plan

from .conftest import sign_in


def test_plan_from_the_navigation_and_read_the_ranked_table(
    page: Any, served: str, screenshots: Path
) -> None:
    sign_in(page, served)
    page.get_by_role("navigation", name="Site").get_by_role("link", name="Planner").click()
    page.wait_for_url(f"{served}/ui/plan")
    page.get_by_label("Domain size (categorical)").fill("64")
    page.get_by_label("ε of one report").fill("3")
    page.get_by_label("n (reports expected)").fill("50000")
    page.get_by_label("n (reports expected)").press("Enter")
    page.locator("#plan-table").wait_for()
    expected = plan(epsilon=3.0, domain_size=64, n=50_000).mechanisms
    rows = page.locator("#plan-table tbody tr")
    assert rows.count() == len(expected)
    assert [rows.nth(i).get_attribute("data-mechanism") for i in range(len(expected))] == [
        e.mechanism for e in expected
    ]
    page.screenshot(path=screenshots / "planner.png", full_page=True)
    page.get_by_label("Open domain: any string").check()
    page.get_by_label("F₂ = Σ f² of the values, in (0, 1]").fill("0.01")
    page.get_by_role("button", name="Plan").click()
    page.locator("#plan-table caption", has_text="F₂ = 0.01").wait_for()
    at_f2 = plan(epsilon=3.0, n=50_000, second_moment=0.01).mechanisms
    assert [rows.nth(i).get_attribute("data-mechanism") for i in range(rows.count())] == [
        e.mechanism for e in at_f2
    ]
    chosen = page.locator('#plan-table tr[data-mechanism="flh"] td[data-column="parameters"]')
    flh = next(e for e in at_f2 if e.mechanism == "flh")
    assert f"hashes = {flh.parameters['hashes']:,}" in chosen.inner_text()
    page.screenshot(path=screenshots / "planner-second-moment.png", full_page=True)
    page.get_by_label("F₂ = Σ f² of the values, in (0, 1]").fill("1")
    page.get_by_label("Numeric: numbers in [lo, hi]").check()
    page.get_by_label("n (reports expected)").fill("")
    page.get_by_label("ε of one report").fill("0.05")
    page.get_by_label("Target standard error").fill("1e-9")
    page.get_by_role("button", name="Plan").click()
    page.locator("#form-problem").wait_for()
    assert "No plan meets the query" in page.locator("#form-problem").inner_text()
    assert page.get_by_label("Target standard error").input_value() == "1e-9"
    assert page.locator("#plan-table").count() == 0
    page.screenshot(path=screenshots / "planner-refused.png", full_page=True)
