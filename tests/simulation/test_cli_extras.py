"""``ldpcollect`` on installs without every extra, its help and its version.

An install other than ``.[demo]`` lacks some optional modules; each case here blocks
them in a fresh interpreter (``sys.modules[name] = None`` makes ``import name`` fail as
if it were not installed) and runs the console script's ``main``: ``--help`` works on any
install, a command whose extra is missing says which one in one line, and one whose extra
is there runs.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from ldp_simulation.cli import build_parser, main

DEMO_ONLY = ["tqdm"]
"""What ``.[aggregator]`` lacks."""
AGGREGATOR_ONLY = ["fastapi", "uvicorn", "sqlalchemy", "alembic", "pydantic_settings"]
"""What ``.[client]`` lacks besides :data:`DEMO_ONLY`."""
CORE = ["httpx"]
"""What the core install lacks besides the others."""


def _run_without(blocked: list[str], argv: list[str]) -> subprocess.CompletedProcess[str]:
    script = (
        "import sys\n"
        f"for name in {blocked!r}:\n"
        "    sys.modules[name] = None\n"
        "from ldp_simulation.cli import main\n"
        f"sys.exit(main({argv!r}))\n"
    )
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize(
    "blocked",
    [DEMO_ONLY, DEMO_ONLY + AGGREGATOR_ONLY, DEMO_ONLY + AGGREGATOR_ONLY + CORE],
    ids=["aggregator-install", "client-install", "core-install"],
)
@pytest.mark.parametrize("argv", [["--help"], ["serve", "--help"], ["demo", "--help"]])
def test_help_works_on_any_install(blocked: list[str], argv: list[str]) -> None:
    run = _run_without(blocked, argv)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("usage: ldpcollect")


@pytest.mark.parametrize(
    ("blocked", "argv", "extra"),
    [
        (DEMO_ONLY, ["demo"], "demo"),
        (DEMO_ONLY, ["train"], "demo"),
        (DEMO_ONLY + AGGREGATOR_ONLY, ["serve"], "aggregator"),
        (DEMO_ONLY + AGGREGATOR_ONLY, ["migrate"], "aggregator"),
        (DEMO_ONLY + AGGREGATOR_ONLY + CORE, ["report", "http://127.0.0.1:9", "s", "{}"], "client"),
    ],
)
def test_a_missing_extra_is_one_line_naming_it(
    blocked: list[str], argv: list[str], extra: str
) -> None:
    run = _run_without(blocked, argv)
    assert run.returncode == 2
    assert "Traceback" not in run.stderr
    lines = run.stderr.splitlines()
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith(f"ldpcollect: error: {argv[0]} needs the {extra} extra (")
    assert f'pip install -e ".[{extra}]"' in lines[0]


def test_an_aggregator_install_migrates(tmp_path: Path) -> None:
    run = _run_without(DEMO_ONLY, ["migrate", "--database-url", f"sqlite:///{tmp_path}/m.db"])
    assert run.returncode == 0, run.stderr
    assert "revision" in run.stdout


def test_a_client_install_reports() -> None:
    """``report`` gets as far as the network (nothing listens on port 9)."""
    run = _run_without(
        DEMO_ONLY + AGGREGATOR_ONLY, ["report", "http://127.0.0.1:9", "survey", "{}"]
    )
    assert run.returncode == 2
    assert "127.0.0.1:9" in run.stderr and "extra" not in run.stderr


def _options(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.Action]]:
    """Every option of ``parser`` and of its sub-commands, named by the command."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found += _options(sub)
        else:
            found.append((f"{parser.prog} {'/'.join(action.option_strings)}", action))
    return found


def test_every_option_of_every_command_has_help() -> None:
    options = _options(build_parser())
    assert len(options) > 40  # the walk reached the sub-commands
    missing = [name for name, action in options if not action.help]
    assert missing == []


def test_version_is_the_installed_distributions(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"ldpcollect {metadata.version('ldpcollect')}"
