"""Collections of open-domain attributes for the dashboard tests: ``words`` (a ``pem``
attribute with planted frequent strings, one of them markup, an open ``flh`` attribute
and a declared one; released) and ``short`` (below its release minimum). Made through the public
API as :mod:`._data` makes its collections, with fixed hash salts so that every run
finds the same strings."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._data import Poster, _create, _upload

SCRIPT = "<script>alert(1)</script>"
"""A planted device value that is markup: 25 bytes, within ``max_length``."""
PLANTED = {SCRIPT: 0.3, "weather": 0.25, "news": 0.2, "maps": 0.15}
"""Strings of ``query`` and their shares; the rest of the devices each hold their own."""
APPS = ["mail", "chat", "a,b\\c", "<b>bold</b>"]
"""Values of ``app`` (open domain), held equally often: one needs escaping in ``values=``."""
OSES = ["android", "ios", "other"]
"""Values of ``os``, a declared domain reported by the same mechanism."""
WORDS_REPORTS = 20_000
SHORT_REPORTS = 50
MINIMUM = 200
SALTS = ("00112233445566778899aabbccddeeff", "ffeeddccbbaa99887766554433221100")


def _spec(name: str, max_length: int) -> dict[str, Any]:
    return {
        "name": name,
        "description": "Search queries and apps, strings of an open domain",
        "epsilon": 8.0,
        "release": {"min_reports": MINIMUM},
        "attributes": [
            {
                "name": "query",
                "mechanism": "pem",
                "max_length": max_length,
                "weight": 3.0,
                "salt": SALTS[0],
            },
            {"name": "app", "mechanism": "flh", "salt": SALTS[1]},
            {"name": "os", "mechanism": "flh", "domain": OSES, "salt": SALTS[1]},
        ],
    }


def _records(n: int, seed: int, planted: dict[str, float]) -> list[dict[str, Any]]:
    gen = np.random.default_rng(seed)
    strings = list(planted)
    shares = [*planted.values(), 1.0 - sum(planted.values())]
    picks = gen.choice(len(shares), size=n, p=shares)
    return [
        {
            "query": strings[int(p)] if p < len(strings) else f"u{i}",
            "app": APPS[i % len(APPS)],
            "os": OSES[i % len(OSES)],
        }
        for i, p in enumerate(picks)
    ]


def populate_words(client: Poster) -> None:
    """``words`` and ``short`` (see the module's docstring)."""
    words = _create(client, _spec("words", max_length=len(SCRIPT)))
    _upload(client, words, _records(WORDS_REPORTS, seed=21, planted=PLANTED))
    short = _create(client, _spec("short", max_length=4))
    _upload(client, short, _records(SHORT_REPORTS, seed=23, planted={}))
