"""The means and quantiles panels without a browser: they show the numbers of
``GET .../means`` and ``GET .../quantiles`` for the same collection, appear only where
a collection has such attributes, and show a problem state (never a 500) below the
release minimum or for a bad query."""

from __future__ import annotations

import re
from collections.abc import Iterator
from html import unescape
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ldp_aggregator.app import create_app
from ldp_aggregator.quantiles import DEFAULT_LEVELS
from ldp_aggregator.settings import Settings
from ldp_aggregator.ui.panels import means as means_panel
from ldp_aggregator.ui.render import number
from ldp_shared.codec import Privatizer
from ldp_shared.collection import CollectionConfig
from ldp_shared.errors import InsufficientReportsError
from ldp_shared.rand import seeded_rng

from ..conftest import (
    ADMIN,
    ADMIN_TOKEN,
    ANALYST,
    ANALYST_TOKEN,
    TestClient,
    report_dicts,
    spec_payload,
)
from .conftest import sign_in_client

EDGES = [0.0, 10.0, 20.0, 35.0, 50.0, 100.0]
MIN_REPORTS = 500
FILLED = 3_000
SHORT = 60


def _spec(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "epsilon": 4.0,
        "release": {"min_reports": MIN_REPORTS},
        "attributes": [
            {"name": "age", "mechanism": "duchi", "lo": 17, "hi": 90},
            {"name": "hours", "mechanism": "piecewise", "lo": 1, "hi": 99},
            {"name": "income", "mechanism": "histogram", "edges": EDGES},
            {"name": "sex", "domain": ["f", "m"], "mechanism": "grr"},
        ],
    }


def _fill(client: TestClient, name: str, n: int, seed: int) -> None:
    response = client.post("/v1/collections", json=_spec(name), headers=ADMIN)
    assert response.status_code == 201, response.text
    config = CollectionConfig.model_validate(response.json())
    gen = np.random.default_rng(seed)
    columns = {
        "age": gen.normal(40, 13, n),
        "hours": gen.normal(40, 12, n),
        "income": gen.exponential(25, n),
        "sex": gen.choice(["f", "m"], n).tolist(),
    }
    packed = Privatizer(config).privatize_columns(columns, seeded_rng(seed + 1))
    items = report_dicts(config, packed)
    for start in range(0, n, 2_000):
        body = {"reports": items[start : start + 2_000]}
        response = client.post(f"/v1/collections/{name}/reports", json=body)
        assert response.json()["accepted"] == len(body["reports"]), response.text


@pytest.fixture(scope="module")
def numeric_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """``people`` (released), ``few`` (60 of its 500 reports) and ``plain`` (no number)."""
    folder: Path = tmp_path_factory.mktemp("ui-numeric")
    settings = Settings(
        database_url=f"sqlite:///{folder / 'ui.db'}",
        admin_token=ADMIN_TOKEN,
        analyst_token=ANALYST_TOKEN,
    )
    with TestClient(create_app(settings), raise_server_exceptions=True) as client:
        _fill(client, "people", FILLED, seed=5)
        _fill(client, "few", SHORT, seed=7)
        response = client.post("/v1/collections", json=spec_payload(name="plain"), headers=ADMIN)
        assert response.status_code == 201, response.text
        sign_in_client(client)
        yield client


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html)))


def _cells(row_html: str) -> dict[str, str]:
    """The ``data-column`` cells of one table row, by column."""
    return dict(re.findall(r'data-column="([a-z_]+)"[^>]*>([^<]*)<', row_html))


def _rows(page: str, table: str) -> list[str]:
    found = re.search(rf'<table class="data" id="{table}">(.*?)</table>', page, re.S)
    assert found is not None, f"no table {table}"
    return re.findall(r"<tr[ >].*?</tr>", found.group(1).split("<tbody>")[1], re.S)


def test_the_means_panel_shows_the_api_numbers(numeric_client: TestClient) -> None:
    page = numeric_client.get("/ui/collections/people/means")
    assert page.status_code == 200
    rows = {
        name: row
        for row in _rows(page.text, "mean-table")
        for name in re.findall(r'<tr data-attribute="(\w+)"', row)
    }
    assert list(rows) == ["age", "hours"]  # the histogram and the categorical are not means
    for name, row in rows.items():
        api = numeric_client.get(
            "/v1/collections/people/means", params={"attribute": name}, headers=ANALYST
        ).json()
        cells = _cells(row)
        for key in ("epsilon", "n_reports", "mean", "stderr", "ci_low", "ci_high", "lo", "hi"):
            assert cells[key] == number(api[key]), (name, key, cells[key], api[key])
        assert api["mechanism"] in row
    assert "1.96 standard errors" in _text(page.text)


def test_the_quantiles_panel_shows_the_api_numbers(numeric_client: TestClient) -> None:
    for levels in (None, "0.1,0.5,0.9"):
        query = "" if levels is None else f"&q={levels}"
        page = numeric_client.get(f"/ui/collections/people/quantiles?attribute=income{query}")
        assert page.status_code == 200
        params = {"attribute": "income"} | ({} if levels is None else {"q": levels})
        api = numeric_client.get(
            "/v1/collections/people/quantiles", params=params, headers=ANALYST
        ).json()
        rows = [_cells(row) for row in _rows(page.text, "quantile-table")]
        assert [row["probability"] for row in rows] == [
            number(float(q)) for q in (levels or DEFAULT_LEVELS).split(",")
        ]
        for row, want in zip(rows, api["quantiles"], strict=True):
            for key in ("probability", "value", "ci_low", "ci_high"):
                assert row[key] == number(want[key]), (key, row, want)
        bins = re.findall(r'data-bin="(\d+)"', page.text)
        assert [int(b) for b in bins] == [q["bin"] for q in api["quantiles"]]
    frequencies = numeric_client.get(
        "/v1/collections/people/frequencies", params={"attribute": "income"}, headers=ANALYST
    ).json()
    bin_rows = [_cells(row) for row in _rows(page.text, "bin-table")]
    assert [row["estimate"] for row in bin_rows] == [number(e) for e in frequencies["estimate"]]
    assert "Woodruff" in page.text and '"low": [' in page.text


def test_the_panels_appear_only_with_numbers_or_bins(numeric_client: TestClient) -> None:
    people = numeric_client.get("/ui/collections/people/overview").text
    tabs = re.findall(r'<a href="/ui/collections/people/([a-z-]+)"', people)
    assert tabs[tabs.index("frequencies") :][:3] == ["frequencies", "means", "quantiles"]
    plain = numeric_client.get("/ui/collections/plain/overview").text
    assert "/plain/means" not in plain and "/plain/quantiles" not in plain
    for slug in ("means", "quantiles"):
        assert numeric_client.get(f"/ui/collections/plain/{slug}").status_code == 404


def test_too_few_reports_is_a_problem_state(numeric_client: TestClient) -> None:
    for slug in ("means", "quantiles"):
        page = numeric_client.get(f"/ui/collections/few/{slug}")
        assert page.status_code == 409
        text = _text(page.text)
        assert f"This collection has {SHORT} of its {MIN_REPORTS} required reports." in text
        assert "What to do next" in text


def test_a_bad_query_is_a_problem_state(numeric_client: TestClient) -> None:
    for query in ("attribute=income&q=0.5,2", "attribute=age", "attribute=nothing"):
        page = numeric_client.get(f"/ui/collections/people/quantiles?{query}")
        assert page.status_code == 422, query
        assert "What to do next" in _text(page.text)


def test_one_failing_mean_leaves_the_others(
    numeric_client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    released = means_panel.estimate_mean

    def short_of_hours(engine: Any, collection: Any, attribute: str, confidence: float) -> Any:
        if attribute == "hours":
            raise InsufficientReportsError("attribute 'hours' is carried by too few reports")
        return released(engine, collection, attribute, confidence)

    monkeypatch.setattr(means_panel, "estimate_mean", short_of_hours)
    page = numeric_client.get("/ui/collections/people/means")
    assert page.status_code == 200
    assert len(_rows(page.text, "mean-table")) == 1
    assert "hours: " in _text(page.text) and "carried by too few reports" in _text(page.text)
