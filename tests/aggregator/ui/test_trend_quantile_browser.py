"""The quantile trend in a real browser (Chromium through Playwright, see conftest): a
histogram attribute's median per day drawn as a line over its interval band, a gap for
the withheld day, and the level field switching to another quantile; no console error
(the ``page`` fixture checks)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.e2e.conftest import serving

from ldp_aggregator.storage.engine import make_engine

from ._trend_data import DAYS, label
from .conftest import _settings, sign_in
from .test_trend_browser import DRAWN
from .test_trend_quantile_panel import NAME, populate_ages


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An aggregator on loopback holding ``ages``, reports counted in three past days."""
    settings = _settings(tmp_path_factory.mktemp("ui-trend-quantile-browser"))
    with serving(settings) as url:
        engine = make_engine(settings.database_url)
        try:
            with httpx.Client(base_url=url, timeout=60) as client:
                populate_ages(client, engine)
        finally:
            engine.dispose()
        yield url


def test_the_median_per_day_with_its_band(page: Any, served: str, screenshots: Path) -> None:
    sign_in(page, served)
    window = f"from={label(DAYS[0])}&to={label(DAYS[-1])}"
    page.goto(f"{served}/ui/collections/{NAME}/trend?attribute=age&{window}")
    page.wait_for_selector("#trend-chart[data-drawn='3'][data-gaps='1']")
    drawn = page.locator("#trend-chart").evaluate(DRAWN)
    assert drawn["values"][0] < 40 < 60 < drawn["values"][2]  # the median rose
    assert drawn["skipped"] == [False, True, False] and drawn["bands"] == 2
    assert drawn["beside"][0] > 0 and drawn["beside"][1] == 0
    page.screenshot(path=screenshots / "trend-median.png", full_page=True)
    page.get_by_label("Level q:").fill("0.9")
    page.get_by_role("button", name="Show").click()
    page.wait_for_selector("#trend-chart[data-drawn='3'][data-gaps='1']")
    higher = page.locator("#trend-chart").evaluate(DRAWN)["values"]
    assert higher[0] > drawn["values"][0] and higher[2] > drawn["values"][2]
    assert "0.9-quantile" in page.locator("#trend-table caption").inner_text()
