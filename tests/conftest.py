"""Session-wide: drop the PostgreSQL schemas the tests made (see ``tests/engines.py``)."""

from __future__ import annotations

import pytest
from tests.engines import drop_created_schemas


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    drop_created_schemas()
