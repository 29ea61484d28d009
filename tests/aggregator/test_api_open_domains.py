"""GET .../frequencies?values=: open domains (flh) through the API, and named values of a
listed domain.

A collection with an open string attribute and an integer attribute reported by FLH and
an OUE attribute receives reports the SDK's :class:`~ldp_shared.codec.Privatizer` made
from planted records; the API's estimates of named values are the mechanism's own on the
decoded statistics, and cover the planted truth.
"""

from __future__ import annotations

from statistics import NormalDist
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from numpy.typing import NDArray
from sqlalchemy import Engine, select

from ldp_aggregator.storage.collections import load_collection
from ldp_aggregator.storage.tables import reports
from ldp_shared import candidates
from ldp_shared.codec import Privatizer, decode_reports
from ldp_shared.collection import CollectionConfig
from ldp_shared.mechanisms import LocalHashing
from ldp_shared.rand import seeded_rng

from .conftest import ADMIN, ANALYST, COLORS, problem, report_dicts

NAME = "fruits"
URL = f"/v1/collections/{NAME}/frequencies"
N = 4_000
MIN_REPORTS = 50
ALPHA = 0.001
"""Significance of the coverage checks (Bonferroni over the values named)."""

# fruit: planted shares; the rest of the records spread over many strings
PLANTED = {"apple": 0.40, "banana": 0.20, "kiwi, gold": 0.05}
SPREAD = [f"fruit-{i:03d}" for i in range(350)]  # 35 % over 350 strings: 0.1 % each
NUMBERS = {7: 0.50, 42: 0.10}
NUMBER_SPREAD = list(range(1_000, 1_400))  # 40 % over 400 integers
COLOR_SHARES = [0.5, 0.3, 0.15, 0.05]
SALTS = {"fruit": "f2017ada" * 4, "number": "0b5e55ed" * 4}
"""Fixed hash-family salts for the filled collection (the server draws one otherwise), so
its coverage checks are deterministic: the devices' noise is seeded too."""


def payload(**changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": NAME,
        "epsilon": 6.0,
        "attributes": [
            {"name": "fruit", "mechanism": "flh", "max_length": 16},
            {"name": "number", "mechanism": "flh", "value_type": "integer"},
            {"name": "color", "domain": COLORS, "mechanism": "oue"},
        ],
        "release": {"min_reports": MIN_REPORTS},
    }
    body.update(changes)
    return body


def planted_column(shares: dict[Any, float], spread: list[Any], n: int) -> list[Any]:
    column: list[Any] = []
    for value, share in shares.items():
        column += [value] * round(share * n)
    rest = n - len(column)
    column += [spread[i % len(spread)] for i in range(rest)]
    return column


def make_records(n: int, seed: int) -> list[dict[str, Any]]:
    """Exactly the planted shares, in a shuffled order."""
    gen = np.random.default_rng(seed)
    fruit = planted_column(PLANTED, SPREAD, n)
    number = planted_column(NUMBERS, NUMBER_SPREAD, n)
    color = planted_column(dict(zip(COLORS, COLOR_SHARES, strict=True)), COLORS, n)
    order = [gen.permutation(n) for _ in range(3)]
    return [
        {"fruit": fruit[a], "number": number[b], "color": color[c]}
        for a, b, c in zip(*order, strict=True)
    ]


def create(client: TestClient, body: dict[str, Any]) -> CollectionConfig:
    response = client.post("/v1/collections", json=body, headers=ADMIN)
    assert response.status_code == 201, response.text
    return CollectionConfig.model_validate(response.json())


def upload(client: TestClient, config: CollectionConfig, packed: NDArray[np.uint8]) -> None:
    for start in range(0, len(packed), 500):
        items = report_dicts(config, packed[start : start + 500])
        response = client.post(f"/v1/collections/{config.name}/reports", json={"reports": items})
        assert response.status_code == 200, response.text
        assert response.json()["accepted"] == len(items)


def salted_payload() -> dict[str, Any]:
    """:func:`payload` with the open attributes' salts fixed (:data:`SALTS`)."""
    body = payload()
    for attribute in body["attributes"]:
        if attribute["name"] in SALTS:
            attribute["salt"] = SALTS[attribute["name"]]
    return body


def filled(client: TestClient, n: int = N, seed: int = 3) -> tuple[CollectionConfig, Any]:
    config = create(client, salted_payload())
    assert [config.spec.attributes[i].model_dump()["salt"] for i in (0, 1)] == list(SALTS.values())
    packed = Privatizer(config).privatize_many(make_records(n, seed), rng=seeded_rng(seed))
    upload(client, config, packed)
    return config, packed


def ask(client: TestClient, attribute: str, values: list[Any] | None, **params: Any) -> Any:
    query: dict[str, Any] = {"attribute": attribute, **params}
    if values is not None:
        query["values"] = candidates.join(values)
    return client.get(URL, params=query, headers=ANALYST)


def direct_estimate(
    config: CollectionConfig, packed: Any, index: int, values: list[Any], confidence: float
) -> Any:
    """The mechanism's own estimate from the decoded statistics (no aggregator code)."""
    attribute = config.attributes[index]
    randomizer = config.randomizers[index]
    assert isinstance(randomizer, LocalHashing)
    sums = decode_reports(config, packed).sums
    counts = sums[attribute.stats_offset : attribute.stats_offset + randomizer.k * randomizer.g]
    keys = config.spec.attributes[index].encode(values)
    return randomizer.estimate_keys({"counts": counts}, len(packed), keys, confidence)


def assert_covers(body: dict[str, Any], truth: list[float], confidence: float) -> None:
    """Each planted share lies in its interval, and ``|z| < Φ⁻¹(1 − α/2m)``."""
    critical = NormalDist().inv_cdf(1 - ALPHA / (2 * len(truth)))
    assert confidence == pytest.approx(1 - ALPHA / len(truth))
    estimate, stderr = np.array(body["estimate"]), np.array(body["stderr"])
    assert np.all(stderr > 0)
    z = (estimate - np.array(truth)) / stderr
    assert np.all(np.abs(z) < critical), z
    assert np.all(np.array(body["ci_low"]) <= truth) and np.all(truth <= np.array(body["ci_high"]))
    np.testing.assert_allclose(body["ci_high"], estimate + critical * stderr, rtol=1e-9)


def assert_rejects(body: dict[str, Any], wrong: list[float]) -> None:
    """Power: the same check at the same α refuses ``wrong`` shares."""
    critical = NormalDist().inv_cdf(1 - ALPHA / (2 * len(wrong)))
    z = (np.array(body["estimate"]) - np.array(wrong)) / np.array(body["stderr"])
    assert np.any(np.abs(z) >= critical), z


# -- estimates ---------------------------------------------------------------------------------


def test_config_of_an_open_attribute(client: TestClient) -> None:
    config = create(client, payload())
    fruit, number, color = config.attributes
    for attribute in (fruit, number):
        assert attribute.mechanism == "flh" and attribute.domain is None
        assert (attribute.encoding, attribute.byte_length) == ("hashed", 3)
        assert attribute.model_extra == {"hashes": 1024, "buckets": 8}  # ε = 2 each
    assert color.byte_offset == 6 and config.report_bytes == 7
    salts = [config.spec.attributes[i].model_dump()["salt"] for i in (0, 1)]
    assert salts[0] != salts[1]
    # the salt drawn at creation is what everyone reads afterwards
    public = client.get(f"/v1/collections/{NAME}").json()
    assert [public["spec"]["attributes"][i]["salt"] for i in (0, 1)] == salts


def test_named_strings_are_estimated_within_their_intervals(client: TestClient) -> None:
    config, packed = filled(client)
    names = ["apple", "banana", "durian", "kiwi, gold"]
    confidence = 1 - ALPHA / len(names)
    response = ask(client, "fruit", names, confidence=confidence)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["values"] == names
    assert body["n_reports"] == N and body["mechanism"] == "flh"
    assert body["epsilon"] == pytest.approx(2.0) and body["record_epsilon"] == 6.0
    assert body["postprocess"] == "none" and body["postprocessed"] is None
    assert body["interval"] == "normal"
    assert_covers(body, [0.40, 0.20, 0.0, 0.05], confidence)
    assert_rejects(body, [0.20, 0.40, 0.0, 0.05])  # apple's and banana's shares swapped
    # the API's numbers are the mechanism's on the decoded statistics
    direct = direct_estimate(config, packed, 0, names, confidence)
    for key in ("estimate", "counts", "stderr", "ci_low", "ci_high"):
        np.testing.assert_allclose(body[key], getattr(direct, key), rtol=1e-12, atol=0, err_msg=key)


def test_named_integers_are_estimated_within_their_intervals(client: TestClient) -> None:
    config, packed = filled(client)
    named = [7, 42, 99, 1_000]
    confidence = 1 - ALPHA / len(named)
    response = ask(client, "number", named, confidence=confidence)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["values"] == ["7", "42", "99", "1000"]
    assert_covers(body, [0.50, 0.10, 0.0, 0.001], confidence)
    assert_rejects(body, [0.10, 0.50, 0.0, 0.001])  # 7's and 42's shares swapped
    direct = direct_estimate(config, packed, 1, named, confidence)
    for key in ("estimate", "stderr", "ci_low", "ci_high"):
        np.testing.assert_allclose(body[key], getattr(direct, key), rtol=1e-12, atol=0, err_msg=key)
    # a decimal with leading zeros names the same integer
    again = ask(client, "number", ["007"], confidence=confidence).json()
    assert again["values"] == ["007"] and again["estimate"] == body["estimate"][:1]


def test_one_value_alone_has_the_same_estimate(client: TestClient) -> None:
    filled(client)
    both = ask(client, "fruit", ["banana", "apple"]).json()
    alone = ask(client, "fruit", ["apple"]).json()
    assert alone["values"] == ["apple"] and both["values"] == ["banana", "apple"]
    for key in ("estimate", "stderr", "ci_low", "ci_high"):
        assert alone[key] == both[key][1:]


def test_nfd_candidate_is_its_nfc_value(client: TestClient) -> None:
    config = create(client, payload())
    records = [{"fruit": "p\u00e9che", "number": 1, "color": "red"}] * 200
    upload(client, config, Privatizer(config).privatize_many(records, rng=seeded_rng(9)))
    nfc = ask(client, "fruit", ["p\u00e9che"]).json()
    nfd = ask(client, "fruit", ["pe\u0301che"]).json()
    assert nfd["estimate"] == nfc["estimate"] and nfd["values"] == ["pe\u0301che"]


def test_values_of_a_listed_domain_are_its_full_estimate(client: TestClient) -> None:
    filled(client)
    full = ask(client, "color", None).json()
    assert full["values"] == COLORS
    named = ask(client, "color", ["blue", "red"])
    assert named.status_code == 200, named.text
    body = named.json()
    assert body["values"] == ["blue", "red"]
    for key in ("estimate", "counts", "stderr", "ci_low", "ci_high"):
        assert body[key] == [full[key][2], full[key][0]], key
    assert body["interval"] == full["interval"]
    assert body["postprocessed"] is None and body.get("ibu") is None


def test_declared_flh_domain_named_or_whole(client: TestClient) -> None:
    body = payload(
        attributes=[{"name": "fruit", "mechanism": "flh", "domain": ["apple", "banana", "cherry"]}]
    )
    config = create(client, body)
    assert config.report_bytes == 3 and config.attributes[0].domain == ["apple", "banana", "cherry"]
    records = [{"fruit": v} for v in ["apple"] * 300 + ["banana"] * 100 + ["cherry"] * 100]
    upload(client, config, Privatizer(config).privatize_many(records, rng=seeded_rng(5)))
    full = ask(client, "fruit", None)
    assert full.status_code == 200, full.text
    named = ask(client, "fruit", ["cherry", "apple"]).json()
    for key in ("estimate", "stderr"):
        assert named[key] == [full.json()[key][2], full.json()[key][0]]
    outside = ask(client, "fruit", ["durian"])
    assert "value 'durian' is not in its domain" in problem(outside, 422, "invalid-query")


# -- refusals ---------------------------------------------------------------------------------


def test_an_open_domain_needs_named_values(client: TestClient) -> None:
    filled(client, n=MIN_REPORTS)
    for attribute in ("fruit", "number"):
        detail = problem(ask(client, attribute, None), 422, "invalid-query")
        assert "open domain" in detail and "name the values" in detail and "values=" in detail


@pytest.mark.parametrize(
    ("attribute", "values", "params", "message"),
    [
        ("fruit", ["apple"], {"postprocess": "simplex"}, "leave out values="),
        ("fruit", ["apple"], {"postprocess": "norm-sub"}, "leave out values="),
        ("color", ["red"], {"postprocess": "ibu"}, "leave out values="),
        ("fruit", [f"v{i}" for i in range(1001)], {}, "at most 1000"),
        ("fruit", ["x" * 17], {}, "17 bytes of UTF-8, over the maximum of 16"),
        ("fruit", ["é" * 9], {}, "18 bytes of UTF-8, over the maximum of 16"),
        ("fruit", [""], {}, "the empty string is not a value"),
        ("fruit", ["apple", "apple"], {}, "named twice"),
        ("fruit", ["caf\u00e9", "cafe\u0301"], {}, "named twice (in another spelling)"),
        ("number", ["7", "007"], {}, "named twice (in another spelling)"),
        ("number", ["seven"], {}, "'seven' is not a decimal integer"),
        ("number", ["-1"], {}, "is not a decimal integer"),
        ("number", ["4.5"], {}, "is not a decimal integer"),
        ("number", [str(2**64)], {}, "outside [0, 2^64)"),
        ("number", ["9" * 5000], {}, "more than 20 digits"),
        ("number", ["+7"], {}, "is not a decimal integer"),
        ("color", ["purple"], {}, "has no value 'purple'"),
        ("color", ["red", "Red"], {}, "has no value 'Red'"),
        ("shoe", ["x"], {}, "shoe"),
    ],
)
def test_bad_named_values(
    client: TestClient, attribute: str, values: list[str], params: dict[str, Any], message: str
) -> None:
    filled(client, n=MIN_REPORTS)
    detail = problem(ask(client, attribute, values, **params), 422, "invalid-query")
    assert message in detail, detail
    assert "\n" not in detail


@pytest.mark.parametrize("text", ["apple\\", "\\"])
def test_a_trailing_backslash_is_refused(client: TestClient, text: str) -> None:
    filled(client, n=MIN_REPORTS)
    response = client.get(URL, params={"attribute": "fruit", "values": text}, headers=ANALYST)
    assert "backslash" in problem(response, 422, "invalid-query")


def test_the_release_minimum_applies_to_named_values(client: TestClient) -> None:
    config = create(client, payload())
    records = make_records(MIN_REPORTS, seed=1)
    packed = Privatizer(config).privatize_many(records, rng=seeded_rng(1))
    upload(client, config, packed[:-1])
    for attribute, values in (("fruit", ["apple"]), ("number", [7]), ("color", ["red"])):
        problem(ask(client, attribute, values), 409, "insufficient-reports")
    upload(client, config, packed[-1:])
    for attribute, values in (("fruit", ["apple"]), ("number", [7]), ("color", ["red"])):
        response = ask(client, attribute, values)
        assert response.status_code == 200, response.text
        assert response.json()["n_reports"] == MIN_REPORTS


def test_named_values_need_the_analyst_role(client: TestClient) -> None:
    filled(client, n=MIN_REPORTS)
    params = {"attribute": "fruit", "values": "apple"}
    assert client.get(URL, params=params, headers=ADMIN).status_code == 200
    problem(client.get(URL, params=params), 401, "unauthenticated")


# -- what is stored ---------------------------------------------------------------------------


def test_a_report_is_its_three_bytes(client: TestClient, engine: Engine) -> None:
    body = payload(attributes=[{"name": "fruit", "mechanism": "flh", "hashes": 64}])
    config = create(client, body)
    assert config.attributes[0].model_extra == {"hashes": 64, "buckets": 256}  # all of ε = 6
    assert config.report_bytes == 3 and config.stats_length == 64 * 256
    records = make_records(300, seed=2)
    packed = Privatizer(config).privatize_many(
        [{"fruit": r["fruit"]} for r in records], rng=seeded_rng(2)
    )
    assert packed.shape == (300, 3)
    upload(client, config, packed)
    collection = load_collection(engine, NAME)
    with engine.connect() as connection:
        rows = connection.execute(
            select(reports.c.bits).where(reports.c.collection_id == collection.id)
        ).all()
    stored = sorted(bytes(row.bits) for row in rows)
    assert len(stored) == 300 and {len(bits) for bits in stored} == {3}
    assert stored == sorted(bytes(row) for row in packed)
    response = ask(client, "fruit", ["apple"])
    assert response.status_code == 200 and response.json()["n_reports"] == 300
