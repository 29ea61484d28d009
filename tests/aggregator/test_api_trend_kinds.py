"""Trends and differences of every windowed estimate over HTTP: a histogram attribute's
quantiles (each period as ``GET .../quantiles`` answers over that period alone), an open
domain's named values (as ``GET .../frequencies?values=``), and the refusals of what has
no trend (naive Bayes models, kNN classifiers) or cannot be followed as asked."""

from __future__ import annotations

import csv
import io
import math
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from ldp_shared.analyses.knn.collection import collection_spec
from ldp_shared.collection import CollectionConfig

from .conftest import ADMIN, ANALYST, COLORS, problem
from .test_api_knn import CELLS
from .test_api_trends import DAYS, TODAY, accept, day_label

EDGES = [0.0, 20.0, 40.0, 60.0, 80.0, 100.0]
AGES: dict[str, Any] = {
    "name": "ages",
    "epsilon": 4.0,
    "release": {"min_reports": 200},
    "attributes": [
        {"name": "age", "mechanism": "histogram", "edges": EDGES},
        {"name": "color", "domain": COLORS, "mechanism": "oue"},
    ],
}
CENTRES = (30.0, 70.0)
"""Each released day's ages lie within 10 of its centre: the median moves from 30 to 70."""
DAY0, DAY1, DAY2 = (day_label(day) for day in DAYS)


def span(first: str, last: str) -> dict[str, str]:
    """The query parameters of the window ``first`` … ``last``."""
    return {"from": first, "to": last}


def create(client: TestClient, spec: dict[str, Any]) -> CollectionConfig:
    response = client.post("/v1/collections", json=spec, headers=ADMIN)
    assert response.status_code == 201, response.text
    return CollectionConfig.model_validate(response.json())


def ask(client: TestClient, name: str, path: str, **params: Any) -> Any:
    return client.get(f"/v1/collections/{name}/{path}", params=params, headers=ANALYST)


def ok(response: Any) -> Any:
    assert response.status_code == 200, response.text
    return response.json()


@pytest.fixture
def ages(client: TestClient, engine: Engine) -> CollectionConfig:
    """``ages``: 1,500 reports on each of two days, 50 (withheld) on a third."""
    config = create(client, AGES)
    gen = np.random.default_rng(40)
    for k, (day, n) in enumerate(zip(DAYS, (1500, 1500, 50), strict=True)):
        centre = CENTRES[min(k, 1)]
        rows = [{"age": float(a), "color": "red"} for a in gen.uniform(-10, 10, n) + centre]
        accept(engine, config, rows, day, seed=41 + k)
    return config


def test_a_quantile_trend_is_the_quantiles_of_each_period(
    client: TestClient, ages: CollectionConfig
) -> None:
    body = ok(
        ask(client, "ages", "trend", attribute="age", estimate="quantiles", **span(DAY0, DAY2))
    )
    assert body["released_as"] == "quantiles" and body["levels"] == [0.5]
    points = body["points"]
    assert [p["period"] for p in points] == [DAY0, DAY1, DAY2]
    for point, day, centre in zip(points[:2], (DAY0, DAY1), CENTRES, strict=True):
        alone = ok(ask(client, "ages", "quantiles", attribute="age", q="0.5", **span(day, day)))
        assert point["quantiles"]["quantiles"] == alone["quantiles"]
        assert point["quantiles"]["n_reports"] == 1500 and point["frequencies"] is None
        median = point["quantiles"]["quantiles"][0]
        assert median["ci_low"] <= median["value"] <= median["ci_high"]
        assert abs(median["value"] - centre) < 5
    assert "quantiles" not in points[2] and "50 reports" in points[2]["withheld"]
    # q= alone asks for quantiles; an attribute's own trend is still its bins' frequencies
    both = ok(ask(client, "ages", "trend", attribute="age", q="0.25,0.75", **span(DAY0, DAY1)))
    assert both["levels"] == [0.25, 0.75]
    assert [q["probability"] for q in both["points"][0]["quantiles"]["quantiles"]] == [0.25, 0.75]
    bins = ok(ask(client, "ages", "trend", attribute="age", **span(DAY0, DAY1)))
    assert bins["released_as"] == "frequencies" and "levels" not in bins


def test_a_quantile_trend_downloads_one_row_per_period_and_level(
    client: TestClient, ages: CollectionConfig
) -> None:
    window = span(DAY0, DAY2)
    response = ask(client, "ages", "trend", attribute="age", q="0.25,0.5", format="csv", **window)
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.text)))
    assert [(r["period"], r["value"]) for r in rows] == [
        (DAY0, "q0.25"), (DAY0, "q0.5"), (DAY1, "q0.25"), (DAY1, "q0.5"), (DAY2, ""),
    ]  # fmt: skip
    assert rows[1]["stderr"] == "" and float(rows[1]["ci_low"]) <= float(rows[1]["estimate"])
    assert "50 reports" in rows[-1]["withheld"]


def test_a_difference_of_quantiles_combines_both_intervals(
    client: TestClient, ages: CollectionConfig
) -> None:
    windows = {"from": DAY1, "to": DAY1, "baseline_from": DAY0, "baseline_to": DAY0}
    body = ok(ask(client, "ages", "difference", attribute="age", estimate="quantiles", **windows))
    late = ok(ask(client, "ages", "quantiles", attribute="age", q="0.5", **span(DAY1, DAY1)))
    early = ok(ask(client, "ages", "quantiles", attribute="age", q="0.5", **span(DAY0, DAY0)))
    (now,), (then,) = late["quantiles"], early["quantiles"]
    change = now["value"] - then["value"]
    assert body["values"] == ["q0.5"] and body["interval"] == "mover"
    assert body["stderr"] == [None] and body["difference"] == [pytest.approx(change)]
    low = change - math.hypot(now["value"] - now["ci_low"], then["ci_high"] - then["value"])
    high = change + math.hypot(now["ci_high"] - now["value"], then["value"] - then["ci_low"])
    assert body["ci_low"] == [pytest.approx(low)] and body["ci_high"] == [pytest.approx(high)]
    assert 30 < low < change < high < 50  # the median rose by about 40
    # a mean or frequencies still difference with normal intervals
    color = ok(ask(client, "ages", "difference", attribute="color", **windows))
    assert color["interval"] == "normal" and None not in color["stderr"]


@pytest.mark.parametrize(
    "attribute",
    [
        {"name": "app", "mechanism": "flh"},
        {"name": "app", "mechanism": "hcms", "columns": 256},
        {"name": "app", "mechanism": "pem", "max_length": 8},
    ],
    ids=lambda a: a["mechanism"],
)
def test_an_open_domain_trend_follows_the_values_named(
    client: TestClient, engine: Engine, attribute: dict[str, Any]
) -> None:
    spec = {"name": "apps", "epsilon": 6.0, "release": {"min_reports": 100}}
    config = create(client, {**spec, "attributes": [attribute]})
    for k, (day, share) in enumerate(zip(DAYS[:2], (0.7, 0.2), strict=True)):
        n = 2000
        rows = [{"app": "mail" if i < share * n else f"app-{i % 97}"} for i in range(n)]
        accept(engine, config, rows, day, seed=50 + k)
    named = {"attribute": "app", "values": "mail,maps"}
    body = ok(ask(client, "apps", "trend", **named, **span(DAY0, DAY1)))
    assert body["released_as"] == "frequencies"
    for point, day in zip(body["points"], (DAY0, DAY1), strict=True):
        alone = ok(ask(client, "apps", "frequencies", **named, **span(day, day)))
        assert point["frequencies"]["values"] == ["mail", "maps"]
        assert point["frequencies"]["estimate"] == alone["estimate"]
        assert point["frequencies"]["ci_low"] == alone["ci_low"]
    mail = [p["frequencies"]["estimate"][0] for p in body["points"]]
    assert mail[0] > 0.5 > 0.35 > mail[1]
    windows = {"from": DAY1, "to": DAY1, "baseline_from": DAY0, "baseline_to": DAY0}
    change = ok(ask(client, "apps", "difference", attribute="app", values="mail", **windows))
    assert change["values"] == ["mail"] and change["ci_high"][0] < 0
    refused = ask(client, "apps", "trend", attribute="app", **span(DAY0, DAY1))
    detail = problem(refused, 422, "invalid-query")
    assert "open domain" in detail and "values=" in detail


@pytest.mark.parametrize(
    ("params", "words"),
    [
        ({"attribute": "age", "estimate": "naive-bayes"}, "models/naive-bayes?from=&to="),
        ({"attribute": "age", "estimate": "knn"}, "knn/classify?from=&to="),
        ({"attribute": "color", "estimate": "quantiles"}, "no bins of a number"),
        ({"attribute": "color", "q": "0.5"}, "no bins of a number"),
        ({"attribute": "age", "estimate": "frequencies", "q": "0.5"}, "leave it out"),
        ({"attribute": "age", "q": "1.5"}, "(0, 1)"),
        ({"attribute": "age", "q": "median"}, "comma-separated numbers"),
        ({"attribute": "age", "q": "0.5", "values": "x"}, "leave out values="),
        ({"attribute": "age", "estimate": "mean"}, "released as its frequencies"),
    ],
)
def test_what_has_no_trend_is_one_clear_problem(
    client: TestClient, ages: CollectionConfig, params: dict[str, str], words: str
) -> None:
    window = {"from": DAY1, "to": DAY1}
    baseline = {"baseline_from": DAY0, "baseline_to": DAY0}
    for path, windows in (("trend", window), ("difference", window | baseline)):
        detail = problem(ask(client, "ages", path, **params, **windows), 422, "invalid-query")
        assert words in detail


def test_an_unknown_estimate_is_a_problem(client: TestClient, ages: CollectionConfig) -> None:
    response = ask(client, "ages", "trend", attribute="age", estimate="median")
    assert response.status_code == 422
    assert response.headers["content-type"].startswith("application/problem+json")


def test_a_knn_collection_has_trends_of_its_label_only(client: TestClient) -> None:
    spec = collection_spec("people", CELLS, 3.0, "tall", ["no", "yes"], 20)
    create(client, spec.model_dump(mode="json"))
    cell = CELLS.attribute_names()[0]
    detail = problem(ask(client, "people", "trend", attribute=cell), 422, "invalid-query")
    assert "kNN classifier" in detail and "knn/classify?from=&to=" in detail
    label = ok(ask(client, "people", "trend", attribute="tall", **span(DAY0, day_label(TODAY))))
    assert label["released_as"] == "frequencies" and "withheld" in label["points"][-1]


def test_the_quantile_interval_level_follows_confidence(
    client: TestClient, ages: CollectionConfig
) -> None:
    """A narrower confidence gives a narrower band around the same median."""
    wide, narrow = (
        ok(ask(client, "ages", "trend", attribute="age", q="0.5", confidence=c, **span(DAY0, DAY0)))
        for c in ("0.99", "0.5")
    )
    w, n = (body["points"][0]["quantiles"]["quantiles"][0] for body in (wide, narrow))
    assert w["value"] == n["value"] and w["ci_low"] < n["ci_low"] <= n["ci_high"] < w["ci_high"]
