"""Both guarantees of a shuffled collection, wherever privacy is shown: its config, every
released estimate, the privacy page and the dashboard; an unshuffled collection's answers
are unchanged (no member added)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ldp_aggregator.ui.render import number
from ldp_client import LDPClient
from ldp_shared.central import CENTRAL_DELTA, released_central
from ldp_shared.shuffling import central_epsilon, closed_form_epsilon

from ..conftest import ADMIN, ANALYST, ANALYST_TOKEN
from ..ui.conftest import sign_in_client
from .conftest import MIN_BATCH, Parties

ATTRIBUTES = [
    {"name": "color", "domain": ["red", "green", "blue"], "mechanism": "oue"},
    {"name": "hours", "mechanism": "duchi", "lo": 0, "hi": 10},
    {"name": "income", "mechanism": "histogram", "edges": [0, 10, 20, 50, 100]},
]
ESTIMATES = [
    ("frequencies", {"attribute": "color"}),
    ("means", {"attribute": "hours"}),
    ("quantiles", {"attribute": "income"}),
]
REPORTS = 10 * MIN_BATCH
LOCAL_EPSILON = 1.0
"""Small enough for the 200 reports of the tests to amplify it."""


def _records(n: int) -> list[dict[str, Any]]:
    gen = np.random.default_rng(11)
    return [
        {
            "color": ["red", "green", "blue"][int(gen.integers(3))],
            "hours": float(gen.uniform(0, 10)),
            "income": float(gen.uniform(0, 100)),
        }
        for _ in range(n)
    ]


def _spec(name: str, **changes: Any) -> dict[str, Any]:
    spec = {"name": name, "epsilon": LOCAL_EPSILON, "attributes": ATTRIBUTES}
    return {**spec, "release": {"min_reports": 10}, **changes}


@pytest.fixture
def both(parties: Parties) -> Parties:
    """``shuffled`` (reports through the shuffler) and ``direct`` (the same reports,
    uploaded straight to an unshuffled collection of the same spec)."""
    shuffled = parties.aggregator.post(
        "/v1/collections", json=_spec("shuffled", shuffled=True), headers=ADMIN
    )
    direct = parties.aggregator.post("/v1/collections", json=_spec("direct"), headers=ADMIN)
    assert shuffled.status_code == direct.status_code == 201, shuffled.text + direct.text
    with LDPClient("http://aggregator", transport=parties.device_transport, retries=0) as sdk:
        reports = sdk.privatize_many("shuffled", _records(REPORTS))
        sdk.submit_shuffled("shuffled", reports, shuffler_url="http://shuffler")
    assert parties.forward() == REPORTS
    body = {
        "reports": [
            {**r.model_dump(), "config_hash": direct.json()["config_hash"]} for r in reports
        ]
    }
    assert parties.aggregator.post("/v1/collections/direct/reports", json=body).status_code == 200
    return parties


def test_the_config_says_it_is_shuffled_and_how_the_central_epsilon_falls_with_n(
    both: Parties,
) -> None:
    shuffled = both.aggregator.get("/v1/collections/shuffled").json()
    direct = both.aggregator.get("/v1/collections/direct").json()
    assert "shuffling" not in direct
    table = shuffled["shuffling"]
    assert table["local_epsilon"] == pytest.approx(shuffled["epsilon"])
    assert table["delta"] == CENTRAL_DELTA
    assert [row["n"] for row in table["central"]] == [10, 1_000, 10_000, 100_000, 1_000_000]
    for row in table["central"]:
        assert row["epsilon"] == pytest.approx(
            closed_form_epsilon(LOCAL_EPSILON, row["n"], CENTRAL_DELTA)
        )
    epsilons = [row["epsilon"] for row in table["central"]]
    assert epsilons == sorted(epsilons, reverse=True) and epsilons[-1] < 0.05 < epsilons[0]


@pytest.mark.parametrize(("path", "params"), ESTIMATES)
def test_every_estimate_of_a_shuffled_collection_carries_its_central_guarantee(
    both: Parties, path: str, params: dict[str, str]
) -> None:
    answers = {
        name: both.aggregator.get(f"/v1/collections/{name}/{path}", params=params, headers=ANALYST)
        for name in ("shuffled", "direct")
    }
    assert all(a.status_code == 200 for a in answers.values()), answers["shuffled"].text
    assert "central" not in answers["direct"].json()
    body = answers["shuffled"].json()
    central = body.pop("central")
    assert body == {k: v for k, v in answers["direct"].json().items() if k != "collection"} | {
        "collection": "shuffled"
    }
    local = body["record_epsilon"]
    exact = central_epsilon(local, REPORTS, CENTRAL_DELTA)
    assert central["n"] == REPORTS and central["local_epsilon"] == local == pytest.approx(1.0)
    assert central["delta"] == CENTRAL_DELTA and central["bound"] == "numerical"
    assert central["epsilon"] < 0.9 * LOCAL_EPSILON  # amplified
    # a valid bound at this n (never below the one computed at n), and the tighter one
    assert exact.epsilon - 1e-9 <= central["epsilon"] <= exact.epsilon_closed_form


def test_trends_differences_and_the_privacy_page_carry_it_too(both: Parties) -> None:
    trend = both.aggregator.get(
        "/v1/collections/shuffled/trend", params={"attribute": "color"}, headers=ANALYST
    ).json()
    (point,) = [p for p in trend["points"] if p["frequencies"] is not None]
    assert point["frequencies"]["central"]["n"] == REPORTS
    spent = both.aggregator.get("/v1/privacy", headers=ANALYST).json()
    by_name = {c["collection"]: c for c in spent["collections"]}
    assert "central" not in by_name["direct"]
    expected = released_central(by_name["shuffled"]["epsilon_per_record"], 0.0, REPORTS)
    assert expected is not None
    assert by_name["shuffled"]["central"] == expected.model_dump()


def test_the_dashboard_shows_both_guarantees_only_for_the_shuffled_collection(
    both: Parties,
) -> None:
    client = both.aggregator
    sign_in_client(client, ANALYST_TOKEN)
    local = client.get("/v1/collections/shuffled").json()["epsilon"]
    central = released_central(local, 0.0, REPORTS)
    assert central is not None and central.epsilon < LOCAL_EPSILON
    for slug in ("overview", "frequencies", "means", "quantiles"):
        page = client.get(f"/ui/collections/shuffled/{slug}")
        assert page.status_code == 200, page.text
        assert 'id="guarantees"' in page.text and "Against everyone" in page.text
        assert (
            f"central ε = {number(central.epsilon)}, δ = {number(CENTRAL_DELTA)} at {REPORTS:,}"
            in page.text
        )
        assert ('id="central-table"' in page.text) == (slug == "overview")
        assert 'id="guarantees"' not in client.get(f"/ui/collections/direct/{slug}").text
    privacy = client.get("/ui/privacy").text
    assert 'data-column="central"' in privacy and 'id="shuffled-note"' in privacy


def test_the_sdk_results_expose_it(both: Parties) -> None:
    with LDPClient(
        "http://aggregator", token=ANALYST_TOKEN, transport=both.device_transport, retries=0
    ) as sdk:
        shuffled = sdk.frequencies("shuffled", "color")
        direct = sdk.frequencies("direct", "color")
        configs = sdk.get_config("shuffled"), sdk.get_config("direct")  # verified by the SDK
    assert configs[0].shuffling is not None and configs[1].shuffling is None
    assert configs[0].shuffling.central[0].n == 10
    assert direct.central is None
    assert shuffled.central is not None and shuffled.central.n == REPORTS
    assert shuffled.central.epsilon < shuffled.central.local_epsilon
