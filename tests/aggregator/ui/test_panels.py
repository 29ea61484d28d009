"""The dashboard's panels without a browser: the registry, the numbers they show (those
of the API's functions), the empty and error states, the per-day counts, the test file
that is never stored, the CSV download and the jobs list."""

from __future__ import annotations

import csv
import io
import math
import re
from datetime import date, timedelta
from html import unescape

import pytest
from sqlalchemy import Engine, func, select, update

from ldp_aggregator.deps import AppState
from ldp_aggregator.storage.jobs import insert_job
from ldp_aggregator.storage.tables import metadata, reports
from ldp_aggregator.ui import pages
from ldp_aggregator.ui.panel import Panel, PanelContext, PanelView
from ldp_aggregator.ui.panels import itemsets as itemsets_panel
from ldp_aggregator.ui.render import number
from ldp_shared.rand import seeded_rng

from ..conftest import ANALYST, TestClient
from ..training_helpers import answer, ask, jobs_path
from ..training_helpers import records as training_records
from ..training_helpers import spec as training_spec
from ._data import SURVEY_REPORTS, car_test_csv
from .conftest import sign_in_client


def _state(client: TestClient) -> AppState:
    state = client.app.state.ldp  # type: ignore[attr-defined]
    assert isinstance(state, AppState)
    return state


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html)))


def _rows_everywhere(engine: Engine) -> dict[str, int]:
    with engine.connect() as connection:
        return {
            table.name: int(connection.execute(select(func.count()).select_from(table)).scalar())
            for table in metadata.sorted_tables
        }


def test_a_new_panel_is_one_registry_entry(
    ui_client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    def view(ctx: PanelContext) -> PanelView:
        return PanelView("panels/_state.html", {"title": "Notes", "message": ctx.collection.name})

    extra = Panel(slug="notes", title="Notes", view=view, applies=lambda c: c.label is None)
    monkeypatch.setattr(pages, "PANELS", (*pages.PANELS, extra))
    sign_in_client(ui_client)
    page = ui_client.get("/ui/collections/survey/notes")
    assert page.status_code == 200 and "Notes" in page.text
    assert (
        'href="/ui/collections/survey/notes"'
        in ui_client.get("/ui/collections/survey/frequencies").text
    )
    assert ui_client.get("/ui/collections/car-nb/notes").status_code == 404  # does not apply


def test_the_frequency_table_shows_the_api_numbers(ui_client: TestClient) -> None:
    sign_in_client(ui_client)
    for method in ("none", "simplex"):
        page = ui_client.get(
            f"/ui/collections/survey/frequencies?attribute=color&postprocess={method}"
        ).text
        api = ui_client.get(
            "/v1/collections/survey/frequencies",
            params={"attribute": "color", "postprocess": method},
            headers=ANALYST,
        ).json()
        for estimate, stderr in zip(api["estimate"], api["stderr"], strict=True):
            assert f">{number(stderr)}<" in page
            if 0 <= estimate <= 1:
                assert f">{number(estimate)}<" in page
            else:  # an unbiased estimate outside [0, 1] by noise is shown with a flag
                assert f'>{number(estimate)} <span class="flag"' in page
        if method != "none":
            assert all(f">{number(p)}<" in page for p in api["postprocessed"])
            assert 'data-shown="simplex"' in page and '"low": null' in page
        else:
            assert 'data-shown="raw"' in page and '"low": [' in page


def test_only_the_postprocessing_that_applies_is_offered(ui_client: TestClient) -> None:
    sign_in_client(ui_client)
    basket = _text(ui_client.get("/ui/collections/survey/frequencies?attribute=basket").text)
    assert "Raw (unbiased)" in basket and "Norm-Sub" not in basket
    label = ui_client.get("/ui/collections/car-nb/frequencies?attribute=class&postprocess=ibu")
    assert label.status_code == 422
    text = _text(label.text)
    assert "IBU does not apply" in text and "What to do next" in text
    assert "Iterative Bayesian update" not in text  # not offered for the label
    assert "buying" in text  # the attribute choice stays on the page


def test_a_collection_below_its_minimum_says_how_far_it_is(ui_client: TestClient) -> None:
    sign_in_client(ui_client)
    page = ui_client.get("/ui/collections/waiting/frequencies")
    assert page.status_code == 409
    assert "This collection has 37 of its 100 required reports." in _text(page.text)
    overview = _text(ui_client.get("/ui/collections/waiting/overview").text)
    assert "Not released yet: this collection has 37 of its 100 required reports." in overview
    listing = _text(ui_client.get("/ui").text)
    assert "37 of 100 required not released yet" in listing


def test_reports_per_day_are_the_stored_days(ui_client: TestClient) -> None:
    engine = _state(ui_client).engine
    collection = _state(ui_client).collections.get("survey")
    with engine.begin() as connection:
        ids = connection.execute(
            select(reports.c.report_id)
            .where(reports.c.collection_id == collection.id)
            .order_by(reports.c.report_id)
            .limit(150)
        ).scalars()
        connection.execute(
            update(reports)
            .where(reports.c.report_id.in_(list(ids)))
            .values(received_day=date(2026, 1, 2))
        )
        today = connection.execute(
            select(func.max(reports.c.received_day)).where(reports.c.collection_id == collection.id)
        ).scalar_one()
    sign_in_client(ui_client)
    page = ui_client.get("/ui/collections/survey/days").text
    days = re.findall(r'<tr><th scope="row">([0-9-]+)</th><td class="num">([0-9,]+)</td>', page)
    assert days == [("2026-01-02", "150"), (today.isoformat(), f"{SURVEY_REPORTS - 150}")]
    assert today - date(2026, 1, 2) > timedelta(days=1)


def _trained_model(client: TestClient, csrf: str) -> str:
    response = client.post(
        "/ui/collections/car-nb/naive-bayes/train", data={"csrf": csrf}, follow_redirects=False
    )
    assert response.status_code == 303
    return response.headers["location"].rsplit("model=", 1)[1]


def test_the_priors_caption_names_the_interval(ui_client: TestClient) -> None:
    model = _trained_model(ui_client, sign_in_client(ui_client))
    page = ui_client.get(f"/ui/collections/car-nb/naive-bayes?model={model}").text
    assert "95% intervals (score intervals: every count the reports are consistent" in page


def test_the_test_file_gives_the_accuracy_and_is_not_stored(ui_client: TestClient) -> None:
    csrf = sign_in_client(ui_client)
    model = _trained_model(ui_client, csrf)
    before = _rows_everywhere(_state(ui_client).engine)
    upload = car_test_csv(200)
    response = ui_client.post(
        "/ui/collections/car-nb/naive-bayes/evaluate",
        data={"csrf": csrf, "model": model},
        files={"file": ("test.csv", upload, "text/csv")},
    )
    assert response.status_code == 200, response.text
    rows = list(csv.DictReader(io.StringIO(upload.decode())))
    labels = [row.pop("class") for row in rows]
    predicted = ui_client.post(
        f"/v1/collections/car-nb/models/naive-bayes/{model}/predict",
        json={"records": rows},
        headers=ANALYST,
    ).json()["predictions"]
    correct = sum(p["predicted"] == t for p, t in zip(predicted, labels, strict=True))
    assert f"({correct} of 200 records classified correctly)" in _text(response.text)
    assert _rows_everywhere(_state(ui_client).engine) == before


def test_a_bad_or_oversized_test_file_is_explained(ui_client: TestClient) -> None:
    csrf = sign_in_client(ui_client)
    model = _trained_model(ui_client, csrf)
    url = "/ui/collections/car-nb/naive-bayes/evaluate"
    wrong = ui_client.post(
        url, data={"csrf": csrf, "model": model}, files={"file": ("t.csv", b"buying\nlow\n")}
    )
    assert "the test file's header lacks maint" in _text(wrong.text)
    assert "Correct the file and upload it again" in _text(wrong.text)
    big = b"x" * (pages.FORM_MAX_BYTES + 1)
    refused = ui_client.post(
        url, data={"csrf": csrf, "model": model}, files={"file": ("t.csv", big)}
    )
    assert refused.status_code == 413 and "processed in memory only" in refused.text


def test_the_rules_download_is_the_jobs_result(ui_client: TestClient) -> None:
    job = ui_client.post(
        "/v1/collections/survey/itemsets",
        json={"min_support": 0.05, "min_confidence": 0.2, "wait_seconds": 60},
        headers=ANALYST,
    ).json()
    assert job["status"] == "done"
    sign_in_client(ui_client)
    response = ui_client.get(f"/ui/collections/survey/itemsets/download/rules.csv?job={job['id']}")
    assert response.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.text)))
    rules = job["result"]["rules"]
    assert len(rows) == len(rules) > 0
    assert [float(r["lift_stderr"]) for r in rows] == [r["lift_stderr"] for r in rules]
    assert rows[0]["antecedent"] == "; ".join(rules[0]["antecedent"])


def test_uninformative_rules_are_flagged_and_listed_last(ui_client: TestClient) -> None:
    """400 baskets at p = 0.8: many rules' confidence intervals span most of [0, 1]; the
    panel says how many, marks each of them after every informative rule, and the CSV
    carries the flag."""
    job = ui_client.post(
        "/v1/collections/survey/itemsets",
        json={"min_support": 0.05, "min_confidence": 0.0, "wait_seconds": 60},
        headers=ANALYST,
    ).json()
    rules = job["result"]["rules"]
    flags = [r["confidence_ci_high"] - r["confidence_ci_low"] < 0.5 for r in rules]
    assert True in flags and False in flags
    sign_in_client(ui_client)
    url: str | None = f"/ui/collections/survey/itemsets?job={job['id']}"
    rows: list[str] = []
    pages = 0
    while url is not None:  # the rules a page at a time (itemsets.PAGE_SIZE each)
        page = ui_client.get(url)
        table = page.text[page.text.index('id="rules-table"') :].split("</table>")[0]
        found = re.findall(r"<tr( class=\"uninformative\")?><th scope=\"row\">", table)
        assert len(found) <= itemsets_panel.PAGE_SIZE
        rows += found
        pages += 1
        after = re.search(r'<a href="([^"]+)" rel="next">', page.text.split('id="rules-pager"')[-1])
        url = unescape(after.group(1)) if after and 'id="rules-pager"' in page.text else None
        assert f"{flags.count(False)} of these rules are marked uninformative" in _text(page.text)
    assert pages == math.ceil(len(flags) / itemsets_panel.PAGE_SIZE) > 1
    assert [not marked for marked in rows] == flags == sorted(flags, reverse=True)
    download = ui_client.get(f"/ui/collections/survey/itemsets/download/rules.csv?job={job['id']}")
    column = [row["informative"] for row in csv.DictReader(io.StringIO(download.text))]
    assert column == [str(flag) for flag in flags]


def test_the_jobs_panel_follows_training_and_other_jobs(ui_client: TestClient) -> None:
    created = ui_client.post(jobs_path("car-nb"), json=training_spec(), headers=ANALYST)
    assert created.status_code == 201, created.text
    job = created.json()["id"]
    rng = seeded_rng(5)
    for record in training_records(7):
        participation = ask(ui_client, job, "car-nb")
        assert answer(ui_client, participation, record, rng).status_code == 200
    state = _state(ui_client)
    collection = state.collections.get("car-nb")
    with state.engine.begin() as connection:  # a kind of job this panel does not know yet
        insert_job(connection, "future-kind-job-0001", collection.id, "future", "{}")
    sign_in_client(ui_client)
    page = _text(ui_client.get("/ui/collections/car-nb/jobs").text)
    assert f"{job} training running round 0 of 3; 7 reports in the open round" in page
    assert "future-kind-job-0001 future queued" in page
    assert 'data-refresh-seconds="3"' in ui_client.get("/ui/collections/car-nb/jobs").text
