"""The itemset part of ``ldpcollect demo``: MASK baskets through the SDK, mined, vs the truth.

Against a running aggregator: create a MASK collection, let one simulated client per
basket privatize and upload its basket through the SDK over HTTP, mine the frequent
itemsets and rules (the aggregator's job), and compare with Apriori on the true
baskets, which only the demo knows. The baskets are generated, not shipped: a seeded
Quest-style data set (:mod:`ldp_simulation.baskets`; Agrawal and Srikant, VLDB 1994), so
no licence question arises.

:func:`simulate_itemsets` returns the JSON block of ``demo --json``
(``{"p", "min_support", "by_length": {"1": {"rho", "sigma_plus", "sigma_minus"}, ...},
"top": [...], ...}``) and the text the demo prints.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ldp_client import LDPClient
from ldp_client.itemsets import job_result
from ldp_shared.analyses.itemsets import (
    BitChannel,
    FrequentItemsets,
    LengthAccuracy,
    PackedBits,
    accuracy_json,
    estimate_itemsets,
    evaluate_supports,
    mine_frequent_itemsets,
)
from ldp_shared.errors import TransportError
from ldp_shared.rand import seeded_rng
from ldp_shared.schema import CollectionSpec
from ldp_shared.wire.itemsets import ItemsetResult
from ldp_simulation.baskets import QuestParameters, basket_lists, item_names, quest_baskets
from ldp_simulation.fleet import ANALYSIS_TIMEOUT, ensure_collection, wait_counted
from ldp_simulation.progress import Progress

ITEMSET_COLLECTION = "baskets-demo"
DATA_SEED = 2024


MINING_TIMEOUT = 600.0
"""How long the demo waits for its mining job (seconds)."""


@dataclass(frozen=True)
class ItemsetDemoOptions:
    """The demo's data set and mining parameters (the defaults run in a few seconds)."""

    baskets: int = 30_000
    items: int = 60
    avg_basket_size: float = 6.0
    avg_pattern_size: float = 3.0
    patterns: int = 30
    keep_probability: float = 0.9
    min_support: float = 0.05
    min_confidence: float = 0.7
    support_reduction: float = 0.0
    top: int = 10
    fresh: bool = False  # delete the collection first (simulate --fresh)
    seed: int | None = None
    batch_size: int = 2000

    @property
    def quest(self) -> QuestParameters:
        return QuestParameters(
            n_baskets=self.baskets,
            n_items=self.items,
            avg_basket_size=self.avg_basket_size,
            avg_pattern_size=self.avg_pattern_size,
            n_patterns=self.patterns,
        )

    @property
    def dataset(self) -> str:
        return (
            f"{self.baskets:,} synthetic baskets over {self.items} items (Quest-style "
            f"T{self.avg_basket_size:g}I{self.avg_pattern_size:g}, {self.patterns} patterns, "
            f"seed {DATA_SEED})"
        )


@dataclass(frozen=True)
class ItemsetDemoResult:
    """What the aggregator released, next to the truth."""

    options: ItemsetDemoOptions
    released: ItemsetResult
    truth: FrequentItemsets
    accuracy: list[LengthAccuracy]
    names: list[str]
    seconds: float
    true_supports: dict[frozenset[str], float]
    """The exact support in the true baskets of every released itemset and rule side,
    frequent in the truth or not."""

    def _true_support(self, items: list[str]) -> float:
        return self.true_supports[frozenset(items)]

    def top_itemsets(self) -> list[dict[str, Any]]:
        """The ``top`` itemsets of two or more items with the highest estimated support."""
        longer = [i for i in self.released.itemsets if len(i.items) >= 2]
        longer.sort(key=lambda i: (-i.support, i.items))
        return [
            {
                "items": i.items,
                "support": i.support,
                "stderr": i.stderr,
                "true_support": self._true_support(i.items),
            }
            for i in longer[: self.options.top]
        ]

    def top_rules(self) -> list[dict[str, Any]]:
        """The strongest rules (released order) with their true confidence."""
        out = []
        for rule in self.released.rules[: max(1, self.options.top // 2)]:
            union = self._true_support(rule.antecedent + rule.consequent)
            base = self._true_support(rule.antecedent)
            out.append(
                {
                    "antecedent": rule.antecedent,
                    "consequent": rule.consequent,
                    "support": rule.support,
                    "confidence": rule.confidence,
                    "true_confidence": union / base if base > 0 else None,
                }
            )
        return out

    def to_json(self) -> dict[str, Any]:
        """The ``"itemsets"`` block of ``ldpcollect demo --json``."""
        privacy = self.released.privacy
        return {
            "p": self.options.keep_probability,
            "min_support": self.options.min_support,
            "support_reduction": self.options.support_reduction,
            "dataset": self.options.dataset,
            "n_baskets": self.released.n_reports,
            "n_items": self.options.items,
            "item_epsilon": privacy.item_epsilon,
            "basket_epsilon": privacy.basket_epsilon,
            "privacy": {
                "average_support": privacy.average_support,
                "weight": privacy.weight,
                "R1": privacy.R1,
                "R0": privacy.R0,
                "P": privacy.privacy,
            },
            "by_length": accuracy_json(self.accuracy),
            "top": self.top_itemsets(),
            "rules": self.top_rules(),
            "mining_seconds": self.released.seconds,
            "seconds": self.seconds,
        }

    def render(self) -> str:
        """The text the demo prints."""
        privacy = self.released.privacy
        lines = [
            f"Frequent itemsets: {self.options.dataset}",
            f"  MASK keep probability p = {self.options.keep_probability:g}: "
            f"ε = {privacy.item_epsilon:.3f} per item, {privacy.basket_epsilon:.1f} per basket; "
            f"reconstruction privacy P = {privacy.privacy:.1f}% "
            f"(s0 = {privacy.average_support:.3f}, a = {privacy.weight:g})",
            f"  min_support {self.options.min_support:g}"
            + (
                f", support reduction {self.options.support_reduction:g}"
                if self.options.support_reduction
                else ""
            )
            + f"; mined in {self.released.seconds:.2f} s",
            "",
            f"  {'length':>6} {'true':>6} {'found':>6} {'ρ %':>7} {'σ+ %':>7} {'σ− %':>7}",
        ]

        def pct(value: float | None) -> str:
            return f"{value:7.1f}" if value is not None else f"{'–':>7}"

        for m in self.accuracy:
            lines.append(
                f"  {m.length:>6} {m.true_frequent:>6} {m.reported:>6} {pct(m.rho)} "
                f"{pct(m.sigma_plus)} {pct(m.sigma_minus)}"
            )
        lines += [
            "  ρ: mean relative error |ŝ − s|/s of the supports of the true frequent itemsets"
            " found;",
            "  σ+ / σ−: itemsets reported but not truly frequent / truly frequent but missed,"
            " in % of the true ones",
            "  (Rizvi and Haritsa, VLDB 2002). P: the chance in % that an adversary who knows p"
            " fails to",
            "  reconstruct a purchase (a true 1) from its reported bit, at the catalogue's"
            " average item",
            "  support s0, counting only the 1s (weight a = 1).",
        ]
        lines += ["", f"  {'top itemsets':<40} {'estimate ± se':>17} {'true':>7}"]
        for row in self.top_itemsets():
            label = " ".join(row["items"])
            lines.append(
                f"  {label:<40} {row['support']:8.4f} ± {row['stderr']:.4f} "
                f"{row['true_support']:7.4f}"
            )
        rules = self.top_rules()
        if rules:
            lines += ["", f"  {'top rules':<40} {'confidence':>17} {'true':>7}"]
            for rule in rules:
                label = f"{' '.join(rule['antecedent'])} → {' '.join(rule['consequent'])}"
                true = rule["true_confidence"]
                lines.append(
                    f"  {label:<40} {rule['confidence']:17.3f} "
                    + (f"{true:7.3f}" if true is not None else f"{'–':>7}")
                )
        return "\n".join(lines)


def itemset_spec(options: ItemsetDemoOptions, names: list[str]) -> CollectionSpec:
    """A MASK-only collection (its ε follows from p), released from 1,000 reports."""
    return CollectionSpec.model_validate(
        {
            "name": ITEMSET_COLLECTION,
            "description": f"ldpcollect demo: frequent itemsets of {options.dataset}",
            "attributes": [
                {
                    "name": "basket",
                    "domain": names,
                    "mechanism": "mask",
                    "keep_probability": options.keep_probability,
                }
            ],
            "release": {"min_reports": 1000},
        }
    )


def run_itemsets_demo(
    base_url: str,
    admin_token: str,
    analyst_token: str,
    options: ItemsetDemoOptions | None = None,
    progress: Progress | None = None,
) -> ItemsetDemoResult:
    """Play one client per basket against a running aggregator, mine, compare with the truth."""
    started = time.perf_counter()
    opts = options or ItemsetDemoOptions()
    names = item_names(opts.items)
    packed = quest_baskets(opts.quest, DATA_SEED)
    records = [{"basket": basket} for basket in basket_lists(packed, names)]
    with LDPClient(base_url, token=admin_token) as admin:
        ensure_collection(admin, itemset_spec(opts, names), fresh=opts.fresh)
        before = admin.collection_status(ITEMSET_COLLECTION).n_reports
    sent = 0

    def on_batch(count: int) -> None:
        nonlocal sent
        sent += count
        if progress is not None:
            progress.count(f"{ITEMSET_COLLECTION}: clients reporting", sent, len(records))

    rng = None if opts.seed is None else seeded_rng(opts.seed)
    with LDPClient(base_url, rng=rng) as client:
        summary = client.submit(
            ITEMSET_COLLECTION, records, batch_size=opts.batch_size, progress=on_batch
        )
    with LDPClient(base_url, token=admin_token) as admin:
        wait_counted(admin, ITEMSET_COLLECTION, before + summary.accepted, progress)
    with LDPClient(base_url, token=analyst_token, timeout=ANALYSIS_TIMEOUT) as analyst:
        released = _mine(analyst, opts, progress)
    truth = mine_frequent_itemsets(
        PackedBits(packed), opts.items, BitChannel.exact(), opts.min_support
    )
    reported = {frozenset(itemset.items): itemset.support for itemset in released.itemsets}
    return ItemsetDemoResult(
        true_supports=exact_supports(packed, names, released),
        options=opts,
        released=released,
        truth=truth,
        accuracy=evaluate_supports(reported, truth.named(names)),
        names=names,
        seconds=time.perf_counter() - started,
    )


def _mine(analyst: LDPClient, opts: ItemsetDemoOptions, progress: Progress | None) -> ItemsetResult:
    """Start the mining job and poll it, showing its progress, until it is done."""
    label = f"{ITEMSET_COLLECTION}: mining itemsets"
    job = analyst.start_itemsets(
        ITEMSET_COLLECTION,
        min_support=opts.min_support,
        min_confidence=opts.min_confidence,
        support_reduction=opts.support_reduction,
        max_rules=100,
        wait_seconds=0.5,
    )
    deadline = time.monotonic() + MINING_TIMEOUT
    while True:
        if progress is not None:
            progress.status(label, job.progress or job.status)
        result = job_result(job)
        if result is not None:
            return result
        if time.monotonic() > deadline:
            raise TransportError(
                f"mining job {job.id!r} is still {job.status} after {MINING_TIMEOUT:g} s"
            )
        time.sleep(0.5)
        job = analyst.itemset_job(ITEMSET_COLLECTION, job.id)


def exact_supports(
    packed: NDArray[np.uint8], names: list[str], released: ItemsetResult
) -> dict[frozenset[str], float]:
    """Support in the true baskets of every itemset the release names (p = 1, no noise)."""
    wanted = {frozenset(i.items) for i in released.itemsets}
    for rule in released.rules:
        wanted |= {frozenset(rule.antecedent), frozenset(rule.antecedent + rule.consequent)}
    ordered = sorted(wanted, key=sorted)
    index = {name: i for i, name in enumerate(names)}
    exact = estimate_itemsets(
        PackedBits(packed),
        len(names),
        BitChannel.exact(),
        [[index[name] for name in itemset] for itemset in ordered],
    )
    return dict(zip(ordered, exact.support.tolist(), strict=True))


def simulate_itemsets(
    base_url: str,
    admin_token: str,
    analyst_token: str,
    options: ItemsetDemoOptions | None = None,
    progress: Progress | None = None,
) -> tuple[dict[str, Any], str]:
    """``(json_block, text)`` of the itemset demo (see :func:`run_itemsets_demo`)."""
    result = run_itemsets_demo(base_url, admin_token, analyst_token, options, progress)
    return result.to_json(), result.render()
