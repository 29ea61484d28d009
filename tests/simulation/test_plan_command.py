"""``ldpcollect plan``: a table best first, JSON on request, one line for a bad query."""

from __future__ import annotations

import json

import pytest

from ldp_simulation.cli import main


def test_plan_prints_a_table_best_first(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--domain", "1024", "--epsilon", "1", "--n", "100000"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:3] == ["mechanism", "n", "stderr"]
    rows = [line.split() for line in out[1:] if line.split()[0] in {"oue", "sue", "grr"}]
    assert rows[0][0] == "oue" and rows[-1][0] == "grr"
    assert any("not planned" in line for line in out)


def test_plan_json_for_a_target(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["plan", "--lo", "0", "--hi", "100", "--epsilon", "2", "--target-se", "0.5", "--json"]
    assert main(args) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["target_stderr"] == 0.5
    assert all(entry["stderr"] <= 0.5 for entry in body["mechanisms"])


def test_impossible_plan_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["plan", "--lo", "0", "--hi", "1", "--epsilon", "1", "--target-se", "1e-9"])
    assert code != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "raise epsilon" in err[0]
