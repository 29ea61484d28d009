"""The dependency direction: ldp_client -> ldp_shared, never the aggregator or its web stack."""

from __future__ import annotations

import json
import subprocess
import sys

FORBIDDEN = [
    "fastapi",
    "sqlalchemy",
    "starlette",
    "uvicorn",
    "ldp_aggregator",
    "alembic",
    "pandas",
]


def test_importing_the_sdk_loads_no_server_code():
    code = (
        "import json, sys\n"
        "import ldp_client, ldp_client.client, ldp_client.async_client\n"
        "from ldp_client import LDPClient, AsyncLDPClient, privatize\n"
        f"forbidden = {FORBIDDEN!r}\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in forbidden"
        " or m.startswith('ldp_shared.analyses'))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert json.loads(out.stdout) == []
