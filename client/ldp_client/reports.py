"""Reports built cheaply from what the client encoded itself.

A :class:`~ldp_shared.wire.reports.Report` validated field by field costs more than perturbing
its record. The client needs no validation of values it made: the ids come from the
operating system's CSPRNG, the bits from its own packed perturbed bytes. So a batch is
turned into reports with vectorised work only:

* :func:`report_ids`: ``n`` ids of 128 random bits each (one ``os.urandom`` call),
  URL-safe base64 without padding, the 22 characters ``secrets.token_urlsafe(16)``
  gives;
* :func:`encode_rows`: the standard base64 of every packed row at once (rows padded to
  whole 3-byte groups, the padding characters put back);
* :func:`build_reports`: the ``Report`` objects, made as ``Report.model_construct``
  makes them (no validation), or by ``model_construct`` itself if the model ever
  holds more than its three fields.

:func:`next_report_id` hands out single ids from a pool drawn in bulk; a forked child
empties its copy, so two processes never send the same id.
"""

from __future__ import annotations

import base64
import gc
import os
import secrets
from binascii import b2a_base64
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from ldp_shared.wire.reports import Report

__all__ = ["build_reports", "encode_rows", "next_report_id", "one_report", "report_ids"]

ID_BYTES = 16
POOL = 256

_FIELDS = frozenset({"id", "config_hash", "bits"})
_FIELDS_SET = set(_FIELDS)
_pool: list[str] = []


def _plain_model() -> bool:
    """Whether ``Report.model_construct`` makes exactly the three-field object built here."""
    made = Report.model_construct(id="", config_hash="", bits="")
    return (
        set(made.__dict__) == _FIELDS
        and made.__pydantic_fields_set__ == _FIELDS
        and made.__pydantic_extra__ is None
        and made.__pydantic_private__ is None
    )


_PLAIN = _plain_model()
_new = object.__new__
_set = object.__setattr__


def report_ids(n: int) -> list[str]:
    """``n`` fresh random report ids (128 bits each), from one call to the OS CSPRNG."""
    if n <= 0:
        return []
    raw = np.zeros((n, ID_BYTES + 2), dtype=np.uint8)  # 18 bytes: 24 characters, no '='
    raw[:, :ID_BYTES] = np.frombuffer(secrets.token_bytes(ID_BYTES * n), dtype=np.uint8).reshape(
        n, ID_BYTES
    )
    text = np.frombuffer(base64.urlsafe_b64encode(raw.tobytes()), dtype=np.uint8)
    # the first 22 characters encode the 16 random bytes (the 22nd's low bits are zero)
    chars = np.ascontiguousarray(text.reshape(n, 24)[:, :22])
    ids: list[str] = chars.view("S22").ravel().astype("U22").tolist()
    return ids


def next_report_id() -> str:
    """One fresh report id, from a pool drawn :data:`POOL` at a time."""
    try:
        return _pool.pop()
    except IndexError:
        _pool.extend(report_ids(POOL))
        return _pool.pop()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_pool.clear)


def encode_rows(packed: NDArray[np.uint8]) -> list[str]:
    """The standard base64 (with padding) of every row of an ``n × w`` byte matrix."""
    n, width = packed.shape
    if n == 0:
        return []
    groups = -(-width // 3)
    if width % 3:
        padded = np.zeros((n, 3 * groups), dtype=np.uint8)
        padded[:, :width] = packed
        data = padded.tobytes()
    else:
        data = np.ascontiguousarray(packed).tobytes()
    chars = np.frombuffer(base64.b64encode(data), dtype=np.uint8).reshape(n, 4 * groups)
    if width % 3:
        chars = chars.copy()
        chars[:, 4 * groups - (3 - width % 3) :] = ord("=")
    size = 4 * groups
    rows: list[str] = chars.view(f"S{size}").ravel().astype(f"U{size}").tolist()
    return rows


def build_reports(ids: Sequence[str], config_hash: str, bits: Sequence[str]) -> list[Report]:
    """``Report`` objects of client-made values, without validating them again."""
    if not _PLAIN:
        construct = Report.model_construct
        return [
            construct(id=i, config_hash=config_hash, bits=b) for i, b in zip(ids, bits, strict=True)
        ]
    # what model_construct does, inlined; the fields-set is shared: a frozen model never
    # changes it in place (model_copy copies it first). The objects hold no cycles, so
    # the cyclic collector is paused while they are made: it would otherwise run every
    # 700 of them and walk every object in the process, several times their cost.
    out: list[Report] = []
    append = out.append
    collecting = gc.isenabled()
    gc.disable()
    try:
        for report_id, text in zip(ids, bits, strict=True):
            report = _new(Report)
            _set(report, "__dict__", {"id": report_id, "config_hash": config_hash, "bits": text})
            _set(report, "__pydantic_fields_set__", _FIELDS_SET)
            _set(report, "__pydantic_extra__", None)
            _set(report, "__pydantic_private__", None)
            append(report)
    finally:
        if collecting:
            gc.enable()
    return out


def one_report(config_hash: str, packed: bytes) -> Report:
    """The report of one packed record."""
    bits = b2a_base64(packed, newline=False).decode("ascii")
    if not _PLAIN:
        return Report.model_construct(id=next_report_id(), config_hash=config_hash, bits=bits)
    report = _new(Report)
    _set(report, "__dict__", {"id": next_report_id(), "config_hash": config_hash, "bits": bits})
    _set(report, "__pydantic_fields_set__", _FIELDS_SET)
    _set(report, "__pydantic_extra__", None)
    _set(report, "__pydantic_private__", None)
    return report
