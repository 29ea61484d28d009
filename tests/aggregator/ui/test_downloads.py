"""Results to take away: every analysis route answers CSV when asked (``?format=csv`` or
``Accept: text/csv``), JSON by default, with the columns of the SDK's ``to_frame()``;
every dashboard panel showing results links its CSV and JSON, the same bytes as the
API's."""

from __future__ import annotations

import csv
import io
import re
from html import unescape
from typing import Any

import pytest
from pydantic import BaseModel

from ldp_aggregator.result_downloads import csv_cell
from ldp_shared import tabular
from ldp_shared.wire.itemsets import ItemsetJob
from ldp_shared.wire.knn import KnnClassification
from ldp_shared.wire.naive_bayes import NaiveBayesModel
from ldp_shared.wire.releases import FrequencyResult, MeanResult, QuantileResult
from ldp_shared.wire.trends import TrendResult

from ..conftest import ANALYST, TestClient
from ..test_api_knn import create as create_knn
from ..test_api_knn import upload as upload_knn
from .conftest import sign_in_client
from .test_numeric_panels import numeric_client  # noqa: F401 (a fixture)

CSV_ASKED = {**ANALYST, "Accept": "text/csv"}


def _rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def _expected(result: BaseModel) -> tuple[list[str], list[list[str]]]:
    """The header and cells ``result``'s CSV must hold: its frame's columns."""
    table = tabular.columns(result)
    cells = [[str(csv_cell(value)) for value in row] for row in zip(*table.values(), strict=True)]
    return list(table), cells


def _check_csv(text: str, result: BaseModel) -> None:
    header, cells = _expected(result)
    parsed = list(csv.reader(io.StringIO(text)))
    assert parsed[0] == header
    assert parsed[1:] == cells
    assert len(cells) > 0


ROUTES: list[tuple[str, str, dict[str, Any], type[BaseModel]]] = [
    ("survey", "frequencies", {"attribute": "color"}, FrequencyResult),
    ("survey", "frequencies", {"attribute": "age", "postprocess": "norm-sub"}, FrequencyResult),
    ("survey", "trend", {"attribute": "color"}, TrendResult),
]
NUMERIC: list[tuple[str, str, dict[str, Any], type[BaseModel]]] = [
    ("people", "means", {"attribute": "age"}, MeanResult),
    ("people", "quantiles", {"attribute": "income"}, QuantileResult),
    ("people", "trend", {"attribute": "hours"}, TrendResult),
]


def _api_answers_csv(client: TestClient, name: str, route: str, params: dict[str, Any],
                     kind: type[BaseModel]) -> None:  # fmt: skip
    url = f"/v1/collections/{name}/{route}"
    plain = client.get(url, params=params, headers=ANALYST)
    assert plain.status_code == 200, plain.text
    assert plain.headers["content-type"].startswith("application/json")
    result = kind.model_validate(plain.json())
    by_format = client.get(url, params={**params, "format": "csv"}, headers=ANALYST)
    by_accept = client.get(url, params=params, headers=CSV_ASKED)
    for response in (by_format, by_accept):
        assert response.status_code == 200, response.text
        assert response.headers["content-type"].startswith("text/csv")
        assert response.headers["content-disposition"].startswith("attachment; filename=")
        _check_csv(response.text, result)
    assert by_format.text == by_accept.text


@pytest.mark.parametrize(("name", "route", "params", "kind"), ROUTES)
def test_an_analysis_answers_csv_when_asked(
    ui_client: TestClient, name: str, route: str, params: dict[str, Any], kind: type[BaseModel]
) -> None:
    _api_answers_csv(ui_client, name, route, params, kind)


@pytest.mark.parametrize(("name", "route", "params", "kind"), NUMERIC)
def test_a_numeric_analysis_answers_csv_when_asked(
    numeric_client: TestClient,  # noqa: F811
    name: str,
    route: str,
    params: dict[str, Any],
    kind: type[BaseModel],
) -> None:
    _api_answers_csv(numeric_client, name, route, params, kind)


def test_json_stays_the_default_and_the_accept_header_is_ranked(ui_client: TestClient) -> None:
    url, params = "/v1/collections/survey/frequencies", {"attribute": "color"}
    for accept, csv_expected in (
        ("*/*", False),
        ("application/json, text/csv", False),
        ("text/csv;q=0.5, application/json", False),
        ("application/json;q=0.2, text/csv;q=0.9", True),
        ("text/csv, */*;q=0.1", True),
    ):
        response = ui_client.get(url, params=params, headers={**ANALYST, "Accept": accept})
        kind = response.headers["content-type"]
        assert kind.startswith("text/csv" if csv_expected else "application/json"), accept
    forced = ui_client.get(url, params={**params, "format": "json"}, headers=CSV_ASKED)
    assert forced.headers["content-type"].startswith("application/json")
    refused = ui_client.get(url, params={**params, "format": "xml"}, headers=ANALYST)
    assert refused.status_code == 422
    assert refused.headers["content-type"].startswith("application/problem+json")


def test_a_refusal_stays_a_problem_document_when_csv_is_asked(ui_client: TestClient) -> None:
    response = ui_client.get(
        "/v1/collections/waiting/frequencies", params={"attribute": "color"}, headers=CSV_ASKED
    )
    assert response.status_code == 409
    assert response.headers["content-type"].startswith("application/problem+json")


def test_naive_bayes_and_itemsets_answer_csv(ui_client: TestClient) -> None:
    trained = ui_client.post("/v1/collections/car-nb/models/naive-bayes", headers=ANALYST)
    assert trained.status_code == 201, trained.text
    model = NaiveBayesModel.model_validate(trained.json())
    url = f"/v1/collections/car-nb/models/naive-bayes/{model.id}"
    _check_csv(ui_client.get(url, headers=CSV_ASKED).text, model)
    job = ui_client.post(
        "/v1/collections/survey/itemsets",
        json={"min_support": 0.05, "min_confidence": 0.2, "wait_seconds": 60},
        headers=ANALYST,
    ).json()
    done = ItemsetJob.model_validate(job)
    assert done.result is not None
    url = f"/v1/collections/survey/itemsets/{done.id}"
    rules = ui_client.get(url, params={"format": "csv"}, headers=ANALYST)
    header, cells = _expected(done.result)
    assert list(csv.reader(io.StringIO(rules.text))) == [header, *cells]
    itemsets = ui_client.get(url, params={"format": "csv", "table": "itemsets"}, headers=ANALYST)
    assert _rows(itemsets.text)[0].keys() == {"items", "length", "support", "stderr",
                                              "ci_low", "ci_high"}  # fmt: skip
    assert len(_rows(itemsets.text)) == len(done.result.itemsets)


def _links(page: str) -> dict[str, str]:
    found = re.search(r'<p class="downloads" id="downloads">(.*?)</p>', page, re.S)
    assert found is not None, "the panel offers no downloads"
    links = re.findall(r'<a href="([^"]+)" download>(\w+)</a>', found.group(1))
    return {label: unescape(href) for href, label in links}


PANELS = [
    ("survey", "frequencies?attribute=age", "frequencies", {"attribute": "age"}),
    ("survey", "trend?attribute=color", "trend", {"attribute": "color"}),
]


@pytest.mark.parametrize(("name", "panel", "route", "params"), PANELS)
def test_a_panels_downloads_are_the_apis_answers(
    ui_client: TestClient, name: str, panel: str, route: str, params: dict[str, str]
) -> None:
    sign_in_client(ui_client)
    page = ui_client.get(f"/ui/collections/{name}/{panel}")
    assert page.status_code == 200
    links = _links(page.text)
    assert set(links) == {"CSV", "JSON"}
    api = f"/v1/collections/{name}/{route}"
    as_csv = ui_client.get(links["CSV"])
    assert as_csv.headers["content-type"].startswith("text/csv")
    assert (
        as_csv.text == ui_client.get(api, params={**params, "format": "csv"}, headers=ANALYST).text
    )
    as_json = ui_client.get(links["JSON"])
    assert as_json.json() == ui_client.get(api, params=params, headers=ANALYST).json()


def test_the_means_download_holds_every_released_mean(
    numeric_client: TestClient,  # noqa: F811
) -> None:
    page = numeric_client.get("/ui/collections/people/means")
    rows = _rows(numeric_client.get(_links(page.text)["CSV"]).text)
    assert [row["attribute"] for row in rows] == ["age", "hours"]
    for row in rows:
        api = numeric_client.get(
            "/v1/collections/people/means", params={"attribute": row["attribute"]}, headers=ANALYST
        ).json()
        assert float(row["estimate"]) == api["mean"]
    documents = numeric_client.get(_links(page.text)["JSON"]).json()
    assert [d["attribute"] for d in documents] == ["age", "hours"]


def test_a_panel_without_a_release_offers_no_download(ui_client: TestClient) -> None:
    sign_in_client(ui_client)
    page = ui_client.get("/ui/collections/waiting/frequencies")
    assert 'id="downloads"' not in page.text
    refused = ui_client.get("/ui/collections/waiting/frequencies/download/frequencies.csv")
    assert refused.status_code == 409
    assert refused.headers["content-type"].startswith("text/html")


def test_a_cell_a_spreadsheet_would_run_is_quoted() -> None:
    assert csv_cell("=HYPERLINK(1)") == "'=HYPERLINK(1)"
    assert csv_cell(frozenset({"b", "a"})) == "a; b"
    assert csv_cell(float("nan")) == ""


def test_knn_answers_csv_and_its_panel_hides_the_cells(ui_client: TestClient) -> None:
    upload_knn(ui_client, create_knn(ui_client, min_reports=500), 4_000)
    url, body = "/v1/collections/people/knn/classify", {"points": [[150, 0], [195, 2]], "k": 50}
    plain = ui_client.post(url, json=body, headers=ANALYST)
    result = KnnClassification.model_validate(plain.json())
    as_csv = ui_client.post(url, json=body, params={"format": "csv"}, headers=ANALYST)
    _check_csv(as_csv.text, result)
    sign_in_client(ui_client)
    panel = ui_client.get("/ui/collections/people/knn?f_height=195&f_colour=2&k=50")
    assert panel.status_code == 200
    assert "Predicted tall:" in unescape(re.sub(r"<[^>]+>", "", panel.text))
    assert set(_links(panel.text)) == {"CSV", "JSON"}
    overview = ui_client.get("/ui/collections/people/overview").text
    for page in (panel.text, overview, ui_client.get("/ui/collections/people/frequencies").text):
        assert not re.search(r"\bcell_\d+\b", page)
    assert 'id="knn-features"' in overview and ">height<" in overview
    assert ui_client.get("/ui/collections/people/naive-bayes").status_code == 404
