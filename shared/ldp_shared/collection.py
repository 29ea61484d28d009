"""The public config of a collection: derived once from its spec, shared by client and server.

:func:`build_config` turns a :class:`~ldp_shared.schema.CollectionSpec` into a
:class:`CollectionConfig`: per attribute the exact ε (and δ) the accountant
(:mod:`ldp_shared.accountant`) computes, the parameters its randomizer publishes
(``p``, ``q``, ...), its place in the report (byte offset and length) and in the
sufficient statistics; the record's ε; and the config hash that every report carries.
Clients rebuild the config from the spec themselves (:func:`verify_config`), so a server
cannot talk them into weaker noise than the stated ε.

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
without a label, with the ``split`` budget and with the four original mechanisms
publishes exactly the JSON (and hash) it did before labels and the registry existed.
"""

from __future__ import annotations

import hashlib
import json
import math
import weakref

from pydantic import BaseModel, ConfigDict, Field

from ldp_shared.accountant import PrivacyAccount, account, allotted_epsilons
from ldp_shared.central import ShuffledConfig, shuffled_config
from ldp_shared.errors import ConfigurationError
from ldp_shared.mechanisms.base import AttributeSpec, Randomizer
from ldp_shared.mechanisms.categorical import index_width
from ldp_shared.schema import CollectionSpec

__all__ = [
    "FLOAT_TOLERANCE",
    "FORMAT_VERSION",
    "AttributeConfig",
    "CollectionConfig",
    "LabelConfig",
    "allotted_epsilons",
    "build_config",
    "index_width",
    "spec_hash",
    "verify_config",
]

FORMAT_VERSION = 1

_ACCOUNTS: dict[int, PrivacyAccount] = {}
"""The privacy account of each live spec object, by identity (specs are immutable; an
entry goes when its spec does): decoding a batch and every estimate read it, so it is
computed once per spec, not per call."""


def _remember(spec: CollectionSpec, privacy: PrivacyAccount) -> PrivacyAccount:
    if id(spec) not in _ACCOUNTS:
        _ACCOUNTS[id(spec)] = privacy
        weakref.finalize(spec, _ACCOUNTS.pop, id(spec), None)
    return privacy


def account_of(spec: CollectionSpec) -> PrivacyAccount:
    """:func:`~ldp_shared.accountant.account` of ``spec``, computed once per spec object."""
    found = _ACCOUNTS.get(id(spec))
    return found if found is not None else _remember(spec, account(spec))


def _is_none(value: object) -> bool:
    return value is None


def _is_one(value: object) -> bool:
    return value == 1


def _is_zero(value: object) -> bool:
    return value == 0


class AttributeConfig(BaseModel):
    """One attribute as a client perturbs it and a server decodes it.

    The layout fields (segment, statistics offsets) are the config's; the parameters
    next to ε are what the attribute's randomizer publishes
    (:meth:`~ldp_shared.mechanisms.base.Randomizer.published`): ``p`` and ``q`` for the
    bitwise randomized-response mechanisms, plus MASK's ``keep_probability`` and
    ``item_epsilon``; a mechanism may publish fields of its own (kept as extra fields).
    """

    model_config = ConfigDict(frozen=True, extra="allow")

    name: str
    mechanism: str
    domain: list[str] | None = Field(default=None, exclude_if=_is_none)
    epsilon: float
    delta: float = Field(default=0.0, exclude_if=_is_zero, description="δ of (ε, δ)-LDP")
    p: float | None = Field(default=None, exclude_if=_is_none)
    q: float | None = Field(default=None, exclude_if=_is_none)
    # serialised even when null, as every config published before the registry did
    keep_probability: float | None = None
    item_epsilon: float | None = None
    encoding: str
    byte_offset: int
    byte_length: int
    stats_offset: int
    float_offset: int | None = Field(
        default=None,
        exclude_if=_is_none,
        description="where the attribute's float64 statistics start (if it keeps any)",
    )
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
    def values(self) -> list[str]:
        """The attribute's value domain (empty when it has none)."""
        return [] if self.domain is None else self.domain

    @property
    def d(self) -> int:
        """The number of values of the attribute (0 when it has no value domain)."""
        return len(self.values)

    @property
    def bit_channel(self) -> tuple[float, float]:
        """``(p, q)`` of a bitwise randomized-response mechanism (SUE, OUE, GRR, MASK)."""
        if self.p is None or self.q is None:
            raise ConfigurationError(
                f"attribute {self.name!r}: mechanism {self.mechanism!r} is not a bitwise"
                " randomized response (it publishes no p and q)"
            )
        return self.p, self.q

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
    delta: float = Field(default=0.0, exclude_if=_is_zero, description="δ of a record")
    report_bytes: int
    stats_length: int
    float_stats_length: int = Field(
        default=0, exclude_if=_is_zero, description="float64 statistics after the int64 ones"
    )
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
    # Absent unless the spec says "shuffled": unshuffled configs publish what they did.
    shuffling: ShuffledConfig | None = Field(
        default=None,
        exclude_if=_is_none,
        description="shuffled collections: the local and central guarantees (central.py)",
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

    def spec_of(self, attribute: AttributeConfig) -> AttributeSpec:
        """The spec (mechanism parameters and capabilities) of one of the attributes."""
        return next(a for a in self.spec.attributes if a.name == attribute.name)

    @property
    def privacy(self) -> PrivacyAccount:
        """The accountant's view of the spec (ε and δ per attribute, report and label),
        derived from the spec (never from the published numbers), once per spec object."""
        return account_of(self.spec)

    @property
    def randomizers(self) -> list[Randomizer]:
        """Each reported attribute's randomizer, in layout order."""
        return [entry.randomizer for entry in self.privacy.attributes]

    def randomizer(self, attribute: AttributeConfig) -> Randomizer:
        """The randomizer of one of the config's attributes."""
        return self.randomizers[self.attributes.index(attribute)]


def spec_hash(spec: CollectionSpec) -> str:
    """SHA-256 (hex) of the canonical JSON of the spec and the format version.

    Canonical: keys sorted, no whitespace, UTF-8, floats as Python's shortest repr.
    Clients need not recompute it; they echo the hash the server published.
    """
    document = {"format_version": FORMAT_VERSION, "spec": spec.model_dump(mode="json")}
    canonical = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def build_config(spec: CollectionSpec) -> CollectionConfig:
    """Derive the public config (the accountant's exact ε, parameters, layout, hash).

    Layout: under ``sample`` a report opens with the selector and one payload as long as
    the longest sampled segment; the attributes every report carries follow, each on a
    byte boundary. Statistics: per attribute, its int64 blocks from ``stats_offset``
    (preceded by its carried count ``n_j`` under ``sample``) and its float64 blocks from
    ``float_offset``.
    """
    privacy = account(spec)
    label = spec.label_attribute
    sampled_entries = [e for e in privacy.attributes if e.sampled]
    selector = index_width(len(sampled_entries)) if sampled_entries else 0
    payload = max((e.randomizer.segment.byte_length for e in sampled_entries), default=0)
    attributes: list[AttributeConfig] = []
    byte_offset = selector + payload
    stats_offset = 0
    float_offset = 0
    for entry in privacy.attributes:
        randomizer = entry.randomizer
        segment = randomizer.segment
        count_offset = stats_offset if entry.sampled else None
        if entry.sampled:
            stats_offset += 1
        int_length = sum(b.length for b in randomizer.stats_layout if b.dtype == "int64")
        float_length = sum(b.length for b in randomizer.stats_layout if b.dtype == "float64")
        values = entry.spec.values
        attributes.append(
            AttributeConfig(
                name=entry.spec.name,
                mechanism=entry.spec.mechanism,
                domain=values if values else None,
                epsilon=entry.privacy.epsilon,
                delta=entry.privacy.delta,
                **randomizer.published(),
                encoding=segment.encoding,
                byte_offset=selector if entry.sampled else byte_offset,
                byte_length=segment.byte_length,
                stats_offset=stats_offset,
                float_offset=float_offset if float_length else None,
                classes=entry.classes,
                sample_index=sum(1 for a in attributes if a.sample_index is not None)
                if entry.sampled
                else None,
                count_offset=count_offset,
            )
        )
        if not entry.sampled:
            byte_offset += segment.byte_length
        stats_offset += int_length
        float_offset += float_length
    config = CollectionConfig(
        format_version=FORMAT_VERSION,
        spec=spec,
        attributes=attributes,
        epsilon=privacy.report.epsilon,
        delta=privacy.report.delta,
        report_bytes=byte_offset,
        stats_length=stats_offset,
        float_stats_length=float_offset,
        config_hash=spec_hash(spec),
        label=None if label is None else LabelConfig(name=label.name, domain=label.values),
        selector_bytes=selector,
        shuffling=shuffled_config(
            privacy.report.epsilon, privacy.report.delta, spec.release.min_reports
        )
        if spec.shuffled
        else None,
    )
    _remember(spec, privacy)
    return config


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
