"""``ldpcollect demo``: a real aggregator, 100,000 simulated clients, honest estimates.

This module composes the demo from its parts; it is what ``ldpcollect demo`` and
``ldpcollect simulate`` run (:mod:`ldp_simulation.cli`).

:func:`run_demo` starts ``ldpcollect serve`` as a subprocess on a free loopback port with
a SQLite file in a temporary folder (:func:`ldp_simulation.fleet.running_aggregator`) and
runs :func:`simulate` against it; ``ldpcollect simulate`` runs :func:`simulate` against
aggregators that are already running. :func:`simulate` plays, one after the other:

1. the frequencies of every attribute of the bundled UCI Car Evaluation data, compared
   with the truth (:mod:`ldp_simulation.demo_frequencies`);
2. a second collection, labelled with the car's class, that trains a naive Bayes model
   from the reports of a training split and scores it on the held-out records
   (:mod:`ldp_simulation.demo_naive_bayes`);
3. a mixed collection over an extract of UCI Adult: the means of age and hours per week
   with their intervals and spread, and the frequencies of sex, compared with the truth
   (:mod:`ldp_simulation.demo_numeric`);
4. MASK baskets, mined for frequent itemsets and rules (:mod:`ldp_simulation.demo_itemsets`);
5. English words nobody listed, found by the aggregator as heavy hitters
   (:mod:`ldp_simulation.demo_open_domain`).
"""

from __future__ import annotations

import secrets
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ldp_shared.wire.releases import FrequencyResult
from ldp_simulation.demo_frequencies import (
    DEMO_COLLECTION,
    format_frequencies,
    frequency_json,
    simulate_frequencies,
)
from ldp_simulation.demo_itemsets import ItemsetDemoOptions, simulate_itemsets
from ldp_simulation.demo_naive_bayes import format_naive_bayes, simulate_naive_bayes
from ldp_simulation.demo_numeric import format_numeric, simulate_numeric
from ldp_simulation.demo_open_domain import format_open_domain, simulate_open_domain
from ldp_simulation.drift import chance_range
from ldp_simulation.fleet import DemoOptions, running_aggregator
from ldp_simulation.progress import Progress


@dataclass
class DemoResult:
    """What the whole demo reports: the frequency part, then the others in ``extras``."""

    collection: str
    dataset: str
    mechanism: str
    n_reports: int
    epsilon: float
    """ε per record as asked for (``--epsilon``)."""
    exact_epsilon: float
    """ε per record computed back from the mechanisms' probabilities (it may differ from
    :attr:`epsilon` in the last bits of a float: 3.9999999999999987 for 4)."""
    confidence: float
    attributes: dict[str, FrequencyResult]
    truth: dict[str, list[float]]
    seconds: float
    citation: str
    dataset_records: int = 0
    """How many distinct records the data set has (``n_reports`` replays whole copies)."""
    extras: dict[str, Any] = field(default_factory=dict)
    itemsets_text: str = ""

    @property
    def intervals(self) -> int:
        """How many (attribute, value) frequency intervals the tables show."""
        return sum(len(self.truth[name]) for name in self.attributes)

    @property
    def covered(self) -> int:
        """How many of them contain the true frequency."""
        hits = 0
        for name, result in self.attributes.items():
            true = np.asarray(self.truth[name])
            inside = (np.asarray(result.ci_low) <= true) & (true <= np.asarray(result.ci_high))
            hits += int(inside.sum())
        return hits

    @property
    def coverage(self) -> float:
        """Fraction of all (attribute, value) intervals that contain the true frequency."""
        return self.covered / self.intervals

    def to_json(self) -> dict[str, Any]:
        return {
            "collection": self.collection,
            "dataset": self.dataset,
            "mechanism": self.mechanism,
            "n_reports": self.n_reports,
            "epsilon": self.epsilon,
            "exact_epsilon": self.exact_epsilon,
            "confidence": self.confidence,
            "frequencies": {
                name: frequency_json(r, self.truth[name]) for name, r in self.attributes.items()
            },
            "coverage": self.coverage,
            "intervals": self.intervals,
            "covered": self.covered,
            "expected_by_chance": list(chance_range(self.intervals, self.confidence)),
            "seconds": self.seconds,
            "data_citation": self.citation,
            **self.extras,
        }


def simulate(
    base_urls: Sequence[str],
    admin_token: str,
    analyst_token: str,
    options: DemoOptions,
    progress: Progress | None = None,
) -> DemoResult:
    """Play one client per record against running aggregators, then read the estimates.

    The records are dealt to the aggregators in turn, one batch each, as a load balancer
    would; the estimates are read from the first one (all share one database).
    """
    started = time.perf_counter()
    frequencies = simulate_frequencies(base_urls, admin_token, analyst_token, options, progress)
    first = next(iter(frequencies.attributes.values()))
    naive_bayes = simulate_naive_bayes(base_urls, admin_token, analyst_token, options, progress)
    numeric = simulate_numeric(base_urls, admin_token, analyst_token, options, progress)
    itemset_options = ItemsetDemoOptions(seed=options.seed, fresh=options.fresh)
    itemsets, itemsets_text = simulate_itemsets(
        base_urls[0], admin_token, analyst_token, itemset_options, progress
    )
    words = simulate_open_domain(base_urls, admin_token, analyst_token, options, progress)
    return DemoResult(
        collection=DEMO_COLLECTION,
        dataset=frequencies.dataset.name,
        mechanism=options.mechanism,
        n_reports=first.n_reports,
        epsilon=options.epsilon,
        exact_epsilon=first.record_epsilon,
        confidence=options.confidence,
        attributes=frequencies.attributes,
        truth=frequencies.truth,
        seconds=time.perf_counter() - started,
        citation=frequencies.dataset.citation,
        dataset_records=len(frequencies.dataset.records),
        extras={
            "naive_bayes": naive_bayes.to_json(),
            "numeric": numeric.to_json(),
            "itemsets": itemsets,
            "open_domain": words.to_json(),
        },
        itemsets_text=itemsets_text,
    )


def run_demo(options: DemoOptions, progress: Progress | None = None) -> DemoResult:
    """The whole demo: a fresh aggregator on a temporary SQLite file, then :func:`simulate`."""
    started = time.perf_counter()
    admin_token = secrets.token_urlsafe(24)
    analyst_token = secrets.token_urlsafe(24)
    with tempfile.TemporaryDirectory(prefix="ldpcollect-demo-") as folder:
        database_url = f"sqlite:///{Path(folder) / 'demo.db'}"
        with running_aggregator(database_url, admin_token, analyst_token) as base_url:
            result = simulate([base_url], admin_token, analyst_token, options, progress)
    result.seconds = time.perf_counter() - started
    return result


def format_table(result: DemoResult, title: str = "ldpcollect demo") -> str:
    """The text the demo prints: the frequency tables, naive Bayes, itemsets, coverage;
    ``title`` names the command that ran (``ldpcollect demo`` or ``ldpcollect simulate``)."""
    level = f"{result.confidence:.0%}"
    lines = [
        f"{title}: {result.n_reports:,} clients reported the {result.dataset} data "
        f"with {result.mechanism.upper()} at ε = {result.epsilon:.3g} per record",
        *explain_clients(result.n_reports, result.dataset_records),
        *explain_split(result),
        f"data: {result.citation}",
        "",
    ]
    lines += format_frequencies(result.to_json()["frequencies"], result.confidence)
    if "naive_bayes" in result.extras:
        lines += [*format_naive_bayes(result.extras["naive_bayes"], result.mechanism), ""]
    if "numeric" in result.extras:
        lines += format_numeric(result.extras["numeric"])
    if result.itemsets_text:
        lines += [result.itemsets_text, ""]
    if "open_domain" in result.extras:
        lines += format_open_domain(result.extras["open_domain"])
    return "\n".join(lines + coverage_lines(result, level))


def coverage_lines(result: DemoResult, level: str) -> list[str]:
    """How many frequency intervals cover the truth, beside what chance alone gives."""
    n, hits = result.intervals, result.covered
    low, high = chance_range(n, result.confidence)
    return [
        f"{hits} of the {n} {level} intervals of the {result.dataset} tables"
        f" ({result.coverage:.1%}) cover the true frequency; {result.seconds:.1f} s in all.",
        f"  At {level} each, chance alone leaves {n - high} to {n - low} of {n} uncovered in 95%"
        f" of runs (if the intervals were independent): a few 'NO's are expected, more than"
        f" {n - low} would point to a fault.",
    ]


def explain_clients(clients: int, records: int) -> list[str]:
    """Why the number of clients is what it is: whole copies of the data set."""
    if records <= 0 or clients % records:
        return []
    return [
        f"  (the data set's {records:,} records, each reported by {clients // records} clients:"
        " the fewest whole copies that reach --clients)"
    ]


def explain_split(result: DemoResult) -> list[str]:
    """How the record's ε is shared, when every attribute has an equal part of it."""
    parts = {round(result.epsilon / r.epsilon, 6) for r in result.attributes.values()}
    if len(parts) != 1 or (k := parts.pop()) <= 1 or k != int(k):
        return []
    each = result.epsilon / k
    return [
        f"  (budget split: the record's ε = {result.epsilon:g} is divided evenly over its"
        f" {int(k)} attributes, ε = {result.epsilon:g}/{int(k)} = {each:.3g} each)"
    ]
