"""The public config of a collection: derived once from its spec, shared by client and server.

:func:`build_config` turns a :class:`~ldp_shared.schema.CollectionSpec` into a
:class:`CollectionConfig`: per attribute the mechanism's ``p``, ``q`` and exact ε, its
place in the report (byte offset and length) and in the sufficient statistics; the
record's total ε (sequential composition: the sum over attributes); and the config hash
that every report carries. Clients rebuild the config from the spec themselves
(:func:`verify_config`), so a server cannot talk them into weaker noise than the stated ε.

Label collections (naive Bayes, after Yilmaz, Al-Rubaie and Chang, "Locally Differentially
Private Naive Bayes Classification", arXiv:1905.01039, 2019): with a label of ``k``
classes, feature ``j`` (``d_j`` values) is reported as the single value ``x_j·k + c`` of a
joint domain of ``d_j·k`` cells, perturbed by unary encoding; the label has no segment of
its own (:attr:`CollectionConfig.label`, :attr:`AttributeConfig.classes`).

Budget ``sample``: a report opens with a selector (the index of the one non-MASK
attribute it carries, chosen uniformly at random on the device), followed by that
attribute's segment, padded with zero bytes to the longest such segment; MASK
attributes follow. The statistics keep, per sampled attribute, the number ``n_j`` of
reports that carried it (:attr:`AttributeConfig.count_offset`) before its sums.

Everything new is left out of the serialised config when unused, so a collection
without a label and with the ``split`` budget publishes exactly the JSON (and hash) it
did before labels existed.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ldp_shared.errors import ConfigurationError
from ldp_shared.mechanisms import GeneralizedRandomizedResponse, Mask, UnaryEncoding
from ldp_shared.schema import AttributeSpec, CollectionSpec, MechanismName

FORMAT_VERSION = 1

Mechanism = UnaryEncoding | GeneralizedRandomizedResponse | Mask
Encoding = Literal["bits", "index"]


def _is_none(value: object) -> bool:
    return value is None


def _is_one(value: object) -> bool:
    return value == 1


def _is_zero(value: object) -> bool:
    return value == 0


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
    classes: int = Field(
        default=1,
        exclude_if=_is_one,
        description=(
            "k when the attribute is reported jointly with a label of k classes: the "
            "segment then has d·k cells, cell x·k + c for value x and class c"
        ),
    )
    sample_index: int | None = Field(
        default=None,
        exclude_if=_is_none,
        description="budget 'sample': the selector value of a report carrying this attribute",
    )
    count_offset: int | None = Field(
        default=None,
        exclude_if=_is_none,
        description="budget 'sample': where the statistics count the reports carrying it",
    )

    @property
    def d(self) -> int:
        """The number of values of the attribute."""
        return len(self.domain)

    @property
    def cells(self) -> int:
        """The number of values the mechanism sees: ``d``, or ``d·k`` jointly with a label."""
        return self.d * self.classes

    @property
    def is_feature(self) -> bool:
        """Whether it is reported jointly with the collection's label."""
        return self.classes > 1


class LabelConfig(BaseModel):
    """The label of a collection: never reported alone, only jointly with each feature."""

    model_config = ConfigDict(frozen=True)

    name: str
    domain: list[str]

    @property
    def k(self) -> int:
        """The number of classes."""
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
    label: LabelConfig | None = Field(
        default=None,
        exclude_if=_is_none,
        description="the label (class) of a naive Bayes collection; it has no segment",
    )
    selector_bytes: int = Field(
        default=0,
        exclude_if=_is_zero,
        description="budget 'sample': bytes of the leading attribute selector (1 or 2)",
    )

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def budget(self) -> str:
        return self.spec.budget

    def attribute(self, name: str) -> AttributeConfig:
        for attribute in self.attributes:
            if attribute.name == name:
                return attribute
        raise KeyError(name)

    @property
    def features(self) -> list[AttributeConfig]:
        """The attributes reported jointly with the label (empty without a label)."""
        return [a for a in self.attributes if a.is_feature]

    @property
    def sampled(self) -> list[AttributeConfig]:
        """Budget ``sample``: the attributes a report may carry, in selector order."""
        return [a for a in self.attributes if a.sample_index is not None]

    @property
    def record_names(self) -> list[str]:
        """The keys of a raw record: every attribute of the spec, label included."""
        return [a.name for a in self.spec.attributes]


def spec_hash(spec: CollectionSpec) -> str:
    """SHA-256 (hex) of the canonical JSON of the spec and the format version.

    Canonical: keys sorted, no whitespace, UTF-8, floats as Python's shortest repr.
    Clients need not recompute it; they echo the hash the server published.
    """
    document = {"format_version": FORMAT_VERSION, "spec": spec.model_dump(mode="json")}
    canonical = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def attribute_epsilons(spec: CollectionSpec) -> list[float | None]:
    """ε per attribute of ``spec.attributes``; ``None`` for MASK (ε set by its p) and the label.

    ``split``: ``ε·w_j/Σw`` over the reported non-MASK attributes (the label, which has no
    report of its own, takes no share). ``sample``: the full ``ε`` for each of them, since
    a report carries only one.
    """
    reported = [a for a in spec.attributes if not a.is_basket and a.name != spec.label]
    total_weight = sum(a.weight for a in reported)
    out: list[float | None] = []
    for a in spec.attributes:
        if a.is_basket or a.name == spec.label:
            out.append(None)
            continue
        assert spec.epsilon is not None  # guaranteed by CollectionSpec validation
        if spec.budget == "sample":
            out.append(spec.epsilon)
        else:
            out.append(spec.epsilon * a.weight / total_weight)
    return out


def make_mechanism(attribute: AttributeSpec, epsilon: float | None, classes: int = 1) -> Mechanism:
    """The mechanism object of one attribute (over ``d·classes`` cells for a feature)."""
    d = len(attribute.domain) * classes
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


def _segment_length(encoding: Encoding, cells: int) -> int:
    return index_width(cells) if encoding == "index" else (cells + 7) // 8


def build_config(spec: CollectionSpec) -> CollectionConfig:
    """Derive the public config (p, q, exact ε, layout, hash) from a validated spec.

    The record's ε: ``split``, the sum of the reported attributes' exact ε (sequential
    composition); ``sample``, the largest exact ε among the attributes a report may
    carry (one of them is reported; which one is independent of the data), plus the
    MASK attributes' ε either way.
    """
    label = spec.label_attribute
    k = 1 if label is None else len(label.domain)
    sample = spec.budget == "sample"
    planned: list[tuple[AttributeSpec, Mechanism, int, Encoding, int]] = []
    for attribute, eps in zip(spec.attributes, attribute_epsilons(spec), strict=True):
        if attribute.name == spec.label:
            continue
        classes = 1 if attribute.is_basket else k
        mechanism = make_mechanism(attribute, eps, classes)
        encoding: Encoding = "index" if attribute.mechanism == "grr" else "bits"
        planned.append((attribute, mechanism, classes, encoding, mechanism.d))
    n_sampled = sum(1 for a, *_ in planned if not a.is_basket) if sample else 0
    selector = index_width(n_sampled) if sample else 0
    payload = max(
        (_segment_length(enc, cells) for a, _, _, enc, cells in planned if not a.is_basket),
        default=0,
    )
    attributes: list[AttributeConfig] = []
    byte_offset = selector + (payload if sample else 0)
    stats_offset = 0
    sampled_epsilon = 0.0
    other_epsilon = 0.0
    for attribute, mechanism, classes, encoding, cells in planned:
        length = _segment_length(encoding, cells)
        exact = mechanism.exact_epsilon
        if not math.isfinite(exact):
            raise ConfigurationError(f"attribute {attribute.name!r}: ε is not finite")
        in_sample = sample and not attribute.is_basket
        count_offset = stats_offset if in_sample else None
        if in_sample:
            stats_offset += 1
            sampled_epsilon = max(sampled_epsilon, exact)
        else:
            other_epsilon += exact
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
                byte_offset=selector if in_sample else byte_offset,
                byte_length=length,
                stats_offset=stats_offset,
                classes=classes,
                sample_index=sum(1 for a in attributes if a.sample_index is not None)
                if in_sample
                else None,
                count_offset=count_offset,
            )
        )
        if not in_sample:
            byte_offset += length
        stats_offset += cells
    return CollectionConfig(
        format_version=FORMAT_VERSION,
        spec=spec,
        attributes=attributes,
        epsilon=sampled_epsilon + other_epsilon,
        report_bytes=byte_offset,
        stats_length=stats_offset,
        config_hash=spec_hash(spec),
        label=None if label is None else LabelConfig(name=label.name, domain=list(label.domain)),
        selector_bytes=selector,
    )


def mechanisms_of(config: CollectionConfig) -> list[Mechanism]:
    """The mechanism objects of a config's attributes, in layout order."""
    specs = {a.name: a for a in config.spec.attributes}
    epsilons = dict(
        zip(
            (a.name for a in config.spec.attributes),
            attribute_epsilons(config.spec),
            strict=True,
        )
    )
    return [
        make_mechanism(specs[attribute.name], epsilons[attribute.name], attribute.classes)
        for attribute in config.attributes
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
