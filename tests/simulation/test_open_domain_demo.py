"""The open-domain part of ``ldpcollect demo`` over real HTTP: words nobody listed, found."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import numpy as np
import pytest

from ldp_simulation.demo_open_domain import (
    WORD_BYTES,
    format_open_domain,
    load_words,
    simulate_open_domain,
)
from ldp_simulation.fleet import DemoOptions, running_aggregator


def test_the_bundled_words_are_a_distribution_of_short_nfc_words() -> None:
    words, weights = load_words()
    assert len(words) == len(set(words)) == 3000
    assert words[:3] == ["the", "to", "and"]
    assert all(0 < len(w.encode("utf-8")) <= WORD_BYTES for w in words)
    assert np.isclose(weights.sum(), 1.0) and np.all(weights > 0)


@pytest.mark.e2e
def test_open_domain_demo_finds_the_frequent_words(tmp_path: Path) -> None:
    admin, analyst = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
    options = DemoOptions(epsilon=4.0, clients=60_000, seed=5)
    with running_aggregator(f"sqlite:///{tmp_path / 'demo.db'}", admin, analyst) as url:
        demo = simulate_open_domain([url], admin, analyst, options)
    block = json.loads(json.dumps(demo.to_json()))
    found = [f["word"] for f in block["found"]]
    # the words the clients held above the stated threshold are found (probability ≥ 0.9
    # each by the threshold's definition; "the", at 0.054, is far above it at this n)
    above = [w for w in demo.true_top(50) if demo.truth[w] >= block["threshold"]]
    assert "the" in above and set(above) <= set(found)
    # every word found is one that some client held, and the intervals are ordered
    assert all(
        f["true"] is not None and f["ci_low"] < f["estimate"] < f["ci_high"] for f in block["found"]
    )
    text = "\n".join(format_open_domain(block))
    assert "detection threshold" in text and "the" in text
