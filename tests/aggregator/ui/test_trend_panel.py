"""The trend panel without a browser: one row per period with the numbers of
``GET .../trend`` for the followed value (by default the most frequent) or the mean, a
withheld period as a gap in the chart's data and "withheld" with its count in the table,
the from/to form, the CSV download of every value, and problems shown in the panel."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterator
from html import escape, unescape
from typing import Any

import pytest

from ldp_aggregator.app import create_app
from ldp_aggregator.ui.render import number
from ldp_shared import candidates
from ldp_shared.wire.trends import TREND_COLUMNS

from ..conftest import ADMIN, ANALYST, TestClient, state_of
from ._data import _create, _upload
from ._trend_data import COUNTS, DAYS, MINIMUM, NAME, label, on_one_day, populate_trend
from .conftest import _settings, sign_in_client

PANEL = f"/ui/collections/{NAME}/trend"
APPS = ["mail", "chat", "a,b\\c <b>"]
"""Values of an open domain; the last needs escaping, in ``values=`` and in HTML."""
WINDOW = {"from": label(DAYS[0]), "to": label(DAYS[-1])}


@pytest.fixture(scope="module")
def trend_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    settings = _settings(tmp_path_factory.mktemp("ui-trend"))
    with TestClient(create_app(settings), raise_server_exceptions=True) as client:
        populate_trend(client, state_of(client).engine)
        sign_in_client(client)
        yield client


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html)))


def _rows(page: str) -> list[tuple[str, dict[str, str]]]:
    """Each row of the trend table: its period and its ``data-column`` cells' text."""
    found = re.search(r'<table class="data" id="trend-table">(.*?)</table>', page, re.S)
    assert found is not None, "no trend table"
    rows = re.findall(r'<tr[^>]*><th scope="row">(.*?)</th>(.*?)</tr>', found.group(1), re.S)
    column = re.compile(r'data-column="(\w+)"[^>]*>(.*?)</td>', re.S)
    return [
        (period, {key: _text(text).strip() for key, text in column.findall(cells)})
        for period, cells in rows
    ]


def _chart(page: str) -> Any:
    found = re.search(r'<script type="application/json" id="trend-chart-data">(.*?)</script>', page)
    assert found is not None, "no trend chart"
    return json.loads(found.group(1))


def _api(client: TestClient, name: str = NAME, **params: str) -> Any:
    response = client.get(f"/v1/collections/{name}/trend", params=params, headers=ANALYST)
    assert response.status_code == 200, response.text
    return response.json()


def test_the_panel_follows_the_most_frequent_value_period_by_period(
    trend_client: TestClient,
) -> None:
    (page, api), today = on_one_day(
        lambda: (trend_client.get(PANEL), _api(trend_client, attribute="color"))
    )
    assert page.status_code == 200, page.text
    empty = (today - DAYS[-1].date()).days  # days without reports after the last: 2
    periods = [p["period"] for p in api["points"]]
    assert periods[0] == label(DAYS[0]) and periods[-1] == label(today)  # to the current day
    assert len(periods) == len(DAYS) + empty
    rows = _rows(page.text)
    assert [period for period, _ in rows] == periods
    assert [cells["n_reports"] for _, cells in rows] == [number(n) for n in COUNTS] + ["0"] * empty
    # blue: 80% of the 600 reports of the last day, red of the 400 of the first
    assert '<option value="blue" selected>' in page.text
    for (_, cells), point in zip(rows, api["points"], strict=True):
        if point["withheld"] is not None:
            assert cells["withheld"] == "withheld" and "estimate" not in cells
            continue
        f = point["frequencies"]
        blue = f["values"].index("blue")
        for key in ("estimate", "ci_low", "ci_high"):
            assert cells[key] == number(f[key][blue]), (key, cells, f)
    chart = _chart(page.text)
    assert chart["kind"] == "trend" and chart["labels"] == periods
    # withheld periods are gaps (null), never zeros, in the estimate and in the band
    assert [v is None for v in chart["values"]] == [False, True, False] + [True] * empty
    assert chart["low"][1] is None and chart["high"][1] is None
    assert chart["values"][2] > 0.7 > chart["values"][0]  # blue rose
    assert f"2 released, {1 + empty} withheld" in _text(page.text)
    reason = (
        f"collection &#39;{NAME}&#39; has {COUNTS[1]} reports;"
        f" its release policy needs at least {MINIMUM}"
    )
    assert f'title="{reason}">withheld</td>' in page.text


def test_another_value_and_a_window(trend_client: TestClient) -> None:
    page = trend_client.get(PANEL, params={"attribute": "color", "value": "red", **WINDOW})
    assert page.status_code == 200, page.text
    rows = _rows(page.text)
    assert [period for period, _ in rows] == [label(day) for day in DAYS]
    api = _api(trend_client, attribute="color", **WINDOW)
    first = api["points"][0]["frequencies"]
    assert rows[0][1]["estimate"] == number(first["estimate"][first["values"].index("red")])
    assert float(rows[0][1]["estimate"]) > 0.7 > float(rows[2][1]["estimate"])
    assert '<option value="red" selected>' in page.text
    # the form keeps the window, and the other attribute's link too
    assert f'name="from" value="{WINDOW["from"]}"' in page.text
    assert f"from={WINDOW['from']}&amp;to={WINDOW['to']}&amp;attribute=minutes" in page.text


def test_a_numeric_attribute_is_followed_by_its_mean(trend_client: TestClient) -> None:
    page = trend_client.get(PANEL, params={"attribute": "minutes", **WINDOW})
    assert page.status_code == 200, page.text
    api = _api(trend_client, attribute="minutes", **WINDOW)
    rows = _rows(page.text)
    for (_, cells), point in zip(rows, api["points"], strict=True):
        if point["mean"] is None:
            assert cells["withheld"].startswith("withheld")
        else:
            assert cells["estimate"] == number(point["mean"]["mean"])
            assert cells["ci_low"] == number(point["mean"]["ci_low"])
    assert float(rows[0][1]["estimate"]) < float(rows[2][1]["estimate"])  # the mean rose
    assert "Value to follow" not in page.text and "Mean of minutes per day" in _text(page.text)
    assert _chart(page.text)["values"][1] is None


@pytest.mark.parametrize(
    ("params", "said"),
    [
        ({"from": label(DAYS[-1]), "to": label(DAYS[0])}, "starts after it ends"),
        ({"from": "yesterday"}, "is not a period bound"),
        ({"value": "purple"}, "has no value 'purple'"),
        ({"attribute": "nothing"}, "nothing"),
    ],
)
def test_a_bad_query_is_a_problem_in_the_panel(
    trend_client: TestClient, params: dict[str, str], said: str
) -> None:
    page = trend_client.get(PANEL, params=params)
    assert page.status_code == 422
    text = _text(page.text)
    assert said in text and "What to do next" in text
    assert 'id="from"' in page.text  # the form stays, to correct the query
    assert "trend-chart" not in page.text


def test_the_download_holds_every_value_of_every_period(trend_client: TestClient) -> None:
    page = trend_client.get(PANEL, params=WINDOW).text
    link = unescape(re.findall(r'<a href="([^"]+/download/trend\.csv[^"]*)" download>', page)[0])
    response = trend_client.get(link)
    assert response.status_code == 200
    disposition = response.headers["content-disposition"]
    assert disposition == f'attachment; filename="{NAME}-color-trend.csv"'
    rows = list(csv.DictReader(io.StringIO(response.text)))
    assert list(rows[0]) == list(TREND_COLUMNS)
    assert len(rows) == 4 + 1 + 4  # four colours, the withheld day, four colours
    withheld = rows[4]
    assert withheld["period"] == label(DAYS[1]) and withheld["estimate"] == ""
    assert withheld["n_reports"] == str(COUNTS[1]) and f"at least {MINIMUM}" in withheld["withheld"]
    api = _api(trend_client, attribute="color", **WINDOW)
    assert [float(r["estimate"]) for r in rows[:4]] == api["points"][0]["frequencies"]["estimate"]


def test_the_tab_and_its_session(trend_client: TestClient) -> None:
    overview = trend_client.get(f"/ui/collections/{NAME}/overview").text
    tabs = re.findall(rf'<a href="/ui/collections/{NAME}/([a-z-]+)"', overview)
    assert tabs.index("trend") == tabs.index("means") + 1
    trend_client.cookies.clear()
    for path in (PANEL, f"{PANEL}/download/trend.csv"):
        response = trend_client.get(path, follow_redirects=False)
        assert response.status_code == 303 and "/ui/sign-in" in response.headers["location"]
    sign_in_client(trend_client)


def test_a_collection_with_nothing_released_says_so(trend_client: TestClient) -> None:
    spec = {
        "name": "empty-trend",
        "epsilon": 2.0,
        "attributes": [{"name": "color", "domain": ["a", "b"], "mechanism": "grr"}],
    }
    assert trend_client.post("/v1/collections", json=spec, headers=ADMIN).status_code == 201
    page = trend_client.get("/ui/collections/empty-trend/trend")
    assert page.status_code == 200
    text = _text(page.text)
    assert "No period is released yet" in text and "What to do next" in text
    assert "trend-chart" not in page.text and "withheld" in text


def test_an_open_domain_follows_the_value_named(trend_client: TestClient) -> None:
    spec = {
        "name": "apps",
        "epsilon": 4.0,
        "release": {"min_reports": MINIMUM},
        "attributes": [{"name": "app", "mechanism": "flh"}],
    }
    config = _create(trend_client, spec)
    named = {"attribute": "app", "values": candidates.join([APPS[2]])}

    def arrange_and_ask() -> tuple[Any, Any]:
        """The reports are counted in the current day: upload again should it change."""
        _upload(trend_client, config, [{"app": APPS[i % 3]} for i in range(600)])
        page = trend_client.get("/ui/collections/apps/trend", params={"value": APPS[2]})
        return page, _api(trend_client, name="apps", **named)

    (page, api), today = on_one_day(arrange_and_ask)
    asking = trend_client.get("/ui/collections/apps/trend")
    assert asking.status_code == 200 and "trend-chart" not in asking.text
    assert "Name the value to follow" in _text(asking.text) and 'id="value"' in asking.text
    assert page.status_code == 200, page.text
    (period, cells), point = _rows(page.text)[-1], api["points"][-1]
    assert period == label(today) and cells["estimate"] == number(
        point["frequencies"]["estimate"][0]
    )
    assert f'value="{escape(APPS[2])}"' in page.text  # the field keeps the value, escaped
