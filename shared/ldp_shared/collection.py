"""The public config of a collection: derived once from its spec, shared by client and server.

:func:`build_config` turns a :class:`~ldp_shared.schema.CollectionSpec` into a
:class:`CollectionConfig`: per attribute the mechanism's ``p``, ``q`` and exact ε, its
place in the report (byte offset and length) and in the sufficient statistics; the
record's total ε (sequential composition: the sum over attributes); and the config hash
that every report carries. Clients rebuild the config from the spec themselves
(:func:`verify_config`), so a server cannot talk them into weaker noise than the stated ε.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Literal

from pydantic import BaseModel, ConfigDict

from ldp_shared.errors import ConfigurationError
from ldp_shared.mechanisms import GeneralizedRandomizedResponse, Mask, UnaryEncoding
from ldp_shared.schema import AttributeSpec, CollectionSpec, MechanismName

FORMAT_VERSION = 1

Mechanism = UnaryEncoding | GeneralizedRandomizedResponse | Mask
Encoding = Literal["bits", "index"]


class AttributeConfig(BaseModel):
    """One attribute as a client perturbs it and a server decodes it."""

    model_config = ConfigDict(frozen=True)

    name: str
    mechanism: MechanismName
    domain: list[str]
    epsilon: float
    p: float
    q: float
    keep_probability: float | None = None
    item_epsilon: float | None = None
    encoding: Encoding
    byte_offset: int
    byte_length: int
    stats_offset: int

    @property
    def d(self) -> int:
        return len(self.domain)


class CollectionConfig(BaseModel):
    """The public config: what a client needs to perturb, and what a report is checked against."""

    model_config = ConfigDict(frozen=True)

    format_version: int
    spec: CollectionSpec
    attributes: list[AttributeConfig]
    epsilon: float
    report_bytes: int
    stats_length: int
    config_hash: str

    @property
    def name(self) -> str:
        return self.spec.name

    def attribute(self, name: str) -> AttributeConfig:
        for attribute in self.attributes:
            if attribute.name == name:
                return attribute
        raise KeyError(name)


def spec_hash(spec: CollectionSpec) -> str:
    """SHA-256 (hex) of the canonical JSON of the spec and the format version.

    Canonical: keys sorted, no whitespace, UTF-8, floats as Python's shortest repr.
    Clients need not recompute it; they echo the hash the server published.
    """
    document = {"format_version": FORMAT_VERSION, "spec": spec.model_dump(mode="json")}
    canonical = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def attribute_epsilons(spec: CollectionSpec) -> list[float | None]:
    """ε per attribute under the ``split`` budget; ``None`` for MASK (ε set by its p)."""
    total_weight = sum(a.weight for a in spec.attributes if not a.is_basket)
    out: list[float | None] = []
    for a in spec.attributes:
        if a.is_basket:
            out.append(None)
        else:
            assert spec.epsilon is not None  # guaranteed by CollectionSpec validation
            out.append(spec.epsilon * a.weight / total_weight)
    return out


def make_mechanism(attribute: AttributeSpec, epsilon: float | None) -> Mechanism:
    """The mechanism object of one attribute."""
    d = len(attribute.domain)
    if attribute.mechanism == "mask":
        assert attribute.keep_probability is not None
        return Mask(d=d, keep_probability=attribute.keep_probability)
    assert epsilon is not None
    if attribute.mechanism == "grr":
        return GeneralizedRandomizedResponse(d=d, epsilon=epsilon)
    return UnaryEncoding(d=d, epsilon=epsilon, variant=attribute.mechanism)


def index_width(d: int) -> int:
    """Bytes of a big-endian value index for a domain of ``d`` values."""
    return 1 if d <= 256 else 2


def build_config(spec: CollectionSpec) -> CollectionConfig:
    """Derive the public config (p, q, exact ε, layout, hash) from a validated spec."""
    attributes: list[AttributeConfig] = []
    byte_offset = 0
    stats_offset = 0
    total_epsilon = 0.0
    for attribute, eps in zip(spec.attributes, attribute_epsilons(spec), strict=True):
        mechanism = make_mechanism(attribute, eps)
        d = len(attribute.domain)
        encoding: Encoding = "index" if attribute.mechanism == "grr" else "bits"
        length = index_width(d) if encoding == "index" else (d + 7) // 8
        exact = mechanism.exact_epsilon
        if not math.isfinite(exact):
            raise ConfigurationError(f"attribute {attribute.name!r}: ε is not finite")
        attributes.append(
            AttributeConfig(
                name=attribute.name,
                mechanism=attribute.mechanism,
                domain=list(attribute.domain),
                epsilon=exact,
                p=mechanism.p,
                q=mechanism.q,
                keep_probability=attribute.keep_probability,
                item_epsilon=mechanism.item_epsilon if isinstance(mechanism, Mask) else None,
                encoding=encoding,
                byte_offset=byte_offset,
                byte_length=length,
                stats_offset=stats_offset,
            )
        )
        byte_offset += length
        stats_offset += d
        total_epsilon += exact
    return CollectionConfig(
        format_version=FORMAT_VERSION,
        spec=spec,
        attributes=attributes,
        epsilon=total_epsilon,
        report_bytes=byte_offset,
        stats_length=stats_offset,
        config_hash=spec_hash(spec),
    )


def mechanisms_of(config: CollectionConfig) -> list[Mechanism]:
    """The mechanism objects of a config's attributes, in layout order."""
    return [
        make_mechanism(attribute, eps)
        for attribute, eps in zip(
            config.spec.attributes, attribute_epsilons(config.spec), strict=True
        )
    ]


FLOAT_TOLERANCE = 1e-12
"""Relative tolerance of :func:`verify_config` on derived floats (p, q, ε)."""


def _same(a: object, b: object) -> bool:
    """Equal, with floats compared to :data:`FLOAT_TOLERANCE` (recursively)."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or math.isclose(a, b, rel_tol=FLOAT_TOLERANCE, abs_tol=0.0)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def verify_config(config: CollectionConfig) -> CollectionConfig:
    """Rebuild the config from its spec and check that everything published matches.

    Raises :class:`ConfigurationError` when p, q, ε, layout or hash differ, i.e. when a
    server publishes parameters other than those its stated spec implies. Derived floats
    are compared to a relative :data:`FLOAT_TOLERANCE`, not bit for bit: ``math.exp`` and
    ``math.log`` come from the platform's libm and may differ in the last unit between
    the server's and the client's machine. The rebuilt config is returned, so a client
    never perturbs with the published numbers themselves.
    """
    rebuilt = build_config(config.spec)
    if not _same(rebuilt.model_dump(), config.model_dump()):
        raise ConfigurationError(
            f"collection {config.name!r}: the published config does not match its spec"
        )
    return rebuilt
