"""What the aggregator knows of the privacy devices have spent (``GET /v1/privacy``): per
collection and per training job, the (ε, δ) of one report, the reports and releases so
far, and the bound for a device that took part in all of them.

The bound composes sequentially (Dwork and Roth 2014, *The Algorithmic Foundations of
Differential Privacy*, Thm 3.16): reports of (ε_i, δ_i) each about one person are
together at most (Σ ε_i, Σ δ_i). The aggregator counts reports, not senders (nothing it
stores identifies or orders a sender), so the bound is for one report per collection
and per job; each further fresh report to a collection adds its ε per record again, as
the device's ledger counts (``docs/device-privacy.md``). Releases (estimates, models,
mined itemsets) are computed from the reports alone: post-processing, which spends
nothing more (Dwork and Roth 2014, Prop 2.1).
"""

from __future__ import annotations

from pydantic import Field

from ldp_shared.central import CentralRelease
from ldp_shared.wire.base import WireModel, central_field


class CollectionSpend(WireModel):
    """One collection: what one report costs, and how much has been sent and released."""

    collection: str
    kind: str = Field(description="what the collection holds, e.g. 'frequencies + numeric'")
    epsilon_per_record: float = Field(description="exact ε of one record's one report")
    delta_per_record: float = Field(description="exact δ of one report (0: pure ε-LDP)")
    permanent_epsilon: float | None = Field(
        default=None,
        description=(
            "longitudinal attributes (L-GRR, dBitFlipPM): ε∞ per distinct memoised value,"
            " summed over them, the bound of all of a device's reports about one value"
        ),
    )
    reports: int = Field(description="reports stored so far (all periods)")
    releases: int = Field(
        description="results stored so far: naive Bayes models and finished mining jobs"
    )
    central: CentralRelease | None = central_field(
        "of the reports so far (absent when unshuffled or empty); the ε per record holds"
        " against everyone"
    )


class TrainingSpend(WireModel):
    """One training job: each device sends one report (a gradient or a loss)."""

    collection: str
    job: str
    status: str
    epsilon_per_device: float = Field(description="exact ε of the one report (the larger role)")
    delta_per_device: float
    reports: int = Field(description="reports received so far, closed rounds and the open one")
    rounds_closed: int
    rounds: int
    released: bool = Field(description="whether its model is released (the job is done)")


class DeviceBound(WireModel):
    """The most a device that took part in everything listed has spent."""

    epsilon: float
    delta: float
    reports: int = Field(description="the reports composed: one per collection and per job")
    rule: str = Field(description="the composition rule, in words")


class PrivacySpent(WireModel):
    """``GET /v1/privacy``: every collection and training job, and the composed bound."""

    collections: list[CollectionSpend]
    training_jobs: list[TrainingSpend]
    all_of_them: DeviceBound


COMPOSITION_RULE = (
    "sequential composition (Dwork and Roth 2014, Thm 3.16): one report to every"
    " collection and one to every training job cost at most the sum of their ε and the sum"
    " of their δ. Each further fresh report to a collection adds its ε per record again"
    " (memoised repeats add nothing; the device's ledger counts them). Releases are"
    " post-processing of the reports and spend nothing more."
)

__all__ = [
    "COMPOSITION_RULE",
    "CollectionSpend",
    "DeviceBound",
    "PrivacySpent",
    "TrainingSpend",
]
