"""The trend panel in a real browser (Chromium through Playwright, see conftest): a
collection with reports in three past days, the middle one withheld. The chart draws a
point and an interval band for each released day and nothing at all (a gap, not a zero)
for a withheld one, the from/to form narrows the window, the value picker switches the
followed value, and the page prints no console error (the ``page`` fixture checks)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.e2e.conftest import serving

from ldp_aggregator.storage.engine import make_engine

from ._trend_data import DAYS, NAME, label, on_one_day, populate_trend
from .conftest import _settings, sign_in

DRAWN = """c => {
  const chart = Chart.getChart(c);
  const area = chart.chartArea;
  const ratio = chart.currentDevicePixelRatio;
  const g = c.getContext("2d");
  const height = Math.round((area.bottom - area.top) * ratio);
  // pixels of colour (not white, grey or black) in the plot's column at x
  const colour = (x) => {
    const d = g.getImageData(Math.round(x * ratio), Math.round(area.top * ratio), 1, height).data;
    let found = 0;
    for (let i = 0; i < d.length; i += 4) {
      if (Math.max(d[i], d[i + 1], d[i + 2]) - Math.min(d[i], d[i + 1], d[i + 2]) > 30) found += 1;
    }
    return found;
  };
  const meta = chart.getDatasetMeta(0);
  return {
    values: chart.data.datasets[0].data,
    skipped: meta.data.map((p) => Boolean(p.skip)),
    bands: Number(c.dataset.bands),
    // beside each period's x, left and right: the band (or nothing, in a gap)
    beside: meta.data.map((p) => Math.max(colour(p.x - 4), colour(p.x + 4))),
    // the colour at each drawn point's centre
    points: meta.data.map((p) => p.skip ? null : Array.from(
      g.getImageData(Math.round(p.x * ratio), Math.round(p.y * ratio), 1, 1).data.slice(0, 3))),
  };
}"""


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An aggregator on loopback holding ``drift`` (instead of conftest's collections),
    whose reports are counted in three past days straight into its database."""
    settings = _settings(tmp_path_factory.mktemp("ui-trend-browser"))
    with serving(settings) as url:
        engine = make_engine(settings.database_url)
        try:
            with httpx.Client(base_url=url, timeout=60) as client:
                populate_trend(client, engine)
        finally:
            engine.dispose()
        yield url


def _drawn(page: Any) -> Any:
    return page.locator("#trend-chart").evaluate(DRAWN)


def test_the_trend_draws_points_and_bands_and_leaves_gaps(
    page: Any, served: str, screenshots: Path
) -> None:
    sign_in(page, served)

    def open_the_trend() -> tuple[str | None, str | None]:
        page.goto(f"{served}/ui/collections/{NAME}/overview")
        page.get_by_role("link", name="Trend").click()
        chart = page.wait_for_selector("#trend-chart[data-drawn]")
        assert chart is not None
        return chart.get_attribute("data-drawn"), chart.get_attribute("data-gaps")

    (drawn_days, gaps), today = on_one_day(open_the_trend)
    # from the first day with reports to today: 5 days (one more past midnight), 2 released
    days = (today - DAYS[0].date()).days + 1
    assert (drawn_days, gaps) == (str(days), str(days - 2))
    assert page.get_by_label("Value to follow").input_value() == "blue"  # the most frequent
    page.get_by_label("From:", exact=True).fill(label(DAYS[0]))
    page.get_by_label("To:", exact=True).fill(label(DAYS[-1]))
    page.get_by_role("button", name="Show").click()
    page.wait_for_selector("#trend-chart[data-drawn='3'][data-gaps='1']")
    drawn = _drawn(page)
    assert drawn["values"][1] is None and None not in (drawn["values"][0], drawn["values"][2])
    assert drawn["values"][2] > 0.7 > drawn["values"][0]  # blue rose
    assert drawn["skipped"] == [False, True, False]
    assert drawn["bands"] == 2  # one per released day: the withheld one splits them
    assert drawn["beside"][0] > 0 and drawn["beside"][2] > 0
    assert drawn["beside"][1] == 0, drawn  # the gap: no band, no line, no point
    for red, _, blue in (drawn["points"][0], drawn["points"][2]):
        assert blue > 150 and red < 60, drawn["points"]  # the palette's blue, #0072B2
    row = page.locator("#trend-table tbody tr.withheld")
    assert row.count() == 1 and row.locator("th").inner_text() == label(DAYS[1])
    assert "withheld" in row.inner_text() and "30" in row.inner_text()  # and its count
    page.screenshot(path=screenshots / "trend.png", full_page=True)
    page.get_by_label("Value to follow").select_option("red")
    page.get_by_role("button", name="Show").click()
    page.wait_for_selector("#trend-chart[data-drawn='3'][data-gaps='1']")
    # the window stays
    assert page.get_by_label("From:", exact=True).input_value() == label(DAYS[0])
    red = _drawn(page)["values"]
    assert red[0] > 0.7 > red[2]


def test_the_mean_of_a_number_per_day(page: Any, served: str, screenshots: Path) -> None:
    sign_in(page, served)
    window = f"from={label(DAYS[0])}&to={label(DAYS[-1])}"
    page.goto(f"{served}/ui/collections/{NAME}/trend?attribute=minutes&{window}")
    page.wait_for_selector("#trend-chart[data-drawn='3'][data-gaps='1']")
    drawn = _drawn(page)
    assert drawn["values"][0] < drawn["values"][2] and drawn["beside"][1] == 0
    page.screenshot(path=screenshots / "trend-mean.png", full_page=True)


def test_a_bad_window_is_a_problem_in_the_panel(page: Any, served: str) -> None:
    sign_in(page, served)
    page.goto(f"{served}/ui/collections/{NAME}/trend")
    page.get_by_label("From:", exact=True).fill(label(DAYS[-1]))
    page.get_by_label("To:", exact=True).fill(label(DAYS[0]))
    page.get_by_role("button", name="Show").click()
    text = page.locator("main").inner_text()
    assert "starts after it ends" in text and "What to do next" in text
    assert page.locator("#trend-chart").count() == 0
