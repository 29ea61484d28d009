"""Reports built cheaply from what the client encoded itself.

A :class:`~ldp_shared.wire.reports.Report` validated field by field costs more than perturbing
its record. The client needs no validation of values it made: the ids come from a
cryptographically strong generator, the bits from its own packed perturbed bytes. So a
batch is turned into reports with vectorised work only:

* :func:`report_ids`: ``n`` ids of 22 characters of the URL-safe base64 alphabet, each
  character 6 uniformly random bits (132 bits an id), the low 6 bits of bytes drawn
  from AES-128 in counter mode keyed per process from the OS CSPRNG (a generator of
  its own, not the noise's, keyed anew after ``fork``): 0.06 µs an id where
  ``os.urandom`` and base64 took 0.13 on this machine;
* :func:`encode_rows`: the standard base64 of every packed row at once (rows padded to
  whole 3-byte groups, the padding characters put back);
* :func:`build_reports`: the ``Report`` objects, made as ``Report.model_construct``
  makes them (no validation), or by ``model_construct`` itself if the model ever
  holds more than its three fields.

A batch is kept as a :class:`ReportColumns`: the ids' and the bits' characters as two
byte matrices. It is a sequence of ``Report`` (an item is built when asked for), and
:meth:`ReportColumns.wire_json` writes the body of an upload from the matrices with
numpy, so a batch reaches the wire with no Python object per report.

:func:`next_report_id` hands out single ids from a pool drawn in bulk; a forked child
empties its copy, so two processes never send the same id.
"""

from __future__ import annotations

import base64
import gc
import json
import os
from binascii import b2a_base64
from collections.abc import Iterator, Sequence
from typing import overload

import numpy as np
from numpy.typing import NDArray

from ldp_shared.rand import secure_rng
from ldp_shared.wire.reports import Report

__all__ = [
    "ReportColumns",
    "build_reports",
    "encode_rows",
    "next_report_id",
    "one_report",
    "report_ids",
]

ID_CHARS = 22  # letters of the URL-safe base64 alphabet, 6 random bits each
POOL = 256

_FIELDS = frozenset({"id", "config_hash", "bits"})
_FIELDS_SET = set(_FIELDS)
_pool: list[str] = []
_id_source: np.random.Generator | None = None
_OPEN, _CLOSE = b'{"reports":[', b"]}"
_URL_SAFE = np.frombuffer(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", dtype=np.uint8
)


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


def _random_bytes(count: int) -> NDArray[np.uint8]:
    """``count`` bytes of the process's id generator (AES-CTR keyed from the OS CSPRNG)."""
    global _id_source
    source = _id_source
    if source is None:
        source = _id_source = secure_rng()
    words = source.bit_generator.random_raw(-(-count // 8))  # under the generator's lock
    return words.view(np.uint8)[:count]


def id_chars(n: int) -> NDArray[np.uint8]:
    """The characters of ``n`` fresh random report ids, one id per row of an ``n × 22``
    matrix: each character the URL-safe base64 letter of 6 uniform random bits (the low
    bits of a random byte; 256 is a multiple of 64)."""
    if n <= 0:
        return np.zeros((0, ID_CHARS), dtype=np.uint8)
    sextets = _random_bytes(n * ID_CHARS).reshape(n, ID_CHARS) & np.uint8(63)
    chars: NDArray[np.uint8] = _URL_SAFE[sextets]
    return chars


def _texts(chars: NDArray[np.uint8]) -> list[str]:
    """Each row of an ASCII character matrix as a ``str``."""
    n, width = chars.shape
    if n == 0:
        return []
    if width == 0:
        return [""] * n
    rows = np.ascontiguousarray(chars).view(f"S{width}").ravel()
    texts: list[str] = rows.astype(f"U{width}").tolist()
    return texts


def report_ids(n: int) -> list[str]:
    """``n`` fresh random report ids (132 random bits each, :func:`id_chars`)."""
    return _texts(id_chars(n))


def next_report_id() -> str:
    """One fresh report id, from a pool drawn :data:`POOL` at a time."""
    try:
        return _pool.pop()
    except IndexError:
        _pool.extend(report_ids(POOL))
        return _pool.pop()


def _forget_after_fork() -> None:
    """A forked child draws ids of its own: its pool and generator are its parent's."""
    global _id_source
    _pool.clear()
    _id_source = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)


def encode_rows(packed: NDArray[np.uint8]) -> list[str]:
    """The standard base64 (with padding) of every row of an ``n × w`` byte matrix."""
    return _texts(row_chars(packed))


def row_chars(packed: NDArray[np.uint8]) -> NDArray[np.uint8]:
    """The characters of the standard base64 (with padding) of every row of an ``n × w``
    byte matrix, one row each."""
    n, width = packed.shape
    groups = -(-width // 3)
    if n == 0:
        return np.zeros((0, 4 * groups), dtype=np.uint8)
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
    return chars


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


class ReportColumns(Sequence[Report]):
    """Reports of one collection made on this device, kept as character matrices: the ids
    (``n × 22``, URL-safe base64) and the bits (``n × w``, standard base64 with padding).

    A sequence of :class:`~ldp_shared.wire.reports.Report`: an item is built when it is
    asked for, iterating builds them all at once (:func:`build_reports`), a slice is
    another ``ReportColumns`` sharing the matrices. Equal to any sequence of the same
    reports. :meth:`wire_json` is the body that uploads them.
    """

    __slots__ = ("_bits", "_ids", "config_hash")
    __hash__ = None  # type: ignore[assignment]  # compared as its reports, like a list

    def __init__(self, config_hash: str, ids: NDArray[np.uint8], bits: NDArray[np.uint8]) -> None:
        if ids.ndim != 2 or ids.shape[1] != ID_CHARS or bits.ndim != 2 or len(bits) != len(ids):
            raise ValueError(
                f"ids must be an n × {ID_CHARS} and bits an n × w character matrix,"
                f" got {ids.shape} and {bits.shape}"
            )
        self.config_hash = config_hash
        self._ids = ids
        self._bits = bits

    def __len__(self) -> int:
        return len(self._ids)

    @overload
    def __getitem__(self, index: int) -> Report: ...

    @overload
    def __getitem__(self, index: slice) -> ReportColumns: ...

    def __getitem__(self, index: int | slice) -> Report | ReportColumns:
        if isinstance(index, slice):
            return ReportColumns(self.config_hash, self._ids[index], self._bits[index])
        try:
            row = range(len(self))[index]  # an int, negative from the end (TypeError else)
        except IndexError:
            raise IndexError("report index out of range") from None
        return build_reports(
            _texts(self._ids[row : row + 1]), self.config_hash, _texts(self._bits[row : row + 1])
        )[0]

    def __iter__(self) -> Iterator[Report]:
        return iter(build_reports(self.ids, self.config_hash, _texts(self._bits)))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ReportColumns):
            return (
                self.config_hash == other.config_hash
                and np.array_equal(self._ids, other._ids)
                and np.array_equal(self._bits, other._bits)
            )
        if isinstance(other, Sequence) and not isinstance(other, str | bytes):
            return list(self) == list(other)
        return NotImplemented

    def __add__(self, other: Sequence[Report]) -> Sequence[Report]:
        """Concatenated, as lists are: columns again when both are columns of one config."""
        if isinstance(other, ReportColumns) and other.config_hash == self.config_hash:
            return ReportColumns(
                self.config_hash,
                np.concatenate([self._ids, other._ids]),
                np.concatenate([self._bits, other._bits]),
            )
        if isinstance(other, Sequence) and not isinstance(other, str | bytes):
            return [*self, *other]
        return NotImplemented

    def __radd__(self, other: Sequence[Report]) -> list[Report]:
        if isinstance(other, Sequence) and not isinstance(other, str | bytes):
            return [*other, *self]
        return NotImplemented

    def __repr__(self) -> str:
        return f"ReportColumns({len(self)} reports, config_hash={self.config_hash[:12]}…)"

    @property
    def ids(self) -> list[str]:
        """The reports' ids, in order."""
        return _texts(self._ids)

    def wire_json(self) -> bytes:
        """The JSON body of ``POST /v1/collections/{name}/reports`` for these reports,
        byte for byte what ``ReportBatch(reports=list(self)).model_dump_json()`` writes
        (tested), built in one buffer: its middle an ``n × width`` byte matrix, each row
        one report and its comma, filled from a template row and the two character
        matrices. Ids, bits and the config hash hold no character JSON escapes."""
        n = len(self)
        if n == 0:
            return _OPEN + _CLOSE
        config_hash = json.dumps(self.config_hash, ensure_ascii=True)[1:-1]
        head = b'{"id":"'
        middle = f'","config_hash":"{config_hash}","bits":"'.encode("ascii")
        id_width, bits_width = self._ids.shape[1], self._bits.shape[1]
        template = head + bytes(id_width) + middle + bytes(bits_width) + b'"},'
        width = len(template)
        body = np.empty(len(_OPEN) + n * width - 1 + len(_CLOSE), dtype=np.uint8)
        body[: len(_OPEN)] = np.frombuffer(_OPEN, np.uint8)
        rows = body[len(_OPEN) : len(_OPEN) + n * width].reshape(n, width)
        rows[:] = np.frombuffer(template, np.uint8)
        rows[:, len(head) : len(head) + id_width] = self._ids
        at = len(head) + id_width + len(middle)
        rows[:, at : at + bits_width] = self._bits
        body[len(_OPEN) + n * width - 1 :] = np.frombuffer(_CLOSE, np.uint8)  # the last comma
        return body.tobytes()

    @classmethod
    def of_packed(cls, config_hash: str, packed: NDArray[np.uint8]) -> ReportColumns:
        """Fresh ids for the rows of an ``n × report_bytes`` matrix of perturbed bytes."""
        return cls(config_hash, id_chars(len(packed)), row_chars(packed))
