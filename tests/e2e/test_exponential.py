"""An ordinal exponential-mechanism attribute beside an OUE one, end to end over HTTP.

Spec → config → SDK perturbation → ingest → frequency endpoint, through a real uvicorn
server on loopback. The aggregator reaches the mechanism through the registry only; the
analyst then runs IBU and the ordinal summaries on the released estimate.
"""

from __future__ import annotations

import numpy as np
import pytest

from ldp_client import LDPClient
from ldp_shared.analyses.ibu import iterative_bayesian_update, mean_rank
from ldp_shared.collection import build_config
from ldp_shared.kernel import channel_epsilon
from ldp_shared.mechanisms.exponential import ExponentialRandomizer
from ldp_shared.rand import seeded_rng
from ldp_shared.schema import CollectionSpec

from .conftest import ADMIN, ANALYST

pytestmark = pytest.mark.e2e

Z_LIMIT = 4.0  # |f̂ - f| / se over a handful of values: P(any beyond 4 se) < 0.001
RATINGS = ["awful", "poor", "fair", "good", "great"]
TRUTH = np.array([0.05, 0.15, 0.3, 0.35, 0.15])
SPEC = {
    "name": "survey",
    "epsilon": 4.0,
    "attributes": [
        {"name": "rating", "mechanism": "exponential", "utility": "ordinal", "domain": RATINGS},
        {"name": "ok", "domain": ["no", "yes"]},
    ],
    "release": {"min_reports": 500},
}


def test_an_ordinal_exponential_attribute_round_trips_over_http(server: str) -> None:
    with LDPClient(server, token=ADMIN) as admin:
        config = admin.create_collection(SPEC)
    rating = config.attribute("rating")
    local = build_config(CollectionSpec.model_validate(SPEC)).randomizer(rating)
    assert isinstance(local, ExponentialRandomizer)
    # the published ε is the integer channel's, and the tight scale ε/(d-1) = 2/4
    assert rating.epsilon == local.exact_epsilon == channel_epsilon(local.channel_matrix())
    assert rating.epsilon == pytest.approx(2.0, rel=1e-9)
    assert rating.model_dump()["scale"] == 0.5 and rating.p is None
    assert (rating.encoding, rating.byte_length) == ("index", 1)
    assert config.report_bytes == 2 and config.stats_length == len(RATINGS) + 2

    n = 20_000
    values = np.random.default_rng(3).choice(len(RATINGS), size=n, p=TRUTH)
    records = [{"rating": RATINGS[v], "ok": "yes" if v >= 3 else "no"} for v in values]
    with LDPClient(server, rng=seeded_rng(4)) as device:
        summary = device.submit("survey", records, batch_size=5_000)
    assert summary.accepted == n

    with LDPClient(server, token=ANALYST) as analyst:
        result = analyst.frequencies("survey", "rating", postprocess="norm-sub")
        ok = analyst.frequencies("survey", "ok")
    assert result.mechanism == "exponential" and result.n_reports == n
    assert result.values == RATINGS and result.epsilon == rating.epsilon
    observed = np.bincount(values, minlength=len(RATINGS)) / n
    estimate, stderr = np.array(result.estimate), np.array(result.stderr)
    assert np.abs(estimate - observed).max() < Z_LIMIT * stderr.min(), (estimate, observed)
    assert sum(result.estimate) == pytest.approx(1.0, abs=1e-9)
    # the plug-in standard errors are those of the covariance formula near the truth
    matrix = local.channel_matrix()
    _, covariance = local.estimate_covariance(n * (matrix @ observed), n)
    np.testing.assert_allclose(stderr, np.sqrt(np.diag(covariance)), rtol=0.05)
    assert result.postprocessed is not None and min(result.postprocessed) >= 0.0

    # post-processing on the analyst's side: the report distribution is M f̂
    ibu = iterative_bayesian_update(matrix, n * (matrix @ estimate))
    assert ibu.converged and ibu.estimate.min() >= 0.0
    assert np.all(np.abs(ibu.estimate - observed) < Z_LIMIT * stderr)
    mean = mean_rank(estimate, covariance)
    assert abs(mean.value - observed @ np.arange(5)) < Z_LIMIT * mean.stderr

    # the OUE attribute beside it is estimated as usual
    truth_ok = np.array([observed[:3].sum(), observed[3:].sum()])
    z_ok = np.abs(np.array(ok.estimate) - truth_ok) / np.array(ok.stderr)
    assert ok.mechanism == "oue" and z_ok.max() < Z_LIMIT, z_ok
