"""What the longitudinal mechanisms share: a permanent randomization the device derives
from a secret, so that reporting one value again repeats it (``docs/longitudinal.md``).

A longitudinal mechanism (``l-grr``, ``l-osue``, ``dbitflippm``) perturbs a value in two
steps: a **permanent** randomization, memoised per value on the device (RAPPOR's
permanent randomized response, Erlingsson, Pihur and Korolova, CCS 2014), then, for
L-GRR and L-OSUE, a fresh **instantaneous** randomization per report. Its privacy has two numbers:

* ``exact_epsilon``: the ε of one report (what a single report reveals);
* ``permanent_epsilon`` (ε∞): the ε of everything the device ever sends about one
  memoised key, whatever the number of reports: the adversary learns at most the
  permanent response of that key. A device whose keys over its life take ``c``
  distinct values is ``c·ε∞``-LDP against histories of the same change pattern
  (see ``docs/longitudinal.md`` for what that excludes).

**Memoisation without storing responses.** Instead of remembering every permanent
response, the device keeps one random secret per collection in its ledger and derives
the permanent randomness from it with a pseudo-random function, as Chromium's RAPPOR
derives its permanent randomized response from a client secret with HMAC-DRBG: the
uniform draws of the permanent step of key ``x`` are :func:`prf_uniforms` of the
attribute's key and ``x``, HMAC-SHA256 in counter mode (NIST SP 800-108 §4.1) cut into
53-bit uniforms on the grid of ``Generator.random``. The same secret and value give the
same permanent response on every run; without the secret the draws are indistinguishable
from fresh ones. The instantaneous step draws from the injected generator as usual.

``perturb(values, rng)`` (the :class:`~ldp_shared.mechanisms.base.Randomizer` contract)
treats every row as a fresh device: permanent and instantaneous steps from ``rng``. It
is what simulations use; its answers have the same distribution as a memoised device's
single report. Devices call :meth:`LongitudinalRandomizer.perturb_memoised`.

**One record per call.** A device reports one record at a time, mostly a value it has
reported before. For one value, ``perturb_memoised`` works on Python numbers: the
permanent response is kept in a bounded in-process cache (:class:`PermanentMemo`, keyed
by the attribute's PRF key and the value, :data:`MEMO_ENTRIES` of them per randomizer),
so a repeat costs no HMAC; it is the PRF's response, recomputed after an
eviction or in another process, never written anywhere. The instantaneous step's
uniforms are drawn from the caller's generator in blocks ahead of the record
(:mod:`ldp_shared.bulk_draws`), with the arithmetic of the vectorised step, each used
once: the answers have the vectorised path's distribution, and a seeded generator makes
a sequence of calls reproducible.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import struct
from abc import abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar, Generic, TypeVar

import numpy as np
from numpy.typing import NDArray
from pydantic import Field

from ldp_shared.errors import ConfigurationError, InvalidRecordError
from ldp_shared.identifiers import MAX_DOMAIN_SIZE
from ldp_shared.mechanisms._checks import check_epsilon
from ldp_shared.mechanisms.base import AttributeSpec, Randomizer
from ldp_shared.mechanisms.categorical import CategoricalSpec

__all__ = [
    "MEMO_ENTRIES",
    "PLANNED_PERMANENT_RATIO",
    "LongitudinalCategoricalSpec",
    "LongitudinalRandomizer",
    "PermanentMemo",
    "attribute_key",
    "check_epsilons",
    "one_index",
    "prf_uniform_list",
    "prf_uniforms",
    "value_messages",
]

PLANNED_PERMANENT_RATIO = 2.0
"""ε∞ of a planned longitudinal attribute, in multiples of the ε of one report: all the
reports of one value reveal at most twice what one does."""
_WORDS_PER_BLOCK = 4  # a SHA-256 block is four 64-bit words
_UNIT = 2.0**-53
_BLOCK_WORDS = struct.Struct(">4Q")  # a SHA-256 block as four big-endian 64-bit words
MEMO_ENTRIES = 4096
"""Permanent responses a randomizer keeps in memory for one-record calls (the oldest go)."""
_DEVICE_STATE = ("_permanent_memo", "_one_record_draws", "_sampled_memo")
T = TypeVar("T")


class PermanentMemo(Generic[T]):
    """A bounded in-process cache of permanent responses, ``(PRF key, value) →
    response``; the first in goes first when it is full. Safe to share between threads
    (a race only recomputes a response)."""

    def __init__(self, entries: int | None = None) -> None:
        self._items: dict[tuple[bytes, int], T] = {}
        self._entries = MEMO_ENTRIES if entries is None else entries

    def get(self, key: bytes, memo: int) -> T | None:
        return self._items.get((key, memo))

    def put(self, key: bytes, memo: int, response: T) -> None:
        items = self._items
        while len(items) >= self._entries:
            try:
                items.pop(next(iter(items)), None)
            except (RuntimeError, StopIteration):  # another thread changed it meanwhile
                break
        items[(key, memo)] = response

    def __len__(self) -> int:
        return len(self._items)


def one_index(values: Any, d: int) -> int | None:
    """The value index of a one-value integer array (checked to lie in ``[0, d)``), or
    ``None`` for anything else (the vectorised path then takes it)."""
    if type(values) is not np.ndarray or values.shape != (1,) or values.dtype.kind not in "iu":
        return None
    v: int = values.item()
    if not 0 <= v < d:
        raise InvalidRecordError(f"value index outside the domain [0, {d})")
    return v


class LongitudinalRandomizer(Randomizer):
    """A randomizer whose permanent step a device memoises per key (see the module)."""

    @property
    @abstractmethod
    def permanent_epsilon(self) -> float:
        """ε∞: the privacy of all the reports a device makes about one memoised key."""

    @abstractmethod
    def memo_keys(self, values: NDArray[Any], key: bytes) -> NDArray[np.int64]:
        """The memoised key of each encoded value for the device holding ``key``: the
        input of its permanent step (the value for L-GRR, the bucket vector for
        dBitFlipPM). A new key costs ε∞; a key met before costs nothing more."""

    @abstractmethod
    def perturb_memoised(
        self, values: NDArray[Any], key: bytes, rng: np.random.Generator | None = None
    ) -> NDArray[Any]:
        """Answers of the device holding ``key``: the permanent step derived from ``key``
        (so equal memoised keys share it), the instantaneous one from ``rng`` (for one
        value, from draws taken from ``rng`` in blocks: see the module)."""

    @functools.cached_property
    def _permanent_memo(self) -> PermanentMemo[Any]:
        """The permanent responses of one-record calls (see the module)."""
        return PermanentMemo()

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without its memo and bulk draws (a copy must not reuse the draws)."""
        return {k: v for k, v in self.__dict__.items() if k not in _DEVICE_STATE}


class LongitudinalCategoricalSpec(CategoricalSpec):
    """A categorical attribute a device reports repeatedly: the ε of one report is the
    attribute's share, ``permanent_epsilon`` (ε∞) that of all its reports of one value."""

    title: ClassVar[str]
    """The mechanism's name in messages (``"L-GRR"``)."""

    permanent_epsilon: float = Field(
        gt=0.0,
        allow_inf_nan=False,
        description=(
            "ε∞: the privacy of all of a device's reports of one value (its memoised"
            " permanent randomization); at least the ε one report is allotted"
        ),
    )

    @classmethod
    def plan_specs(
        cls, domain_size: int | None, lo: float | None, hi: float | None
    ) -> list[AttributeSpec]:
        """Planned over ``domain_size`` values; ε∞ follows the query's ε (:meth:`plan_at`)."""
        if domain_size is None or not 2 <= domain_size <= MAX_DOMAIN_SIZE:
            return []
        domain = [str(i) for i in range(domain_size)]
        return [
            cls(name="planned", mechanism=m, domain=domain, permanent_epsilon=1.0)
            for m in cls.mechanism_literals()
        ]

    def plan_at(self, epsilon: float) -> AttributeSpec:
        """ε∞ = :data:`PLANNED_PERMANENT_RATIO` × the ε of one report."""
        return self.model_copy(update={"permanent_epsilon": PLANNED_PERMANENT_RATIO * epsilon})

    def randomizer(self, epsilon: float | None, classes: int = 1) -> LongitudinalRandomizer:
        if epsilon is None:
            raise ConfigurationError(f"attribute {self.name!r}: {self.title} needs an ε")
        if classes != 1:
            raise ConfigurationError(f"attribute {self.name!r}: {self.title} cannot join a label")
        return self.longitudinal(len(self.domain), epsilon)

    @abstractmethod
    def longitudinal(self, d: int, epsilon: float) -> LongitudinalRandomizer:
        """The randomizer over ``d`` values at ``epsilon`` per report and ε∞."""


def check_epsilons(title: str, epsilon: float, infinity: float) -> tuple[float, float]:
    """ε of one report and ε∞, each checked, and ε ≤ ε∞ (a value's reports include one)."""
    epsilon, infinity = check_epsilon(epsilon), check_epsilon(infinity)
    if epsilon > infinity:
        raise ConfigurationError(
            f"{title}: the ε of one report ({epsilon!r}) exceeds ε∞ ({infinity!r}), the ε"
            " of all reports of a value; raise permanent_epsilon or lower ε"
        )
    return epsilon, infinity


def attribute_key(secret: bytes, attribute: str) -> bytes:
    """The PRF key of one attribute, from the device's secret for the collection."""
    message = b"ldpcollect permanent randomization\n" + attribute.encode("utf-8")
    return hmac.new(secret, message, hashlib.sha256).digest()


def prf_uniforms(key: bytes, messages: Sequence[bytes], count: int) -> NDArray[np.float64]:
    """``len(messages) × count`` uniforms in ``[0, 1)``, a pseudo-random function of
    ``key`` and each message.

    Block ``j`` of a message is ``HMAC-SHA256(key, message ‖ j)`` (``j`` as 4 bytes,
    big-endian); each of its four big-endian 64-bit words gives the uniform
    ``⌊w / 2^11⌋ / 2^53``, the grid ``Generator.random`` draws from, so a test ``u < p``
    holds with probability ``⌈p·2^53⌉/2^53`` (:func:`~ldp_shared.mechanisms.grr.
    realised_keep`), as it does for the generator's draws.
    """
    blocks = max(1, -(-count // _WORDS_PER_BLOCK))
    stream = b"".join(
        hmac.new(key, message + block.to_bytes(4, "big"), hashlib.sha256).digest()
        for message in messages
        for block in range(blocks)
    )
    words = np.frombuffer(stream, dtype=">u8").reshape(len(messages), -1)[:, :count]
    out: NDArray[np.float64] = (words >> np.uint64(11)).astype(np.float64) * _UNIT
    return out


def prf_uniform_list(key: bytes, message: bytes, count: int) -> list[float]:
    """:func:`prf_uniforms` of one message, as Python floats (a device's one-record path,
    free of numpy's per-call overhead; the same numbers)."""
    out: list[float] = []
    for block in range(max(1, -(-count // _WORDS_PER_BLOCK))):
        digest = hmac.new(key, message + block.to_bytes(4, "big"), hashlib.sha256).digest()
        out.extend([(word >> 11) * _UNIT for word in _BLOCK_WORDS.unpack(digest)])
    return out[:count]


def value_messages(values: NDArray[np.int64], label: bytes) -> list[bytes]:
    """The PRF message of each value: ``label``, a newline and the value in decimal."""
    return [label + b"\n" + str(int(v)).encode("ascii") for v in values]
