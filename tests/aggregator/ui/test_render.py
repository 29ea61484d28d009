"""What the pages print: numbers for reading, chart data that cannot break out of its
element or carry NaN, values escaped as text, CSV cells that no spreadsheet runs."""

from __future__ import annotations

import json
import math

from ldp_aggregator.ui.downloads import spreadsheet_cell
from ldp_aggregator.ui.render import chart_json, number

from ..conftest import TestClient, spec_payload
from ._data import ADMIN
from .conftest import sign_in_client


def test_numbers_read_plainly() -> None:
    assert number(123456) == "123,456"
    assert number(0.123456) == "0.1235"
    assert number(2.5) == "2.5"
    assert number(123456.7) == "123,457"
    assert number(0.00001234) == "1.234e-05"
    assert number(None) == "–"


def test_chart_data_cannot_close_its_script_element_and_has_no_nan() -> None:
    text = str(chart_json({"labels": ["</script><b>"], "values": [math.nan, 0.5, math.inf]}))
    assert "</script>" not in text and "<" not in text
    assert json.loads(text) == {"labels": ["</script><b>"], "values": [None, 0.5, None]}


def test_spreadsheet_formulas_are_quoted() -> None:
    assert spreadsheet_cell("=HYPERLINK(1)") == "'=HYPERLINK(1)"
    assert spreadsheet_cell("@sum") == "'@sum"
    assert spreadsheet_cell("bread; milk") == "bread; milk"
    assert spreadsheet_cell(-0.5) == -0.5


def test_values_from_a_spec_are_escaped(ui_client: TestClient) -> None:
    markup = "<img src=x onerror=alert(1)>"
    spec = spec_payload(name="escaped", description=markup)
    spec["attributes"][0]["domain"] = [markup, "plain", "other", "more"]
    created = ui_client.post("/v1/collections", json=spec, headers=ADMIN)
    assert created.status_code == 201, created.text
    sign_in_client(ui_client)
    for panel in ("overview", "frequencies"):
        page = ui_client.get(f"/ui/collections/escaped/{panel}").text
        assert markup not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in ui_client.get("/ui").text
