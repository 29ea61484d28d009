"""The device owner's privacy policy: refused collections and reports are never sent.

Every client test runs twice, with LDPClient and with AsyncLDPClient (conftest.make_client).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from ldp_client import (
    DEFAULT_MAX_DELTA_PER_RECORD,
    DEFAULT_MAX_EPSILON_PER_RECORD,
    DevicePolicy,
    InvalidRecordError,
    LDPClient,
    Ledger,
    PrivacyPolicyError,
    Spending,
)
from ldp_shared.collection import CollectionConfig, build_config
from ldp_shared.errors import ALL_ERRORS, ConfigurationError, LDPError, error_class_for_type
from ldp_shared.schema import AttributeSpec, CollectionSpec, ReleasePolicy

from .conftest import AGES, BASE_URL, BROWSERS, MakeClient, make_records
from .fake_aggregator import FakeAggregator

PLAIN = CollectionSpec(
    name="plain",
    epsilon=2.0,
    attributes=[
        AttributeSpec(name="browser", domain=BROWSERS, mechanism="oue"),
        AttributeSpec(name="age", domain=AGES, mechanism="grr"),
    ],
    release=ReleasePolicy(min_reports=1),
)


def plain_records(n: int, seed: int = 0) -> list[dict[str, Any]]:
    return [{"browser": r["browser"], "age": r["age"]} for r in make_records(n, seed)]


@pytest.fixture
def plain(server: FakeAggregator) -> CollectionConfig:
    return server.add(PLAIN)


def test_the_privacy_policy_error_is_a_typed_ldp_error():
    assert PrivacyPolicyError in ALL_ERRORS and issubclass(PrivacyPolicyError, LDPError)
    assert error_class_for_type("https://ldpcollect.dev/problems/privacy-policy") is (
        PrivacyPolicyError
    )


def test_the_default_policy_refuses_a_mask_basket_collection(
    make_client: MakeClient, server: FakeAggregator, tmp_path: Path
):
    spec = _survey(server)
    config = build_config(spec)
    assert config.epsilon > DEFAULT_MAX_EPSILON_PER_RECORD  # 2 + 9·ln 9 ≈ 21.8
    client = make_client(ledger=tmp_path / "ledger.sqlite3")
    assert client.ledger.spending() == _nothing()
    for attempt in (
        lambda: client.submit(spec.name, make_records(3)),
        lambda: client.privatize(spec.name, make_records(1)[0]),
        lambda: client.privatize_many(spec.name, make_records(2)),
    ):
        with pytest.raises(PrivacyPolicyError, match="MASK basket") as refused:
            attempt()
        assert "max_epsilon_per_record" in str(refused.value)
        assert f"{config.epsilon:.4g}" in str(refused.value)
    assert server.report_posts() == []
    assert client.ledger.spending() == _nothing()


def test_an_owner_who_raises_the_limit_can_report_baskets(
    make_client: MakeClient, server: FakeAggregator, tmp_path: Path
):
    client = make_client(
        ledger=tmp_path / "ledger.sqlite3", policy=DevicePolicy(max_epsilon_per_record=25.0)
    )
    assert client.submit("survey", make_records(4)).accepted == 4
    config = build_config(_survey(server))
    assert client.ledger.spending("survey").epsilon == pytest.approx(4 * config.epsilon)


def test_a_policy_applies_without_a_ledger_too(make_client: MakeClient, server: FakeAggregator):
    client = make_client(policy=DevicePolicy(max_epsilon_per_record=1.5))
    server.add(PLAIN)
    with pytest.raises(PrivacyPolicyError, match="ε = 2 per record"):
        client.submit("plain", plain_records(2))
    assert client.ledger is None and server.report_posts() == []


def test_a_collection_at_the_limit_is_allowed_despite_rounding(
    make_client: MakeClient, server: FakeAggregator, tmp_path: Path
):
    # five SUE attributes sharing ε = 8: the exact ε rebuilt from p and q sums to 8 + 4e-15
    spec = PLAIN.model_copy(
        update={
            "name": "at-limit",
            "epsilon": DEFAULT_MAX_EPSILON_PER_RECORD,
            "attributes": [
                AttributeSpec(name=f"a{i}", domain=["yes", "no"], mechanism="sue") for i in range(5)
            ],
        }
    )
    config = server.add(spec)
    assert config.epsilon > DEFAULT_MAX_EPSILON_PER_RECORD
    assert config.epsilon == pytest.approx(DEFAULT_MAX_EPSILON_PER_RECORD, rel=1e-12)
    client = make_client(ledger=tmp_path / "ledger.sqlite3")
    record = {f"a{i}": "yes" for i in range(5)}
    assert client.submit("at-limit", [record]).accepted == 1

    stricter = make_client(policy=DevicePolicy(max_epsilon_per_record=7.99))
    with pytest.raises(PrivacyPolicyError):
        stricter.submit("at-limit", [record])


def test_no_ledger_and_no_policy_enforces_nothing(make_client: MakeClient, server: FakeAggregator):
    client = make_client()
    assert client.ledger is None
    assert client.submit("survey", make_records(5)).accepted == 5


@pytest.mark.usefixtures("plain")
def test_a_mechanism_the_owner_does_not_allow_is_refused(
    make_client: MakeClient, server: FakeAggregator, tmp_path: Path
):
    client = make_client(
        ledger=tmp_path / "ledger.sqlite3", policy=DevicePolicy(allowed_mechanisms={"oue"})
    )
    with pytest.raises(PrivacyPolicyError, match=r"\['grr'\]"):
        client.submit("plain", plain_records(3))
    with pytest.raises(PrivacyPolicyError):
        client.privatize_columns("plain", {"browser": ["chrome"], "age": ["<30"]})
    assert server.report_posts() == []
    assert client.ledger.spending() == _nothing()

    allowing = make_client(
        ledger=tmp_path / "ledger.sqlite3", policy=DevicePolicy(allowed_mechanisms=["grr", "oue"])
    )
    assert allowing.submit("plain", plain_records(3)).accepted == 3


def test_the_report_limit_counts_across_calls_and_clients(
    make_client: MakeClient, server: FakeAggregator, plain: CollectionConfig, tmp_path: Path
):
    path = tmp_path / "ledger.sqlite3"
    policy = DevicePolicy(max_reports_per_collection=5)
    first = make_client(ledger=path, policy=policy)
    assert first.submit("plain", plain_records(3)).accepted == 3
    with pytest.raises(PrivacyPolicyError, match="made 3 of at most 5"):
        first.submit("plain", plain_records(3))
    assert len(server.stored["plain"]) == 3
    assert [len(ids) for ids in server.report_posts()] == [3]

    second = make_client(ledger=path, policy=policy)
    assert second.submit("plain", plain_records(2)).accepted == 2
    with pytest.raises(PrivacyPolicyError):
        second.privatize("plain", plain_records(1)[0])
    assert len(server.stored["plain"]) == 5
    spent = second.ledger.spending("plain")
    assert (spent.reports, spent.charged) == (5, 5)
    assert spent.epsilon == pytest.approx(5 * plain.epsilon)


def test_a_refused_call_with_bad_records_charges_nothing(
    make_client: MakeClient, server: FakeAggregator, plain: CollectionConfig, tmp_path: Path
):
    client = make_client(ledger=tmp_path / "ledger.sqlite3")
    with pytest.raises(InvalidRecordError):
        client.submit("plain", [*plain_records(2), {"browser": "lynx", "age": "<30"}])
    assert client.ledger.spending() == _nothing() and server.report_posts() == []


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"policy": DevicePolicy(max_reports_per_collection=3)}, "needs a ledger"),
        ({"memoize": {"plain"}}, "needs a ledger"),
        ({"memoize": "plain", "ledger": "unused"}, "collection of collection names"),
        ({"policy": {"max_epsilon_per_record": 1.0}}, "DevicePolicy"),
        ({"ledger": 42}, "ledger must be"),
    ],
)
def test_inconsistent_privacy_arguments_are_refused(kwargs: dict[str, Any], match: str):
    with pytest.raises(ConfigurationError, match=match):
        LDPClient(BASE_URL, **kwargs)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_epsilon_per_record": 0},
        {"max_epsilon_per_record": -1.0},
        {"max_epsilon_per_record": math.nan},
        {"max_epsilon_per_record": True},
        {"max_epsilon_per_record": "8"},
        {"allowed_mechanisms": "oue"},
        {"allowed_mechanisms": {"oue", 3}},
        {"max_reports_per_collection": -1},
        {"max_reports_per_collection": 2.5},
        {"max_delta_per_record": -1e-9},
        {"max_delta_per_record": 1.5},
        {"max_delta_per_record": math.nan},
        {"max_delta_per_record": "1e-6"},
    ],
)
def test_a_bad_policy_is_refused(kwargs: dict[str, Any]):
    with pytest.raises(ConfigurationError):
        DevicePolicy(**kwargs)


def test_a_policy_normalises_its_fields():
    policy = DevicePolicy(max_epsilon_per_record=math.inf, allowed_mechanisms=["oue", "oue"])
    assert policy.max_epsilon_per_record == math.inf
    assert policy.allowed_mechanisms == frozenset({"oue"})
    assert DevicePolicy() == DevicePolicy(max_epsilon_per_record=DEFAULT_MAX_EPSILON_PER_RECORD)


def test_a_ledger_given_as_an_object_is_left_open(server: FakeAggregator, tmp_path: Path):
    server.add(PLAIN)
    with Ledger(tmp_path / "ledger.sqlite3") as ledger:
        with LDPClient(BASE_URL, transport=server.transport, ledger=ledger) as client:
            client.submit("plain", plain_records(2))
            assert client.ledger is ledger
        assert ledger.spending("plain").reports == 2


def _survey(server: FakeAggregator) -> CollectionSpec:
    return CollectionSpec.model_validate(server.configs["survey"]["spec"])


def _nothing() -> Spending:
    return Spending(reports=0, charged=0, epsilon=0.0)


def _gaussian(server: FakeAggregator, delta: float) -> CollectionConfig:
    spec = CollectionSpec.model_validate(
        {
            "name": f"gauss-{delta:g}".replace(".", "-").replace("+", ""),
            "epsilon": 2.0,
            "attributes": [
                {"name": "age", "mechanism": "gaussian", "lo": 0, "hi": 100, "delta": delta}
            ],
            "release": {"min_reports": 1},
        }
    )
    return server.add(spec)


def test_the_default_policy_bounds_delta_per_record(
    make_client: MakeClient, server: FakeAggregator, tmp_path: Path
):
    """A collection asking δ = 10⁻⁶ (the default limit) is allowed, one asking 10⁻⁵ (its
    exact δ 9.95·10⁻⁶) refused before anything is sent;
    an owner who raises the limit can report."""
    assert DEFAULT_MAX_DELTA_PER_RECORD == 1e-6
    at_limit, over = _gaussian(server, 1e-6), _gaussian(server, 1e-5)
    client = make_client(ledger=tmp_path / "ledger.sqlite3")
    client.submit(at_limit.name, [{"age": 40}])
    with pytest.raises(
        PrivacyPolicyError, match=r"δ = 9\.\d+e-06 per record, over .* limit of 1e-06"
    ):
        client.submit(over.name, [{"age": 40}])
    assert over.name not in server.stored
    raised = make_client(
        ledger=tmp_path / "other.sqlite3", policy=DevicePolicy(max_delta_per_record=1e-5)
    )
    raised.submit(over.name, [{"age": 40}])
    assert len(server.stored[over.name]) == 1
