"""Sealing keys rotate: the new key is published at once, blobs sealed to the old one
still open during the grace period, and after it they are counted as of unknown keys."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ldp_aggregator.sealing_keys import KeyringFile, rotate
from ldp_shared.errors import ConfigurationError
from ldp_shared.sealing import SealingKey, seal_report, to_text

from ..conftest import make_records
from .conftest import MIN_BATCH, SHUFFLER, Parties
from .test_shuffled_path import device


def published(parties: Parties) -> SealingKey:
    info = parties.aggregator.get("/v1/collections/survey/sealing-key").json()
    return SealingKey.published(info["key_id"], info["public_key"])


def post_batch(
    parties: Parties, config: dict[str, str], sealed: list[tuple[SealingKey, str]]
) -> dict[str, int]:
    blobs = [to_text(seal_report(json_text.encode(), key, "survey", config["config_hash"]))
             for key, json_text in sealed]  # fmt: skip
    answer = parties.aggregator.post(
        "/v1/collections/survey/shuffled-batches", json={"blobs": blobs}, headers=SHUFFLER
    )
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def test_rotation_publishes_a_new_key_and_keeps_the_old_one_for_the_grace(
    parties: Parties,
) -> None:
    config = parties.create()
    keys_file = Path(parties.settings.sealing_keys_file)
    with device(parties) as sdk:
        reports = [r.model_dump_json() for r in sdk.privatize_many("survey", make_records(60))]
    old = published(parties)
    new_id = rotate(keys_file, grace_days=7)
    new = published(parties)
    assert new.key_id == new_id != old.key_id
    half = MIN_BATCH // 2
    mixed = [(old, r) for r in reports[:half]] + [(new, r) for r in reports[half:MIN_BATCH]]
    assert post_batch(parties, config, mixed)["accepted"] == MIN_BATCH

    # the grace is over: pretend the rotation was 8 days ago with a grace of 7
    past = datetime.now(UTC).date() - timedelta(days=8)
    document = json.loads(keys_file.read_text())
    for entry in document["keys"]:
        if entry["id"] == old.key_id:
            entry["retire_after"] = (past + timedelta(days=7)).isoformat()
    keys_file.write_text(json.dumps(document))
    late = [(old, r) for r in reports[MIN_BATCH : MIN_BATCH + 5]]
    fresh = [(new, r) for r in reports[MIN_BATCH + 5 : 2 * MIN_BATCH]]
    answer = post_batch(parties, config, late + fresh)
    assert (answer["unknown_key"], answer["accepted"]) == (5, MIN_BATCH - 5)

    # the next rotation drops the retired key from the file
    rotate(keys_file)
    ids = [entry["id"] for entry in json.loads(keys_file.read_text())["keys"]]
    assert old.key_id not in ids and new.key_id in ids and len(ids) == 2


def test_a_keyring_entry_whose_id_does_not_match_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    rotate(path)
    assert path.stat().st_mode & 0o777 == 0o600  # the private keys: the owner's alone
    document = json.loads(path.read_text())
    document["keys"][0]["id"] = "00" * 8
    path.write_text(json.dumps(document))
    with pytest.raises(ConfigurationError, match="does not match"):
        KeyringFile(path).load()


def test_a_device_refuses_a_key_its_id_does_not_name() -> None:
    key = SealingKey.generate()
    with pytest.raises(ConfigurationError, match="does not match its id"):
        SealingKey.published("00" * 8, to_text(key.public))
    assert SealingKey.published(key.key_id, to_text(key.public)).public == key.public


def test_workers_creating_the_keyring_at_once_agree_on_one_key(tmp_path: Path) -> None:
    """``serve --workers N``: each worker holds its own KeyringFile; the first to reach a
    missing file creates it, and the others read that key instead of replacing it with
    their own (a device sealing to a replaced key would be refused)."""
    import multiprocessing

    path = tmp_path / "keys.json"
    context = multiprocessing.get_context("fork")
    with context.Pool(4) as pool:
        ids = pool.map(_first_key_id, [str(path)] * 8)
    assert len(set(ids)) == 1
    assert len(json.loads(path.read_text())["keys"]) == 1
    assert [p.name for p in tmp_path.iterdir()] == ["keys.json"]  # no temporary left


def _first_key_id(path: str) -> str:
    return KeyringFile(Path(path)).load().current().key_id
