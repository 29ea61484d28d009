"""ldp_shared is a pure library: importing all of it pulls in no web, database or SDK code."""

from __future__ import annotations

import json
import subprocess
import sys

FORBIDDEN = {
    "fastapi",
    "starlette",
    "sqlalchemy",
    "httpx",
    "uvicorn",
    "alembic",
    "ldp_client",
    "ldp_aggregator",
}

MODULES = [
    "ldp_shared",
    "ldp_shared.codec",
    "ldp_shared.collection",
    "ldp_shared.errors",
    "ldp_shared.kernel",
    "ldp_shared.mechanisms",
    "ldp_shared.analyses.postprocess",
    "ldp_shared.rand",
    "ldp_shared.schema",
    "ldp_shared.wire.releases",
    "ldp_shared.wire.reports",
]


def test_imports_nothing_forbidden() -> None:
    code = (
        "import importlib, json, sys\n"
        f"for m in {MODULES!r}: importlib.import_module(m)\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(json.loads(out.stdout))
    assert "ldp_shared" in loaded
    assert not loaded & FORBIDDEN, sorted(loaded & FORBIDDEN)
