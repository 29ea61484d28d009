"""The frequency part of ``ldpcollect demo``: every attribute of the car data, vs the truth.

Against running aggregators: create a collection for the bundled UCI Car Evaluation data
(:mod:`ldp_simulation.datasets`), let one simulated client per record privatize and
upload its record through the SDK over HTTP (:func:`ldp_simulation.fleet.deal_records`),
then ask for every attribute's frequencies and compare them with the truth, which only
the demo (never the aggregator) knows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ldp_client import LDPClient
from ldp_shared.schema import CollectionSpec
from ldp_shared.wire.releases import FrequencyResult
from ldp_simulation.datasets import CategoricalDataset, load_car
from ldp_simulation.fleet import ANALYSIS_TIMEOUT, DemoOptions, replicate, report_records
from ldp_simulation.progress import Progress

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
    domains: dict[str, list[str]], records: Sequence[dict[str, Any]]
) -> dict[str, list[float]]:
    """Each categorical attribute's frequencies among ``records`` (in domain order)."""
    out: dict[str, list[float]] = {}
    for name, domain in domains.items():
        index = {v: i for i, v in enumerate(domain)}
        counts = np.bincount([index[r[name]] for r in records], minlength=len(domain))
        out[name] = (counts / len(records)).tolist()
    return out


def simulate_frequencies(
    base_urls: Sequence[str],
    admin_token: str,
    analyst_token: str,
    options: DemoOptions,
    progress: Progress | None = None,
) -> FrequencyDemo:
    """Report whole copies of the car data, one client per record; read every attribute."""
    dataset = load_car()
    records = replicate(dataset.records, options.clients)
    spec = demo_spec(dataset, options)
    report_records(base_urls, admin_token, spec, records, options, progress)
    with LDPClient(base_urls[0], token=analyst_token, timeout=ANALYSIS_TIMEOUT) as analyst:
        results = {
            name: analyst.frequencies(DEMO_COLLECTION, name, confidence=options.confidence)
            for name in dataset.domains
        }
    return FrequencyDemo(dataset, results, true_frequencies(dataset.domains, records))


def frequency_json(result: FrequencyResult, true: list[float]) -> dict[str, Any]:
    """One attribute's block under ``"frequencies"`` in ``demo --json``: its ``values``, the
    ``true`` frequencies, the released ``estimate``, ``stderr``, ``ci_low``, ``ci_high``,
    the attribute's ``epsilon`` and ``mechanism``, and ``n_reports`` (those that carried it)."""
    carried = result.attribute_reports
    return {
        "values": result.values,
        "true": true,
        "estimate": result.estimate,
        "stderr": result.stderr,
        "ci_low": result.ci_low,
        "ci_high": result.ci_high,
        "epsilon": result.epsilon,
        "mechanism": result.mechanism,
        "n_reports": result.n_reports if carried is None else carried,
    }


def format_frequencies(blocks: dict[str, dict[str, Any]], confidence: float) -> list[str]:
    """A readable table per attribute (from :func:`frequency_json` blocks): truth,
    estimate, standard error, interval, coverage."""
    level = f"{confidence:.0%}"
    lines = []
    for name, b in blocks.items():
        lines.append(
            f"{name}  ({b['mechanism'].upper()}, ε = {b['epsilon']:.3g} for this attribute, "
            f"{b['n_reports']:,} reports)"
        )
        header = f"{'value':<8} {'true':>7} {'estimate':>9} {'stderr':>7}"
        lines.append(f"  {header}  {level + ' interval':<20} covers")
        for i, value in enumerate(b["values"]):
            true, low, high = b["true"][i], b["ci_low"][i], b["ci_high"][i]
            covers = "yes" if low <= true <= high else "NO"
            interval = f"[{low:.4f}, {high:.4f}]"
            row = f"{value:<8} {true:7.4f} {b['estimate'][i]:9.4f} {b['stderr'][i]:7.4f}"
            lines.append(f"  {row}  {interval:<20} {covers}")
        lines.append("")
    return lines
