"""``scripts/fleet-local.sh`` picks its database in the open, and never behind one's back.

Without a database it can use, the script stops with one line per thing it tried and
starts nothing: as root (where PostgreSQL's ``initdb`` refuses to run) it creates no
system user for it and does not fall back to SQLite. ``scripts/pg_database.py`` makes
and drops the throwaway database the script uses on a running server.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from tests.engines import POSTGRES_URL

ROOT = Path(__file__).resolve().parents[2]
FLEET = ROOT / "scripts" / "fleet-local.sh"
PG_DATABASE = ROOT / "scripts" / "pg_database.py"
CLOSED_SERVER = "postgresql+psycopg://postgres@127.0.0.1:1/postgres"


def failing_tools(where: Path) -> Path:
    """A folder of PostgreSQL tools whose ``initdb`` fails as a broken install's would."""
    where.mkdir()
    for tool, body in [
        ("initdb", 'echo "initdb: could not create directory: stub failure" >&2; exit 1'),
        ("pg_ctl", "exit 1"),
        ("psql", "exit 1"),
    ]:
        path = where / tool
        path.write_text(f"#!/bin/sh\n{body}\n")
        path.chmod(0o755)
    return where


def test_without_a_usable_database_it_stops_loudly_and_adds_no_user(tmp_path: Path) -> None:
    users_before = Path("/etc/passwd").read_bytes()
    env = {
        **os.environ,
        "PATH": f"{failing_tools(tmp_path / 'bin')}:{os.environ['PATH']}",
        "FLEET_POSTGRES_SERVER": CLOSED_SERVER,
        "LDPCOLLECT_PYTHON": sys.executable,
    }
    env.pop("LDPCOLLECT_DATABASE_URL", None)
    env.pop("FLEET_DATABASE", None)
    run = subprocess.run(
        ["bash", str(FLEET), "10000"], env=env, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 1, run.stderr
    assert run.stdout == ""
    lines = run.stderr.splitlines()
    assert lines[0] == "fleet: no database; tried:"
    assert f"the server at {CLOSED_SERVER}" in lines[1] and "Connection refused" in lines[1]
    if os.geteuid() == 0:
        assert "initdb refuses to run as root" in lines[2]
    else:
        assert "initdb failed: initdb: could not create directory: stub failure" in lines[2]
    assert "FLEET_DATABASE=sqlite" in lines[3] and len(lines) == 4
    assert Path("/etc/passwd").read_bytes() == users_before


@pytest.mark.skipif(not POSTGRES_URL, reason="no PostgreSQL server answers")
def test_the_throwaway_database_on_a_server_is_made_then_dropped() -> None:
    def script(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(PG_DATABASE), *args], capture_output=True, text=True, timeout=60
        )

    made = script("create", POSTGRES_URL)
    assert made.returncode == 0, made.stderr
    url = made.stdout.strip()
    name = make_url(url).database
    assert name is not None and name.startswith("ldpcollect_fleet_")
    engine = create_engine(url)
    with engine.connect() as connection:
        assert connection.execute(text("SELECT current_database()")).scalar_one() == name
    engine.dispose()
    assert script("drop", url).returncode == 0
    server = create_engine(POSTGRES_URL)
    with server.connect() as connection:
        left = connection.execute(
            text("SELECT count(*) FROM pg_database WHERE datname = :name"), {"name": name}
        ).scalar_one()
    server.dispose()
    assert left == 0

    refused = script("drop", POSTGRES_URL)  # only a database it made
    assert refused.returncode == 1 and "not a fleet database" in refused.stderr
    unreachable = script("create", CLOSED_SERVER)
    assert unreachable.returncode == 1 and len(unreachable.stderr.splitlines()) == 1
