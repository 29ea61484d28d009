"""The open-domain part of ``ldpcollect demo``: words nobody listed, found from their reports.

Each simulated client holds one English word drawn from the bundled word frequencies
(``datasets/words_en.tsv``, from wordfreq; see ``datasets/LICENSE.md``) and reports it
with mechanism ``pem``: the collection lists no words at all. The aggregator then finds
the most frequent words from its statistics (``GET .../heavy-hitters``), and the demo sets
them beside the true top words of the clients, with the detection threshold.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np

from ldp_client import LDPClient
from ldp_shared.rand import seeded_rng
from ldp_shared.schema import CollectionSpec
from ldp_shared.wire.releases import HeavyHittersResult
from ldp_simulation.fleet import ANALYSIS_TIMEOUT, DemoOptions, report_records
from ldp_simulation.progress import Progress

WORDS_COLLECTION = "words-demo"
WORD_BYTES = 12
SEED_OFFSET = 40
TOP = 20
CITATION = (
    "the 3,000 most frequent English words of wordfreq 3.1.1 (R. Speer,"
    " doi:10.5281/zenodo.7199437), CC BY-SA 4.0"
)


def load_words() -> tuple[list[str], np.ndarray[Any, np.dtype[np.float64]]]:
    """The bundled words and their frequencies, renormalised to sum to one."""
    text = resources.files("ldp_simulation.datasets").joinpath("words_en.tsv").read_text("utf-8")
    rows = [line.split("\t") for line in text.splitlines() if not line.startswith("#")]
    weights = np.array([float(f) for _, f in rows])
    return [w for w, _ in rows], weights / weights.sum()


def words_spec(epsilon: float) -> CollectionSpec:
    """One ``pem`` attribute; the salt is fixed from the collection's name so that a second
    ``simulate`` run against the same server finds the same collection."""
    salt = hashlib.sha256(WORDS_COLLECTION.encode()).hexdigest()[:32]
    return CollectionSpec.model_validate(
        {
            "name": WORDS_COLLECTION,
            "epsilon": epsilon,
            "attributes": [
                {"name": "word", "mechanism": "pem", "max_length": WORD_BYTES, "salt": salt}
            ],
            "release": {"min_reports": 1000},
        }
    )


@dataclass(frozen=True)
class OpenDomainDemo:
    """What the aggregator found and what the clients really held."""

    found: HeavyHittersResult
    truth: dict[str, float]
    seconds: float

    def true_top(self, k: int) -> list[str]:
        return sorted(self.truth, key=lambda w: -self.truth[w])[:k]

    def to_json(self) -> dict[str, Any]:
        above = {w for w, f in self.truth.items() if f >= self.found.threshold}
        found = set(self.found.values)
        return {
            "collection": WORDS_COLLECTION,
            "data_citation": CITATION,
            "threshold": self.found.threshold,
            "found": [
                {"word": w, "estimate": e, "ci_low": lo, "ci_high": hi, "true": self.truth.get(w)}
                for w, e, lo, hi in zip(
                    self.found.values,
                    self.found.estimate,
                    self.found.ci_low,
                    self.found.ci_high,
                    strict=True,
                )
            ],
            "true_top": [{"word": w, "true": self.truth[w]} for w in self.true_top(TOP)],
            "recall_above_threshold": len(above & found) / len(above) if above else None,
            "precision": sum(1 for w in found if w in self.truth) / len(found) if found else None,
            "seconds": self.seconds,
        }


def simulate_open_domain(
    base_urls: Sequence[str],
    admin_token: str,
    analyst_token: str,
    options: DemoOptions,
    progress: Progress | None = None,
) -> OpenDomainDemo:
    """``--clients`` clients each report one word; the aggregator finds the frequent ones."""
    started = time.perf_counter()
    words, weights = load_words()
    gen = seeded_rng(options.seed + SEED_OFFSET) if options.seed is not None else None
    draw = (gen or np.random.default_rng()).choice(len(words), size=options.clients, p=weights)
    records = [{"word": words[i]} for i in draw]
    spec = words_spec(options.epsilon)
    report_records(base_urls, admin_token, spec, records, options, progress, SEED_OFFSET)
    with LDPClient(base_urls[0], token=analyst_token, timeout=ANALYSIS_TIMEOUT) as analyst:
        found = analyst.heavy_hitters(
            WORDS_COLLECTION, "word", k=TOP, confidence=options.confidence
        )
    counts = np.bincount(draw, minlength=len(words)) / len(draw)
    truth = {words[i]: float(counts[i]) for i in np.flatnonzero(counts)}
    return OpenDomainDemo(found=found, truth=truth, seconds=time.perf_counter() - started)


def format_open_domain(block: dict[str, Any]) -> list[str]:
    """The demo's text: the words found beside the true top words."""
    lines = [
        f"Open domain ({block['collection']}): each client reported one English word with"
        " mechanism pem; the collection lists no words. The aggregator found:",
        f"  {'found':<12} {'estimate':>8} {'interval':>19} {'true':>7}   {'true top':<12} true",
    ]
    found, top = block["found"], block["true_top"]
    for i in range(max(len(found), min(len(top), 10))):
        left = " " * 48
        if i < len(found):
            f = found[i]
            true = "—" if f["true"] is None else f"{f['true']:.4f}"
            interval = f"[{f['ci_low']:.4f}, {f['ci_high']:.4f}]"
            left = f"{f['word']:<12} {f['estimate']:>8.4f} {interval:>19} {true:>7}"
        right = f"{top[i]['word']:<12} {top[i]['true']:.4f}" if i < len(top) else ""
        lines.append(f"  {left}   {right}")
    recall = block["recall_above_threshold"]
    lines.append(
        f"  detection threshold {block['threshold']:.4f}: every word at least this frequent is"
        " found with probability ≥ 90%"
        + ("" if recall is None else f"; here {recall:.0%} of them were found")
    )
    lines.append(f"  data: {block['data_citation']}")
    return [*lines, ""]
