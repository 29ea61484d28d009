"""``ldpcollect plan``: a table best first, JSON on request, one line for a bad query."""

from __future__ import annotations

import json

import pytest

from ldp_shared.planner import plan
from ldp_shared.wire.plan import Plan
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


def test_second_moment_and_the_chosen_parameters(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["plan", "--epsilon", "2", "--n", "1000000", "--second-moment", "0.01"]
    assert main(args) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[-1] == "parameters"
    expected = plan(epsilon=2.0, n=1_000_000, second_moment=0.01)
    rows = {line.split()[0]: line for line in out[1 : 1 + len(expected.mechanisms)]}
    for entry in expected.mechanisms:
        assert format(entry.stderr, ".4g") in rows[entry.mechanism].split()
        assert f"hashes={entry.parameters['hashes']}" in rows[entry.mechanism]
    assert "hashing's collision terms stated at F₂ = 0.01" in out
    assert main([*args, "--json"]) == 0
    assert Plan.model_validate_json(capsys.readouterr().out) == expected


def test_a_numeric_table_shows_the_local_delta(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--lo", "0", "--hi", "100", "--epsilon", "2", "--n", "10000"]) == 0
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    expected = {e.mechanism: e for e in plan(epsilon=2.0, lo=0.0, hi=100.0, n=10_000).mechanisms}
    gaussian = expected["gaussian"]
    assert 0.0 < gaussian.local_delta <= gaussian.parameters["delta"]
    assert rows["gaussian"].endswith(f"delta=1e-06 local δ={gaussian.local_delta:.3g}")
    assert rows["histogram"].endswith(f"bins={expected['histogram'].parameters['bins']}")
    assert rows["laplace"].endswith("  -") and expected["laplace"].parameters == {}


@pytest.mark.parametrize("value", ["0", "1.5", "nan"])
def test_second_moment_outside_its_range_is_one_line(
    capsys: pytest.CaptureFixture[str], value: str
) -> None:
    args = ["plan", "--domain", "8", "--epsilon", "1", "--n", "100", "--second-moment", value]
    assert main(args) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "second_moment (F₂) must be in (0, 1]" in err[0]
