"""The frequency part of ``ldpcollect demo``: every attribute of the car data, vs the truth.

Against running aggregators: create a collection for the bundled UCI Car Evaluation data
(:mod:`ldp_simulation.datasets`), let one simulated client per record privatize and
upload its record through the SDK over HTTP (:func:`ldp_simulation.fleet.deal_records`),
then ask for every attribute's frequencies and compare them with the truth, which only
the demo (never the aggregator) knows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ldp_client import LDPClient
from ldp_shared.rand import seeded_rng
from ldp_shared.schema import CollectionSpec
from ldp_shared.wire import FrequencyResult
from ldp_simulation.datasets import CategoricalDataset, load_car
from ldp_simulation.fleet import DemoOptions, deal_records, ensure_collection, replicate

DEMO_COLLECTION = "car-demo"


@dataclass(frozen=True)
class FrequencyDemo:
    """The released frequencies of every attribute next to the true ones."""

    dataset: CategoricalDataset
    attributes: dict[str, FrequencyResult]
    truth: dict[str, list[float]]


def demo_spec(dataset: CategoricalDataset, options: DemoOptions) -> CollectionSpec:
    """One attribute per column, the record's ε split evenly, a release minimum of 1,000."""
    return CollectionSpec.model_validate(
        {
            "name": DEMO_COLLECTION,
            "description": f"ldpcollect demo: {dataset.citation}",
            "epsilon": options.epsilon,
            "attributes": [
                {"name": name, "domain": domain, "mechanism": options.mechanism}
                for name, domain in dataset.domains.items()
            ],
            "release": {"min_reports": 1000},
        }
    )


def true_frequencies(
    dataset: CategoricalDataset, records: list[dict[str, str]]
) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for name, domain in dataset.domains.items():
        index = {v: i for i, v in enumerate(domain)}
        counts = np.bincount([index[r[name]] for r in records], minlength=len(domain))
        out[name] = (counts / len(records)).tolist()
    return out


def simulate_frequencies(
    base_urls: Sequence[str],
    admin_token: str,
    analyst_token: str,
    options: DemoOptions,
    progress: Callable[[int, int], None] | None = None,
) -> FrequencyDemo:
    """Report whole copies of the car data, one client per record; read every attribute."""
    dataset = load_car()
    records = replicate(dataset.records, options.clients)
    spec = demo_spec(dataset, options)
    rng = None if options.seed is None else seeded_rng(options.seed)
    with LDPClient(base_urls[0], token=admin_token) as admin:
        ensure_collection(admin, spec)
    deal_records(base_urls, DEMO_COLLECTION, records, rng, options.batch_size, progress)
    with LDPClient(base_urls[0], token=analyst_token) as analyst:
        results = {
            name: analyst.frequencies(DEMO_COLLECTION, name, confidence=options.confidence)
            for name in dataset.domains
        }
    return FrequencyDemo(dataset, results, true_frequencies(dataset, records))


def format_frequencies(
    attributes: dict[str, FrequencyResult], truth: dict[str, list[float]], confidence: float
) -> list[str]:
    """A readable table per attribute: truth, estimate, standard error, interval, coverage."""
    level = f"{confidence:.0%}"
    lines = []
    for name, r in attributes.items():
        lines.append(f"{name}  (ε = {r.epsilon:.3g} for this attribute)")
        header = f"{'value':<8} {'true':>7} {'estimate':>9} {'stderr':>7}"
        lines.append(f"  {header}  {level + ' interval':<20} covers")
        for i, value in enumerate(r.values):
            true = truth[name][i]
            covers = "yes" if r.ci_low[i] <= true <= r.ci_high[i] else "NO"
            interval = f"[{r.ci_low[i]:.4f}, {r.ci_high[i]:.4f}]"
            row = f"{value:<8} {true:7.4f} {r.estimate[i]:9.4f} {r.stderr[i]:7.4f}"
            lines.append(f"  {row}  {interval:<20} {covers}")
        lines.append("")
    return lines
