"""``POST /v1/collections/{name}/itemsets`` (a polled job), its job resource, and
``GET /v1/collections/{name}/privacy``: through the app, on SQLite."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, func, select, update

from ldp_aggregator import itemsets as itemsets_module
from ldp_aggregator import jobs as jobs_module
from ldp_aggregator.itemsets import ReportSpool, mine_collection
from ldp_aggregator.storage.collections import load_collection
from ldp_aggregator.storage.jobs import STALE_AFTER_SECONDS, jobs
from ldp_shared.analyses.itemsets import BitChannel, PackedBits, mine_frequent_itemsets
from ldp_shared.codec import Privatizer
from ldp_shared.collection import CollectionConfig
from ldp_shared.errors import InvalidQueryError
from ldp_shared.mechanisms import Mask
from ldp_shared.rand import seeded_rng
from ldp_shared.wire.itemsets import ItemsetJob, ItemsetQuery
from ldp_simulation.baskets import QuestParameters, basket_lists, item_names, quest_baskets

from .conftest import ADMIN, ANALYST, report_dicts, spec_payload

N_ITEMS = 24
NAMES = item_names(N_ITEMS)
PROBLEM = "https://ldpcollect.dev/problems/"


def _basket_spec(name: str = "shop", min_reports: int = 100, p: float = 0.9) -> dict[str, Any]:
    return {
        "name": name,
        "attributes": [
            {"name": "basket", "domain": NAMES, "mechanism": "mask", "keep_probability": p}
        ],
        "release": {"min_reports": min_reports},
    }


def _create(client: TestClient, spec: dict[str, Any]) -> CollectionConfig:
    response = client.post("/v1/collections", json=spec, headers=ADMIN)
    assert response.status_code == 201, response.text
    return CollectionConfig.model_validate(response.json())


def _upload(client: TestClient, config: CollectionConfig, packed: np.ndarray) -> None:
    for start in range(0, packed.shape[0], 5000):
        body = {"reports": report_dicts(config, packed[start : start + 5000])}
        response = client.post(f"/v1/collections/{config.name}/reports", json=body)
        assert response.json()["accepted"] == len(body["reports"])


def _true_baskets(n: int = 4000, seed: int = 4) -> np.ndarray:
    params = QuestParameters(
        n_baskets=n, n_items=N_ITEMS, avg_basket_size=5, avg_pattern_size=3, n_patterns=20
    )
    return quest_baskets(params, seed)


@pytest.fixture
def shop(client: TestClient) -> tuple[CollectionConfig, np.ndarray]:
    """A MASK-only collection (no ε in its spec) with 4,000 reports; their packed bits."""
    config = _create(client, _basket_spec())
    assert config.epsilon == pytest.approx(N_ITEMS * np.log(9))
    reports = Privatizer(config).privatize_columns(
        {"basket": basket_lists(_true_baskets(), NAMES)}, rng=seeded_rng(8)
    )
    _upload(client, config, reports)
    return config, reports


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"domain": []}, "domain"),
        ({"domain": ["bread"]}, "domain"),
        ({"domain": ["bread", "milk", "bread"]}, "duplicate"),
        ({"keep_probability": 0.5}, "keep_probability"),
        ({"keep_probability": 1.0}, "keep_probability"),
        ({"keep_probability": None}, "keep_probability"),
    ],
)
def test_a_bad_basket_attribute_creates_nothing(
    client: TestClient, change: dict[str, Any], match: str
) -> None:
    spec = _basket_spec("bad")
    spec["attributes"][0].update(change)
    response = client.post("/v1/collections", json=spec, headers=ADMIN)
    assert response.status_code == 422
    assert response.json()["type"] == PROBLEM + "invalid-configuration"
    assert match in response.text
    assert client.get("/v1/collections/bad").status_code == 404


def test_mining_answers_the_library_result(
    client: TestClient, shop: tuple[CollectionConfig, np.ndarray]
) -> None:
    config, reports = shop
    response = client.post(
        "/v1/collections/shop/itemsets",
        json={"min_support": 0.05, "min_confidence": 0.5, "max_rules": 5},
        headers=ANALYST,
    )
    assert response.status_code == 200, response.text
    job = ItemsetJob.model_validate(response.json())
    assert job.status == "done" and job.error is None and job.result is not None
    assert response.headers["location"] == f"/v1/collections/shop/itemsets/{job.id}"
    result = job.result
    # the stored reports are mined exactly as the library mines the same bits
    expected = mine_frequent_itemsets(PackedBits(reports), N_ITEMS, BitChannel.mask(0.9), 0.05)
    got = {frozenset(i.items): i.support for i in result.itemsets}
    assert got == pytest.approx(expected.named(NAMES), rel=1e-12)
    assert result.by_length == {str(k): v for k, v in expected.by_length.items()}
    assert max(expected.by_length) >= 2
    assert result.n_reports == 4000 and result.keep_probability == 0.9
    for itemset in result.itemsets:
        assert itemset.stderr > 0.0
        assert itemset.ci_low < itemset.support < itemset.ci_high
    assert len(result.rules) <= 5 and result.rules_total >= len(result.rules)
    assert all(rule.confidence >= 0.5 for rule in result.rules)
    assert result.privacy.basket_epsilon == pytest.approx(config.epsilon)
    assert 0.0 < result.privacy.average_support < 1.0
    assert result.levels[0].length == 1
    assert result.central is None and "central" not in response.json()["result"]  # unshuffled
    # the same job, polled
    again = client.get(f"/v1/collections/shop/itemsets/{job.id}", headers=ANALYST)
    assert again.status_code == 200
    assert ItemsetJob.model_validate(again.json()).result == result


def test_a_slow_answer_is_a_job_to_poll(
    client: TestClient, shop: tuple[CollectionConfig, np.ndarray]
) -> None:
    response = client.post(
        "/v1/collections/shop/itemsets",
        json={"min_support": 0.05, "wait_seconds": 0},
        headers=ANALYST,
    )
    assert response.status_code in (200, 202)
    location = response.headers["location"]
    if response.status_code == 202:
        assert response.headers["retry-after"] == "1"
        assert response.json()["status"] in ("queued", "running", "done")
    deadline = time.monotonic() + 30
    while True:
        polled = client.get(location, headers=ANALYST)
        assert polled.status_code == 200
        job = ItemsetJob.model_validate(polled.json())
        if job.status == "done" or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert job.status == "done" and job.result is not None
    assert job.query.wait_seconds == 0


def test_support_reduction_and_max_size(
    client: TestClient, shop: tuple[CollectionConfig, np.ndarray]
) -> None:
    response = client.post(
        "/v1/collections/shop/itemsets",
        json={"min_support": 0.1, "support_reduction": 0.5, "max_size": 2},
        headers=ANALYST,
    )
    result = ItemsetJob.model_validate(response.json()).result
    assert result is not None
    assert result.threshold == pytest.approx(0.05)
    assert set(result.by_length) <= {"1", "2"}
    assert min(i.support for i in result.itemsets) >= 0.05


@pytest.mark.parametrize(
    ("body", "match"),
    [
        ({"min_support": 0}, "min_support"),
        ({"min_support": 1.5}, "min_support"),
        ({"min_support": 0.1, "min_confidence": 2}, "min_confidence"),
        ({"min_support": 0.1, "min_confidence": -1}, "min_confidence"),
        ({"min_support": 0.1, "max_size": 0}, "max_size"),
        ({"min_support": 0.1, "support_reduction": 1}, "support_reduction"),
        ({"min_support": 0.1, "confidence": 0}, "confidence"),
        ({"min_support": 0.1, "wait_seconds": 1000}, "wait_seconds"),
        ({"min_support": 0.1, "max_rules": -1}, "max_rules"),
        ({"min_support": 0.1, "attribute": "nope"}, "no attribute"),
    ],
)
def test_bad_queries_are_refused_and_start_nothing(
    client: TestClient,
    engine: Engine,
    shop: tuple[CollectionConfig, np.ndarray],
    body: dict[str, Any],
    match: str,
) -> None:
    response = client.post("/v1/collections/shop/itemsets", json=body, headers=ANALYST)
    assert response.status_code == 422
    assert response.json()["type"] == PROBLEM + "invalid-query"
    assert match in response.json()["detail"]
    with engine.connect() as connection:
        assert connection.execute(select(func.count()).select_from(jobs)).scalar_one() == 0


def test_malformed_and_unauthorised_requests(
    client: TestClient, shop: tuple[CollectionConfig, np.ndarray]
) -> None:
    url = "/v1/collections/shop/itemsets"
    assert client.post(url, json={"min_support": 0.1}).status_code == 401
    wrong = client.post(url, json={"min_support": "lots"}, headers=ANALYST)
    assert wrong.status_code == 422 and wrong.json()["type"] == PROBLEM + "invalid-request"
    extra = client.post(url, json={"min_support": 0.1, "color": 1}, headers=ANALYST)
    assert extra.status_code == 422
    missing = client.post(
        "/v1/collections/none/itemsets", json={"min_support": 0.1}, headers=ANALYST
    )
    assert missing.status_code == 404
    assert missing.json()["type"] == PROBLEM + "collection-not-found"
    assert client.get(f"{url}/AAAAAAAAAAAAAAAAAAAAAA", headers=ANALYST).status_code == 404
    assert client.get(f"{url}/bad!id", headers=ANALYST).status_code == 422
    assert client.get(f"{url}/AAAAAAAAAAAAAAAAAAAAAA").status_code == 401


def test_a_job_belongs_to_its_collection(
    client: TestClient, shop: tuple[CollectionConfig, np.ndarray]
) -> None:
    _create(client, _basket_spec("other"))
    response = client.post(
        "/v1/collections/shop/itemsets", json={"min_support": 0.2}, headers=ANALYST
    )
    job_id = response.json()["id"]
    assert (
        client.get(f"/v1/collections/other/itemsets/{job_id}", headers=ANALYST).status_code == 404
    )


def test_below_the_release_minimum_is_a_conflict(client: TestClient) -> None:
    config = _create(client, _basket_spec("small", min_reports=1000))
    reports = Privatizer(config).privatize_columns(
        {"basket": basket_lists(_true_baskets(50), NAMES)}, rng=seeded_rng(1)
    )
    _upload(client, config, reports)
    response = client.post(
        "/v1/collections/small/itemsets", json={"min_support": 0.1}, headers=ANALYST
    )
    assert response.status_code == 409
    assert response.json()["type"] == PROBLEM + "insufficient-reports"


def test_other_attributes_are_not_baskets(client: TestClient, config: CollectionConfig) -> None:
    # the "survey" collection has an OUE, a GRR and a MASK attribute
    response = client.post(
        "/v1/collections/survey/itemsets",
        json={"min_support": 0.1, "attribute": "color"},
        headers=ANALYST,
    )
    assert response.status_code == 422 and "not a basket" in response.json()["detail"]
    # the only MASK attribute is found without being named
    survey = load_collection(client.app.state.ldp.engine, "survey")  # type: ignore[attr-defined]
    assert survey.config.attribute("basket").mechanism == "mask"
    two = spec_payload(name="two")
    two["attributes"].append(
        {"name": "cart", "domain": ["a", "b"], "mechanism": "mask", "keep_probability": 0.7}
    )
    _create(client, two)
    response = client.post(
        "/v1/collections/two/itemsets", json={"min_support": 0.1}, headers=ANALYST
    )
    assert response.status_code == 422 and "name one" in response.json()["detail"]
    # no MASK attribute at all: said so, with the mechanisms it has
    none = spec_payload(name="flat")
    none["attributes"] = [a for a in none["attributes"] if a["mechanism"] != "mask"]
    _create(client, none)
    response = client.post(
        "/v1/collections/flat/itemsets", json={"min_support": 0.1}, headers=ANALYST
    )
    assert response.status_code == 422
    assert response.json()["detail"] == (
        "collection 'flat' has no MASK attribute, so no itemsets can be mined from it; its"
        " attributes are color (oue), age (grr)"
    )


def test_a_failing_job_answers_its_problem(
    client: TestClient, shop: tuple[CollectionConfig, np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    def explode(*_args: Any, **_kwargs: Any) -> Any:
        raise InvalidQueryError("level 2 would count too many candidates")

    monkeypatch.setattr(jobs_module, "mine_collection", explode)
    response = client.post(
        "/v1/collections/shop/itemsets", json={"min_support": 0.1}, headers=ANALYST
    )
    assert response.status_code == 422
    assert response.json()["detail"] == "level 2 would count too many candidates"
    # without waiting, the failure is in the polled job
    response = client.post(
        "/v1/collections/shop/itemsets",
        json={"min_support": 0.1, "wait_seconds": 0},
        headers=ANALYST,
    )
    location = response.headers["location"]
    for _ in range(200):
        job = ItemsetJob.model_validate(client.get(location, headers=ANALYST).json())
        if job.status == "failed":
            break
        time.sleep(0.02)
    assert job.status == "failed" and job.result is None
    assert job.error is not None and job.error.type == PROBLEM + "invalid-query"

    def crash(*_args: Any, **_kwargs: Any) -> Any:
        raise RuntimeError("a bug")

    monkeypatch.setattr(jobs_module, "mine_collection", crash)
    response = client.post(
        "/v1/collections/shop/itemsets", json={"min_support": 0.1}, headers=ANALYST
    )
    assert response.status_code == 500
    assert "a bug" not in response.text


def test_a_result_too_large_to_release_is_refused(
    client: TestClient, shop: tuple[CollectionConfig, np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(itemsets_module, "MAX_RESULT_ITEMSETS", 3)
    response = client.post(
        "/v1/collections/shop/itemsets", json={"min_support": 0.05}, headers=ANALYST
    )
    assert response.status_code == 422
    assert "raise min_support" in response.json()["detail"]


def test_a_job_whose_replica_stopped_reads_as_lost(
    client: TestClient, engine: Engine, shop: tuple[CollectionConfig, np.ndarray]
) -> None:
    response = client.post(
        "/v1/collections/shop/itemsets", json={"min_support": 0.2}, headers=ANALYST
    )
    job_id = response.json()["id"]
    old = int(time.time()) - STALE_AFTER_SECONDS - 10
    with engine.begin() as connection:
        connection.execute(
            update(jobs).where(jobs.c.id == job_id).values(status="running", updated_unix=old)
        )
    job = ItemsetJob.model_validate(
        client.get(f"/v1/collections/shop/itemsets/{job_id}", headers=ANALYST).json()
    )
    assert job.status == "failed" and job.error is not None
    assert "stopped" in job.error.detail


def test_the_snapshot_may_spill_to_disk(
    client: TestClient, engine: Engine, shop: tuple[CollectionConfig, np.ndarray]
) -> None:
    collection = load_collection(engine, "shop")
    query = ItemsetQuery(min_support=0.05)
    in_memory = mine_collection(engine, collection, query)
    on_disk = mine_collection(engine, collection, query, memory_bytes=1000)
    assert on_disk.itemsets == in_memory.itemsets
    assert on_disk.rules == in_memory.rules


def test_singletons_from_the_statistics_or_recomputed_agree(
    client: TestClient,
    engine: Engine,
    shop: tuple[CollectionConfig, np.ndarray],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    collection = load_collection(engine, "shop")
    query = ItemsetQuery(min_support=0.05)
    from_statistics = mine_collection(engine, collection, query)
    real = itemsets_module._stats
    calls = 0

    def moving(engine_: Engine, collection_: Any) -> Any:
        # as if a report had been stored while the snapshot was taken
        nonlocal calls
        calls += 1
        stats = real(engine_, collection_)
        return stats if calls == 1 else type(stats)(stats.n_reports + 1, stats.sums)

    monkeypatch.setattr(itemsets_module, "_stats", moving)
    recomputed = mine_collection(engine, collection, query)
    assert calls == 2
    assert recomputed.itemsets == from_statistics.itemsets


def test_spool_reads_back_what_it_was_given() -> None:
    rows = np.arange(3000 * 3, dtype=np.uint8).reshape(3000, 3)
    for memory in (10**6, 100):
        with ReportSpool(3, memory_bytes=memory, chunk_rows=1000) as spool:
            for start in range(0, 3000, 700):
                spool.append(rows[start : start + 700])
            assert spool.n_rows == 3000 and spool.on_disk == (memory == 100)
            for _ in range(2):
                assert np.array_equal(np.concatenate(list(spool.chunks())), rows)
        with pytest.raises(ValueError):
            ReportSpool(4).append(rows)


def test_privacy_endpoint(client: TestClient, shop: tuple[CollectionConfig, np.ndarray]) -> None:
    response = client.get("/v1/collections/shop/privacy?average_support=0.01&weight=1")
    assert response.status_code == 200  # public: no token
    body = response.json()
    mask = Mask(d=N_ITEMS, keep_probability=0.9)
    expected = mask.reconstruction_privacy(0.01, 1.0)
    assert body["R1"] == pytest.approx(expected["R1"])
    assert body["privacy"] == pytest.approx(expected["privacy"])
    assert body["item_epsilon"] == pytest.approx(np.log(9))
    assert body["basket_epsilon"] == pytest.approx(N_ITEMS * np.log(9))
    half = client.get("/v1/collections/shop/privacy?average_support=0.01&weight=0.5").json()
    assert half["R"] == pytest.approx((half["R1"] + half["R0"]) / 2)
    for bad in ("average_support=0", "average_support=1", "average_support=0.1&weight=2"):
        response = client.get(f"/v1/collections/shop/privacy?{bad}")
        assert response.status_code == 422 and response.json()["type"] == PROBLEM + "invalid-query"
    assert client.get("/v1/collections/shop/privacy").status_code == 422
