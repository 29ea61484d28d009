"""The dashboard in a real browser (Debian's Chromium through Playwright): signing in,
reading a number off a chart's table, switching post-processing, sorting the rules
table, training and scoring a naive Bayes model, the refusals (no token, no CSRF
token), the empty state, the API docs and reaching a panel by keyboard alone. Every page
is photographed (see conftest)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from ..conftest import ANALYST_TOKEN
from ._data import SURVEY_REPORTS, WAITING_MINIMUM, WAITING_REPORTS, car_test_csv
from .conftest import sign_in

ANALYST = {"Authorization": f"Bearer {ANALYST_TOKEN}"}


def api(url: str, path: str, **params: Any) -> Any:
    response = httpx.get(f"{url}{path}", params=params, headers=ANALYST, timeout=30)
    assert response.status_code == 200, response.text
    return response.json()


def cell_number(page: Any, table: str, row: str, column: str) -> float:
    cell = page.locator(
        f"#{table} tbody tr", has=page.get_by_role("rowheader", name=row, exact=True)
    )
    return float(cell.locator(f'td[data-column="{column}"]').inner_text().replace(",", ""))


def chart_values(page: Any) -> list[float]:
    """The bar heights Chart.js holds for the frequency chart."""
    script = (
        """c => Chart.getChart(c).data.datasets[0].data.map(d => typeof d === 'number' ? d : d.y)"""
    )
    return [float(v) for v in page.locator("#frequency-chart").evaluate(script)]


def test_refused_without_a_token(page: Any, served: str, screenshots: Path) -> None:
    page.goto(f"{served}/ui/collections/survey/frequencies")
    assert page.url.startswith(f"{served}/ui/sign-in")
    assert page.get_by_role("heading", name="Sign in").is_visible()
    assert page.locator("#frequency-table").count() == 0
    page.get_by_label("Analyst token").fill("not-a-token")
    page.get_by_role("button", name="Sign in").click()
    assert "opens nothing here" in page.get_by_role("alert").inner_text()
    assert page.context.cookies() and all(
        c["name"] != "ldp_session" for c in page.context.cookies()
    )
    page.screenshot(path=screenshots / "sign-in-refused.png", full_page=True)


def test_sign_in_open_a_collection_and_read_the_chart_table(
    page: Any, served: str, screenshots: Path
) -> None:
    sign_in(page, served)
    session = next(c for c in page.context.cookies() if c["name"] == "ldp_session")
    assert session["httpOnly"] and session["sameSite"] == "Strict" and session["path"] == "/ui"
    assert ANALYST_TOKEN not in page.url
    page.screenshot(path=screenshots / "collections.png", full_page=True)
    page.get_by_role("link", name="survey").click()
    assert "Released: this collection has 400 reports" in page.locator("main").inner_text()
    page.screenshot(path=screenshots / "overview.png", full_page=True)
    page.get_by_role("link", name="Reports per day").click()
    page.wait_for_selector("#days-chart[data-drawn='1']")
    days = page.locator("#days-table tbody td").all_inner_texts()
    assert sum(int(d.replace(",", "")) for d in days) == SURVEY_REPORTS
    page.screenshot(path=screenshots / "reports-per-day.png", full_page=True)
    page.get_by_role("link", name="Frequencies").click()
    page.wait_for_selector("#frequency-chart[data-drawn='4']")  # Chart.js drew 4 bars
    expected = api(served, "/v1/collections/survey/frequencies", attribute="color")
    red = expected["values"].index("red")
    shown = cell_number(page, "frequency-table", "red", "estimate")
    assert shown == pytest.approx(expected["estimate"][red], rel=1e-3)
    stderr = cell_number(page, "frequency-table", "red", "stderr")
    assert stderr == pytest.approx(expected["stderr"][red], rel=1e-3)
    assert chart_values(page)[red] == pytest.approx(expected["estimate"][red])
    assert page.locator("#shown").get_attribute("data-shown") == "raw"
    page.screenshot(path=screenshots / "frequencies.png", full_page=True)


def test_switching_post_processing(page: Any, served: str, screenshots: Path) -> None:
    sign_in(page, served)
    page.goto(f"{served}/ui/collections/survey/frequencies?attribute=color")
    page.wait_for_selector("#frequency-chart[data-drawn='4']")
    raw = chart_values(page)
    page.get_by_role("link", name="Norm-Sub").click()
    page.wait_for_selector("#frequency-chart[data-drawn='4']")
    assert page.locator("#shown").get_attribute("data-shown") == "norm-sub"
    assert "post-processed estimate (Norm-Sub" in page.locator("#shown").inner_text()
    expected = api(
        served, "/v1/collections/survey/frequencies", attribute="color", postprocess="norm-sub"
    )
    values = [cell_number(page, "frequency-table", v, "postprocessed") for v in expected["values"]]
    assert values == pytest.approx(expected["postprocessed"], abs=1e-4)
    assert sum(values) == pytest.approx(1.0, abs=1e-3) and min(values) >= 0
    drawn = chart_values(page)  # the bars now are the post-processed estimate
    assert drawn == pytest.approx(expected["postprocessed"]) and drawn != pytest.approx(raw)
    assert raw == pytest.approx(expected["estimate"])
    current = page.get_by_role("navigation", name="Estimate shown").locator("[aria-current]")
    assert current.inner_text() == "Norm-Sub"
    page.screenshot(path=screenshots / "frequencies-norm-sub.png", full_page=True)
    page.get_by_role("link", name="Raw (unbiased)").click()
    assert page.locator("#shown").get_attribute("data-shown") == "raw"


def test_mining_then_sorting_the_rules_table(page: Any, served: str, screenshots: Path) -> None:
    sign_in(page, served)
    page.goto(f"{served}/ui/collections/survey/itemsets")
    page.get_by_label("Minimum support").fill("0.05")
    page.get_by_label("Minimum confidence").fill("0.1")
    page.get_by_role("button", name="Mine").click()
    page.wait_for_selector("#rules-table", timeout=90_000)  # the page reloads until done
    header = page.locator("#rules-table thead th").nth(4)
    lift = header.get_by_role("button", name="Lift", exact=True)
    lift.click()
    assert header.get_attribute("aria-sort") == "ascending"
    cells = page.locator("#rules-table tbody tr td:nth-of-type(4)")
    ascending = [float(v) for v in cells.evaluate_all("cs => cs.map(c => c.dataset.value)")]
    assert len(ascending) > 1 and ascending == sorted(ascending)
    lift.focus()
    page.keyboard.press("Enter")  # the headings are buttons: the keyboard sorts too
    assert header.get_attribute("aria-sort") == "descending"
    descending = [float(v) for v in cells.evaluate_all("cs => cs.map(c => c.dataset.value)")]
    assert descending == sorted(ascending, reverse=True)
    page.screenshot(path=screenshots / "itemsets.png", full_page=True)
    with page.expect_download() as download:
        page.get_by_role("link", name="Download the rules as CSV").click()
    lines = Path(download.value.path()).read_text().splitlines()
    assert lines[0].startswith("antecedent,consequent,support,confidence,confidence_stderr")
    caption = page.locator("#rules-table caption").inner_text()  # "Rules 1–50 of 68; ..."
    total = int(caption.split(" of ")[1].split(";")[0].replace(",", ""))
    assert len(ascending) == min(total, 50) and len(lines) == 1 + total  # a page; every rule
    page.get_by_role("link", name="Jobs").click()
    assert "done" in page.locator("#jobs-table").inner_text()
    page.screenshot(path=screenshots / "jobs.png", full_page=True)


def test_naive_bayes_training_and_accuracy(page: Any, served: str, screenshots: Path) -> None:
    sign_in(page, served)
    page.goto(f"{served}/ui/collections/car-nb/naive-bayes")
    page.get_by_role("button", name="Train").click()
    page.wait_for_selector("#priors-table")
    models = api(served, "/v1/collections/car-nb/models/naive-bayes")["models"]
    assert len(models) >= 1
    page.get_by_label("CSV file").set_input_files(
        files=[{"name": "car-test.csv", "mimeType": "text/csv", "buffer": car_test_csv()}]
    )
    page.get_by_role("button", name="Measure accuracy").click()
    text = page.locator("#accuracy").inner_text()
    assert "of 300 records classified correctly" in text
    page.screenshot(path=screenshots / "naive-bayes.png", full_page=True)


def test_a_form_without_its_csrf_token_is_refused(page: Any, served: str) -> None:
    sign_in(page, served)
    page.goto(f"{served}/ui/collections/car-nb/naive-bayes")
    before = api(served, "/v1/collections/car-nb/models/naive-bayes")["models"]
    page.locator("form[action$='/train'] input[name='csrf']").evaluate("e => e.remove()")
    page.get_by_role("button", name="Train").click()
    assert "CSRF token is missing" in page.locator("main").inner_text()
    assert api(served, "/v1/collections/car-nb/models/naive-bayes")["models"] == before


def test_the_empty_state_says_what_to_do(page: Any, served: str, screenshots: Path) -> None:
    sign_in(page, served)
    page.goto(f"{served}/ui/collections/waiting/frequencies")
    text = page.locator("main").inner_text()
    assert (
        f"This collection has {WAITING_REPORTS} of its {WAITING_MINIMUM} required reports" in text
    )
    assert "What to do next" in text
    page.screenshot(path=screenshots / "not-released.png", full_page=True)


def test_api_docs_load_from_this_server(page: Any, served: str, screenshots: Path) -> None:
    page.goto(f"{served}/docs")
    page.wait_for_selector(".swagger-ui .information-container")
    assert "ldpcollect aggregator" in page.locator(".swagger-ui .info").inner_text()
    page.screenshot(path=screenshots / "docs.png")


def test_the_keyboard_alone_reaches_a_panel(page: Any, served: str) -> None:
    sign_in(page, served)
    page.goto(f"{served}/ui/collections/survey/overview")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Skip to the content"
    page.keyboard.press("Enter")
    for _ in range(30):  # from the content, Tab reaches the panel tabs
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.textContent") == "Frequencies":
            break
    page.keyboard.press("Enter")
    page.wait_for_url(f"{served}/ui/collections/survey/frequencies")
    page.wait_for_selector("#frequency-chart[data-drawn='4']")
