"""Every panel of a collection of each kind (frequencies and MASK baskets, numbers,
naive Bayes, kNN, a training host) in Chromium: each answers 200 and is not empty (a
table with rows, a drawn chart or a state saying what to do next), draws every chart it
holds, offers its downloads when it shows results, never shows a kNN collection's
internal cell attributes as the user's, prints no console error (the ``page`` fixture),
and shows no number outside its range without a flag. Every panel is photographed."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.e2e.conftest import serving

from ldp_aggregator.settings import Settings

from ..conftest import ADMIN_TOKEN, ANALYST_TOKEN
from ._every_kind import KINDS, populate_every_kind
from .conftest import sign_in

RESULT_PANELS = {
    "frequencies", "heavy-hitters", "means", "quantiles", "trend",
    "naive-bayes", "knn", "itemsets", "training",
}  # fmt: skip
"""The panels that show released results, and so offer CSV and JSON downloads (the
Models panel only where a job has finished)."""
INTERNAL = re.compile(r"\bcell_\d+\b")

RANGED_CELLS = """cells => cells.map(c => [c.dataset.value, c.dataset.range,
    c.dataset.flag || "", c.innerText])"""


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Overrides the conftest's aggregator: one with a collection of each kind."""
    folder = tmp_path_factory.mktemp("ui-every-kind")
    settings = Settings(
        database_url=f"sqlite:///{folder / 'ui.db'}",
        admin_token=ADMIN_TOKEN,
        analyst_token=ANALYST_TOKEN,
    )
    with serving(settings) as url:
        with httpx.Client(base_url=url, timeout=120) as client:
            populate_every_kind(client)
        yield url


def _outside(value: float, bounds: str) -> bool:
    low, _, high = bounds.partition(",")
    return value < float(low) or (high != "" and value > float(high))


def _check_ranges(panel: Any, where: str) -> int:
    """Every number with a known range is within it or flagged; how many were checked."""
    cells = panel.locator("[data-range]").evaluate_all(RANGED_CELLS)
    for value, bounds, flag, text in cells:
        if _outside(float(value), bounds):
            assert flag == "out-of-range" and "by noise" in text, (where, value, bounds, text)
        else:
            assert flag == "", (where, value, bounds)
    return len(cells)


def _check_panel(page: Any, name: str, href: str, screenshots: Path) -> tuple[str, int]:
    response = page.goto(href)
    slug = href.split("?")[0].rstrip("/").split("/")[-1]
    where = f"{name}/{slug}"
    assert response is not None and response.status == 200, (where, response and response.status)
    panel = page.locator("section.panel")
    text = panel.inner_text()
    heading = panel.locator("h2").first.inner_text()
    rows = panel.locator("table tbody tr").count()
    charts = panel.locator("canvas").count()
    states = panel.locator(".state").count()
    assert len(text) - len(heading) > 60 and rows + charts + states > 0, (where, text[:200])
    for canvas in panel.locator("canvas").all():  # drawn by the page's script, not blank
        assert int(canvas.get_attribute("data-drawn") or "0") > 0, (where, canvas)
    assert not INTERNAL.search(page.content()), f"{where} shows an internal cell attribute"
    if slug in RESULT_PANELS and states == 0:
        links = panel.locator("#downloads a").all_inner_texts()
        assert links == ["CSV", "JSON"], (where, links)
    checked = _check_ranges(panel, where)
    page.screenshot(path=screenshots / f"every-{name}-{slug}.png", full_page=True)
    return slug, checked


def test_every_panel_of_every_kind(page: Any, served: str, screenshots: Path) -> None:
    sign_in(page, served)
    listed = page.locator("td[data-column='kind']").all_inner_texts()
    names = page.locator("tbody th[scope='row'] a").all_inner_texts()
    assert {n: k for n, k in zip(names, listed, strict=True) if n in KINDS} == KINDS
    seen: dict[str, list[str]] = {}
    ranged = 0
    for name in KINDS:
        page.goto(f"{served}/ui/collections/{name}/overview")
        tabs = page.locator("nav.tabs a").evaluate_all("links => links.map(a => a.href)")
        seen[name] = []
        for href in tabs:
            slug, checked = _check_panel(page, name, href, screenshots)
            seen[name].append(slug)
            ranged += checked
    assert "knn" in seen["people"] and "naive-bayes" not in seen["people"]
    assert {"means", "quantiles"} <= set(seen["numbers"])
    assert {"naive-bayes", "itemsets", "training"} <= set(seen["car-nb"] + seen["survey"])
    assert ranged > 50  # the range check did look at numbers


def test_a_number_outside_its_range_is_flagged_in_the_browser(page: Any, served: str) -> None:
    """The check above can fail: survey's raw frequencies include estimates below 0 (400
    reports at ε = 2), each shown with its flag."""
    sign_in(page, served)
    page.goto(f"{served}/ui/collections/survey/frequencies?attribute=color")
    cells = page.locator("section.panel [data-range]").evaluate_all(RANGED_CELLS)
    flagged = [c for c in cells if _outside(float(c[0]), c[1])]
    assert flagged and all(flag == "out-of-range" for _, _, flag, _ in flagged)
