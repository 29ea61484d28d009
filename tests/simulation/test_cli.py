"""The command line: one readable line and a non-zero exit for bad input."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ldp_simulation.cli import main

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["migrate", "--database-url", "nosuch://x"], "database"),
        (["serve", "--database-url", "sqlite:////nonexistent-dir/x.db"], "database"),
        (
            [
                "simulate",
                "--url",
                "http://127.0.0.1:9",
                "--admin-token",
                "a",
                "--analyst-token",
                "b",
                "--clients",
                "10000",
            ],
            "127.0.0.1:9",
        ),
    ],
)
def test_errors_are_one_line(
    argv: list[str], fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("ldpcollect: error:")
    assert fragment in err
    assert len(err.splitlines()) == 1


@pytest.mark.parametrize("epsilon", ["0", "-1", "inf", "nan", "x"])
def test_demo_refuses_a_bad_epsilon(epsilon: str) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "ldp_simulation.cli", "demo", "--epsilon", epsilon],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2
    assert "--epsilon" in run.stderr.splitlines()[-1]


def test_the_demo_refuses_too_few_clients_to_release_anything() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "ldp_simulation.cli", "demo", "--clients", "3000"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2
    last = run.stderr.splitlines()[-1]
    assert "--clients" in last and "at least 10,000" in last and "release nothing" in last


def test_migrate_creates_the_schema(tmp_path: object, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path}/m.db"
    assert main(["migrate", "--database-url", url]) == 0
    assert main(["migrate", "--database-url", url]) == 0  # idempotent
    assert "revision" in capsys.readouterr().out
