"""Sealed reports (RFC 9180 HPKE) and the spec's ``shuffled`` field."""

from __future__ import annotations

import pytest

from ldp_shared.collection import spec_hash
from ldp_shared.errors import InvalidReportError
from ldp_shared.schema import CollectionSpec
from ldp_shared.sealing import (
    BLOB_VERSION,
    SealingKey,
    UnknownKeyError,
    blob_key_id,
    key_id_of,
    open_report,
    seal_report,
)

KEY = SealingKey.generate()
KEYS = {KEY.key_id: KEY}
HASH = "ab" * 32
SPEC = {"name": "poll", "epsilon": 1.0,
        "attributes": [{"name": "c", "domain": ["a", "b"], "mechanism": "grr"}]}  # fmt: skip


def test_layout_version_key_id_enc_ciphertext() -> None:
    blob = seal_report(b"{}", SealingKey(public=KEY.public), "poll", HASH)
    assert blob[0] == BLOB_VERSION and blob[1:9] == key_id_of(KEY.public)
    assert len(blob) == 1 + 8 + 32 + 2 + 16
    assert blob_key_id(blob) == KEY.key_id
    assert open_report(blob, KEYS, "poll", HASH) == b"{}"


@pytest.mark.parametrize(
    ("name", "config_hash"), [("other", HASH), ("poll", "cd" * 32)], ids=["name", "hash"]
)
def test_a_blob_opens_for_its_collection_and_config_only(name: str, config_hash: str) -> None:
    blob = seal_report(b"{}", KEY, "poll", HASH)
    with pytest.raises(InvalidReportError, match="does not open"):
        open_report(blob, KEYS, name, config_hash)


@pytest.mark.parametrize("at", [0, 1, 9, 40, 41, -1])
def test_any_changed_byte_fails(at: int) -> None:
    blob = bytearray(seal_report(b'{"id": "x"}', KEY, "poll", HASH))
    blob[at] ^= 0x01
    with pytest.raises(InvalidReportError):  # version, key id (unknown), enc, text, tag
        open_report(bytes(blob), KEYS, "poll", HASH)


def test_an_unknown_key_is_its_own_error() -> None:
    blob = seal_report(b"{}", SealingKey.generate(), "poll", HASH)
    with pytest.raises(UnknownKeyError):
        open_report(blob, KEYS, "poll", HASH)


def test_shuffled_enters_the_hash_only_when_true() -> None:
    plain = CollectionSpec.model_validate(SPEC)
    unshuffled = CollectionSpec.model_validate({**SPEC, "shuffled": False})
    shuffled = CollectionSpec.model_validate({**SPEC, "shuffled": True})
    assert "shuffled" not in plain.model_dump(mode="json")
    assert spec_hash(plain) == spec_hash(unshuffled) != spec_hash(shuffled)
