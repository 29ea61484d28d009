"""The dashboard's planner form (/ui/plan): the ranked table of GET /v1/plan for what the
form asks, and a refused query shown inside the form's panel, the form keeping its values."""

from __future__ import annotations

import re
from html import unescape

from ldp_aggregator.ui.render import number
from ldp_shared.planner import plan

from ..conftest import TestClient
from .conftest import sign_in_client


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html)))


def _rows(page: str) -> list[str]:
    table = page[page.index('id="plan-table"') :].split("</table>")[0]
    return re.findall(r'<tr data-mechanism="([^"]+)"', table)


def test_the_planner_is_in_the_nav_and_needs_a_signed_in_analyst(ui_client: TestClient) -> None:
    ui_client.cookies.clear()
    away = ui_client.get("/ui/plan", follow_redirects=False)
    assert away.status_code == 303 and away.headers["location"].startswith("/ui/sign-in")
    sign_in_client(ui_client)
    assert '<a href="/ui/plan">Planner</a>' in ui_client.get("/ui").text
    empty = ui_client.get("/ui/plan")
    assert empty.status_code == 200
    assert 'id="plan-form"' in empty.text and 'id="plan-table"' not in empty.text


def test_a_categorical_query_at_n_ranks_the_mechanisms_as_the_planner_does(
    ui_client: TestClient,
) -> None:
    sign_in_client(ui_client)
    query = {"kind": "categorical", "domain_size": "16", "epsilon": "2", "n": "100000"}
    page = ui_client.get("/ui/plan", params=query)
    assert page.status_code == 200, page.text
    expected = plan(epsilon=2.0, domain_size=16, n=100_000)
    assert _rows(page.text) == [e.mechanism for e in expected.mechanisms]
    assert len(expected.mechanisms) >= 3
    best = expected.mechanisms[0]
    row = page.text.split(f'<tr data-mechanism="{best.mechanism}">')[1].split("</tr>")[0]
    cells = dict(re.findall(r'data-column="(\w+)">([^<]*)<', row))
    assert cells["stderr"] == number(best.stderr)
    assert best.central_epsilon is not None and cells["central_epsilon"] == number(
        best.central_epsilon
    )
    assert cells["report_bytes"] == number(best.report_bytes)
    assert 'value="16"' in page.text  # the form keeps the query


def test_a_target_error_for_a_numeric_attribute_gives_the_reports_needed(
    ui_client: TestClient,
) -> None:
    sign_in_client(ui_client)
    query = {"kind": "numeric", "lo": "0", "hi": "100", "epsilon": "1", "target_stderr": "1"}
    page = ui_client.get("/ui/plan", params=query)
    assert page.status_code == 200, page.text
    expected = plan(epsilon=1.0, lo=0.0, hi=100.0, target_stderr=1.0)
    assert _rows(page.text) == [e.mechanism for e in expected.mechanisms]
    assert "Reports needed for a standard error of 1" in _text(page.text)
    assert f"{expected.mechanisms[0].n:,}" in page.text


def test_an_impossible_target_is_refused_inside_the_form(ui_client: TestClient) -> None:
    sign_in_client(ui_client)
    query = {"kind": "numeric", "lo": "0", "hi": "1", "epsilon": "0.1", "target_stderr": "1e-9"}
    refused = ui_client.get("/ui/plan", params=query)
    assert refused.status_code == 422
    page = refused.text
    problem = _text(page[page.index('id="form-problem"') :].split("</section>")[0])
    assert "Not done: No plan meets the query" in problem and "raise epsilon" in problem
    assert page.index('id="form-problem"') < page.index('id="plan-form"')
    assert 'value="1e-9"' in page and 'id="plan-table"' not in page


def test_a_word_where_a_number_goes_is_one_readable_line(ui_client: TestClient) -> None:
    sign_in_client(ui_client)
    query = {"kind": "categorical", "domain_size": "ten", "epsilon": "1", "n": "1000"}
    refused = ui_client.get("/ui/plan", params=query)
    assert refused.status_code == 422
    assert "the domain size must be a number, got 'ten'" in _text(refused.text)
    both = ui_client.get("/ui/plan", params={"epsilon": "1", "n": "10", "target_stderr": "0.1"})
    assert both.status_code == 422
    assert "give exactly one of n, target_stderr and target_width" in _text(both.text)


def _cells(page: str, mechanism: str) -> dict[str, str]:
    row = page.split(f'<tr data-mechanism="{mechanism}">')[1].split("</tr>")[0]
    return {k: _text(v).strip() for k, v in re.findall(r'data-column="(\w+)">(.*?)</td>', row)}


def test_second_moment_plans_the_collision_term_and_shows_the_parameters(
    ui_client: TestClient,
) -> None:
    sign_in_client(ui_client)
    query = {"kind": "open", "epsilon": "2", "n": "1000000", "second_moment": "0.01"}
    page = ui_client.get("/ui/plan", params=query)
    assert page.status_code == 200, page.text
    expected = plan(epsilon=2.0, n=1_000_000, second_moment=0.01)
    assert expected != plan(epsilon=2.0, n=1_000_000)
    assert _rows(page.text) == [e.mechanism for e in expected.mechanisms]
    for entry in expected.mechanisms:
        cells = _cells(page.text, entry.mechanism)
        assert cells["stderr"] == number(entry.stderr)
        assert f"hashes = {number(entry.parameters['hashes'])}" in cells["parameters"]
    assert "collision terms at F₂ = 0.01" in _text(page.text)
    assert 'name="second_moment" inputmode="decimal" value="0.01"' in page.text


def test_the_table_shows_the_local_delta_and_the_not_planned_reason(
    ui_client: TestClient,
) -> None:
    sign_in_client(ui_client)
    query = {"kind": "numeric", "lo": "0", "hi": "100", "epsilon": "2", "n": "10000"}
    page = ui_client.get("/ui/plan", params=query)
    assert page.status_code == 200, page.text
    expected = {e.mechanism: e for e in plan(epsilon=2.0, lo=0.0, hi=100.0, n=10_000).mechanisms}
    gaussian = _cells(page.text, "gaussian")["parameters"]
    assert f"δ per report = {number(expected['gaussian'].local_delta)}" in gaussian
    assert _cells(page.text, "laplace")["parameters"] == "–"
    assert "collision terms" not in _text(page.text)  # no hashing mechanism here
    target = {**query, "n": "", "target_stderr": "1"}
    page = ui_client.get("/ui/plan", params=target)
    assert page.status_code == 200, page.text
    note = _text(page.text.split('id="plan-not-planned">')[1].split("</p>")[0])
    assert note.startswith("Not planned for this query: ")
    assert "histogram" in note and "not in the target's units" in note


def test_second_moment_outside_its_range_is_refused_inside_the_form(
    ui_client: TestClient,
) -> None:
    sign_in_client(ui_client)
    for value, message in (
        ("0", "second_moment (F₂) must be in (0, 1], got 0.0"),
        ("1.5", "second_moment (F₂) must be in (0, 1], got 1.5"),
        ("half", "F₂ must be a number, got 'half'"),
    ):
        query = {"kind": "open", "epsilon": "1", "n": "1000", "second_moment": value}
        refused = ui_client.get("/ui/plan", params=query)
        assert refused.status_code == 422
        assert message in _text(refused.text) and 'id="plan-table"' not in refused.text
        assert f'name="second_moment" inputmode="decimal" value="{value}"' in refused.text
