"""GET /v1/collections/{name}/heavy-hitters: strings nobody listed, found through the API.

A one-attribute ``pem`` collection receives reports the SDK's
:class:`~ldp_shared.codec.Privatizer` made from planted records (uploaded in batches of
10,000, the upload rate limit off); the API finds the planted strings, states their
intervals and the detection threshold, and releases for them what
``GET .../frequencies?values=`` releases. A second collection (pem, flh, oue, duchi)
serves the refusals.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, inspect, select
from tests.engines import database_url

from ldp_aggregator.app import create_app
from ldp_aggregator.settings import Settings
from ldp_aggregator.storage.collections import load_collection
from ldp_aggregator.storage.tables import reports
from ldp_shared import candidates
from ldp_shared.analyses.heavy_hitters import find_heavy_hitters
from ldp_shared.analyses.joint import attribute_stats
from ldp_shared.codec import Privatizer, decode_reports
from ldp_shared.collection import CollectionConfig
from ldp_shared.mechanisms import PrefixHashing
from ldp_shared.mechanisms.prefix_hashing import level_keys
from ldp_shared.rand import seeded_rng

from .conftest import ADMIN, ADMIN_TOKEN, ANALYST, ANALYST_TOKEN, COLORS, problem, report_dicts

NAME = "words"
URL = f"/v1/collections/{NAME}/heavy-hitters"
N = 60_000
MIN_REPORTS = 1_000
PLANTED = {"hello": 0.25, "naïve": 0.15, "日本": 0.10, "password": 0.06}
NFD_SHARE = 0.05
"""Of the devices holding "naïve", this share of all spell it in NFD."""
BATCH = 10_000
SALT = "7e57ab1e" * 4
"""Fixed, so that a run is repeatable (the server draws one when the spec has none)."""


def make_settings(path: Path) -> Settings:
    return Settings(
        database_url=database_url(path / "ldp.db"),
        admin_token=ADMIN_TOKEN,
        analyst_token=ANALYST_TOKEN,
        max_body_bytes=4_000_000,
        upload_rate_per_collection=0,
    )


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """The conftest's ``client`` on these settings: no upload rate limit, larger bodies."""
    return make_settings(tmp_path)


def words(n: int, seed: int) -> list[str]:
    """The planted shares exactly, the rest random lower-case strings of 2 to 8 letters."""
    gen = np.random.default_rng(seed)
    column: list[str] = []
    for value, share in PLANTED.items():
        column += [value] * round(share * n)
    nfd = unicodedata.normalize("NFD", "naïve")
    start = round(PLANTED["hello"] * n)
    column[start : start + round(NFD_SHARE * n)] = [nfd] * round(NFD_SHARE * n)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    column += ["".join(gen.choice(letters, size=m)) for m in gen.integers(2, 9, n - len(column))]
    return [column[i] for i in gen.permutation(n)]


def create(client: TestClient, body: dict[str, Any]) -> CollectionConfig:
    response = client.post("/v1/collections", json=body, headers=ADMIN)
    assert response.status_code == 201, response.text
    return CollectionConfig.model_validate(response.json())


def upload(client: TestClient, config: CollectionConfig, packed: Any) -> None:
    for start in range(0, len(packed), BATCH):
        items = report_dicts(config, packed[start : start + BATCH])
        response = client.post(f"/v1/collections/{config.name}/reports", json={"reports": items})
        assert response.status_code == 200, response.text
        assert response.json()["accepted"] == len(items)


def words_spec(name: str = NAME, min_reports: int = MIN_REPORTS) -> dict[str, Any]:
    return {
        "name": name,
        "epsilon": 4.0,
        "attributes": [{"name": "word", "mechanism": "pem", "max_length": 8, "salt": SALT}],
        "release": {"min_reports": min_reports},
    }


class Filled:
    def __init__(self, client: TestClient, config: CollectionConfig, packed: Any, held: set[str]):
        self.client = client
        self.config = config
        self.packed = packed
        self.held = held
        self._answers: dict[tuple[tuple[str, Any], ...], Any] = {}

    def ask(self, **params: Any) -> Any:
        """The JSON answer of a heavy-hitters query (each query asked once: a search of
        60,000 reports takes a few seconds)."""
        key = tuple(sorted(params.items()))
        if key not in self._answers:
            response = hitters(self.client, **params)
            assert response.status_code == 200, response.text
            self._answers[key] = response.json()
        return self._answers[key]


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Filled]:
    """One app and one filled collection for the read-only tests of this module."""
    settings = make_settings(tmp_path_factory.mktemp("heavy"))
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        config = create(client, words_spec())
        column = words(N, seed=11)
        packed = Privatizer(config).privatize_columns({"word": column}, rng=seeded_rng(11))
        upload(client, config, packed)
        held = {unicodedata.normalize("NFC", v) for v in column}
        yield Filled(client, config, packed, held)


def hitters(client: TestClient, name: str = NAME, **params: Any) -> Any:
    return client.get(f"/v1/collections/{name}/heavy-hitters", params=params, headers=ANALYST)


# -- discovery ---------------------------------------------------------------------------------


def test_planted_strings_are_found_with_intervals_and_a_threshold(filled: Filled) -> None:
    body = filled.ask(attribute="word", k=10, confidence=0.99)
    assert body["collection"] == NAME and body["attribute"] == "word"
    assert body["mechanism"] == "pem" and body["n_reports"] == N
    assert body["epsilon"] == pytest.approx(4.0) and body["confidence"] == 0.99
    assert body["false_discovery"] == 0.05 and body["miss"] == 0.1
    assert body["levels_searched"] == 8 and body["candidates"] > 256
    assert 0.0 < body["threshold"] < min(PLANTED.values())
    values = body["values"]
    assert values[:4] == list(PLANTED), values  # most frequent first
    assert set(values) <= filled.held, set(values) - filled.held
    assert len(values) <= 10
    for key in ("estimate", "counts", "stderr", "ci_low", "ci_high"):
        assert len(body[key]) == len(values), key
    estimate, stderr = np.array(body["estimate"]), np.array(body["stderr"])
    assert list(estimate) == sorted(estimate, reverse=True)
    np.testing.assert_allclose(body["counts"], estimate * N, rtol=1e-12)
    z = 2.5758293035489004  # Φ⁻¹(0.995)
    np.testing.assert_allclose(body["ci_low"], estimate - z * stderr, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(body["ci_high"], estimate + z * stderr, rtol=1e-9, atol=1e-12)
    for i, (value, share) in enumerate(PLANTED.items()):
        assert abs(estimate[i] - share) < 4.5 * stderr[i], (value, estimate[i], stderr[i])


def test_the_api_answers_what_the_search_finds_in_the_reports(filled: Filled) -> None:
    """The same search run here on the decoded reports (no aggregator code)."""
    body = filled.ask(attribute="word", k=5)
    config = filled.config
    attribute = config.attributes[0]
    batch = decode_reports(config, filled.packed)
    randomizer = config.randomizer(attribute)
    assert isinstance(randomizer, PrefixHashing)
    stats = attribute_stats(config, attribute, batch.sums, batch.floats)
    salt = config.spec.attributes[0].salt  # type: ignore[attr-defined]
    direct = find_heavy_hitters(randomizer, salt, stats, 5, 0.95)
    assert body["values"] == direct.values
    assert body["threshold"] == pytest.approx(direct.threshold, rel=1e-12)
    np.testing.assert_allclose(body["estimate"], direct.estimate.estimate, rtol=1e-12)
    assert body["levels_searched"] == direct.levels_searched
    assert body["candidates"] == direct.candidates


@pytest.mark.parametrize("confidence", [0.99, 0.9])
def test_the_estimates_are_those_of_frequencies_values(filled: Filled, confidence: float) -> None:
    body = filled.ask(attribute="word", k=10 if confidence == 0.99 else 20, confidence=confidence)
    named = filled.client.get(
        f"/v1/collections/{NAME}/frequencies",
        params={
            "attribute": "word",
            "values": candidates.join(body["values"]),
            "confidence": confidence,
        },
        headers=ANALYST,
    )
    assert named.status_code == 200, named.text
    frequencies = named.json()
    assert frequencies["values"] == body["values"]
    assert frequencies["n_reports"] == body["n_reports"]
    for key in ("estimate", "counts", "stderr", "ci_low", "ci_high"):
        np.testing.assert_allclose(body[key], frequencies[key], rtol=1e-12, atol=0, err_msg=key)


def test_k_limits_the_list_to_the_head(filled: Filled) -> None:
    one = filled.ask(attribute="word", k=1)
    five = filled.ask(attribute="word", k=5)
    assert one["values"] == ["hello"] and five["values"][:4] == list(PLANTED)
    assert one["estimate"] == five["estimate"][:1]
    assert one["threshold"] == five["threshold"]  # k ≤ 32: the same 64 prefixes kept
    wide = filled.ask(attribute="word", k=20, confidence=0.9)
    assert wide["values"][: len(five["values"])] == five["values"]
    assert len(wide["values"]) <= 20


def test_nfd_devices_count_for_the_nfc_string(filled: Filled) -> None:
    body = filled.ask(attribute="word", k=5)
    assert "naïve" in body["values"]
    assert all(unicodedata.is_normalized("NFC", v) for v in body["values"])
    i = body["values"].index("naïve")
    assert abs(body["estimate"][i] - 0.15) < 4.5 * body["stderr"][i]  # 0.10 NFC + 0.05 NFD


def test_the_analyst_or_admin_token_is_needed(client: TestClient, mixed: CollectionConfig) -> None:
    url = "/v1/collections/mixed/heavy-hitters"
    params = {"attribute": "word", "k": 1}
    assert client.get(url, params=params, headers=ADMIN).status_code == 200
    assert client.get(url, params=params, headers=ANALYST).status_code == 200
    problem(client.get(url, params=params), 401, "unauthenticated")
    bad = {"Authorization": "Bearer " + "0" * 40}
    problem(client.get(url, params=params, headers=bad), 401, "unauthenticated")
    problem(
        client.get("/v1/collections/nope/heavy-hitters", params=params, headers=ANALYST),
        404,
        "collection-not-found",
    )


# -- what is stored ----------------------------------------------------------------------------


def test_a_report_is_stored_as_its_four_bytes_and_nothing_else(filled: Filled) -> None:
    state = filled.client.app.state.ldp  # type: ignore[attr-defined]
    engine: Engine = state.engine
    config = filled.config
    assert config.report_bytes == 4
    collection = load_collection(engine, NAME)
    with engine.connect() as connection:
        rows = connection.execute(
            select(reports.c.bits).where(reports.c.collection_id == collection.id)
        ).all()
    stored = sorted(bytes(row.bits) for row in rows)
    assert len(stored) == N and {len(bits) for bits in stored} == {4}
    assert stored == sorted(bytes(row) for row in filled.packed)
    assert {c["name"] for c in inspect(engine).get_columns("reports")} == {
        "collection_id",
        "report_id",
        "received_day",
        "period_start",
        "bits",
    }


def test_no_planted_string_is_written_anywhere(filled: Filled) -> None:
    """No table holds a planted string's UTF-8 in any text or byte cell (bits are 4 bytes,
    shorter than any planted string)."""
    state = filled.client.app.state.ldp  # type: ignore[attr-defined]
    engine: Engine = state.engine
    needles = [v.encode("utf-8") for v in PLANTED]
    control = b'"word"'  # the attribute's name, in the stored spec: the scan reads text
    seen_control, byte_cells = False, 0
    with engine.connect() as connection:
        for table in inspect(engine).get_table_names():
            for row in connection.exec_driver_sql(f'SELECT * FROM "{table}"'):
                for cell in row:
                    if isinstance(cell, str):
                        data = cell.encode("utf-8")
                    elif isinstance(cell, bytes | bytearray | memoryview):
                        data = bytes(cell)
                        byte_cells += 1
                    else:
                        continue
                    seen_control = seen_control or control in data
                    assert not any(needle in data for needle in needles), table
    assert seen_control and byte_cells >= N


# -- refusals ----------------------------------------------------------------------------------

MIXED = {
    "name": "mixed",
    "epsilon": 8.0,
    "attributes": [
        {"name": "word", "mechanism": "pem", "max_length": 3, "salt": SALT},
        {"name": "tag", "mechanism": "flh", "hashes": 64},
        {"name": "color", "mechanism": "oue", "domain": COLORS},
        {"name": "age", "mechanism": "duchi", "lo": 0, "hi": 100},
    ],
    "release": {"min_reports": 10},
}


@pytest.fixture
def mixed(client: TestClient) -> CollectionConfig:
    config = create(client, MIXED)
    records = [
        {"word": "abc", "tag": "x", "color": COLORS[i % 4], "age": 30.0 + i % 7} for i in range(50)
    ]
    upload(client, config, Privatizer(config).privatize_many(records, rng=seeded_rng(5)))
    return config


@pytest.mark.parametrize(
    ("params", "slug", "detail"),
    [
        ({"attribute": "word", "k": 0}, "invalid-query", "k must be a whole number from 1 to 1000"),
        ({"attribute": "word", "k": 1001}, "invalid-query", "from 1 to 1000, got 1001"),
        ({"attribute": "word", "k": -5}, "invalid-query", "got -5"),
        ({"attribute": "word", "k": "x"}, "invalid-request", "k"),
        ({"attribute": "word", "k": "2.5"}, "invalid-request", "k"),
        ({"attribute": "shoe"}, "invalid-query", "has no attribute 'shoe'"),
        ({"attribute": "tag"}, "invalid-query", "'tag' (flh) keeps no prefixes"),
        ({"attribute": "color"}, "invalid-query", "'color' (oue) keeps no prefixes"),
        ({"attribute": "age"}, "invalid-query", "'age' (duchi) is released as its mean"),
        ({"attribute": "word", "confidence": "1.5"}, "invalid-query", "(0, 1)"),
        ({"attribute": "word", "confidence": "nan"}, "invalid-query", "(0, 1)"),
        ({"attribute": "word", "confidence": "high"}, "invalid-request", "confidence"),
        ({}, "invalid-request", "attribute"),
    ],
)
def test_bad_queries_are_refused_with_a_readable_detail(
    client: TestClient, mixed: CollectionConfig, params: dict[str, Any], slug: str, detail: str
) -> None:
    response = hitters(client, "mixed", **params)
    text = problem(response, 422, slug)
    assert detail in text, text
    assert "\n" not in text and "Traceback" not in text


def test_a_valid_query_on_the_mixed_collection_answers(
    client: TestClient, mixed: CollectionConfig
) -> None:
    response = hitters(client, "mixed", attribute="word", k=1000)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["n_reports"] == 50 and body["epsilon"] == pytest.approx(2.0)  # 8 / 4
    assert "attribute_reports" not in body  # budget split: every report carries the word
    assert set(body["values"]) <= {"abc"}


def test_under_budget_sample_the_answer_says_how_many_reports_carried_it(
    client: TestClient,
) -> None:
    """As ``frequencies`` does: the search used only the reports that carried the word."""
    config = create(client, {**MIXED, "name": "sampled", "budget": "sample"})
    records = [{"word": "abc", "tag": "x", "color": COLORS[i % 4], "age": 30.0} for i in range(400)]
    upload(client, config, Privatizer(config).privatize_many(records, rng=seeded_rng(6)))
    body = hitters(client, "sampled", attribute="word", k=5).json()
    named = client.get(
        "/v1/collections/sampled/frequencies",
        params={"attribute": "word", "values": "abc"},
        headers=ANALYST,
    ).json()
    assert body["n_reports"] == 400 and 40 < body["attribute_reports"] < 200
    assert body["attribute_reports"] == named["attribute_reports"]


def test_below_the_release_minimum_is_insufficient_reports(client: TestClient) -> None:
    config = create(client, words_spec(min_reports=200))
    text = problem(hitters(client, attribute="word"), 409, "insufficient-reports")  # empty
    assert "has 0 reports" in text and "at least 200" in text
    packed = Privatizer(config).privatize_columns({"word": words(250, 3)}, rng=seeded_rng(3))
    upload(client, config, packed[:199])
    text = problem(hitters(client, attribute="word"), 409, "insufficient-reports")
    assert "has 199 reports" in text
    # a bad query is refused as such before the count is looked at
    problem(hitters(client, attribute="word", k=0), 422, "invalid-query")
    upload(client, config, packed[199:])
    response = hitters(client, attribute="word")
    assert response.status_code == 200, response.text
    assert response.json()["n_reports"] == 250


def test_the_least_release_minimum_is_one_report(client: TestClient) -> None:
    """``min_reports`` is at least 1, so an empty collection is never searched. From one
    report on, every query answers 200, though most levels hold no report yet."""
    response = client.post("/v1/collections", json=words_spec(min_reports=0), headers=ADMIN)
    assert "min_reports" in problem(response, 422, "invalid-configuration")
    config = create(client, words_spec(min_reports=1))
    problem(hitters(client, attribute="word"), 409, "insufficient-reports")
    column = ["hello", "日本", "password", "x"] * 3
    packed = Privatizer(config).privatize_columns({"word": column}, rng=seeded_rng(4))
    for n in range(1, len(column) + 1):
        upload(client, config, packed[n - 1 : n])
        response = hitters(client, attribute="word", k=3)
        assert response.status_code == 200, (n, response.text)
        body = response.json()
        assert body["n_reports"] == n and 0.0 < body["threshold"] <= 1.0


@pytest.mark.parametrize(
    ("max_length", "raw"),
    [(6, "e\u0301x"), (4, "\u0958")],  # NFD é; DEVANAGARI QA, whose NFC is 6 bytes
    ids=["nfd", "nfc-longer"],
)
def test_reports_of_a_string_not_in_nfc_do_not_break_the_query(
    client: TestClient, max_length: int, raw: str
) -> None:
    """Half of 20,000 reports carry the level keys of a string's raw UTF-8 that is not
    in NFC (as a client that skips the normalisation sends). The query must answer, with
    values in NFC whose released estimates are the search's (above the threshold)."""
    assert not unicodedata.is_normalized("NFC", raw)
    config = create(
        client,
        words_spec(min_reports=10)
        | {
            "attributes": [
                {"name": "word", "mechanism": "pem", "max_length": max_length, "salt": SALT}
            ]
        },
    )
    attribute = config.spec.attributes[0]
    randomizer = config.randomizer(config.attributes[0])
    n = 20_000
    row = level_keys(raw.encode("utf-8"), max_length, bytes.fromhex(attribute.salt))  # type: ignore[attr-defined]
    others = attribute.encode([f"z{i}"[:max_length] for i in range(n // 2)])
    keys = np.vstack([np.tile(row, (n // 2, 1)), others])
    upload(client, config, randomizer.pack(randomizer.perturb(keys, seeded_rng(6))))
    response = hitters(client, attribute="word", k=3)
    assert response.status_code == 200, response.text
    body = response.json()
    assert all(unicodedata.is_normalized("NFC", v) for v in body["values"]), body["values"]
    assert all(e >= body["threshold"] for e in body["estimate"]), body
