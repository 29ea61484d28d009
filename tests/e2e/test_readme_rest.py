"""The README's curl sequence, step by step against a real server: create a collection,
make a report with ``ldpcollect report``, upload it, read the frequencies (no 409)."""

from __future__ import annotations

import io
import json

import httpx
import pytest

from ldp_simulation.cli import main

from .conftest import ADMIN, ANALYST

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
