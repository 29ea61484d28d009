"""The naive Bayes endpoints and the frequencies of label collections, through the API.

Covers: train → 201 with the stated inputs, GET by id, list, predict, export; the
problems (no label, too few reports, unknown model, bad query, no token) and that a
refused request stores nothing; frequencies of features, label and sampled attributes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from sqlalchemy import Engine, func, inspect, select

from ldp_aggregator.storage.migrate import upgrade
from ldp_aggregator.storage.tables import models
from ldp_shared.analyses import naive_bayes as nb
from ldp_shared.codec import Privatizer
from ldp_shared.collection import CollectionConfig
from ldp_shared.rand import seeded_rng
from ldp_shared.wire.naive_bayes import CategoricalNBExport, NaiveBayesModel, NaiveBayesPredictions
from ldp_simulation.datasets import load_car

from .conftest import ADMIN, ANALYST, TestClient, problem, report_dicts

CAR = load_car()
FEATURES = [name for name in CAR.domains if name != "class"]
BASE = "/v1/collections/car-nb/models/naive-bayes"


def nb_spec(budget: str = "sample", min_reports: int = 1000, **changes: Any) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "name": "car-nb",
        "epsilon": 4.0,
        "budget": budget,
        "label": "class",
        "attributes": [{"name": n, "domain": d} for n, d in CAR.domains.items()],
        "release": {"min_reports": min_reports},
    }
    payload.update(changes)
    return payload


def create(client: TestClient, **changes: Any) -> CollectionConfig:
    response = client.post("/v1/collections", json=nb_spec(**changes), headers=ADMIN)
    assert response.status_code == 201, response.text
    return CollectionConfig.model_validate(response.json())


def upload(client: TestClient, config: CollectionConfig, records: list[dict[str, str]]) -> None:
    packed = Privatizer(config).privatize_many(records, seeded_rng(17))
    reports = report_dicts(config, packed)
    for start in range(0, len(reports), 5000):
        body = {"reports": reports[start : start + 5000]}
        response = client.post("/v1/collections/car-nb/reports", json=body)
        assert response.status_code == 200 and response.json()["accepted"] == len(body["reports"])


def stored_models(engine: Engine) -> int:
    with engine.connect() as connection:
        return int(connection.execute(select(func.count()).select_from(models)).scalar_one())


@pytest.fixture
def trained(client: TestClient) -> tuple[CollectionConfig, NaiveBayesModel]:
    config = create(client)
    train, _ = nb.holdout_split(CAR.records)
    upload(client, config, train * 10)
    response = client.post(BASE, json={}, headers=ANALYST)
    assert response.status_code == 201, response.text
    model = NaiveBayesModel.model_validate(response.json())
    assert response.headers["location"] == f"{BASE}/{model.id}"
    return config, model


def test_train_states_its_inputs(trained: tuple[CollectionConfig, NaiveBayesModel]) -> None:
    config, model = trained
    assert model.collection == "car-nb" and model.config_hash == config.config_hash
    assert model.n_reports == 1382 * 10
    assert model.epsilon == pytest.approx(4.0) and model.budget == "sample"
    assert [f.name for f in model.features] == FEATURES
    assert sum(f.n_reports for f in model.features) == model.n_reports
    assert model.smoothing.alpha == 1.0 and model.smoothing.repair == "posterior-mean"
    assert "φ" in model.smoothing.rule
    for feature in model.features:
        assert np.asarray(feature.counts).shape == (4, len(feature.values))
        assert np.all(np.asarray(feature.stderr) > 0)


def test_get_list_predict_export(
    client: TestClient, trained: tuple[CollectionConfig, NaiveBayesModel]
) -> None:
    _, model = trained
    again = client.get(f"{BASE}/{model.id}", headers=ANALYST)
    assert again.status_code == 200 and NaiveBayesModel.model_validate(again.json()) == model
    listed = client.get(BASE, headers=ANALYST)
    assert listed.json() == {"models": [model.id], "next_cursor": None}
    _, test = nb.holdout_split(CAR.records)
    predicted = client.post(f"{BASE}/{model.id}/predict", json={"records": test}, headers=ANALYST)
    assert predicted.status_code == 200, predicted.text
    result = NaiveBayesPredictions.model_validate(predicted.json())
    assert result.model_id == model.id and result.classes == CAR.domains["class"]
    assert result == nb.predict(model, test)  # the server predicts with the stored model
    exported = client.get(f"{BASE}/{model.id}/export", headers=ANALYST)
    assert exported.status_code == 200
    assert CategoricalNBExport.model_validate(exported.json()) == nb.export_categorical_nb(model)


def test_predictions_are_never_stored(
    client: TestClient, engine: Engine, trained: tuple[CollectionConfig, NaiveBayesModel]
) -> None:
    _, model = trained
    record = {f: CAR.records[0][f] for f in FEATURES}
    with engine.connect() as connection:
        before = connection.exec_driver_sql("SELECT count(*) FROM reports").scalar_one()
    response = client.post(
        f"{BASE}/{model.id}/predict", json={"records": [record]}, headers=ANALYST
    )
    assert response.status_code == 200
    with engine.connect() as connection:
        assert connection.exec_driver_sql("SELECT count(*) FROM reports").scalar_one() == before
    assert stored_models(engine) == 1


def test_bad_predict_queries(
    client: TestClient, trained: tuple[CollectionConfig, NaiveBayesModel]
) -> None:
    _, model = trained
    record = {f: CAR.records[0][f] for f in FEATURES}
    url = f"{BASE}/{model.id}/predict"
    detail = problem(
        client.post(url, json={"records": [dict(record, safety="none")]}, headers=ANALYST),
        422,
        "invalid-query",
    )
    assert "'none' is not a value of feature 'safety'" in detail
    missing = {k: v for k, v in record.items() if k != "doors"}
    assert "missing features ['doors']" in problem(
        client.post(url, json={"records": [missing]}, headers=ANALYST), 422, "invalid-query"
    )
    problem(client.post(url, json={"records": []}, headers=ANALYST), 422, "invalid-request")
    problem(client.post(url, json={"records": [record]}), 401, "unauthenticated")
    problem(
        client.post(f"{BASE}/no-such-model/predict", json={"records": [record]}, headers=ANALYST),
        404,
        "model-not-found",
    )
    problem(client.get(f"{BASE}/no-such-model", headers=ANALYST), 404, "model-not-found")


def test_training_before_the_release_minimum_stores_nothing(
    client: TestClient, engine: Engine
) -> None:
    config = create(client, min_reports=5000)
    upload(client, config, CAR.records)
    detail = problem(client.post(BASE, headers=ANALYST), 409, "insufficient-reports")
    assert "at least 5000" in detail
    assert stored_models(engine) == 0


def test_training_a_collection_without_label_is_an_invalid_query(
    client: TestClient, engine: Engine
) -> None:
    create(client, label=None, budget="split")
    detail = problem(client.post(BASE, headers=ANALYST), 422, "invalid-query")
    assert "has no label" in detail
    assert stored_models(engine) == 0


def test_training_options_are_validated(client: TestClient, engine: Engine) -> None:
    create(client)
    problem(client.post(BASE, json={"alpha": -1}, headers=ANALYST), 422, "invalid-request")
    problem(client.post(BASE, json={"repair": "magic"}, headers=ANALYST), 422, "invalid-request")
    problem(client.post(BASE, json={}), 401, "unauthenticated")
    problem(
        client.post("/v1/collections/nothing/models/naive-bayes", headers=ANALYST),
        404,
        "collection-not-found",
    )
    assert stored_models(engine) == 0


def test_alpha_is_bounded_where_float64_stops_counting_reports(
    client: TestClient, engine: Engine
) -> None:
    """α = 1.7e308 once trained a model whose sums overflowed: null log_prob, stored, and
    every later read of it a 500. 2^53 is the bound the schema states; it still works."""
    config = create(client, budget="split")
    upload(client, config, CAR.records)
    for alpha in (1.7e308, 2.0**53 * (1 + 2**-52), 1e300):
        detail = problem(
            client.post(BASE, json={"alpha": alpha}, headers=ANALYST), 422, "invalid-request"
        )
        assert detail == "body.alpha: Input should be less than or equal to 9007199254740992"
    assert stored_models(engine) == 0
    largest = client.post(BASE, json={"alpha": 2**53}, headers=ANALYST)
    assert largest.status_code == 201, largest.text
    read = client.get(largest.headers["location"], headers=ANALYST)
    assert read.status_code == 200
    model = NaiveBayesModel.model_validate(read.json())
    assert all(np.all(np.isfinite(f.log_prob)) for f in model.features)
    probabilities = np.array(model.features[0].probabilities)
    assert np.allclose(probabilities, 1 / len(model.features[0].values), atol=1e-9)


def test_a_model_with_a_number_json_cannot_carry_is_refused_and_not_stored(
    client: TestClient, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever makes a number infinite, the model is refused before it is stored."""
    config = create(client, budget="split")
    upload(client, config, CAR.records)
    describe = nb.training.describe

    def overflowing(*args: Any, **kwargs: Any) -> NaiveBayesModel:
        model = describe(*args, **kwargs)
        model.features[2].log_prob[1][0] = float("-inf")
        return model

    monkeypatch.setattr(nb.training, "describe", overflowing)
    detail = problem(client.post(BASE, json={}, headers=ANALYST), 422, "invalid-query")
    assert "model.features[2].log_prob[1][0]" in detail and "nothing was stored" in detail
    assert stored_models(engine) == 0


def test_a_feature_below_the_release_minimum_trains_no_model(
    client: TestClient, engine: Engine
) -> None:
    """Budget 'sample': the joint counts of a feature summed over the classes are its
    frequencies, so the model is refused where those are (the same problem, word for word)."""
    config = create(client, min_reports=1000)
    upload(client, config, CAR.records * 2)  # 3,456 reports, about 576 per feature
    refused = {}
    for feature in FEATURES:
        response = client.get(
            "/v1/collections/car-nb/frequencies", params={"attribute": feature}, headers=ANALYST
        )
        refused[feature] = problem(response, 409, "insufficient-reports")
    detail = problem(client.post(BASE, json={}, headers=ANALYST), 409, "insufficient-reports")
    assert detail == refused[FEATURES[0]]
    assert "was carried by" in detail and "needs at least 1000" in detail
    assert stored_models(engine) == 0


def test_a_label_that_is_not_categorical_is_refused(client: TestClient) -> None:
    spec = nb_spec()
    spec["attributes"].append(
        {"name": "extras", "domain": ["a", "b"], "mechanism": "mask", "keep_probability": 0.9}
    )
    spec["label"] = "extras"
    response = client.post("/v1/collections", json=spec, headers=ADMIN)
    assert "must be a categorical attribute" in problem(response, 422, "invalid-configuration")
    grr = nb_spec()
    grr["attributes"][0]["mechanism"] = "grr"
    response = client.post("/v1/collections", json=grr, headers=ADMIN)
    assert "use mechanism 'oue' or 'sue'" in problem(response, 422, "invalid-configuration")


@pytest.mark.parametrize("budget", ["split", "sample"])
def test_frequencies_of_a_label_collection(client: TestClient, budget: str) -> None:
    config = create(client, budget=budget)
    records = CAR.records * 10
    upload(client, config, records)
    for name, domain in CAR.domains.items():
        response = client.get(
            "/v1/collections/car-nb/frequencies", params={"attribute": name}, headers=ANALYST
        )
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["values"] == domain and body["n_reports"] == len(records)
        true = np.array([sum(r[name] == v for r in CAR.records) for v in domain]) / 1728
        z = (np.array(body["estimate"]) - true) / np.array(body["stderr"])
        assert np.all(np.abs(z) < 4.5), (name, z)
        if name == "class":
            assert body["mechanism"] == "joint oue" and "attribute_reports" not in body
        elif budget == "sample":
            assert 0 < body["attribute_reports"] < len(records)
        else:
            assert "attribute_reports" not in body


def test_migration_creates_the_models_table(engine: Engine) -> None:
    upgrade(engine)  # idempotent
    assert "models" in inspect(engine).get_table_names()


def test_frequencies_under_the_sample_budget_without_label(client: TestClient) -> None:
    """Each report carries one of color/age (MASK always): n_j per attribute, honest errors."""
    payload = {
        "name": "sampled",
        "epsilon": 2.0,
        "budget": "sample",
        "attributes": [
            {"name": "color", "domain": ["red", "green", "blue", "yellow"], "mechanism": "oue"},
            {"name": "age", "domain": ["<30", "30-60", ">60"], "mechanism": "grr"},
            {"name": "basket", "domain": ["a", "b"], "mechanism": "mask", "keep_probability": 0.8},
        ],
        "release": {"min_reports": 100},
    }
    response = client.post("/v1/collections", json=payload, headers=ADMIN)
    assert response.status_code == 201, response.text
    config = CollectionConfig.model_validate(response.json())
    assert config.epsilon == pytest.approx(2.0 + 2 * np.log(4.0))
    colors = ["red"] * 5000 + ["green"] * 3000 + ["blue"] * 1500 + ["yellow"] * 500
    ages = (["<30"] * 2 + ["30-60"] * 5 + [">60"] * 3) * 1000
    records = [
        {"color": c, "age": a, "basket": ["a"] if i % 2 else []}
        for i, (c, a) in enumerate(zip(colors, ages, strict=True))
    ]
    packed = Privatizer(config).privatize_many(records, seeded_rng(23))
    reports = report_dicts(config, packed)
    for start in range(0, len(reports), 5000):
        body = {"reports": reports[start : start + 5000]}
        response = client.post("/v1/collections/sampled/reports", json=body)
        assert response.json()["accepted"] == len(body["reports"])
    carried = 0
    truths = {"color": [0.5, 0.3, 0.15, 0.05], "age": [0.2, 0.5, 0.3], "basket": [0.5, 0.0]}
    for name, true in truths.items():
        body = client.get(
            "/v1/collections/sampled/frequencies", params={"attribute": name}, headers=ANALYST
        ).json()
        z = (np.array(body["estimate"]) - np.array(true)) / np.array(body["stderr"])
        assert np.all(np.abs(z) < 4.5), (name, z)
        if name == "basket":
            assert "attribute_reports" not in body  # MASK attributes are always reported
        else:
            carried += body["attribute_reports"]
            assert body["epsilon"] == pytest.approx(2.0)
    assert carried == len(records)
