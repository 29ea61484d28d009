"""The device owner's privacy policy: what a collection may ask of this device (pure).

A :class:`DevicePolicy` is checked against the *verified* config of a collection (the
SDK rebuilds every config from its spec, :func:`ldp_shared.collection.verify_config`, so
the ε it compares is the ε the noise really gives, not a number the server states).
A refusal is a :class:`~ldp_shared.errors.PrivacyPolicyError`, raised before anything
is perturbed, stored or sent. See ``docs/device-privacy.md`` for the defaults and why.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass

from ldp_shared.collection import CollectionConfig
from ldp_shared.errors import ConfigurationError, PrivacyPolicyError

__all__ = ["DEFAULT_MAX_DELTA_PER_RECORD", "DEFAULT_MAX_EPSILON_PER_RECORD", "DevicePolicy"]

DEFAULT_MAX_EPSILON_PER_RECORD = 8.0
"""The largest ε per record a device accepts unless its owner says otherwise.

The top of what deployed local-DP systems spend on one contribution: Apple's per-donation
budgets run from 2 to 8, RAPPOR's permanent response costs ε∞ = 2h·ln((1 - f/2)/(f/2)),
4·ln 3 ≈ 4.4 with its example parameters (h = 2, f = 0.5). Reasoning in
``docs/device-privacy.md``.
"""

DEFAULT_MAX_DELTA_PER_RECORD = 1e-6
"""The largest δ per record a device accepts unless its owner says otherwise.

δ bounds the probability that the privacy loss of a report exceeds ε without limit, so it
must be far below one over the number of people a collection can reach (the usual rule
``δ ≪ 1/n``): at 10⁻⁶ fewer than one device in a million-strong fleet is expected to meet
that event. Pure ε mechanisms have δ = 0 and always pass.
"""


@dataclass(frozen=True)
class DevicePolicy:
    """What the owner of this device allows collections to take.

    ``max_epsilon_per_record``: the largest ε one record may cost (``config.epsilon``;
    ``math.inf`` for no limit). MASK basket collections spend ε per item times the
    catalogue size, far above the default: they need an owner who raises it.

    ``allowed_mechanisms``: the mechanism names every attribute of a collection must use
    (compared to ``attribute.mechanism`` of its config); ``None`` allows all of them.

    ``max_delta_per_record``: the largest δ one record may cost (``config.delta``, the
    sum over its (ε, δ) attributes), in ``[0, 1]``.

    ``max_reports_per_collection``: the most reports this device makes for one
    collection (one config hash), memoised repeats included; ``None`` for no limit.
    Counting across runs needs a ledger, so a client refuses this limit without one.

    ``max_epsilon_per_collection``: the most ε one collection (one config hash) may cost
    this device over its life, as its ledger charges it: ε per fresh report, ε∞ once per
    distinct value of a longitudinal attribute (``docs/longitudinal.md``), nothing for
    memoised repeats. ``None`` for no limit; it too needs a ledger.
    """

    max_epsilon_per_record: float = DEFAULT_MAX_EPSILON_PER_RECORD
    allowed_mechanisms: Collection[str] | None = None
    max_delta_per_record: float = DEFAULT_MAX_DELTA_PER_RECORD
    max_reports_per_collection: int | None = None
    max_epsilon_per_collection: float | None = None

    def __post_init__(self) -> None:
        epsilon = self.max_epsilon_per_record
        if (
            isinstance(epsilon, bool)
            or not isinstance(epsilon, int | float)
            or math.isnan(epsilon)
            or epsilon <= 0
        ):
            raise ConfigurationError(
                "max_epsilon_per_record must be a number > 0 (math.inf for no limit),"
                f" got {epsilon!r}"
            )
        object.__setattr__(self, "max_epsilon_per_record", float(epsilon))
        delta = self.max_delta_per_record
        if isinstance(delta, bool) or not isinstance(delta, int | float) or not 0 <= delta <= 1:
            raise ConfigurationError(f"max_delta_per_record must lie in [0, 1], got {delta!r}")
        object.__setattr__(self, "max_delta_per_record", float(delta))
        mechanisms = self.allowed_mechanisms
        if mechanisms is not None:
            if isinstance(mechanisms, str) or not all(isinstance(m, str) for m in mechanisms):
                raise ConfigurationError(
                    "allowed_mechanisms must be a collection of mechanism names (strings)"
                )
            object.__setattr__(self, "allowed_mechanisms", frozenset(mechanisms))
        limit = self.max_reports_per_collection
        if limit is not None and (
            isinstance(limit, bool) or not isinstance(limit, int) or limit < 0
        ):
            raise ConfigurationError(
                f"max_reports_per_collection must be an integer >= 0 or None, got {limit!r}"
            )
        lifetime = self.max_epsilon_per_collection
        if lifetime is not None:
            if isinstance(lifetime, bool) or not isinstance(lifetime, int | float):
                lifetime = math.nan
            if math.isnan(lifetime) or lifetime <= 0:
                raise ConfigurationError(
                    "max_epsilon_per_collection must be a number > 0 or None,"
                    f" got {self.max_epsilon_per_collection!r}"
                )
            object.__setattr__(self, "max_epsilon_per_collection", float(lifetime))

    def check_collection(self, config: CollectionConfig) -> None:
        """Refuse (:class:`PrivacyPolicyError`) a collection this policy does not allow."""
        limit = self.max_epsilon_per_record
        # a collection asked for ε = limit: its exact ε, rebuilt from p and q, may be
        # the limit plus a rounding error, which is no reason to refuse it
        if config.epsilon > limit and not math.isclose(config.epsilon, limit, rel_tol=1e-9):
            raise PrivacyPolicyError(_epsilon_refusal(config, limit))
        if config.delta > self.max_delta_per_record:
            raise PrivacyPolicyError(
                f"collection {config.name!r} spends δ = {config.delta:.3g} per record, over this"
                f" device's limit of {self.max_delta_per_record:g}"
                " (DevicePolicy.max_delta_per_record)"
            )
        first = first_report_cost(config)
        if self.max_epsilon_per_collection is not None and _over(
            first, self.max_epsilon_per_collection
        ):
            raise PrivacyPolicyError(
                f"collection {config.name!r}: its first report costs this device ε = {first:.4g}"
                f" (ε∞ of each longitudinal attribute included), over its limit of"
                f" {self.max_epsilon_per_collection:g} per collection"
                " (DevicePolicy.max_epsilon_per_collection)"
            )
        if self.allowed_mechanisms is not None:
            refused = sorted(
                {a.mechanism for a in config.attributes} - set(self.allowed_mechanisms)
            )
            if refused:
                raise PrivacyPolicyError(
                    f"collection {config.name!r} uses the mechanism(s) {refused}, which this"
                    f" device's policy does not allow (allowed: {sorted(self.allowed_mechanisms)})"
                )

    def check_report_count(self, config: CollectionConfig, made: int, more: int) -> None:
        """Refuse ``more`` reports when ``made`` exist already and the limit would be passed."""
        limit = self.max_reports_per_collection
        if limit is not None and made + more > limit:
            raise PrivacyPolicyError(
                f"collection {config.name!r}: this device has made {made} of at most {limit}"
                f" reports allowed by its policy; {more} more would pass the limit"
            )

    def check_collection_epsilon(self, config: CollectionConfig, spent: float, more: float) -> None:
        """Refuse reports that would charge ``more`` ε to a collection that has cost
        ``spent`` already, past :attr:`max_epsilon_per_collection`."""
        limit = self.max_epsilon_per_collection
        if limit is not None and more > 0 and _over(spent + more, limit):
            raise PrivacyPolicyError(
                f"collection {config.name!r} has cost this device ε = {spent:.4g}; these"
                f" reports would charge {more:.4g} more, past its limit of {limit:g} per"
                " collection (DevicePolicy.max_epsilon_per_collection)"
            )


def first_report_cost(config: CollectionConfig) -> float:
    """What a ledger charges a collection's first report: its ε per report without the
    longitudinal attributes, plus each longitudinal attribute's ε∞."""
    privacy = config.privacy
    permanent = sum(e.permanent or 0.0 for e in privacy.longitudinal)
    return privacy.charged_per_report.epsilon + permanent


def _over(epsilon: float, limit: float) -> bool:
    """Above ``limit`` by more than rounding (an ε asked to equal it passes)."""
    return epsilon > limit and not math.isclose(epsilon, limit, rel_tol=1e-9)


def _epsilon_refusal(config: CollectionConfig, limit: float) -> str:
    message = (
        f"collection {config.name!r} spends ε = {config.epsilon:.4g} per record, over this"
        f" device's limit of {limit:g} (DevicePolicy.max_epsilon_per_record)"
    )
    baskets = [a for a in config.attributes if config.spec_of(a).is_basket]
    if baskets:
        parts = ", ".join(f"{a.name!r} ε = {a.epsilon:.4g}" for a in baskets)
        message += (
            f"; its MASK basket attribute(s) alone cost {parts} (ε per item times the"
            " catalogue size): basket collections need an owner who raises the limit,"
            " e.g. DevicePolicy(max_epsilon_per_record=...)"
        )
    return message
