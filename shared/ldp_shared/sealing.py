"""Sealed reports: a device encrypts each report to the aggregator, so a shuffler between
them sees only opaque blobs (Bittau et al., "Prochlo: Strong Privacy for Analytics in the
Crowd", SOSP 2017, nested encryption).

HPKE (RFC 9180) in base mode, single shot, with the suite DHKEM(X25519, HKDF-SHA256),
HKDF-SHA256 and AES-128-GCM (RFC 9180 §7: KEM 0x0020, KDF 0x0001, AEAD 0x0001), through
PyCA ``cryptography`` (``cryptography.hazmat.primitives.hpke``).

A sealed blob, byte for byte (docs/wire-format.md, "Sealed reports")::

    version (1 byte, 0x01) | key id (8 bytes) | enc (32 bytes) | ciphertext (len(report) + 16)

``enc`` is the sender's ephemeral X25519 public key; the ciphertext is AES-128-GCM of the
report's JSON (exactly the object a direct upload carries in ``reports``) with its 16-byte
tag. The HPKE ``info`` binds the blob to one collection, one config and one key::

    b"ldpcollect sealed report v1" 0x00 name (UTF-8) 0x00 config hash (ASCII hex) 0x00 key id

so a blob cannot be replayed into another collection or config, and a changed byte of
any part fails to open. The key id is the first 8 bytes of SHA-256 of the raw 32-byte
public key: a device recomputes it and so checks the key it was given names itself.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from dataclasses import dataclass

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hpke, serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey

from ldp_shared.errors import ConfigurationError, InvalidReportError

__all__ = [
    "BLOB_VERSION",
    "KEY_ID_BYTES",
    "SUITE_NAME",
    "SealingKey",
    "UnknownKeyError",
    "blob_key_id",
    "from_text",
    "key_id_of",
    "open_report",
    "seal_report",
    "to_text",
]

BLOB_VERSION = 1
KEY_ID_BYTES = 8
_ENC_BYTES = 32
_TAG_BYTES = 16
_HEADER = 1 + KEY_ID_BYTES
_INFO_LABEL = b"ldpcollect sealed report v1"
SUITE_NAME = "DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, AES-128-GCM"
_SUITE = hpke.Suite(hpke.KEM.X25519, hpke.KDF.HKDF_SHA256, hpke.AEAD.AES_128_GCM)


class UnknownKeyError(InvalidReportError):
    """A sealed blob names a key id the aggregator does not hold (never or no longer)."""


def key_id_of(public_key: bytes) -> bytes:
    """The 8-byte id of a raw X25519 public key: SHA-256(public key)[:8]."""
    return hashlib.sha256(public_key).digest()[:KEY_ID_BYTES]


def to_text(data: bytes) -> str:
    """Unpadded base64url (what JSON carries for keys and blobs)."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def from_text(text: str) -> bytes:
    """The bytes of unpadded base64url text; :class:`InvalidReportError` when it is not."""
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError) as error:
        raise InvalidReportError("not base64url text") from error


@dataclass(frozen=True)
class SealingKey:
    """One X25519 keypair of the aggregator (``private`` is ``None`` on a device)."""

    public: bytes
    private: bytes | None = None

    @classmethod
    def generate(cls) -> SealingKey:
        secret = X25519PrivateKey.generate()
        raw = serialization.Encoding.Raw
        public = secret.public_key().public_bytes(raw, serialization.PublicFormat.Raw)
        private = secret.private_bytes(
            raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
        )
        return cls(public=public, private=private)

    @classmethod
    def published(cls, key_id: str, public_key: str) -> SealingKey:
        """The key a server published, checked: 32 bytes that the id names."""
        key = cls(public=from_text(public_key))
        if len(key.public) != _ENC_BYTES or key.key_id != key_id:
            raise ConfigurationError(
                f"the published sealing key does not match its id {key_id!r}: refusing it"
            )
        return key

    @property
    def key_id(self) -> str:
        """The key id as hex (16 characters)."""
        return key_id_of(self.public).hex()


def _info(collection: str, config_hash: str, key_id: bytes) -> bytes:
    return b"\x00".join(
        [_INFO_LABEL, collection.encode("utf-8"), config_hash.encode("ascii"), key_id]
    )


def seal_report(report_json: bytes, key: SealingKey, collection: str, config_hash: str) -> bytes:
    """The sealed blob of one report's JSON, for ``collection`` at ``config_hash``."""
    key_id = key_id_of(key.public)
    public = X25519PublicKey.from_public_bytes(key.public)
    sealed = _SUITE.encrypt(report_json, public, info=_info(collection, config_hash, key_id))
    return bytes([BLOB_VERSION]) + key_id + sealed


def blob_key_id(blob: bytes) -> str:
    """The hex key id a blob names; :class:`InvalidReportError` when it is too short or
    of another version."""
    if len(blob) < _HEADER + _ENC_BYTES + _TAG_BYTES or blob[0] != BLOB_VERSION:
        raise InvalidReportError("not a sealed report (wrong version or too short)")
    return blob[1:_HEADER].hex()


def open_report(
    blob: bytes, keys: dict[str, SealingKey], collection: str, config_hash: str
) -> bytes:
    """The report JSON inside ``blob``, opened with the held key it names.

    :class:`UnknownKeyError` when no held key has its id; :class:`InvalidReportError`
    when it fails to open (tampered, or sealed for another collection or config).
    """
    key_id = blob_key_id(blob)
    key = keys.get(key_id)
    if key is None or key.private is None:
        raise UnknownKeyError(f"sealed to key {key_id}, which this aggregator does not hold")
    secret = X25519PrivateKey.from_private_bytes(key.private)
    info = _info(collection, config_hash, blob[1:_HEADER])
    try:
        return _SUITE.decrypt(blob[_HEADER:], secret, info=info)
    except (InvalidTag, ValueError) as error:
        raise InvalidReportError(
            "the sealed report does not open: tampered or misdirected"
        ) from error
