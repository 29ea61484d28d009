"""Open domains in a real browser (Chromium through Playwright, see conftest): the
heavy-hitters chart draws its bars and the detection threshold as a line, a planted
``<script>`` is shown as text and never runs, and the frequencies panel estimates the
values typed into its field. This module serves its own collections (``_words``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.e2e.conftest import serving

from ldp_aggregator.settings import Settings
from ldp_shared import candidates

from ..conftest import ADMIN_TOKEN, ANALYST_TOKEN
from ._words import APPS, PLANTED, SCRIPT, populate_words
from .conftest import sign_in

THRESHOLD_ROW = """(c, threshold) => {
  const chart = Chart.getChart(c);
  const area = chart.chartArea;
  const y = Number(c.dataset.thresholdY);
  const ratio = chart.currentDevicePixelRatio;
  const width = Math.floor((area.right - area.left) * ratio);
  // the 2-pixel line lies across two or three device rows, blended at its edges with what
  // is below it (white, grid, blue bars): count the best of the rows it touches
  let line = 0;
  for (const offset of [-1, 0, 1]) {
    const top = Math.round(y * ratio) + offset;
    const row = c.getContext("2d").getImageData(area.left * ratio, top, width, 1);
    let found = 0;
    for (let i = 0; i < row.data.length; i += 4) {
      const [r, g, b] = row.data.slice(i, i + 3);
      if (r > 170 && g > 50 && g < 140 && b < 70) found += 1;  // vermillion, #D55E00
    }
    line = Math.max(line, found);
  }
  return {
    labels: chart.data.labels,
    y: y,
    expected: chart.scales.y.getPixelForValue(threshold),
    inside: area.top < y && y < area.bottom,
    share: line / width,
  };
}"""


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An aggregator on loopback holding ``words`` and ``short`` (instead of conftest's)."""
    folder = tmp_path_factory.mktemp("ui-words-browser")
    settings = Settings(
        database_url=f"sqlite:///{folder / 'ui.db'}",
        admin_token=ADMIN_TOKEN,
        analyst_token=ANALYST_TOKEN,
    )
    with serving(settings) as url:
        with httpx.Client(base_url=url, timeout=60) as client:
            populate_words(client)
        yield url


def test_the_heavy_hitters_chart_draws_the_threshold(
    page: Any, served: str, screenshots: Path
) -> None:
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    sign_in(page, served)
    page.goto(f"{served}/ui/collections/words/overview")
    page.get_by_role("link", name="Heavy hitters").click()
    page.wait_for_selector("#heavy-hitters-chart[data-threshold-y]")
    api = httpx.get(
        f"{served}/v1/collections/words/heavy-hitters",
        params={"attribute": "query"},
        headers={"Authorization": f"Bearer {ANALYST_TOKEN}"},
        timeout=60,
    ).json()
    drawn = page.locator("#heavy-hitters-chart").evaluate(THRESHOLD_ROW, api["threshold"])
    assert drawn["labels"] == api["values"] and set(PLANTED) <= set(drawn["labels"])
    assert drawn["inside"] and drawn["y"] == pytest.approx(drawn["expected"])
    assert drawn["share"] > 0.4, drawn  # a dashed line across the plot: ⅔ of its pixels
    rows = page.locator("#heavy-hitters-table tbody th").all_inner_texts()
    assert rows == api["values"] and SCRIPT in rows  # shown as text
    assert page.locator("main script:not([type='application/json'])").count() == 0
    assert "Detection threshold" in page.locator("#threshold").inner_text()
    page.screenshot(path=screenshots / "heavy-hitters.png", full_page=True)
    assert dialogs == []


def test_typed_values_are_estimated(page: Any, served: str, screenshots: Path) -> None:
    sign_in(page, served)
    page.goto(f"{served}/ui/collections/words/frequencies?attribute=app")
    assert "Name the values to estimate" in page.locator("main").inner_text()
    field = page.get_by_label("Values to estimate")
    field.fill(candidates.join(APPS))
    field.press("Enter")
    page.wait_for_selector(f"#frequency-chart[data-drawn='{len(APPS)}']")
    assert page.locator("#frequency-table tbody th").all_inner_texts() == APPS
    assert page.get_by_label("Values to estimate").input_value() == candidates.join(APPS)
    page.screenshot(path=screenshots / "frequencies-open-domain.png", full_page=True)
