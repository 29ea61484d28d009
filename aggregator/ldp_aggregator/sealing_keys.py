"""The aggregator's sealing keys (one keyring per server, for every shuffled collection).

The keyring is a JSON file (``LDPCOLLECT_SEALING_KEYS_FILE``, mode 0600) that every
replica of one aggregator reads, so each can open what devices sealed::

    {"keys": [{"id": "<16 hex>", "public": "<b64url>", "private": "<b64url>",
               "created": "2026-11-26", "retire_after": null | "2026-12-03"}]}

The current key (the one published to devices) is the newest one without
``retire_after``. :func:`rotate` adds a new current key and gives every older key a
``retire_after`` day (today + the grace period), so reports sealed to it shortly before
the rotation, still held by a shuffler, still open; after that day the key no longer
opens anything, and the next rotation drops it from the file. Only days are kept.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from ldp_shared.errors import ConfigurationError, InvalidReportError
from ldp_shared.sealing import SealingKey, from_text, to_text

__all__ = [
    "DEFAULT_GRACE_DAYS",
    "Keyring",
    "KeyringFile",
    "ensure_keyring",
    "read_keyring",
    "rotate",
]

DEFAULT_GRACE_DAYS = 7


def _today() -> date:
    return datetime.now(UTC).date()


@dataclass(frozen=True)
class _Entry:
    key: SealingKey
    created: date
    retire_after: date | None

    def active(self, today: date) -> bool:
        return self.retire_after is None or today <= self.retire_after

    def document(self) -> dict[str, str | None]:
        assert self.key.private is not None
        return {
            "id": self.key.key_id,
            "public": to_text(self.key.public),
            "private": to_text(self.key.private),
            "created": self.created.isoformat(),
            "retire_after": None if self.retire_after is None else self.retire_after.isoformat(),
        }


@dataclass(frozen=True)
class Keyring:
    """The keys of one keyring file, oldest first."""

    entries: tuple[_Entry, ...]

    def current(self) -> SealingKey:
        """The key devices seal to now."""
        fresh = [e for e in self.entries if e.retire_after is None]
        if not fresh:
            raise ConfigurationError("the sealing keyring has no current key: rotate it")
        return fresh[-1].key

    def opening_keys(self, today: date | None = None) -> dict[str, SealingKey]:
        """The keys that still open blobs today, by key id."""
        day = _today() if today is None else today
        return {e.key.key_id: e.key for e in self.entries if e.active(day)}


def _parse(text: str) -> Keyring:
    entries = []
    for item in json.loads(text)["keys"]:
        key = SealingKey(public=from_text(item["public"]), private=from_text(item["private"]))
        if key.key_id != item["id"]:
            raise ConfigurationError(f"sealing key {item['id']!r}: its id does not match it")
        retire = item.get("retire_after")
        entries.append(
            _Entry(key, date.fromisoformat(item["created"]), retire and date.fromisoformat(retire))
        )
    return Keyring(tuple(entries))


_ABSENT = (FileNotFoundError, NotADirectoryError)
"""What reading a keyring that is not there raises (no file, or a folder on its path
that is a file)."""


def _reason(error: OSError) -> str:
    return error.strerror or str(error)


def _read(path: Path) -> Keyring | None:
    """The keyring in the file at ``path``, ``None`` when there is no file; a
    :class:`~ldp_shared.errors.ConfigurationError` (one line naming the file) when it
    cannot be read or is not a keyring."""
    try:
        return _parse(path.read_text("utf-8"))
    except _ABSENT:
        return None
    except OSError as error:
        raise ConfigurationError(
            f"the sealing keyring {path} cannot be read: {_reason(error)}"
        ) from None
    except ConfigurationError as error:
        raise ConfigurationError(f"the sealing keyring {path}: {error.detail}") from None
    except (ValueError, KeyError, TypeError, AttributeError, InvalidReportError) as error:
        # (a file that is not UTF-8 is a ValueError too)
        raise ConfigurationError(
            f"the sealing keyring {path} is not a keyring file ({type(error).__name__}:"
            f" {error}); restore it from a backup, or move it aside and run `ldpcollect"
            " sealing-keys init` to start a new one"
        ) from None


def read_keyring(path: Path) -> Keyring:
    """The keyring in the file at ``path``, never created here (one line when there is
    none, or it cannot be read, or it is not a keyring)."""
    keyring = _read(path)
    if keyring is None:
        raise ConfigurationError(
            f"no sealing keyring at {path}: `ldpcollect sealing-keys init` makes one (and the"
            " aggregator does when a shuffled collection first needs a key)"
        )
    return keyring


def _write(path: Path, keyring: Keyring, *, create_only: bool = False) -> bool:
    """Atomically replace the file (written 0600, fsynced, renamed); with ``create_only``,
    put it in place only if no file is there yet (a hard link, which fails when the name
    exists: of several processes creating the keyring at once, one wins and the others
    read its keys). Whether this call's keyring is the file's. A file that cannot be
    written is a :class:`~ldp_shared.errors.ConfigurationError` naming it."""
    document = {"keys": [e.document() for e in keyring.entries]}
    try:
        return _replace(path, document, create_only)
    except OSError as error:
        raise ConfigurationError(
            f"the sealing keyring {path} cannot be written: {_reason(error)}"
        ) from None


def _replace(path: Path, document: dict[str, Any], create_only: bool) -> bool:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".sealing-keys-")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(document, out, indent=1)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, 0o600)
        if not create_only:
            os.replace(temporary, path)
            return True
        try:
            os.link(temporary, path)
        except FileExistsError:
            return False
        return True
    finally:
        Path(temporary).unlink(missing_ok=True)


def create(path: Path) -> None:
    """A keyring with one fresh key at ``path``, unless another process made one first."""
    _write(path, Keyring((_Entry(SealingKey.generate(), _today(), None),)), create_only=True)


def rotate(path: Path, grace_days: int = DEFAULT_GRACE_DAYS, today: date | None = None) -> str:
    """Add a new current key to the keyring at ``path`` (created if missing); the older
    keys retire after ``grace_days``, and keys retired before today are dropped. Returns
    the new key's id."""
    day = _today() if today is None else today
    found = _read(path)  # a damaged file is refused, not replaced
    old = () if found is None else found.entries
    kept = [
        _Entry(e.key, e.created, e.retire_after or day + timedelta(days=grace_days))
        for e in old
        if e.active(day)
    ]
    fresh = _Entry(SealingKey.generate(), day, None)
    _write(path, Keyring((*kept, fresh)))
    return fresh.key.key_id


class KeyringFile:
    """The keyring file of a running app: created with one key on first use, and read
    again when it changed on disk (a rotation by ``ldpcollect sealing-keys rotate``)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.reported: str | None = None
        """The last problem with the file the server logged (logged once, not per
        request, until the file is usable again)."""
        self._lock = threading.Lock()
        self._seen: tuple[int, int, int] | None = None
        self._keyring: Keyring | None = None

    def load(self) -> Keyring:
        """The keyring, created with one key if there is no file;
        :class:`~ldp_shared.errors.ConfigurationError` (one line) when it cannot be made
        or read."""
        with self._lock:
            seen = self._version()
            if seen is None:  # several workers may get here at once: one key wins
                create(self.path)
                seen = self._version()
            if self._keyring is None or seen is None or seen != self._seen:
                self._keyring = read_keyring(self.path)  # no file now: it says so
                self._seen = seen
            return self._keyring

    def _version(self) -> tuple[int, int, int] | None:
        """The file's inode, modification time and size (``None``: no file)."""
        try:
            status = self.path.stat()
        except _ABSENT:
            return None
        except OSError as error:
            raise ConfigurationError(
                f"the sealing keyring {self.path} cannot be read: {_reason(error)}"
            ) from None
        return status.st_ino, status.st_mtime_ns, status.st_size


def ensure_keyring(path: Path) -> Keyring:
    """The keyring at ``path``, made with one key if there is none (an existing one,
    damaged or not, is never replaced)."""
    return KeyringFile(path).load()
