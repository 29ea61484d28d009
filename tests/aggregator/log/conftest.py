"""Fixtures of the log mode's tests: a three-node JetStream cluster of their own, and a
PostgreSQL schema per test. Without ``nats-server`` they are skipped, except under
``CI=true``, where they fail (``.ci/run`` installs it)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.engines import POSTGRES_URL, drop_schema, new_postgres_schema

from .cluster import HAVE_NATS, IN_CI, NATS_SERVER, NatsCluster, nats_cluster


def require_nats_server() -> None:
    if HAVE_NATS:
        return
    message = f"the log mode's tests need nats-server ({NATS_SERVER} not found)"
    if IN_CI:
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[NatsCluster]:
    """Three ``nats-server`` nodes with JetStream, routed to each other."""
    require_nats_server()
    with nats_cluster(tmp_path / "nats", 3) as started:
        yield started


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A fresh PostgreSQL schema (``tests/engines.py``: under CI=true, an unreachable
    server fails the session instead of skipping)."""
    if not POSTGRES_URL:
        pytest.skip("no PostgreSQL server answers (set LDPCOLLECT_TEST_POSTGRES_URL)")
    url = new_postgres_schema()
    yield url
    drop_schema(url)
