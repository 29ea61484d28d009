"""Periods over HTTP: each report counts in the period it was accepted in, windows of
every estimate, trends, differences between windows, and the refusals."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, select

from ldp_aggregator.ingest import ingest_batch
from ldp_aggregator.storage.collections import load_collection
from ldp_aggregator.storage.tables import collection_stats, reports
from ldp_client.privatize import Privatizer
from ldp_shared.collection import CollectionConfig
from ldp_shared.rand import seeded_rng
from ldp_shared.wire.reports import ReportBatch

from .conftest import ADMIN, ANALYST, COLORS, problem, report_dicts, spec_payload

TODAY = datetime.now(UTC).replace(hour=12, minute=0, second=0, microsecond=0)
DAYS = [TODAY - timedelta(days=k) for k in (5, 4, 3)]
"""Three past days: the first mostly red, the second mostly blue, the third too few."""


def day_label(day: datetime) -> str:
    return day.date().isoformat()


def records(n: int, favourite: str, seed: int) -> list[dict[str, Any]]:
    gen = np.random.default_rng(seed)
    others = [c for c in COLORS if c != favourite]
    return [
        {
            "color": favourite if gen.random() < 0.8 else others[int(gen.integers(3))],
            "age": "30-60",
            "basket": ["milk"],
        }
        for _ in range(n)
    ]


def accept(
    engine: Engine, config: CollectionConfig, rows: list[dict[str, Any]], at: datetime, seed: int
) -> None:
    packed = Privatizer(config).privatize_many(rows, rng=seeded_rng(seed))
    batch = ReportBatch.model_validate({"reports": report_dicts(config, packed)})
    collection = load_collection(engine, config.name)
    assert ingest_batch(engine, collection, batch, at=at).accepted == len(rows)


@pytest.fixture
def three_days(client: TestClient, engine: Engine) -> CollectionConfig:
    created = client.post("/v1/collections", json=spec_payload(epsilon=8.0), headers=ADMIN)
    assert created.status_code == 201, created.text
    config = CollectionConfig.model_validate(created.json())
    accept(engine, config, records(400, "red", 1), DAYS[0], seed=1)
    accept(engine, config, records(400, "blue", 2), DAYS[1], seed=2)
    accept(engine, config, records(10, "red", 3), DAYS[2], seed=3)
    return config


def get(client: TestClient, path: str, **params: Any) -> Any:
    return client.get(f"/v1/collections/survey/{path}", params=params, headers=ANALYST)


def test_an_estimate_over_a_window_rests_on_its_periods_only(
    client: TestClient, three_days: CollectionConfig
) -> None:
    everything = get(client, "frequencies", attribute="color").json()
    assert everything["n_reports"] == 810 and "window" not in everything
    first = get(client, "frequencies", attribute="color", **{"from": day_label(DAYS[0])})
    assert first.json()["n_reports"] == 810  # from the first day to now
    red_day = get(
        client,
        "frequencies",
        attribute="color",
        **{"from": day_label(DAYS[0]), "to": day_label(DAYS[0])},
    ).json()
    assert red_day["n_reports"] == 400
    assert red_day["window"] == {
        "period": "day",
        "first": day_label(DAYS[0]),
        "last": day_label(DAYS[0]),
        "periods": 1,
    }
    estimate = dict(zip(red_day["values"], red_day["estimate"], strict=True))
    assert estimate["red"] > 0.7 and estimate["blue"] < 0.15
    # a date and time names the day that contains it
    same = get(
        client,
        "frequencies",
        attribute="color",
        **{"from": f"{day_label(DAYS[0])}T23:59Z", "to": f"{day_label(DAYS[0])}T00:00:00+00:00"},
    ).json()
    assert same["estimate"] == red_day["estimate"]


def test_a_trend_has_one_estimate_per_period_and_withholds_thin_ones(
    client: TestClient, three_days: CollectionConfig
) -> None:
    body = get(
        client, "trend", attribute="color", **{"from": day_label(DAYS[0]), "to": day_label(TODAY)}
    ).json()
    assert body["released_as"] == "frequencies" and body["window"]["periods"] == 6
    points = body["points"]
    assert [p["period"] for p in points] == [
        day_label(TODAY - timedelta(days=k)) for k in (5, 4, 3, 2, 1, 0)
    ]
    assert [p["n_reports"] for p in points] == [400, 400, 10, 0, 0, 0]
    red = [
        dict(zip(p["frequencies"]["values"], p["frequencies"]["estimate"], strict=True))
        for p in points[:2]
    ]
    assert red[0]["red"] > 0.7 > red[1]["red"] and red[1]["blue"] > 0.7
    assert points[0]["frequencies"]["n_reports"] == 400
    assert points[2]["frequencies"] is None and "10 reports" in points[2]["withheld"]
    # without bounds: from the first period holding reports to the current one
    assert get(client, "trend", attribute="color").json()["window"]["first"] == day_label(DAYS[0])


def test_a_difference_of_two_windows_has_the_interval_of_both(
    client: TestClient, three_days: CollectionConfig
) -> None:
    day0, day1 = day_label(DAYS[0]), day_label(DAYS[1])
    body = get(
        client,
        "difference",
        attribute="color",
        **{"from": day1, "to": day1, "baseline_from": day0, "baseline_to": day0},
    ).json()
    one = get(client, "frequencies", attribute="color", **{"from": day1, "to": day1}).json()
    zero = get(client, "frequencies", attribute="color", **{"from": day0, "to": day0}).json()
    blue = body["values"].index("blue")
    expected = one["estimate"][blue] - zero["estimate"][blue]
    assert body["difference"][blue] == pytest.approx(expected)
    stderr = np.hypot(one["stderr"][blue], zero["stderr"][blue])
    assert body["stderr"][blue] == pytest.approx(stderr)
    assert body["ci_low"][blue] == pytest.approx(expected - 1.959964 * stderr, rel=1e-5)
    assert body["ci_low"][blue] > 0.4  # blue rose, clearly
    overlap = get(
        client,
        "difference",
        attribute="color",
        **{"from": day0, "to": day1, "baseline_from": day0, "baseline_to": day0},
    )
    assert "share periods" in problem(overlap, 422, "invalid-query")


def test_windows_reach_means_trends_of_means_and_naive_bayes(
    client: TestClient, engine: Engine
) -> None:
    numeric = {
        "name": "usage",
        "epsilon": 4.0,
        "release": {"min_reports": 20},
        "attributes": [
            {"name": "minutes", "mechanism": "duchi", "lo": 0, "hi": 100},
        ],
    }
    created = client.post("/v1/collections", json=numeric, headers=ADMIN)
    assert created.status_code == 201, created.text
    config = CollectionConfig.model_validate(created.json())
    gen = np.random.default_rng(5)
    for k, (day, centre) in enumerate(zip(DAYS[:2], (20.0, 80.0), strict=True)):
        rows = [{"minutes": float(np.clip(gen.normal(centre, 5.0), 0, 100))} for _ in range(3000)]
        accept(engine, config, rows, day, seed=10 + k)
    day0, day1 = day_label(DAYS[0]), day_label(DAYS[1])

    def usage(path: str, **params: Any) -> Any:
        return client.get(f"/v1/collections/usage/{path}", params=params, headers=ANALYST)

    early = usage("means", attribute="minutes", **{"from": day0, "to": day0}).json()
    late = usage("means", attribute="minutes", **{"from": day1, "to": day1}).json()
    both = usage("means", attribute="minutes").json()
    assert early["n_reports"] == late["n_reports"] == 3000 and both["n_reports"] == 6000
    assert early["ci_low"] < 20 < early["ci_high"] and late["ci_low"] < 80 < late["ci_high"]
    trend = usage("trend", attribute="minutes", **{"from": day0, "to": day1}).json()
    assert trend["released_as"] == "mean"
    assert [p["mean"]["mean"] for p in trend["points"]] == [early["mean"], late["mean"]]


def test_a_naive_bayes_model_trains_on_a_window(client: TestClient, engine: Engine) -> None:
    attributes = [
        {"name": "color", "domain": COLORS, "mechanism": "oue"},
        {"name": "age", "domain": ["<30", "30-60", ">60"], "mechanism": "oue"},
    ]
    labelled = spec_payload(name="nb", attributes=attributes, label="color", epsilon=4.0)
    created = client.post("/v1/collections", json=labelled, headers=ADMIN)
    assert created.status_code == 201, created.text
    config = CollectionConfig.model_validate(created.json())
    for k, day in enumerate(DAYS[:2]):
        rows = [{"color": "red", "age": "<30"}] * (100 + 50 * k)
        accept(engine, config, rows, day, seed=20 + k)
    model = client.post(
        "/v1/collections/nb/models/naive-bayes",
        params={"from": day_label(DAYS[1])},
        headers=ANALYST,
    )
    assert model.status_code == 201, model.text
    assert model.json()["n_reports"] == 150


@pytest.mark.parametrize(
    ("bounds", "status", "slug", "words"),
    [
        ({"from": "2026-01-10", "to": "2026-01-09"}, 422, "invalid-query", "starts after it ends"),
        ({"from": "2999-01-01"}, 422, "invalid-query", "in the future"),
        ({"from": "2020-01-01", "to": "2020-01-31"}, 409, "insufficient-reports", "has 0 reports"),
        ({"to": "2026-13-01"}, 422, "invalid-query", "not a period bound"),
    ],
)
def test_bad_windows_are_refused_with_one_clear_error(
    client: TestClient,
    three_days: CollectionConfig,
    bounds: dict[str, str],
    status: int,
    slug: str,
    words: str,
) -> None:
    detail = problem(get(client, "frequencies", attribute="color", **bounds), status, slug)
    assert words in detail


def test_an_unknown_period_is_refused_and_the_default_keeps_old_hashes(
    client: TestClient,
) -> None:
    refused = client.post("/v1/collections", json=spec_payload(period="month"), headers=ADMIN)
    assert refused.status_code == 422
    daily = client.post("/v1/collections", json=spec_payload(name="a"), headers=ADMIN).json()
    explicit = client.post(
        "/v1/collections", json=spec_payload(name="b", period="day"), headers=ADMIN
    ).json()
    assert "period" not in daily["spec"] and "period" not in explicit["spec"]
    hourly = client.post(
        "/v1/collections", json=spec_payload(name="c", period="hour"), headers=ADMIN
    ).json()
    assert hourly["spec"]["period"] == "hour"


@pytest.mark.parametrize(
    ("period", "start", "day"),
    [
        ("hour", datetime(2026, 11, 26, 13, tzinfo=UTC), "2026-11-26"),
        ("day", datetime(2026, 11, 26, tzinfo=UTC), "2026-11-26"),
        ("week", datetime(2026, 11, 23, tzinfo=UTC), "2026-11-23"),  # Monday of ISO week 48
    ],
)
def test_a_report_row_keeps_its_period_and_nothing_finer(
    client: TestClient, engine: Engine, period: str, start: datetime, day: str
) -> None:
    created = client.post("/v1/collections", json=spec_payload(period=period), headers=ADMIN)
    config = CollectionConfig.model_validate(created.json())
    accepted_at = datetime(2026, 11, 26, 13, 47, 29, tzinfo=UTC)  # a Thursday
    accept(engine, config, records(30, "red", 4), accepted_at, seed=4)
    with engine.connect() as connection:
        stamps = set(connection.execute(select(reports.c.received_day, reports.c.period_start)))
        periods = set(connection.execute(select(collection_stats.c.period_start)).scalars())
    assert {(d.isoformat(), p) for d, p in stamps} == {(day, int(start.timestamp()))}
    assert periods == {int(start.timestamp())}
