"""The Models panel: a finished training job's weights, exact ε and loss curve, as the API
releases them; the states before a job exists and while it runs."""

from __future__ import annotations

import math
import re
from html import unescape

from ldp_aggregator.ui.panels.training import curve_groups
from ldp_shared.rand import seeded_rng
from ldp_shared.wire.training import RoundLog

from ..conftest import ANALYST, TestClient
from ..training_helpers import answer, ask, jobs_path, records, spec
from .conftest import sign_in_client

COLLECTION = "car-nb"


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html)))


def test_the_models_panel_shows_the_released_model(ui_client: TestClient) -> None:
    sign_in_client(ui_client)
    empty = _text(ui_client.get(f"/ui/collections/{COLLECTION}/training").text)
    assert "No training job yet" in empty and "What to do next" in empty
    created = ui_client.post(jobs_path(COLLECTION), json=spec(), headers=ANALYST)
    job = created.json()["id"]
    rng = seeded_rng(3)
    data = records(60, seed=4)
    for record in data[:25]:
        assert answer(ui_client, ask(ui_client, job, COLLECTION), record, rng).status_code == 200
    running = _text(ui_client.get(f"/ui/collections/{COLLECTION}/training?job={job}").text)
    assert "has not finished: round 1 of 3" in running
    for record in data[25:]:
        assert answer(ui_client, ask(ui_client, job, COLLECTION), record, rng).status_code == 200
    model = ui_client.get(f"{jobs_path(COLLECTION)}/{job}/model", headers=ANALYST).json()
    page = ui_client.get(f"/ui/collections/{COLLECTION}/training")  # the finished job is chosen
    text = _text(page.text)
    assert page.status_code == 200 and "exact ε = 2 per device" in text
    rows = re.findall(
        r'<th scope="row">([^<]+)</th><td class="num" data-column="weight">([^<]+)<', page.text
    )
    assert [name for name, _ in rows] == model["coordinates"]
    for (_, shown), weight in zip(rows, model["weights"], strict=True):
        assert math.isclose(float(shown), weight, rel_tol=1e-3, abs_tol=1e-4)
    assert 'id="loss-chart"' in page.text and "Loss by rounds" in text
    jobs = ui_client.get(f"/ui/collections/{COLLECTION}/jobs").text
    assert f'href="/ui/collections/{COLLECTION}/training?job={job}"' in jobs


def test_the_curve_is_grouped_with_combined_errors() -> None:
    def log(t: int, loss: float | None, se: float | None) -> RoundLog:
        return RoundLog(
            round=t,
            gradient_reports=19,
            loss_reports=1,
            loss=loss,
            loss_stderr=se,
            gradient_norm=1.0,
            noise_norm=1.0,
        )

    curve = [log(t, 0.5 + 0.01 * t, 0.2) for t in range(45)] + [log(45, None, None)]
    groups = curve_groups(curve, bars=20)
    assert len(groups) == 15 and groups[0]["rounds"] == "0–2" and groups[-1]["rounds"] == "42–44"
    assert math.isclose(groups[0]["loss"], 0.51) and math.isclose(
        groups[0]["stderr"], 0.2 / math.sqrt(3)
    )
    assert sum(g["reports"] for g in groups) == 45
    assert curve_groups([log(0, None, None)]) == []
