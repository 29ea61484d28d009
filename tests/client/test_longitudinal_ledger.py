"""Longitudinal attributes on a device: the ledger keeps their secret and charges ε∞ once
per distinct value, not ε per report; the SDK refuses them without a ledger; the
policy's limit per collection holds. Run with LDPClient and AsyncLDPClient."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ldp_client import ConfigurationError, DevicePolicy, Ledger
from ldp_client.device import Device
from ldp_shared.collection import CollectionConfig, build_config
from ldp_shared.errors import PrivacyPolicyError
from ldp_shared.rand import seeded_rng
from ldp_shared.schema import CollectionSpec

from .conftest import MakeClient
from .fake_aggregator import FakeAggregator

APPS = ["mail", "maps", "music", "news", "photos"]
INFINITY = 3.0
DAILY = CollectionSpec.model_validate(
    {
        "name": "daily",
        "epsilon": 1.0,
        "attributes": [
            {"name": "app", "mechanism": "l-grr", "domain": APPS, "permanent_epsilon": INFINITY}
        ],
        "release": {"min_reports": 1},
    }
)
MINUTES = CollectionSpec.model_validate(
    {
        "name": "minutes",
        "epsilon": 2.0,
        "attributes": [
            {
                "name": "use",
                "mechanism": "dbitflippm",
                "lo": 0,
                "hi": 240,
                "buckets": 24,
                "bits": 2,
            }
        ],
        "release": {"min_reports": 1},
    }
)


@pytest.fixture
def daily(server: FakeAggregator) -> CollectionConfig:
    server.add(MINUTES)
    return server.add(DAILY)


@pytest.fixture
def ledger_path(tmp_path: Path) -> Path:
    return tmp_path / "ledger.sqlite3"


def test_365_daily_reports_of_one_value_cost_its_permanent_epsilon_once(
    make_client: MakeClient, daily: CollectionConfig, ledger_path: Path
) -> None:
    client = make_client(ledger=ledger_path, rng=seeded_rng(1))
    for _ in range(365):
        client.submit("daily", [{"app": "maps"}])
    spent = client.ledger.spending("daily")
    assert (spent.reports, spent.charged, spent.values) == (365, 365, 1)
    assert spent.epsilon == pytest.approx(INFINITY, rel=1e-12)  # not 365 × ε₁ = 365
    assert client.ledger.inconsistencies() == []


def test_each_distinct_value_costs_epsilon_infinity_once(
    make_client: MakeClient, daily: CollectionConfig, ledger_path: Path
) -> None:
    client = make_client(ledger=ledger_path)
    history = ["maps", "maps", "mail", "maps", "news", "mail", "news", "maps"]  # 3 values
    for app in history:
        client.submit("daily", [{"app": app}])
    spent = client.ledger.spending("daily")
    assert (spent.reports, spent.values) == (8, 3)
    assert spent.epsilon == pytest.approx(3 * INFINITY, rel=1e-12)
    client.privatize_columns("daily", {"app": np.array(["maps", "photos", "photos"])})
    assert client.ledger.spending("daily").epsilon == pytest.approx(4 * INFINITY, rel=1e-12)


def test_unchanged_minutes_resend_the_same_bits(
    make_client: MakeClient, server: FakeAggregator, daily: CollectionConfig, ledger_path: Path
) -> None:
    client = make_client(ledger=ledger_path)
    for day in range(30):
        client.submit("minutes", [{"use": 95.0 + (day % 3)}])  # one bucket, [90, 100)
    assert len(set(server.stored["minutes"].values())) == 1
    spent = client.ledger.spending("minutes")
    assert spent.values == 1 and spent.epsilon == pytest.approx(2.0, rel=1e-12)
    # 24 buckets, 2 sampled: at most 3 bucket vectors, whatever the values
    for minutes in range(0, 240, 5):
        client.submit("minutes", [{"use": float(minutes)}])
    assert client.ledger.spending("minutes").values <= 3
    assert len(set(server.stored["minutes"].values())) <= 3


def test_the_permanent_randomization_survives_a_restart(
    daily: CollectionConfig, ledger_path: Path
) -> None:
    config = build_config(MINUTES)
    with Ledger(ledger_path) as first:
        secret = first.permanent_secret(config.config_hash)
        bits = Device.make(None, first, ()).privatize(config, {"use": 42}, None).bits
    with Ledger(ledger_path) as again:
        assert again.permanent_secret(config.config_hash) == secret
        assert Device.make(None, again, ()).privatize(config, {"use": 42}, None).bits == bits
        assert again.spending("minutes").values == 1
    other_key = Ledger(ledger_path, memo_key=b"k" * 16)
    assert other_key.permanent_secret(config.config_hash) != secret  # charged anew, below
    Device.make(None, other_key, ()).privatize(config, {"use": 42}, None)
    assert other_key.spending("minutes").values == 2
    other_key.close()


def test_a_longitudinal_collection_needs_a_ledger(
    make_client: MakeClient, server: FakeAggregator, daily: CollectionConfig
) -> None:
    client = make_client()
    with pytest.raises(ConfigurationError, match="ledger"):
        client.submit("daily", [{"app": "maps"}])
    with pytest.raises(ConfigurationError, match="ledger"):
        client.privatize_columns("daily", {"app": ["maps"]})
    assert server.stored["daily"] == {}


def test_the_limit_per_collection_refuses_a_new_value(
    make_client: MakeClient, server: FakeAggregator, daily: CollectionConfig, ledger_path: Path
) -> None:
    policy = DevicePolicy(max_epsilon_per_collection=2 * INFINITY)
    client = make_client(ledger=ledger_path, policy=policy)
    client.submit("daily", [{"app": "maps"}, {"app": "mail"}, {"app": "maps"}])
    for _ in range(50):  # repeats cost nothing more
        client.submit("daily", [{"app": "mail"}])
    with pytest.raises(PrivacyPolicyError, match="max_epsilon_per_collection"):
        client.submit("daily", [{"app": "maps"}, {"app": "news"}])
    spent = client.ledger.spending("daily")
    assert (spent.reports, spent.values) == (53, 2)  # nothing of the refused batch
    assert len(server.stored["daily"]) == 53


def test_the_limit_refuses_a_collection_whose_first_report_passes_it(
    make_client: MakeClient, daily: CollectionConfig, ledger_path: Path
) -> None:
    client = make_client(ledger=ledger_path, policy=DevicePolicy(max_epsilon_per_collection=2.5))
    with pytest.raises(PrivacyPolicyError, match="first report"):
        client.submit("daily", [{"app": "maps"}])
    assert client.ledger.spending("daily").reports == 0


@pytest.mark.parametrize("limit", [0.0, -1.0, float("nan"), "8"])
def test_the_limit_must_be_a_positive_number(limit: object) -> None:
    with pytest.raises(ConfigurationError, match="max_epsilon_per_collection"):
        DevicePolicy(max_epsilon_per_collection=limit)  # type: ignore[arg-type]


def test_the_limit_needs_a_ledger() -> None:
    with pytest.raises(ConfigurationError, match="needs a ledger"):
        Device.make(DevicePolicy(max_epsilon_per_collection=10.0), None, ())


def test_the_limit_counts_ordinary_reports_too(
    make_client: MakeClient, server: FakeAggregator, ledger_path: Path
) -> None:
    plain = server.add(
        CollectionSpec.model_validate(
            {"name": "plain", "epsilon": 1.0, "attributes": [{"name": "app", "domain": APPS}]}
        )
    )
    client = make_client(ledger=ledger_path, policy=DevicePolicy(max_epsilon_per_collection=3.0))
    client.submit("plain", [{"app": "maps"}] * 3)
    with pytest.raises(PrivacyPolicyError):
        client.submit("plain", [{"app": "maps"}])
    assert client.ledger.spending("plain").epsilon == pytest.approx(3 * plain.epsilon)
