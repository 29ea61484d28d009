"""The privacy devices have spent, as the aggregator sees it: ``GET /v1/privacy`` and the
dashboard's privacy page list each collection's exact (ε, δ) per record, each training
job's per device, reports and releases so far, and their sequential composition; the
collections list says what kind each collection is, and a collection that only hosts
training jobs is not shown as "not released"."""

from __future__ import annotations

import math
import re
from html import unescape

from ldp_shared.collection import CollectionConfig
from ldp_shared.rand import seeded_rng
from ldp_shared.wire.privacy import PrivacySpent

from ..conftest import ADMIN, ANALYST, TestClient, spec_payload
from ..training_helpers import answer, ask, jobs_path, records, spec
from ._data import SURVEY_REPORTS, WAITING_REPORTS
from .conftest import sign_in_client

HOST = "trainer"


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html)))


def _config(client: TestClient, name: str) -> CollectionConfig:
    response = client.get(f"/v1/collections/{name}")
    return CollectionConfig.model_validate(response.json())


def _trained_job(client: TestClient) -> str:
    """A training job on ``car-nb`` run to its end (60 devices, one report each)."""
    created = client.post(jobs_path("car-nb"), json=spec(), headers=ANALYST)
    assert created.status_code == 201, created.text
    job = str(created.json()["id"])
    rng = seeded_rng(3)
    for record in records(60, seed=4):
        assert answer(client, ask(client, job, "car-nb"), record, rng).status_code == 200
    return job


def test_the_privacy_route_lists_and_composes_what_was_spent(ui_client: TestClient) -> None:
    assert ui_client.get("/v1/privacy").status_code == 401
    job = _trained_job(ui_client)
    trained = ui_client.post("/v1/collections/car-nb/models/naive-bayes", headers=ANALYST)
    assert trained.status_code == 201
    mined = ui_client.post(
        "/v1/collections/survey/itemsets",
        json={"min_support": 0.05, "wait_seconds": 60},
        headers=ANALYST,
    )
    assert mined.json()["status"] == "done"
    response = ui_client.get("/v1/privacy", headers=ANALYST)
    assert response.status_code == 200, response.text
    spent = PrivacySpent.model_validate(response.json())
    by_name = {c.collection: c for c in spent.collections}
    assert set(by_name) == {"survey", "car-nb", "waiting"}
    for name, entry in by_name.items():
        record = _config(ui_client, name).privacy.record
        assert entry.epsilon_per_record == record.epsilon
        assert entry.delta_per_record == record.delta
    assert by_name["survey"].reports == SURVEY_REPORTS
    assert by_name["waiting"].reports == WAITING_REPORTS
    assert (by_name["survey"].releases, by_name["car-nb"].releases) == (1, 1)
    assert by_name["waiting"].releases == 0
    assert by_name["survey"].kind == "frequencies + MASK baskets"
    assert by_name["car-nb"].kind == "training + naive Bayes"
    (training,) = spent.training_jobs
    model = ui_client.get(f"{jobs_path('car-nb')}/{job}/model", headers=ANALYST).json()
    assert training.job == job and training.released and training.reports == 60
    assert training.epsilon_per_device == model["epsilon"]
    assert (training.rounds_closed, training.rounds) == (3, 3)
    # sequential composition: the sum over one report each, not the largest of them
    epsilons = [c.epsilon_per_record for c in spent.collections] + [training.epsilon_per_device]
    bound = spent.all_of_them
    assert bound.reports == 4
    assert math.isclose(bound.epsilon, math.fsum(epsilons), rel_tol=1e-12)
    assert bound.epsilon > max(epsilons)
    assert "Thm 3.16" in bound.rule


def test_the_privacy_page_shows_the_same_numbers(ui_client: TestClient) -> None:
    sign_in_client(ui_client)
    spent = PrivacySpent.model_validate(ui_client.get("/v1/privacy", headers=ANALYST).json())
    page = ui_client.get("/ui/privacy")
    assert page.status_code == 200
    text = _text(page.text)
    assert "has spent at most ε =" in text
    table = page.text[page.text.index('id="privacy-collections"') :].split("</table>")[0]
    shown = re.findall(r'data-column="reports">([^<]+)<', table)
    assert [int(s.replace(",", "")) for s in shown] == [c.reports for c in spent.collections]
    assert 'href="/ui/privacy"' in ui_client.get("/ui").text


def test_the_collections_list_says_each_kind(ui_client: TestClient) -> None:
    """Runs last: it adds ``trainer``, a collection that only hosts a training job."""
    created = ui_client.post("/v1/collections", json=spec_payload(name=HOST), headers=ADMIN)
    assert created.status_code == 201, created.text
    assert ui_client.post(jobs_path(HOST), json=spec(), headers=ANALYST).status_code == 201
    sign_in_client(ui_client)
    page = ui_client.get("/ui").text
    rows = {
        name: row
        for row in re.findall(r"<tr>.*?</tr>", page.split("<tbody>")[1], re.S)
        for name in re.findall(r'<a href="/ui/collections/([^/"]+)/overview">', row)
    }
    kinds = {name: re.findall(r'data-column="kind">([^<]+)<', row)[0] for name, row in rows.items()}
    assert kinds == {
        "survey": "frequencies + MASK baskets",
        "waiting": "frequencies + MASK baskets",
        "car-nb": "training + naive Bayes",
        HOST: "training + frequencies + MASK baskets",
    }
    host = _text(rows[HOST])
    assert "not released" not in host and "of 20 required" not in host
    assert "none of its own" in host and "0 of 1 training job trained" in host
    assert "not released yet" in _text(rows["waiting"])
    overview = _text(ui_client.get(f"/ui/collections/{HOST}/overview").text)
    assert "hosts 1 training job (0 trained)" in overview and "Not released yet" not in overview


def test_the_privacy_route_on_the_tests_engine(client: TestClient) -> None:
    """The same route on the engine the API tests run on (PostgreSQL in CI's second pass):
    an empty aggregator composes nothing; one collection composes to its own ε."""
    empty = PrivacySpent.model_validate(client.get("/v1/privacy", headers=ANALYST).json())
    assert empty.collections == [] and empty.training_jobs == []
    assert (empty.all_of_them.epsilon, empty.all_of_them.reports) == (0.0, 0)
    created = client.post("/v1/collections", json=spec_payload(name="one"), headers=ADMIN)
    assert created.status_code == 201, created.text
    spent = PrivacySpent.model_validate(client.get("/v1/privacy", headers=ANALYST).json())
    (one,) = spent.collections
    assert one.reports == 0 and one.releases == 0
    assert spent.all_of_them.epsilon == one.epsilon_per_record == _config(client, "one").epsilon
