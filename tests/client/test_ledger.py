"""The device's ledger: it counts, persists, memoises repeated records and stores no values.

Client tests run with LDPClient and with AsyncLDPClient (conftest.make_client).
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest

from ldp_client import AsyncLDPClient, ConfigurationError, DevicePolicy, Ledger, Spending
from ldp_client.device import canonical_record
from ldp_shared.collection import CollectionConfig, build_config
from ldp_shared.schema import AttributeSpec, CollectionSpec, ReleasePolicy
from ldp_shared.wire.reports import decode_bits

from .conftest import BASE_URL, SPEC, MakeClient
from .fake_aggregator import FakeAggregator
from .test_device_policy import PLAIN, plain_records

RAISED = DevicePolicy(max_epsilon_per_record=30.0)  # lets the MASK survey through


@pytest.fixture
def plain(server: FakeAggregator) -> CollectionConfig:
    return server.add(PLAIN)


@pytest.fixture
def ledger_path(tmp_path: Path) -> Path:
    return tmp_path / "device" / "ledger.sqlite3"


def sent_bits(server: FakeAggregator, name: str) -> dict[str, bytes]:
    """Report id → the packed bits the aggregator stored."""
    return dict(server.stored[name])


def test_the_ledger_counts_and_persists_across_clients(
    make_client: MakeClient, server: FakeAggregator, plain: CollectionConfig, ledger_path: Path
):
    ledger_path.parent.mkdir()
    first = make_client(ledger=ledger_path)
    first.submit("plain", plain_records(4))
    first.close()
    second = make_client(ledger=str(ledger_path))
    second.privatize_many("plain", plain_records(3, seed=1))  # made, so charged, not sent
    assert len(server.stored["plain"]) == 4
    with Ledger(ledger_path) as ledger:
        assert ledger.spending("plain") == Spending(
            reports=7, charged=7, epsilon=pytest.approx(7 * plain.epsilon)
        )
        assert ledger.spending("survey") == Spending(0, 0, 0.0)
        assert ledger.spending() == ledger.spending("plain")
        assert ledger.inconsistencies() == []
    assert ledger_path.stat().st_mode & 0o077 == 0  # the owner's alone


def test_memoised_repeats_send_the_first_bits_and_cost_nothing(
    make_client: MakeClient, server: FakeAggregator, plain: CollectionConfig, ledger_path: Path
):
    ledger_path.parent.mkdir()
    alice = {"browser": "firefox", "age": "<30"}
    bob = {"browser": "safari", "age": ">60"}
    client = make_client(ledger=ledger_path, memoize={"plain"})
    client.submit("plain", [alice])
    (first_bits,) = sent_bits(server, "plain").values()
    client.submit("plain", [dict(alice), alice])
    client.close()

    again = make_client(ledger=ledger_path, memoize={"plain"})
    again.submit("plain", [{"age": "<30", "browser": "firefox"}])
    stored = sent_bits(server, "plain")
    assert len(stored) == 4  # four reports, four fresh ids
    assert set(stored.values()) == {first_bits}
    assert again.ledger.spending("plain") == Spending(
        reports=4, charged=1, epsilon=pytest.approx(plain.epsilon)
    )

    again.submit("plain", [bob])
    assert again.ledger.spending("plain") == Spending(
        reports=5, charged=2, epsilon=pytest.approx(2 * plain.epsilon)
    )
    assert again.ledger.memoised(plain.config_hash) == 2
    assert again.ledger.inconsistencies() == []


def test_memoisation_is_for_the_listed_collections_only(
    make_client: MakeClient, server: FakeAggregator, plain: CollectionConfig, ledger_path: Path
):
    ledger_path.parent.mkdir()
    record = {"browser": "chrome", "age": "30-60"}
    client = make_client(ledger=ledger_path, memoize={"another"})
    client.submit("plain", [record] * 20)
    # fresh perturbations: 20 equal OUE+GRR reports would be a ~0 probability event
    assert len(set(sent_bits(server, "plain").values())) > 1
    assert client.ledger.spending("plain").charged == 20
    assert client.ledger.memoised(plain.config_hash) == 0


def test_memoised_baskets_ignore_the_order_of_their_items(
    make_client: MakeClient, server: FakeAggregator, ledger_path: Path
):
    ledger_path.parent.mkdir()
    config = build_config(SPEC)
    client = make_client(ledger=ledger_path, policy=RAISED, memoize={"survey"})
    client.submit("survey", [{"browser": "chrome", "age": "<30", "basket": {"tea", "jam"}}])
    client.submit("survey", [{"browser": "chrome", "age": "<30", "basket": ["jam", "tea"]}])
    client.privatize_columns(
        "survey",
        {
            "browser": np.array(["chrome", "chrome"]),
            "age": ["<30", "<30"],
            "basket": [("tea", "jam"), set()],
        },
    )
    assert len(set(sent_bits(server, "survey").values())) == 1
    spent = client.ledger.spending("survey")
    assert (spent.reports, spent.charged) == (4, 2)
    assert spent.epsilon == pytest.approx(2 * config.epsilon)


def test_the_same_record_in_two_collections_is_charged_in_each(
    make_client: MakeClient, server: FakeAggregator, plain: CollectionConfig, ledger_path: Path
):
    ledger_path.parent.mkdir()
    twin = server.add(PLAIN.model_copy(update={"name": "twin"}))
    record = {"browser": "other", "age": ">60"}
    client = make_client(ledger=ledger_path, memoize={"plain", "twin"})
    for name in ("plain", "twin", "plain", "twin"):
        client.submit(name, [record])
    assert client.ledger.spending("plain").charged == 1
    assert client.ledger.spending("twin").charged == 1
    assert client.ledger.spending() == Spending(
        reports=4, charged=2, epsilon=pytest.approx(plain.epsilon + twin.epsilon)
    )


def test_the_ledger_holds_no_raw_values_only_keyed_record_hashes(
    make_client: MakeClient, server: FakeAggregator, ledger_path: Path
):
    ledger_path.parent.mkdir()
    config = server.add(
        CollectionSpec(
            name="secrets",
            epsilon=1.0,
            attributes=[AttributeSpec(name="diagnosis", domain=["zz-alpha-zz", "zz-beta-zz"])],
            release=ReleasePolicy(min_reports=1),
        )
    )
    record = {"diagnosis": "zz-beta-zz"}
    client = make_client(ledger=ledger_path, memoize={"secrets"})
    report = client.privatize("secrets", record)
    client.close()

    raw = ledger_path.read_bytes()
    assert b"zz-beta-zz" not in raw and b"zz-alpha-zz" not in raw
    canonical = canonical_record(config, record)
    assert json.loads(canonical) == record and canonical not in raw
    with closing(sqlite3.connect(ledger_path)) as db:
        ((key, bits),) = db.execute("SELECT record_key, bits FROM memo").fetchall()
    assert bits == decode_bits(report.bits) and len(key) == 32
    with Ledger(ledger_path) as reopened:
        assert reopened.record_key(config.config_hash, canonical) == key
    with Ledger(ledger_path.parent / "other.sqlite3") as other:  # another secret
        assert other.record_key(config.config_hash, canonical) != key


def _memoised_diagnosis(file_only: Path) -> str | None:
    """A dictionary attack with the file alone: hash each candidate record under the key
    stored in the file and look it up in the memo."""
    import hashlib
    import hmac

    with closing(sqlite3.connect(file_only)) as db:
        (stored,) = db.execute("SELECT value FROM ledger_meta WHERE key = 'secret'").fetchone()
        keys = {row[0] for row in db.execute("SELECT record_key FROM memo")}
        (config_hash,) = db.execute("SELECT DISTINCT config_hash FROM memo").fetchone()
    for guess in ("zz-alpha-zz", "zz-beta-zz"):
        message = (
            config_hash.encode()
            + b"\n"
            + json.dumps({"diagnosis": guess}).replace(" ", "").encode()
        )
        if hmac.new(stored, message, hashlib.sha256).digest() in keys:
            return guess
    return None


@pytest.mark.parametrize("own_key", [False, True])
def test_what_the_ledger_file_alone_reveals_of_memoised_records(
    make_client: MakeClient, server: FakeAggregator, ledger_path: Path, own_key: bool
):
    """By default the memo's key sits in the file: an attacker holding the file finds the
    memoised record by trying the domain (the docs say so). With a memo_key kept
    elsewhere, the same attack finds nothing."""
    ledger_path.parent.mkdir()
    server.add(
        CollectionSpec(
            name="secrets",
            epsilon=1.0,
            attributes=[AttributeSpec(name="diagnosis", domain=["zz-alpha-zz", "zz-beta-zz"])],
            release=ReleasePolicy(min_reports=1),
        )
    )
    ledger = Ledger(ledger_path, memo_key=b"k" * 32 if own_key else None)
    client = make_client(ledger=ledger, memoize={"secrets"})
    client.privatize("secrets", {"diagnosis": "zz-beta-zz"})
    client.close()
    ledger.close()
    assert _memoised_diagnosis(ledger_path) == (None if own_key else "zz-beta-zz")


def test_a_file_that_is_not_a_ledger_is_refused(tmp_path: Path):
    bogus = tmp_path / "notes.txt"
    bogus.write_text("not a database, just some notes\n" * 100)
    with pytest.raises(ConfigurationError, match="not a readable ldpcollect ledger"):
        Ledger(bogus)
    with pytest.raises(ConfigurationError, match="cannot open the ledger"):
        Ledger(tmp_path / "missing-folder" / "ledger.sqlite3")


def test_concurrent_async_submits_are_all_charged(
    server: FakeAggregator, plain: CollectionConfig, ledger_path: Path
):
    ledger_path.parent.mkdir()
    records = plain_records(10, seed=3)

    async def main() -> Spending:
        async with AsyncLDPClient(
            BASE_URL, transport=server.transport, ledger=ledger_path, memoize={"plain"}
        ) as client:
            await asyncio.gather(*(client.submit("plain", records) for _ in range(5)))
            assert client.ledger is not None
            return client.ledger.spending("plain")

    spent = asyncio.run(main())
    distinct = {json.dumps(r, sort_keys=True) for r in records}
    assert (spent.reports, spent.charged) == (50, len(distinct))
    assert len(server.stored["plain"]) == 50
    assert len(set(server.stored["plain"].values())) <= len(distinct)


def test_numbers_the_mechanism_cannot_tell_apart_share_one_memo_key() -> None:
    from ldp_shared.collection import build_config
    from ldp_shared.schema import CollectionSpec

    config = build_config(
        CollectionSpec.model_validate(
            {
                "name": "people",
                "epsilon": 1.0,
                "attributes": [
                    {"name": "age", "mechanism": "duchi", "lo": 17, "hi": 90},
                    {"name": "sex", "domain": ["f", "m"]},
                ],
            }
        )
    )

    def key(age: float) -> bytes:
        return canonical_record(config, {"age": age, "sex": "f"})

    assert key(40) == key(40.0)  # an int and a float
    assert key(95) == key(90) == key(1e9)  # clipped to the same bound
    assert key(40) != key(41)


HASHED = CollectionSpec(
    name="hashed",
    epsilon=4.0,
    attributes=[
        AttributeSpec(name="url", mechanism="flh", salt="0f" * 16),
        AttributeSpec(name="word", mechanism="pem", max_length=8, salt="f0" * 16),
    ],
    release=ReleasePolicy(min_reports=1),
)


def test_a_memoised_string_resends_its_first_report_in_any_spelling(
    make_client: MakeClient, server: FakeAggregator, ledger_path: Path
):
    """Open-domain strings are memoised by their key: "café" typed in NFC or in NFD is
    one value, so the device sends the first report again and is charged once."""
    hashed = server.add(HASHED)
    ledger_path.parent.mkdir()
    nfc = {"url": "https://caf\u00e9.example/", "word": "caf\u00e9"}
    nfd = {"url": "https://cafe\u0301.example/", "word": "cafe\u0301"}
    client = make_client(ledger=ledger_path, memoize={"hashed"})
    client.submit("hashed", [nfc])
    (first_bits,) = sent_bits(server, "hashed").values()
    client.submit("hashed", [nfd, nfc])
    assert set(sent_bits(server, "hashed").values()) == {first_bits}
    assert client.ledger.spending("hashed") == Spending(
        reports=3, charged=1, epsilon=pytest.approx(hashed.epsilon)
    )
    client.submit("hashed", [{"url": "https://other.example/", "word": "cafe"}])
    assert client.ledger.spending("hashed").charged == 2
    assert canonical_record(hashed, nfc) == canonical_record(hashed, nfd)
    assert canonical_record(hashed, nfc) != canonical_record(
        hashed, {"url": "https://caf\u00e9.example/", "word": "cafe"}
    )
