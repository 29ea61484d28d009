"""Sealing keys rotate: the new key is published at once, blobs sealed to the old one
still open during the grace period, and after it they are counted as of unknown keys."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ldp_aggregator.cli import EXIT_ERROR, main
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


def test_a_keyring_that_is_no_keyring_is_one_line_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    for text in ("not json", "{}", '{"keys": "abc"}', '{"keys": [{"public": 5}]}'):
        path.write_text(text)
        with pytest.raises(ConfigurationError, match="is not a keyring file") as raised:
            KeyringFile(path).load()
        assert str(path) in raised.value.detail and "\n" not in raised.value.detail
        with pytest.raises(ConfigurationError, match="is not a keyring file"):
            rotate(path)  # the damaged file is not replaced by a fresh keyring
        assert path.read_text() == text


def _cli_error(capsys: pytest.CaptureFixture[str]) -> str:
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("ldpcollect: error:"), lines
    return lines[0]


def test_show_reads_and_never_creates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``sealing-keys show`` of a missing file says how to make one; it used to create a
    keyring (and its folders) and show a key nobody would use."""
    path = tmp_path / "missing" / "keys.json"
    assert main(["sealing-keys", "show", "--file", str(path)]) == EXIT_ERROR
    assert "no sealing keyring at" in _cli_error(capsys)
    assert not path.parent.exists()
    new_id = rotate(path)
    assert main(["sealing-keys", "show", "--file", str(path)]) == 0
    assert capsys.readouterr().out.strip() == f"{new_id}  (current)"


def test_rotate_where_no_file_can_be_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    path = blocker / "keys.json"  # a folder that is a file: no keyring can be written
    assert main(["sealing-keys", "rotate", "--file", str(path)]) == EXIT_ERROR
    assert f"the sealing keyring {path} cannot be written" in _cli_error(capsys)
    (tmp_path / "keys.json").write_text("{}")
    assert main(["sealing-keys", "show", "--file", str(tmp_path / "keys.json")]) == EXIT_ERROR
    assert "is not a keyring file" in _cli_error(capsys)


def test_a_broken_keyring_is_the_servers_fault_not_the_devices(
    parties: Parties, caplog: pytest.LogCaptureFixture
) -> None:
    """A device asking for the key, or a shuffler's batch, gets a 503 problem that names
    no file of the server; the server's log says what is wrong."""
    parties.create()
    keys_file = Path(parties.settings.sealing_keys_file)
    published(parties)  # the keyring is made on first use
    keys_file.write_text("{}")
    with caplog.at_level(logging.ERROR, logger="ldp_aggregator"):
        answer = parties.aggregator.get("/v1/collections/survey/sealing-key")
        assert answer.status_code == 503
        assert answer.headers["content-type"] == "application/problem+json"
        assert str(keys_file) not in answer.text
        batch = {"blobs": ["AAAA"] * MIN_BATCH}
        posted = parties.aggregator.post(
            "/v1/collections/survey/shuffled-batches", json=batch, headers=SHUFFLER
        )
        assert posted.status_code == 503 and str(keys_file) not in posted.text
    logged = [r for r in caplog.records if "sealing keyring" in r.getMessage()]
    assert len(logged) == 1 and "is not a keyring file" in logged[0].getMessage()  # once
    rotate(keys_file.with_name("fresh.json"))
    keys_file.write_text(keys_file.with_name("fresh.json").read_text())  # mended
    assert parties.aggregator.get("/v1/collections/survey/sealing-key").status_code == 200


def test_init_makes_a_keyring_once_and_never_replaces_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """What docker-compose's sealing-keys service runs before the replicas start."""
    path = tmp_path / "keys" / "sealing-keys.json"
    assert main(["sealing-keys", "init", "--file", str(path)]) == 0
    first = capsys.readouterr().out.strip()
    assert first.endswith("(current)") and path.stat().st_mode & 0o777 == 0o600
    assert main(["sealing-keys", "init", "--file", str(path)]) == 0
    assert capsys.readouterr().out.strip() == first
    path.write_text("{}")
    assert main(["sealing-keys", "init", "--file", str(path)]) == EXIT_ERROR
    assert "is not a keyring file" in _cli_error(capsys) and path.read_text() == "{}"


def test_a_keyring_the_server_may_not_read_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """EACCES (tests run as root, so no chmod can produce it): Path.exists() would raise
    it, which is why the file is opened, not tested first."""
    path = tmp_path / "keys.json"
    rotate(path)

    def refused(self: Path, *args: object, **kwargs: object) -> object:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "stat", refused)
    monkeypatch.setattr(Path, "read_text", refused)
    for read in (KeyringFile(path).load, lambda: rotate(path)):
        with pytest.raises(ConfigurationError, match="cannot be read: Permission denied"):
            read()
    assert main(["sealing-keys", "rotate", "--file", str(path)]) == EXIT_ERROR
    assert "cannot be read: Permission denied" in _cli_error(capsys)
