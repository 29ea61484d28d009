"""The README's REST walkthrough: its code block run as pasted by bash against a real
``ldpcollect serve`` on a free port, then the same sequence step by step (create a
collection, make a report with ``ldpcollect report``, upload it, read the frequencies,
close, delete)."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from ldp_simulation.cli import main

from .conftest import ADMIN, ANALYST

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_walkthrough() -> str:
    """The first ``sh`` block under the README's "## The REST API" heading."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index("\n## The REST API\n") :]
    found = re.search(r"```sh\n(.*?)```", section, re.DOTALL)
    assert found is not None, "the REST API section has no sh block"
    return found.group(1)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.skipif(shutil.which("curl") is None, reason="the walkthrough needs curl")
def test_the_readme_walkthrough_runs_as_pasted(tmp_path: Path) -> None:
    """bash runs the block in a "clone" whose ``.venv/bin`` is this environment's; only
    the port changes (8000 may be taken). Every step answers as its comment says, no
    short-token warning is printed, and nothing is left in the clone."""
    script = readme_walkthrough()
    assert "sleep 3" not in script and "/readyz" in script
    port = _free_port()
    clone = tmp_path / "clone"
    (clone / ".venv").mkdir(parents=True)
    (clone / ".venv" / "bin").symlink_to(Path(sys.executable).parent)
    assert (clone / ".venv" / "bin" / "ldpcollect").exists()
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {key: value for key, value in os.environ.items() if not key.startswith("LDPCOLLECT_")}
    env["TMPDIR"] = str(scratch)  # where the walkthrough's mktemp -d goes
    # files, not pipes: the server bash leaves running holds them open
    with (tmp_path / "out").open("w") as stdout, (tmp_path / "err").open("w") as stderr:
        process = subprocess.Popen(
            ["bash", "-c", script.replace("8000", str(port))],
            cwd=clone,
            env=env,
            stdout=stdout,
            stderr=stderr,
            text=True,
            start_new_session=True,  # the server started in the background is in its group
        )
        try:
            process.wait(timeout=180)
        finally:
            os.killpg(process.pid, signal.SIGTERM)
    out, err = (tmp_path / "out").read_text(), (tmp_path / "err").read_text()
    assert process.returncode == 0, err
    assert out.startswith('{"status":"ready"}\n'), out
    assert '"accepted":1' in out and '"open":false' in out, out
    frequencies = re.search(r'\{"collection":"survey","attribute":"browser"[^{}]*\}', out)
    assert frequencies is not None and '"n_reports":1' in frequencies.group(0), out
    assert "problem" not in out and "error" not in err.lower(), (out, err)
    assert "warning" not in err and "ready when" in err, err
    assert sorted(p.name for p in clone.iterdir()) == [".venv"]  # nothing left in the clone
    (work,) = scratch.iterdir()
    assert (work / "report.json").exists() and (work / "ldpcollect.db").exists()


SPEC = {
    "name": "survey",
    "epsilon": 2,
    "attributes": [{"name": "browser", "domain": ["a", "b", "c"]}],
    "release": {"min_reports": 1},
}


def test_the_readme_sequence_runs_as_pasted(
    server: str, capsys: pytest.CaptureFixture[str]
) -> None:
    admin = {"Authorization": f"Bearer {ADMIN}"}
    assert httpx.post(f"{server}/v1/collections", json=SPEC, headers=admin).status_code == 201
    assert main(["report", server, "survey", '{"browser": "b"}', '{"browser": "c"}']) == 0
    body = capsys.readouterr().out
    reports = json.loads(body)["reports"]
    assert len(reports) == 2 and {"id", "config_hash", "bits"} == set(reports[0])
    assert "browser" not in body  # only perturbed bits leave: no attribute name, no value
    upload = httpx.post(
        f"{server}/v1/collections/survey/reports",
        content=body,
        headers={"Content-Type": "application/json"},
    )
    assert upload.status_code == 200 and upload.json()["accepted"] == 2, upload.text
    released = httpx.get(
        f"{server}/v1/collections/survey/frequencies",
        params={"attribute": "browser", "postprocess": "simplex"},
        headers={"Authorization": f"Bearer {ANALYST}"},
    )
    assert released.status_code == 200, released.text
    assert released.json()["n_reports"] == 2
    close = httpx.post(f"{server}/v1/collections/survey/close", headers=admin)
    assert close.status_code == 200 and close.json()["open"] is False
    again = httpx.post(
        f"{server}/v1/collections/survey/reports",
        content=body,
        headers={"Content-Type": "application/json"},
    )
    assert again.status_code == 409, again.text
    gone = httpx.delete(f"{server}/v1/collections/survey?confirm=survey", headers=admin)
    assert gone.status_code == 204


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ('{"browser": "z"}', "not in its domain; allowed: 'a', 'b', 'c'"),
        ("{browser}", "not valid JSON"),
        ("[1]", "must be a JSON object"),
        ('{"colour": "b"}', "error: record 1: missing attributes ['browser']"),
    ],
)
def test_a_bad_record_is_one_line(
    server: str, capsys: pytest.CaptureFixture[str], record: str, message: str
) -> None:
    admin = {"Authorization": f"Bearer {ADMIN}"}
    httpx.post(f"{server}/v1/collections", json=SPEC, headers=admin)
    assert main(["report", server, "survey", record]) != 0
    captured = capsys.readouterr()
    assert captured.out == ""
    assert message in captured.err and captured.err.count("\n") == 1, captured.err
    assert captured.err.count("record ") <= 1, captured.err  # numbered once


def test_a_record_outside_the_domain_on_stdin_is_named_by_its_line(
    server: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    admin = {"Authorization": f"Bearer {ADMIN}"}
    httpx.post(f"{server}/v1/collections", json=SPEC, headers=admin)
    monkeypatch.setattr("sys.stdin", io.StringIO('{"browser": "a"}\n\n{"browser": "z"}\n'))
    assert main(["report", server, "survey", "-"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("ldpcollect: error: record 2 (stdin line 3): ")
    assert "not in its domain" in captured.err and captured.err.count("\n") == 1
