"""The privacy accountant: the one place that turns a collection spec into ε (and δ).

From a validated :class:`~ldp_shared.schema.CollectionSpec` it derives

* the ε **allotted** to each attribute that takes a share of the record's budget
  (``takes_budget``): under ``split``, ``ε·w_j/Σw`` over the reported attributes (the
  label has no report of its own and takes no share); under ``sample``, the full ``ε``,
  since a report carries one of them. Attributes whose ε follows from their own
  parameters (MASK) get none;
* each attribute's **exact** privacy, computed back by its randomizer from the
  parameters it perturbs with (``p``, ``q``, ...), not the nominal share;
* the privacy of one **report**: sequential composition (Dwork and Roth 2014, Thm 3.16),
  so under ``split`` the sum of the attributes' ε (and δ); under ``sample``, the largest
  ε among the attributes a report may carry (one is carried, chosen on the device
  independently of the data) plus the sum over the attributes every report carries;
* the privacy of the **label** of a naive Bayes collection, which is reported jointly
  with every feature: the composition of the features' ε (sum under ``split``, largest
  under ``sample``).

One record makes one report, so a record's ε is the report's. A device that sends
``r`` reports to a collection spends ``r`` times it, unless it replays a memoised report
(the SDK's ledger keeps that count).

**Longitudinal attributes** (L-GRR, dBitFlipPM: :mod:`ldp_shared.mechanisms.longitudinal`)
have a second number, ε∞ (:attr:`AttributeAccount.permanent`): the ε of all of a
device's reports about one memoised key (a value for L-GRR, a bucket vector for
dBitFlipPM), however many. Their ε of one report still enters the report's ε above;
what a device's ledger charges is :attr:`PrivacyAccount.charged_per_report` for every
fresh report (the other attributes' ε) plus ε∞ once per distinct key of each
longitudinal attribute (``docs/longitudinal.md``).

Every exact ε must be finite and positive: an infinite ε means some answer is impossible
under some value (floating point rounded a probability to 0 or 1), and ε = 0 means the
answers do not depend on the value at all, so nothing could be estimated. Nor may it
exceed the allotted ε by more than :data:`~ldp_shared.mechanisms.base.EPSILON_SLACK`
(relative, and absolute below ε = 1), for every mechanism alike.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ldp_shared.errors import ConfigurationError
from ldp_shared.mechanisms.base import EPSILON_SLACK, AttributeSpec, Randomizer
from ldp_shared.mechanisms.longitudinal import LongitudinalRandomizer
from ldp_shared.schema import CollectionSpec


@dataclass(frozen=True)
class Privacy:
    """An (ε, δ) guarantee; δ = 0 is pure ε-LDP."""

    epsilon: float
    delta: float = 0.0


@dataclass(frozen=True)
class AttributeAccount:
    """One reported attribute: its allotted ε, its randomizer and what it really spends."""

    spec: AttributeSpec
    allotted: float | None
    classes: int
    sampled: bool
    randomizer: Randomizer

    @property
    def privacy(self) -> Privacy:
        return Privacy(self.randomizer.exact_epsilon, self.randomizer.delta)

    @property
    def permanent(self) -> float | None:
        """ε∞ per distinct memoised key of a longitudinal attribute; ``None`` otherwise."""
        randomizer = self.randomizer
        if isinstance(randomizer, LongitudinalRandomizer):
            return randomizer.permanent_epsilon
        return None


@dataclass(frozen=True)
class PrivacyAccount:
    """A collection's privacy, per attribute, per report (= per record) and for its label."""

    attributes: tuple[AttributeAccount, ...]
    report: Privacy
    label: Privacy | None
    label_name: str | None = None

    @property
    def record(self) -> Privacy:
        """One record makes one report."""
        return self.report

    @property
    def longitudinal(self) -> tuple[AttributeAccount, ...]:
        """The attributes whose permanent randomization a device memoises."""
        return tuple(e for e in self.attributes if e.permanent is not None)

    @property
    def charged_per_report(self) -> Privacy:
        """What a ledger charges every fresh report: the report's privacy composed over
        the attributes that are not longitudinal (those are charged ε∞ per distinct key
        instead). The report's own privacy when there is no longitudinal attribute."""
        if not self.longitudinal:
            return self.report
        rest = [e for e in self.attributes if e.permanent is None]
        return _compose(
            [e.privacy for e in rest if not e.sampled], [e.privacy for e in rest if e.sampled]
        )

    def attribute(self, name: str) -> Privacy:
        """The privacy an estimate of attribute ``name`` (or of the label) rests on."""
        if name == self.label_name and self.label is not None:
            return self.label
        for entry in self.attributes:
            if entry.spec.name == name:
                return entry.privacy
        raise KeyError(name)


def allotted_epsilons(spec: CollectionSpec) -> list[float | None]:
    """The ε allotted to each of ``spec.attributes`` (``None``: no share of the budget)."""
    reported = [a for a in spec.attributes if a.takes_budget and a.name != spec.label]
    total_weight = sum(a.weight for a in reported)
    out: list[float | None] = []
    for a in spec.attributes:
        if not a.takes_budget or a.name == spec.label:
            out.append(None)
            continue
        assert spec.epsilon is not None  # guaranteed by CollectionSpec validation
        share = spec.epsilon * a.weight / total_weight
        out.append(spec.epsilon if spec.budget == "sample" else share)
    return out


def _check_exact(attribute: AttributeSpec, privacy: Privacy, allotted: float | None) -> None:
    eps = privacy.epsilon
    if math.isinf(eps) or math.isnan(eps):
        asked = "" if allotted is None else f"at ε = {allotted!r} "
        raise ConfigurationError(
            f"attribute {attribute.name!r}: ε is too large: {asked}its mechanism's"
            " probabilities round to 0 or 1 in floating point, so what it would spend is"
            " unbounded (no privacy at all); use a smaller ε"
        )
    if eps <= 0.0:
        raise ConfigurationError(
            f"attribute {attribute.name!r}: ε rounds to 0, so its answers would not depend"
            " on the value and nothing could be estimated; use a larger ε"
        )
    if allotted is not None and eps - allotted > EPSILON_SLACK * max(allotted, 1.0):
        raise ConfigurationError(
            f"attribute {attribute.name!r}: its mechanism would spend ε = {eps!r}, more than"
            f" the {allotted!r} allotted to it (floating point cannot represent its"
            " probabilities that finely at this ε); use a smaller ε"
        )


def _compose(parts: list[Privacy], sampled: list[Privacy]) -> Privacy:
    """Every report carries all of ``parts`` and one of ``sampled``."""
    epsilon = sum(p.epsilon for p in parts) + max((p.epsilon for p in sampled), default=0.0)
    delta = sum(p.delta for p in parts) + max((p.delta for p in sampled), default=0.0)
    return Privacy(epsilon, delta)


def account(spec: CollectionSpec) -> PrivacyAccount:
    """The privacy account of a validated spec (attributes in report layout order)."""
    label = spec.label_attribute
    k = 1 if label is None else len(label.values)
    sample = spec.budget == "sample"
    entries: list[AttributeAccount] = []
    for attribute, allotted in zip(spec.attributes, allotted_epsilons(spec), strict=True):
        if attribute.name == spec.label:
            continue
        classes = k if attribute.joins_label and label is not None else 1
        try:
            entry = AttributeAccount(
                spec=attribute,
                allotted=allotted,
                classes=classes,
                sampled=sample and attribute.takes_budget,
                randomizer=attribute.randomizer(allotted, classes),
            )
            _check_exact(attribute, entry.privacy, allotted)
            if entry.permanent is not None:
                _check_exact(attribute, Privacy(entry.permanent), None)
        except ConfigurationError as error:
            if error.detail.startswith(f"attribute {attribute.name!r}"):
                raise
            raise ConfigurationError(f"attribute {attribute.name!r}: {error.detail}") from None
        entries.append(entry)
    report = _compose(
        [e.privacy for e in entries if not e.sampled], [e.privacy for e in entries if e.sampled]
    )
    label_privacy = None
    if label is not None:
        features = [e.privacy for e in entries if e.classes > 1]
        label_privacy = _compose([], features) if sample else _compose(features, [])
    return PrivacyAccount(
        attributes=tuple(entries), report=report, label=label_privacy, label_name=spec.label
    )
