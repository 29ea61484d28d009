"""``ldpcollect simulate --fresh``: a rerun with another ε replaces the demo collections
instead of failing on "exists with another configuration"."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.e2e.conftest import ADMIN, ANALYST, e2e_settings, serving

from ldp_client import LDPClient
from ldp_shared.errors import ConflictError
from ldp_shared.rand import seeded_rng
from ldp_shared.schema import CollectionSpec
from ldp_simulation.cli import build_parser
from ldp_simulation.fleet import ensure_collection

pytestmark = pytest.mark.e2e


def spec(epsilon: float) -> CollectionSpec:
    return CollectionSpec.model_validate(
        {
            "name": "demo-car",
            "epsilon": epsilon,
            "attributes": [{"name": "door", "domain": ["2", "4"], "mechanism": "oue"}],
        }
    )


def test_fresh_replaces_a_collection_of_another_configuration(tmp_path: Path) -> None:
    with (
        serving(e2e_settings(tmp_path)) as url,
        LDPClient(url, token=ADMIN) as admin,
        LDPClient(url, token=ANALYST) as analyst,
        LDPClient(url, rng=seeded_rng(1)) as device,
    ):
        ensure_collection(admin, spec(4.0))
        assert device.submit("demo-car", [{"door": "2"}] * 12).accepted == 12
        ensure_collection(admin, spec(4.0))  # the same spec again: accepted, reports kept
        assert analyst.collection_status("demo-car").n_reports == 12
        with pytest.raises(ConflictError, match=r"another configuration.*--fresh"):
            ensure_collection(admin, spec(1.0))

        ensure_collection(admin, spec(1.0), fresh=True)
        assert admin.get_config("demo-car").spec == spec(1.0)
        assert analyst.collection_status("demo-car").n_reports == 0


def test_the_simulate_command_takes_fresh() -> None:
    base = ["simulate", "--url", "http://127.0.0.1:9", "--admin-token", "a"]
    assert build_parser().parse_args([*base, "--fresh"]).fresh is True
    assert build_parser().parse_args(base).fresh is False
