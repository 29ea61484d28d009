"""``trend()`` and ``difference()`` of both SDK clients against the real aggregator (run
in-process, each request handed to it): a histogram attribute's quantiles per period
(``estimate="quantiles"`` or ``levels=``), an open domain's named values, their
``to_dict()`` (what the aggregator answered) and ``to_frame()`` (one row per period and
level), and the refusals, typed, before anything is sent where the SDK can tell."""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from tests.engines import database_url

from ldp_aggregator.app import create_app
from ldp_aggregator.ingest import ingest_batch
from ldp_aggregator.settings import Settings
from ldp_aggregator.storage.collections import load_collection
from ldp_shared.codec import Privatizer
from ldp_shared.collection import CollectionConfig
from ldp_shared.errors import InvalidQueryError
from ldp_shared.rand import seeded_rng
from ldp_shared.wire.reports import ReportBatch, encode_bits, new_report_id
from ldp_shared.wire.trends import DifferenceResult, TrendResult

with warnings.catch_warnings():
    # starlette suggests httpx2 for its TestClient; httpx is what this project ships
    warnings.filterwarnings("ignore", message=".*httpx2.*")
    from fastapi.testclient import TestClient

TOKEN = "analyst-token-for-sdk-trends-0123456789"
ADMIN = "admin-token-for-sdk-trends-0123456789"
TODAY = datetime.now(UTC).replace(hour=12, minute=0, second=0, microsecond=0)
DAYS = [TODAY - timedelta(days=k) for k in (3, 2)]
WINDOW = (DAYS[0].date(), DAYS[1].date())
SPEC = {
    "name": "life",
    "epsilon": 4.0,
    "release": {"min_reports": 100},
    "attributes": [
        {"name": "age", "mechanism": "histogram", "edges": [0, 20, 40, 60, 80, 100]},
        {"name": "app", "mechanism": "flh"},
    ],
}


@pytest.fixture(scope="module")
def aggregator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """The aggregator holding ``life``: 1,000 reports a day on two past days, the ages
    centred on 30 then on 70, the app ``mail`` held by 60% then by 20%."""
    folder: Path = tmp_path_factory.mktemp("sdk-trends")
    settings = Settings(
        database_url=database_url(folder / "ldp.db"), admin_token=ADMIN, analyst_token=TOKEN
    )
    with TestClient(create_app(settings)) as client:
        created = client.post(
            "/v1/collections", json=SPEC, headers={"Authorization": f"Bearer {ADMIN}"}
        )
        assert created.status_code == 201, created.text
        config = CollectionConfig.model_validate(created.json())
        engine = client.app.state.ldp.engine  # type: ignore[attr-defined]
        gen = np.random.default_rng(70)
        for k, (day, centre, mail) in enumerate(zip(DAYS, (30, 70), (0.6, 0.2), strict=True)):
            columns = {
                "age": gen.uniform(centre - 10, centre + 10, 1000),
                "app": ["mail" if gen.random() < mail else f"app-{i}" for i in range(1000)],
            }
            packed = Privatizer(config).privatize_columns(columns, seeded_rng(71 + k))
            reports = [
                {
                    "id": new_report_id(),
                    "config_hash": config.config_hash,
                    "bits": encode_bits(bytes(row)),
                }
                for row in packed
            ]
            batch = ReportBatch.model_validate({"reports": reports})
            collection = load_collection(engine, "life")
            assert ingest_batch(engine, collection, batch, at=day).accepted == 1000
        yield client


@pytest.fixture
def sent() -> list[httpx.Request]:
    return []


@pytest.fixture
def analyst(
    make: Callable[[Callable[[httpx.Request], httpx.Response]], Any],
    aggregator: TestClient,
    sent: list[httpx.Request],
) -> Any:
    """An analyst's client (sync or async) whose every request the aggregator answers."""

    def forward(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        answer = aggregator.get(
            request.url.path,
            params=list(request.url.params.multi_items()),
            headers={"Authorization": f"Bearer {TOKEN}"},
        )
        return httpx.Response(answer.status_code, headers=answer.headers, content=answer.content)

    return make(forward)


def _body(request: httpx.Request, aggregator: TestClient) -> Any:
    answer = aggregator.get(
        request.url.path,
        params=list(request.url.params.multi_items()),
        headers={"Authorization": f"Bearer {TOKEN}"},
    )
    return answer.json()


def test_a_quantile_trend_through_the_sdk(
    analyst: Any, aggregator: TestClient, sent: list[httpx.Request]
) -> None:
    trend = analyst.trend("life", "age", window=WINDOW, estimate="quantiles")
    assert isinstance(trend, TrendResult) and trend.released_as == "quantiles"
    assert dict(sent[-1].url.params) == {
        "attribute": "age", "confidence": "0.95", "from": WINDOW[0].isoformat(),
        "to": WINDOW[1].isoformat(), "estimate": "quantiles",
    }  # fmt: skip
    medians = [p.quantiles.quantiles[0].value for p in trend.points if p.quantiles is not None]
    assert len(medians) == 2 and medians[0] < 40 < 60 < medians[1]
    assert trend.to_dict() == _body(sent[-1], aggregator)  # what the aggregator answered
    frame = trend.to_frame()
    assert list(frame["value"]) == ["q0.5", "q0.5"] and list(frame["estimate"]) == medians
    assert frame["stderr"].isna().all() and (frame["ci_low"] <= frame["estimate"]).all()
    assert frame.attrs["released_as"] == "quantiles"
    both = analyst.trend("life", "age", window=WINDOW, levels=[0.25, 0.75])
    assert sent[-1].url.params["q"] == "0.25,0.75" and both.levels == [0.25, 0.75]
    assert list(both.to_frame()["value"]) == ["q0.25", "q0.75"] * 2


def test_a_difference_of_quantiles_through_the_sdk(
    analyst: Any, aggregator: TestClient, sent: list[httpx.Request]
) -> None:
    later = (DAYS[1].date(), DAYS[1].date())
    earlier = (DAYS[0].date(), DAYS[0].date())
    change = analyst.difference("life", "age", window=later, baseline=earlier, levels=[0.5])
    assert isinstance(change, DifferenceResult) and change.interval == "mover"
    assert sent[-1].url.params["baseline_from"] == earlier[0].isoformat()
    assert change.values == ["q0.5"] and change.stderr == [None]
    assert change.ci_low[0] < change.difference[0] < change.ci_high[0] and change.ci_low[0] > 20
    frame = change.to_frame()
    assert frame["value"].tolist() == ["q0.5"] and frame["difference"][0] == change.difference[0]
    assert frame["stderr"].isna().all()  # a MOVER interval has no standard error
    assert change.to_dict() == _body(sent[-1], aggregator)


def test_an_open_domain_trend_through_the_sdk(analyst: Any) -> None:
    trend = analyst.trend("life", "app", window=WINDOW, values=["mail"])
    mail = [p.frequencies.estimate[0] for p in trend.points if p.frequencies is not None]
    assert mail[0] > 0.4 > 0.3 > mail[1]
    frame = trend.to_frame()
    assert frame["value"].tolist() == ["mail", "mail"] and frame["stderr"].notna().all()


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"estimate": "knn"}, "no trend"),
        ({"estimate": "naive-bayes"}, "no trend"),
        ({"levels": "0.5"}, "sequence of numbers"),
        ({"levels": [True]}, "sequence of numbers"),
    ],
)
def test_the_sdk_refuses_before_sending(
    analyst: Any, sent: list[httpx.Request], kwargs: dict[str, Any], words: str
) -> None:
    with pytest.raises(InvalidQueryError, match=words):
        analyst.trend("life", "age", window=WINDOW, **kwargs)
    assert sent == []


def test_the_aggregator_s_refusals_are_typed(analyst: Any) -> None:
    with pytest.raises(InvalidQueryError, match="no bins of a number"):
        analyst.trend("life", "app", window=WINDOW, estimate="quantiles")
    with pytest.raises(InvalidQueryError, match=r"\(0, 1\)"):
        analyst.trend("life", "age", window=WINDOW, levels=[1.5])
    with pytest.raises(InvalidQueryError, match="open domain"):
        analyst.trend("life", "app", window=(date.today(), None))


def test_json_of_a_quantile_point_keeps_only_what_it_has(analyst: Any) -> None:
    trend = analyst.trend("life", "age", window=WINDOW, estimate="quantiles")
    point = json.loads(trend.points[0].model_dump_json())
    assert point["frequencies"] is None and point["mean"] is None and "quantiles" in point
