"""The trend panel of a histogram attribute: its median (or another level) per period
with the interval of ``GET .../trend?estimate=quantiles``, a gap and "withheld" where a
period is below the release minimum, a bin's frequency on request; and the note that a
naive Bayes model or a kNN classifier has no trend."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from sqlalchemy import Engine

from ldp_aggregator.app import create_app
from ldp_aggregator.ingest import ingest_batch
from ldp_aggregator.storage.collections import load_collection
from ldp_aggregator.ui.render import number
from ldp_shared.analyses.knn.collection import collection_spec
from ldp_shared.codec import Privatizer
from ldp_shared.rand import seeded_rng
from ldp_shared.wire.reports import ReportBatch

from ..conftest import ADMIN, TestClient, report_dicts, state_of
from ..test_api_knn import CELLS
from ._data import Poster, _create
from ._trend_data import DAYS, label
from .conftest import _settings, sign_in_client
from .test_trend_panel import _api, _chart, _rows, _text

NAME = "ages"
PANEL = f"/ui/collections/{NAME}/trend"
COUNTS = [500, 40, 500]
CENTRES = [30.0, 50.0, 70.0]
"""Each day's ages lie within 10 of its centre: the median rises from 30 to 70."""
WINDOW = {"from": label(DAYS[0]), "to": label(DAYS[-1])}


def populate_ages(client: Poster, engine: Engine) -> None:
    """Create ``ages`` and count each day's reports in that day."""
    spec = {
        "name": NAME,
        "epsilon": 4.0,
        "release": {"min_reports": 100},
        "attributes": [
            {"name": "age", "mechanism": "histogram", "edges": [0, 20, 40, 60, 80, 100]}
        ],
    }
    config = _create(client, spec)
    collection = load_collection(engine, NAME)
    gen = np.random.default_rng(60)
    for k, (day, n, centre) in enumerate(zip(DAYS, COUNTS, CENTRES, strict=True)):
        columns = {"age": gen.uniform(centre - 10, centre + 10, n)}
        packed = Privatizer(config).privatize_columns(columns, seeded_rng(61 + k))
        batch = ReportBatch.model_validate({"reports": report_dicts(config, packed)})
        assert ingest_batch(engine, collection, batch, at=day).accepted == n


@pytest.fixture(scope="module")
def ages_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    settings = _settings(tmp_path_factory.mktemp("ui-trend-quantiles"))
    with TestClient(create_app(settings), raise_server_exceptions=True) as client:
        populate_ages(client, state_of(client).engine)
        sign_in_client(client)
        yield client


def test_a_histogram_is_followed_by_its_median(ages_client: TestClient) -> None:
    page = ages_client.get(PANEL, params=WINDOW)
    assert page.status_code == 200, page.text
    api = _api(ages_client, name=NAME, attribute="age", estimate="quantiles", **WINDOW)
    rows = _rows(page.text)
    assert [period for period, _ in rows] == [label(day) for day in DAYS]
    for (_, cells), point in zip(rows, api["points"], strict=True):
        if point.get("quantiles") is None:
            assert cells["withheld"] == "withheld" and "estimate" not in cells
            continue
        median = point["quantiles"]["quantiles"][0]
        assert median["probability"] == 0.5
        for key in ("ci_low", "ci_high"):
            assert cells[key] == number(median[key])
        assert cells["estimate"] == number(median["value"])
    chart = _chart(page.text)
    assert chart["title"] == "Estimated median of age per day"
    assert [v is None for v in chart["values"]] == [False, True, False]
    assert chart["values"][0] < 40 < 60 < chart["values"][2]  # the median rose
    assert chart["low"][0] <= chart["values"][0] <= chart["high"][0]
    text = _text(page.text)
    assert "Median of age per day" in text and "inverted pointwise band of the CDF" in text
    assert (
        '<option value="quantiles" selected>' in page.text and 'name="q" value="0.5"' in page.text
    )


def test_another_level_and_a_bin_s_frequency(ages_client: TestClient) -> None:
    page = ages_client.get(PANEL, params={"q": "0.9", **WINDOW})
    assert page.status_code == 200, page.text
    assert _chart(page.text)["title"] == "Estimated 0.9-quantile of age per day"
    api = _api(ages_client, name=NAME, attribute="age", q="0.9", **WINDOW)
    first = api["points"][0]["quantiles"]["quantiles"][0]
    assert _rows(page.text)[0][1]["estimate"] == number(first["value"])
    bins = ages_client.get(PANEL, params={"estimate": "frequencies", "value": "[60, 80)", **WINDOW})
    assert bins.status_code == 200, bins.text
    assert '<option value="frequencies" selected>' in bins.text and 'name="q"' not in bins.text
    values = _chart(bins.text)["values"]
    assert values[0] < 0.3 < 0.7 < values[2]  # the bin [60, 80) filled up


@pytest.mark.parametrize(("level", "said"), [("1.5", "(0, 1)"), ("half", "comma-separated")])
def test_a_bad_level_is_a_problem_in_the_panel(
    ages_client: TestClient, level: str, said: str
) -> None:
    page = ages_client.get(PANEL, params={"q": level, **WINDOW})
    assert page.status_code == 422
    assert said in _text(page.text) and 'id="q"' in page.text
    assert "trend-chart" not in page.text


def test_models_say_they_have_no_trend(ages_client: TestClient) -> None:
    knn = collection_spec("knn-people", CELLS, 3.0, "tall", ["no", "yes"], 20)
    created = ages_client.post("/v1/collections", json=knn.model_dump(mode="json"), headers=ADMIN)
    assert created.status_code == 201, created.text
    page = ages_client.get("/ui/collections/knn-people/trend")
    assert page.status_code == 200, page.text
    assert CELLS.attribute_names()[0] not in page.text  # the hashed cells are not offered
    assert 'name="attribute" value="tall"' in page.text
    note = _text(re.findall(r'<p class="note" id="no-trend">(.*?)</p>', page.text)[0])
    assert "kNN classifier" in note and "knn/classify?from=&to=" in note
    bayes: dict[str, Any] = {
        "name": "bayes",
        "epsilon": 2.0,
        "label": "c",
        "attributes": [
            {"name": "c", "domain": ["a", "b"], "mechanism": "oue"},
            {"name": "x", "domain": ["u", "v"], "mechanism": "oue"},
        ],
    }
    _create(ages_client, bayes)
    page = ages_client.get("/ui/collections/bayes/trend")
    assert page.status_code == 200 and "models/naive-bayes?from=&amp;to=" in page.text
    assert 'id="no-trend"' not in ages_client.get(PANEL).text
