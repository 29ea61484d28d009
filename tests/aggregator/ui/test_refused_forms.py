"""A refused form keeps its panel: the form and whatever the panel showed stay, with the
problem above them (as docs/api.md promises), answered with the problem's status."""

from __future__ import annotations

import re
from html import unescape

from ..conftest import ANALYST, TestClient
from .conftest import sign_in_client


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html)))


def test_a_mining_form_refused_below_the_minimum_keeps_the_panel(ui_client: TestClient) -> None:
    csrf = sign_in_client(ui_client)
    form = {"csrf": csrf, "min_support": "0.1", "max_size": "3", "min_confidence": "0.5"}
    refused = ui_client.post("/ui/collections/waiting/itemsets/mine", data=form)
    assert refused.status_code == 409
    page = refused.text
    problem = page[page.index('id="form-problem"') :].split("</section>")[0]
    assert "Not done:" in _text(problem) and "37 of its 100 required reports" in _text(problem)
    assert 'action="/ui/collections/waiting/itemsets/mine"' in page  # the form is still there
    assert 'aria-current="page">Itemsets and rules<' in page  # and so is the panel's tab


def test_a_bad_number_in_the_training_form_keeps_the_models(ui_client: TestClient) -> None:
    trained = ui_client.post("/v1/collections/car-nb/models/naive-bayes", headers=ANALYST)
    model = trained.json()["id"]
    csrf = sign_in_client(ui_client)
    refused = ui_client.post(
        "/ui/collections/car-nb/naive-bayes/train",
        data={"csrf": csrf, "alpha": "lots", "repair": "clamp"},
    )
    assert refused.status_code == 422
    page = refused.text
    assert "alpha must be a number" in _text(page.split('id="form-problem"')[1])
    assert 'action="/ui/collections/car-nb/naive-bayes/train"' in page
    assert f"Model {model}" in _text(page) and 'id="priors-table"' in page
    assert 'id="priors-chart"' in page
