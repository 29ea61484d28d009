"""``ldpcollect frequencies`` and ``ldpcollect heavy-hitters`` against a real aggregator."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import numpy as np
import pytest

from ldp_client import LDPClient
from ldp_shared.rand import seeded_rng
from ldp_shared.wire.releases import HeavyHittersResult
from ldp_simulation.cli import main
from ldp_simulation.fleet import running_aggregator
from ldp_simulation.query_command import columns_of, format_rows

pytestmark = pytest.mark.e2e

PLANTED = {"weather": 0.4, "news, today": 0.3}


def test_frequencies_and_heavy_hitters_from_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    admin, analyst = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
    gen = np.random.default_rng(4)
    words = [*PLANTED, "other"]
    picks = gen.choice(3, size=30_000, p=[0.4, 0.3, 0.3])
    records = [{"term": words[i] if i < 2 else f"tail{j}"} for j, i in enumerate(picks.tolist())]
    spec = {
        "name": "terms",
        "epsilon": 4.0,
        "attributes": [{"name": "term", "mechanism": "pem", "max_length": 12}],
        "release": {"min_reports": 1000},
    }
    with running_aggregator(f"sqlite:///{tmp_path / 'q.db'}", admin, analyst) as url:
        with LDPClient(url, token=admin) as client:
            client.create_collection(spec)
        with LDPClient(url, rng=seeded_rng(5)) as device:
            device.submit("terms", records)
        base = [url, "terms", "term", "--analyst-token", analyst]
        assert main(["heavy-hitters", *base, "-k", "5"]) == 0
        table = capsys.readouterr().out
        assert "weather" in table and "news, today" in table and "detection threshold" in table
        assert main(["heavy-hitters", *base, "-k", "5", "--json"]) == 0
        found = json.loads(capsys.readouterr().out)
        assert set(PLANTED) <= set(found["values"])
        # a value with a comma travels as one argument; the SDK escapes it
        assert main(["frequencies", *base, "--values", "news, today", "weather", "--json"]) == 0
        named = json.loads(capsys.readouterr().out)
        assert named["values"] == ["news, today", "weather"]
        for value, low, high in zip(
            named["values"], named["ci_low"], named["ci_high"], strict=True
        ):
            assert low <= PLANTED[value] + 0.01 and PLANTED[value] - 0.01 <= high
        # bad input: one line each, exit status 2
        assert main(["frequencies", *base]) == 2
        assert "open domain" in capsys.readouterr().err
        assert main(["heavy-hitters", *base, "-k", "0"]) == 2
        err = capsys.readouterr().err.strip()
        assert "k must be" in err and "\n" not in err
        assert main(["heavy-hitters", url, "terms", "term", "--analyst-token", ""]) == 2
        assert "analyst-token" in capsys.readouterr().err


def test_found_strings_are_printed_without_their_control_characters_and_aligned() -> None:
    """Devices choose an open domain's strings: a found ``"\\x1b[2J"`` must not clear the
    analyst's terminal, nor ``"a\\nb"`` break the table; wide characters keep it aligned."""
    values = ["\x1b[2J", "a\nb", "x\x00y", "C:\\tmp", "日本", "naïve"]
    result = HeavyHittersResult.model_construct(
        values=values,
        estimate=[0.1] * 6,
        stderr=[0.01] * 6,
        ci_low=[0.08] * 6,
        ci_high=[0.12] * 6,
        confidence=0.95,
    )
    lines = format_rows(result).split("\n")
    assert len(lines) == 1 + len(values)
    assert all(c == "\n" or c.isprintable() for c in "\n".join(lines))
    assert [line.split("  ")[0].rstrip() for line in lines[1:]] == [
        "\\x1b[2J", "a\\nb", "x\\x00y", "C:\\\\tmp", "日本", "naïve",
    ]  # fmt: skip
    assert len({columns_of(line) for line in lines[1:]}) == 1  # the columns line up
