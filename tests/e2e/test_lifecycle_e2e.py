"""The SDK closes, reopens and deletes a collection on a real aggregator over HTTP."""

from __future__ import annotations

import pytest

from ldp_client import LDPClient
from ldp_shared.errors import (
    CollectionClosedError,
    CollectionNotFoundError,
    InvalidQueryError,
    PermissionDeniedError,
)
from ldp_shared.rand import seeded_rng

from .conftest import ADMIN, ANALYST

pytestmark = pytest.mark.e2e

SPEC = {
    "name": "poll",
    "epsilon": 2.0,
    "attributes": [{"name": "answer", "domain": ["yes", "no"], "mechanism": "grr"}],
    "release": {"min_reports": 10},
}
RECORDS = [{"answer": "yes"}] * 30 + [{"answer": "no"}] * 10


def test_close_reopen_delete_through_the_sdk(server: str) -> None:
    with (
        LDPClient(server, token=ADMIN) as admin,
        LDPClient(server, token=ANALYST) as analyst,
        LDPClient(server, rng=seeded_rng(5)) as device,
    ):
        admin.create_collection(SPEC)
        assert device.submit("poll", RECORDS).accepted == 40

        closed = admin.close_collection("poll")
        assert not closed.open and closed.closed_day is not None and closed.n_reports == 40
        with pytest.raises(CollectionClosedError, match="closed to new reports"):
            device.submit("poll", RECORDS[:5])
        assert analyst.frequencies("poll", "answer").n_reports == 40
        assert analyst.collection_status("poll") == closed
        with pytest.raises(PermissionDeniedError):
            analyst.close_collection("poll")

        assert admin.reopen_collection("poll").open
        assert admin.set_retention("poll", 30).retention_days == 30
        assert device.submit("poll", RECORDS[:5]).accepted == 5

        with pytest.raises(InvalidQueryError, match="confirm"):
            admin.delete_collection("poll", confirm="pol")
        assert analyst.collection_status("poll").n_reports == 45
        admin.delete_collection("poll", confirm="poll")
        assert admin.list_collections() == []
        with pytest.raises(CollectionNotFoundError):
            analyst.frequencies("poll", "answer")
        with pytest.raises(CollectionNotFoundError):
            admin.delete_collection("poll", confirm="poll")
