"""Open domains on the dashboard without a browser: the heavy-hitters panel shows the
numbers of ``GET .../heavy-hitters`` with its detection threshold, device strings only
escaped, an empty result and its problem states; the frequencies panel asks for the
values of an open-domain attribute and estimates those named, as ``values=`` does."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from html import unescape
from pathlib import Path
from typing import Any

import pytest

from ldp_aggregator.app import create_app
from ldp_aggregator.settings import Settings
from ldp_aggregator.ui.panels import heavy_hitters as panel
from ldp_aggregator.ui.render import number
from ldp_shared import candidates

from ..conftest import ADMIN_TOKEN, ANALYST, ANALYST_TOKEN, TestClient
from ._words import APPS, MINIMUM, OSES, PLANTED, SCRIPT, SHORT_REPORTS, populate_words
from .conftest import sign_in_client

ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"


@pytest.fixture(scope="module")
def words_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    folder: Path = tmp_path_factory.mktemp("ui-words")
    settings = Settings(
        database_url=f"sqlite:///{folder / 'ui.db'}",
        admin_token=ADMIN_TOKEN,
        analyst_token=ANALYST_TOKEN,
    )
    with TestClient(create_app(settings), raise_server_exceptions=True) as client:
        populate_words(client)
        sign_in_client(client)
        yield client


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html)))


def _table(page: str, table: str) -> list[tuple[str, dict[str, str]]]:
    """Each row of a table: its heading (unescaped) and its ``data-column`` cells."""
    found = re.search(rf'<table class="data" id="{table}">(.*?)</table>', page, re.S)
    assert found is not None, f"no table {table}"
    rows = re.findall(r"<tr><th scope=\"row\">(.*?)</th>(.*?)</tr>", found.group(1), re.S)
    return [
        (unescape(head), dict(re.findall(r'data-column="([a-z_]+)"[^>]*>([^<]*)<', cells)))
        for head, cells in rows
    ]


def _chart(page: str, chart: str) -> Any:
    found = re.search(rf'<script type="application/json" id="{chart}-data">(.*?)</script>', page)
    assert found is not None, f"no chart {chart}"
    return json.loads(found.group(1))


def _api(client: TestClient, path: str, **params: str) -> Any:
    response = client.get(f"/v1/collections/words/{path}", params=params, headers=ANALYST)
    assert response.status_code == 200, response.text
    return response.json()


def test_the_heavy_hitters_panel_shows_the_api_result(words_client: TestClient) -> None:
    page = words_client.get("/ui/collections/words/heavy-hitters")
    assert page.status_code == 200
    api = _api(words_client, "heavy-hitters", attribute="query", k="20")
    rows = _table(page.text, "heavy-hitters-table")
    assert [value for value, _ in rows] == api["values"]
    assert set(PLANTED) <= set(api["values"])
    for (_, cells), i in zip(rows, range(len(rows)), strict=True):
        for key in ("estimate", "stderr", "ci_low", "ci_high"):
            assert cells[key] == number(api[key][i]), (key, i)
    chart = _chart(page.text, "heavy-hitters-chart")
    assert chart["labels"] == api["values"] and chart["high"] == api["ci_high"]
    threshold = api["threshold"]
    assert chart["threshold"] == {
        "value": threshold,
        "label": f"detection threshold {number(threshold)}",
    }
    text = _text(page.text)
    assert f"Detection threshold: {number(threshold)}." in text
    assert "found with probability at least 90%" in text
    assert "holds a value that no device holds with probability at most 5%" in text
    assert f"{api['levels_searched']} prefix levels searched" in text
    assert f"{number(api['candidates'])} candidates estimated" in text


def test_device_strings_are_shown_escaped(words_client: TestClient) -> None:
    page = words_client.get("/ui/collections/words/heavy-hitters?k=5").text
    assert SCRIPT not in page and f'<th scope="row">{ESCAPED}</th>' in page
    assert '"\\u003cscript>alert(1)\\u003c/script>"' in page  # in the chart's JSON
    scripts = re.findall(r"<script\b[^>]*>", page)
    assert all(" src=" in s or 'type="application/json"' in s for s in scripts), scripts
    named = candidates.join(APPS)
    frequencies = words_client.get(
        "/ui/collections/words/frequencies", params={"attribute": "app", "values": named}
    ).text
    assert "<b>bold</b>" not in frequencies and "&lt;b&gt;bold&lt;/b&gt;" in frequencies


def test_an_empty_result_shows_the_threshold(
    words_client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    released = panel.estimate_heavy_hitters

    def nothing_found(*args: Any) -> Any:
        found = released(*args)
        lists = ("values", "estimate", "counts", "stderr", "ci_low", "ci_high")
        return found.model_copy(update={name: [] for name in lists})

    monkeypatch.setattr(panel, "estimate_heavy_hitters", nothing_found)
    page = words_client.get("/ui/collections/words/heavy-hitters")
    assert page.status_code == 200
    threshold = _api(words_client, "heavy-hitters", attribute="query")["threshold"]
    text = _text(page.text)
    assert "No value is above the threshold yet" in text
    assert f"the detection threshold, {number(threshold)}." in text
    assert "heavy-hitters-chart" not in page.text and "heavy-hitters-table" not in page.text


def test_bad_k_and_too_few_reports_are_problem_states(words_client: TestClient) -> None:
    for k in ("0", "1001", "many", ""):
        page = words_client.get("/ui/collections/words/heavy-hitters", params={"k": k})
        assert page.status_code == 422, k
        text = _text(page.text)
        assert "k must be a whole number from 1 to 1000" in text and "What to do next" in text
        assert f'name="k" value="{k}"' in page.text  # the form keeps what was typed
    other = words_client.get("/ui/collections/words/heavy-hitters?attribute=app")
    assert other.status_code == 422 and "keeps no prefixes" in _text(other.text)
    short = words_client.get("/ui/collections/short/heavy-hitters")
    assert short.status_code == 409
    shortage = f"This collection has {SHORT_REPORTS} of its {MINIMUM} required reports."
    assert shortage in _text(short.text)


def test_open_domain_frequencies_estimate_the_named_values(words_client: TestClient) -> None:
    url = "/ui/collections/words/frequencies"
    asked = words_client.get(url, params={"attribute": "app"})
    assert asked.status_code == 200
    text = _text(asked.text)
    assert "Name the values to estimate" in text and "open domain" in text
    assert "Norm-Sub" not in text and 'name="values"' in asked.text
    assert "frequency-table" not in asked.text
    query = _text(words_client.get(url, params={"attribute": "query"}).text)
    assert "the Heavy hitters tab finds its most frequent values" in query
    named = [*APPS, "nobody"]
    text_named = candidates.join(named)
    page = words_client.get(url, params={"attribute": "app", "values": text_named}).text
    api = _api(words_client, "frequencies", attribute="app", values=text_named)
    rows = _table(page, "frequency-table")
    assert [value for value, _ in rows] == named == api["values"]
    assert [cells["estimate"] for _, cells in rows] == [number(e) for e in api["estimate"]]
    assert f'value="{text_named.replace("<", "&lt;").replace(">", "&gt;")}"' in page
    twice = words_client.get(url, params={"attribute": "app", "values": "mail,mail"})
    assert twice.status_code == 422 and "'mail' is named twice" in _text(twice.text)


def test_a_declared_domain_keeps_its_whole_table(words_client: TestClient) -> None:
    page = words_client.get(
        "/ui/collections/words/frequencies", params={"attribute": "os", "values": "ios"}
    ).text
    assert [value for value, _ in _table(page, "frequency-table")] == OSES
    assert 'name="values"' not in page and "Norm-Sub" in page
    overview = _text(words_client.get("/ui/collections/words/overview").text)
    assert "any text of at most 25 bytes (an open domain" in overview
    assert f"3 values: {', '.join(OSES)}" in overview
