"""The naive Bayes panel's refusals: a bad train form, the repairs the API takes, the
test file's problems (HTML, with the API's status) and a stored model that cannot be
read back (the panel shows the others)."""

from __future__ import annotations

import json
import re

import pytest
from sqlalchemy import delete

from ldp_aggregator.storage.collections import utc_today
from ldp_aggregator.storage.models import insert_model
from ldp_aggregator.storage.tables import models
from ldp_shared.wire.naive_bayes import COUNT_REPAIRS

from ..conftest import ANALYST, TestClient
from .conftest import sign_in_client
from .test_panels import _state, _text

PANEL = "/ui/collections/car-nb/naive-bayes"
API = "/v1/collections/car-nb/models/naive-bayes"


def _model_ids(client: TestClient) -> list[str]:
    ids: list[str] = client.get(API, headers=ANALYST).json()["models"]
    return ids


def _train(client: TestClient, csrf: str, **form: str) -> str:
    response = client.post(f"{PANEL}/train", data={"csrf": csrf, **form}, follow_redirects=False)
    assert response.status_code == 303, response.text
    return response.headers["location"].rsplit("model=", 1)[1]


@pytest.mark.parametrize(
    ("alpha", "says"),
    [
        ("-1", "alpha: Input should be greater than or equal to 0"),
        ("nan", "alpha: Input should be a finite number"),
        ("inf", "alpha: Input should be a finite number"),
        ("1e400", "alpha: Input should be a finite number"),
        ("1.7e308", "alpha: Input should be less than or equal to 9007199254740992"),
        ("one", "alpha must be a number, e.g. 1"),
    ],
)
def test_a_bad_alpha_is_the_panels_problem_state(
    ui_client: TestClient, alpha: str, says: str
) -> None:
    csrf = sign_in_client(ui_client)
    before = _model_ids(ui_client)
    response = ui_client.post(f"{PANEL}/train", data={"csrf": csrf, "alpha": alpha})
    assert response.status_code == 422, response.text
    assert response.headers["content-type"].startswith("text/html")
    page = _text(response.text)
    assert "Invalid query" in page and says in page
    assert _model_ids(ui_client) == before


def test_the_form_offers_every_repair_the_api_takes(ui_client: TestClient) -> None:
    csrf = sign_in_client(ui_client)
    page = ui_client.get(PANEL).text
    select = re.search(r'<select id="repair" name="repair">(.*?)</select>', page, re.S)
    assert select is not None
    assert tuple(re.findall(r"<option>([^<]+)</option>", select.group(1))) == COUNT_REPAIRS
    for repair in COUNT_REPAIRS:
        model = _train(ui_client, csrf, repair=repair, alpha="0.5")
        stored = ui_client.get(f"{API}/{model}", headers=ANALYST).json()
        assert stored["smoothing"] == {**stored["smoothing"], "alpha": 0.5, "repair": repair}
    refused = ui_client.post(f"{PANEL}/train", data={"csrf": csrf, "repair": "magic"})
    assert refused.status_code == 422
    assert "repair must be one of posterior-mean, clamp, norm-sub" in _text(refused.text)


def test_a_refused_test_file_has_the_apis_status(ui_client: TestClient) -> None:
    csrf = sign_in_client(ui_client)
    model = _train(ui_client, csrf)
    url, form = f"{PANEL}/evaluate", {"csrf": csrf, "model": model}
    answers = {
        "the test file's header lacks maint": ui_client.post(
            url, data=form, files={"file": ("t.csv", b"buying\nlow\n")}
        ),
        "the test file is not UTF-8 text": ui_client.post(
            url, data=form, files={"file": ("t.csv", b"buying,class\n\xff\xfe\n")}
        ),
        "choose a labelled CSV test file to upload": ui_client.post(url, data=form),
    }
    for says, response in answers.items():
        assert response.status_code == 422, (says, response.text)
        assert response.headers["content-type"].startswith("text/html")
        page = _text(response.text)
        assert says in page and "Correct the file and upload it again" in page
        assert f"Model {model}" in page  # the panel itself, not an error page


def test_one_unreadable_model_leaves_the_others_on_the_panel(ui_client: TestClient) -> None:
    """A model stored before non-finite numbers were refused holds null in log_prob."""
    csrf = sign_in_client(ui_client)
    good = _train(ui_client, csrf)
    broken = ui_client.get(f"{API}/{good}", headers=ANALYST).json()
    broken["id"] = "broken-model-0001"
    broken["features"][0]["log_prob"][0][0] = None
    state = _state(ui_client)
    collection = state.collections.get("car-nb")
    with state.engine.begin() as connection:
        insert_model(
            connection,
            model_id=broken["id"],
            collection_id=collection.id,
            kind="naive-bayes",
            created_day=utc_today(),
            model_json=json.dumps(broken),
        )
    try:
        for url in (PANEL, f"{PANEL}?model={good}", f"{PANEL}?model={broken['id']}"):
            response = ui_client.get(url)
            assert response.status_code == 200, response.text
            page = _text(response.text)
            assert "Not shown: 1 stored model that cannot be read back" in page
            assert "broken-model-0001" in page and f"model={good}" in response.text
        assert f"Model {good}" in _text(ui_client.get(f"{PANEL}?model={good}").text)
        # the API answers such a model with its typed problem, not an unexpected error
        bad = f"{API}/{broken['id']}"
        record = {"buying": "low", "maint": "low", "doors": "2", "persons": "2"}
        for response in (
            ui_client.get(bad, headers=ANALYST),
            ui_client.get(f"{bad}/export", headers=ANALYST),
            ui_client.post(f"{bad}/predict", json={"records": [record]}, headers=ANALYST),
        ):
            assert response.status_code == 500, response.text
            assert response.json()["type"].endswith("/corrupt-statistics")
            assert "cannot be read back" in response.json()["detail"]
    finally:
        with state.engine.begin() as connection:
            connection.execute(delete(models).where(models.c.model_id == broken["id"]))
