"""One record at a time, at what its mathematics costs (GRR, unary encoding and FLH).

Perturbing one record through the vectorised codec pays a dozen numpy calls on arrays
of one element. For a collection whose attributes are all reported by GRR, unary
encoding or FLH (budget ``split``, no label), :class:`RecordPath` does it in plain
Python over randomness drawn in blocks ahead of the record
(:class:`~ldp_shared.bulk_draws.BulkDraws`, per generator, each draw used once):

* GRR: per answer, ``-1`` (keep the true value) or the rank of the reported value among
  the others (:meth:`~ldp_shared.mechanisms.grr.GeneralizedRandomizedResponse.
  draw_noise`); the answer's bytes come from a table of the ``d`` segments;
* unary encoding: per answer, a packed row of Bernoulli(q) bits and the Bernoulli(p)
  bit that replaces the true one (:meth:`~ldp_shared.mechanisms.unary.UnaryEncoding.
  draw_noise`);
* FLH: per answer, the hash index ``j`` and ``-1`` (keep the true bucket) or the rank
  of the reported bucket among the others (:meth:`~ldp_shared.mechanisms.
  local_hashing.LocalHashing.draw_noise`); the value's key is its keyed BLAKE2b
  (:func:`~ldp_shared.mechanisms.hashing.key_of`) and its bucket
  :func:`~ldp_shared.mechanisms.hashing.bucket_of`, the vectorised functions' values.

These are the draws the vectorised path makes, by the same functions, only earlier:
the answers have the same distribution.

A record this path does not take (a missing or unknown attribute, a value outside its
domain or not a valid value) is left to the vectorised path, which says what is wrong
with it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ldp_shared.bulk_draws import BulkDraws
from ldp_shared.collection import CollectionConfig
from ldp_shared.errors import InvalidRecordError
from ldp_shared.mechanisms.base import AttributeSpec, Randomizer
from ldp_shared.mechanisms.categorical import CategoricalSpec, pack_index
from ldp_shared.mechanisms.grr import GeneralizedRandomizedResponse
from ldp_shared.mechanisms.hashing import bucket_of, key_of, value_bytes
from ldp_shared.mechanisms.local_hashing import LocalHashing, LocalHashingSpec
from ldp_shared.mechanisms.unary import UnaryEncoding

__all__ = ["RecordPath", "record_path"]

Answer = Callable[[Any, np.random.Generator], bytes]
"""The segment of one attribute for its true value (``KeyError``/``TypeError`` when the
path does not take the value)."""


def _grr_answer(
    spec: CategoricalSpec, randomizer: GeneralizedRandomizedResponse, width: int
) -> Answer:
    lookup = spec.value_lookup
    table: list[bytes] = [row.tobytes() for row in pack_index(np.arange(randomizer.d), width)]
    draws: BulkDraws[int] = BulkDraws(lambda n, rng: randomizer.draw_noise(n, rng).tolist())

    def answer(value: Any, rng: np.random.Generator) -> bytes:
        index = lookup[value]
        noise = draws.take(rng)
        return table[index if noise < 0 else noise + (noise >= index)]

    return answer


def _ue_answer(spec: CategoricalSpec, randomizer: UnaryEncoding) -> Answer:
    lookup = spec.value_lookup

    def draw(n: int, rng: np.random.Generator) -> list[tuple[bytes, bool]]:
        rows, true_bits = randomizer.draw_noise(n, rng)
        return list(zip([row.tobytes() for row in rows], true_bits.tolist(), strict=True))

    draws: BulkDraws[tuple[bytes, bool]] = BulkDraws(draw)

    def answer(value: Any, rng: np.random.Generator) -> bytes:
        index = lookup[value]
        row, true_bit = draws.take(rng)
        segment = bytearray(row)
        mask = 0x80 >> (index & 7)
        if true_bit:
            segment[index >> 3] |= mask
        else:
            segment[index >> 3] &= ~mask & 0xFF
        return bytes(segment)

    return answer


def _key_function(spec: LocalHashingSpec) -> Callable[[Any], int]:
    """A value's key: looked up in a declared domain (its values as declared), hashed
    for an open one (a value that is not one raises ``KeyError``)."""
    if isinstance(spec.domain, list):
        declared = spec.encode(spec.values).tolist()
        return dict(zip(spec.values, declared, strict=True)).__getitem__
    salt = bytes.fromhex(spec.salt)
    what = f"attribute {spec.name!r}"

    def key(value: Any) -> int:
        try:
            return key_of(value_bytes(value, spec.value_type, spec.max_length, what), salt)
        except InvalidRecordError as error:
            raise KeyError(value) from error

    return key


def _flh_answer(spec: LocalHashingSpec, randomizer: LocalHashing) -> Answer:
    key_of_value = _key_function(spec)
    g = randomizer.g
    draws: BulkDraws[list[int]] = BulkDraws(lambda n, rng: randomizer.draw_noise(n, rng).tolist())

    def answer(value: Any, rng: np.random.Generator) -> bytes:
        key = key_of_value(value)
        j, rank = draws.take(rng)
        true = bucket_of(key, j, g)
        return bytes((j >> 8, j & 0xFF, true if rank < 0 else rank + (rank >= true)))

    return answer


def _answer_of(spec: AttributeSpec, randomizer: Randomizer, width: int) -> Answer | None:
    """The one-record answer of an attribute whose segment is ``width`` bytes, or
    ``None`` for a mechanism this path does not take."""
    if type(randomizer) is GeneralizedRandomizedResponse and isinstance(spec, CategoricalSpec):
        return _grr_answer(spec, randomizer, width)
    if type(randomizer) is UnaryEncoding and isinstance(spec, CategoricalSpec):
        return _ue_answer(spec, randomizer)
    if type(randomizer) is LocalHashing and isinstance(spec, LocalHashingSpec):
        return _flh_answer(spec, randomizer)
    return None


class RecordPath:
    """The packed report of one record, without numpy per record."""

    def __init__(self, config: CollectionConfig, answers: list[tuple[str, Answer]]) -> None:
        self._count = len(config.record_names)
        self._answers = answers

    def packed(self, record: Mapping[str, Any], rng: np.random.Generator) -> bytes | None:
        """The packed perturbed report of ``record``, or ``None`` if this path does not
        take it (the vectorised path then checks it and says what is wrong)."""
        if len(record) != self._count:  # then every name found means no other is there
            return None
        try:
            if self._count == 1:
                name, answer = self._answers[0]
                return answer(record[name], rng)
            return b"".join([answer(record[name], rng) for name, answer in self._answers])
        except (KeyError, TypeError):
            return None


def _path_of(config: CollectionConfig) -> RecordPath | None:
    """The config's :class:`RecordPath`, or ``None`` when it has an attribute, a label or
    a layout this path does not handle."""
    if config.label is not None or config.selector_bytes or config.budget != "split":
        return None
    if len(config.attributes) != len(config.record_names):
        return None
    specs = {spec.name: spec for spec in config.spec.attributes}
    answers: list[tuple[str, Answer]] = []
    offset = 0
    for attribute, randomizer in zip(config.attributes, config.randomizers, strict=True):
        answer = _answer_of(specs[attribute.name], randomizer, attribute.byte_length)
        if answer is None or attribute.byte_offset != offset:
            return None
        answers.append((attribute.name, answer))
        offset += attribute.byte_length
    return RecordPath(config, answers) if offset == config.report_bytes else None


_PATHS: dict[int, tuple[CollectionConfig, RecordPath | None]] = {}
_PATHS_LOCK = threading.Lock()
MAX_PATHS = 64


def record_path(config: CollectionConfig) -> RecordPath | None:
    """The config's :class:`RecordPath` (built once per config object), or ``None``."""
    found = _PATHS.get(id(config))
    if found is not None and found[0] is config:
        return found[1]
    path = _path_of(config)
    with _PATHS_LOCK:
        _PATHS[id(config)] = (config, path)
        while len(_PATHS) > MAX_PATHS:
            _PATHS.pop(next(iter(_PATHS)))
    return path
