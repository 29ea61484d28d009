"""The public part of a kNN collection: its features, its hyperplanes, the device's cells.

A kNN collection (``"knn"`` in a :class:`~ldp_shared.schema.CollectionSpec`) is a label
collection with the ``sample`` budget whose attributes are one per table, ``cell_0 …
cell_{T−1}``, each with the ``2^b`` cell codes ``"0" … "2^b − 1"`` as its domain and
mechanism OUE, and the label. The analyst names the real features in ``knn``: numbers
with bounds (and optionally the public centre and scale that standardise them) and
categories. A device scales and standardises its features
(:class:`~ldp_shared.knn_space.FeatureSpace`), computes its cell in every table from the
public hyperplanes drawn from ``seed`` (:func:`hyperplanes`, :func:`cell_codes`), and
privatizes the record ``{cell_τ: code, label: class}`` like any other: under ``sample``
it carries one table, jointly with the class, at the whole ε. No raw feature leaves the
device. The estimator is :mod:`ldp_shared.analyses.knn.cells`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np
from numpy.typing import NDArray
from pydantic import Field, model_validator

from ldp_shared.errors import InvalidRecordError
from ldp_shared.identifiers import AttributeName, DomainValue
from ldp_shared.kernel import FloatArray
from ldp_shared.knn_space import Feature, FeatureSpace, categorical, numeric
from ldp_shared.mechanisms.base import AttributeSpec
from ldp_shared.request_model import RequestModel

MAX_BITS = 12
"""``2^b`` cells per table: at most 4,096."""


class KnnFeature(RequestModel):
    """A numeric feature (``lo``, ``hi``) or a categorical one (``domain``)."""

    name: AttributeName
    lo: float | None = None
    hi: float | None = None
    domain: list[DomainValue] | None = Field(default=None, min_length=1, max_length=4096)
    centre: float | None = Field(default=None, description="public centre μ (standardisation)")
    spread: float | None = Field(default=None, description="public scale σ (standardisation)")

    @model_validator(mode="after")
    def _check(self) -> KnnFeature:
        numeric_bounds = self.lo is not None and self.hi is not None
        if (self.domain is None) == (not numeric_bounds):
            raise ValueError(f"feature {self.name!r}: give either lo and hi, or a domain")
        self.feature()  # bounds, centre and scale checked once
        return self

    def feature(self) -> Feature:
        try:
            if self.domain is not None:
                return categorical(self.name, len(self.domain), self.centre, self.spread)
            assert self.lo is not None and self.hi is not None
            return numeric(self.name, self.lo, self.hi, self.centre, self.spread)
        except ValueError as error:
            raise ValueError(str(error)) from None


class KnnCells(RequestModel):
    """The public configuration of a kNN collection's cells."""

    features: list[KnnFeature] = Field(min_length=1, max_length=256)
    tables: int = Field(default=4, ge=1, le=64)
    bits: int = Field(default=10, ge=1, le=MAX_BITS)
    seed: int = Field(default=0, ge=0, lt=2**63, description="draws the public hyperplanes")

    @property
    def space(self) -> FeatureSpace:
        return FeatureSpace.of([f.feature() for f in self.features])

    def attribute_names(self) -> list[str]:
        return [cell_attribute(t) for t in range(self.tables)]

    def check_collection(
        self, label: str | None, budget: str, features: Sequence[AttributeSpec]
    ) -> None:
        """``ValueError`` unless a collection of this ``label``, ``budget`` and label
        ``features`` (a :class:`~ldp_shared.schema.CollectionSpec`'s) is the label
        collection these cells need."""
        names = [f.name for f in self.features]
        if len(set(names)) != len(names):
            raise ValueError("knn feature names must be unique")
        if label is None or budget != "sample":
            raise ValueError("a knn collection is a label collection with budget 'sample'")
        cells = [str(h) for h in range(1 << self.bits)]
        by_name = {a.name: a for a in features}
        if sorted(by_name) != sorted(self.attribute_names()):
            raise ValueError(
                f"a knn collection's features are {', '.join(self.attribute_names())}"
                " (one per table) besides the label"
            )
        for attribute in by_name.values():
            if attribute.mechanism != "oue" or list(attribute.values) != cells:
                raise ValueError(
                    f"attribute {attribute.name!r}: mechanism 'oue' over the cell codes"
                    f" '0' … '{len(cells) - 1}'"
                )


def cell_attribute(table: int) -> str:
    return f"cell_{table}"


def public_normals(seed: int, size: int) -> FloatArray:
    """``size`` standard normal numbers that depend on ``seed`` alone, on every machine.

    A device and the aggregator must draw the same hyperplanes whatever their numpy
    version (numpy does not promise its generators' streams across versions), so the
    uniforms come from SHA-256 in counter mode (53 bits each, in ``(0, 1)``) and become
    normals by the Box-Muller transform.
    """
    pairs = (size + 1) // 2
    words = bytearray()
    counter = 0
    while len(words) < 16 * pairs:
        words += hashlib.sha256(f"ldpcollect-knn:{seed}:{counter}".encode()).digest()
        counter += 1
    raw = np.frombuffer(bytes(words[: 16 * pairs]), dtype=">u8").astype(np.uint64) >> 11
    u = (raw.astype(np.float64) + 0.5) / 2.0**53
    radius = np.sqrt(-2.0 * np.log(u[0::2]))
    angle = 2.0 * np.pi * u[1::2]
    # interleaved, so that a longer draw extends a shorter one
    pairs_out = np.column_stack([radius * np.cos(angle), radius * np.sin(angle)])
    out: FloatArray = pairs_out.reshape(-1)[:size]
    return out


@lru_cache(maxsize=64)
def hyperplanes(dimension: int, tables: int, bits: int, seed: int) -> tuple[FloatArray, FloatArray]:
    """``T × b × m`` standard normal normals, and the thresholds ``a·z`` of their planes
    through standard normal points ``z`` (read-only; :func:`public_normals`)."""
    shape = (tables, bits, dimension)
    draws = public_normals(seed, 2 * tables * bits * dimension)
    normals = draws[: draws.size // 2].reshape(shape)
    points = draws[draws.size // 2 :].reshape(shape)
    thresholds = np.einsum("tbd,tbd->tb", normals, points)
    normals.setflags(write=False)
    thresholds.setflags(write=False)
    return normals, thresholds


def cell_codes(normals: FloatArray, thresholds: FloatArray, z: FloatArray) -> NDArray[np.int64]:
    """``n × T`` codes ``Σ_i 2^i·[a_τi·z ≥ a_τi·z_τi]`` of standardised points."""
    above = np.einsum("nd,tbd->ntb", z, normals) >= thresholds[None]
    weights = np.left_shift(1, np.arange(normals.shape[1], dtype=np.int64))
    out: NDArray[np.int64] = (above.astype(np.int64) * weights).sum(axis=2)
    return out


def device_columns(
    cells: KnnCells, label: str, points: Any, classes: Sequence[str]
) -> dict[str, list[str]]:
    """The records a device privatizes: its cell in every table and its class.

    ``points`` are raw feature rows (a category as its value's index); numbers outside
    their bounds are clipped (:class:`~ldp_shared.errors.InvalidRecordError` for a wrong
    shape, NaN or a bad category).
    """
    space = cells.space
    z = space.standardise(space.scale_records(points))
    if len(classes) != z.shape[0]:
        raise InvalidRecordError(f"give one class per point: {z.shape[0]} points")
    codes = cell_codes(*hyperplanes(space.dimension, cells.tables, cells.bits, cells.seed), z)
    columns = {cell_attribute(t): [str(int(h)) for h in codes[:, t]] for t in range(cells.tables)}
    columns[label] = list(classes)
    return columns
