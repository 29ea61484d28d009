"""The hold-out split and the non-private reference
(ldp_shared.analyses.naive_bayes.evaluation), and the package's imports.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from ldp_shared.analyses import naive_bayes as nb
from ldp_shared.collection import build_config
from ldp_shared.errors import InvalidQueryError

from ._car import CAR, CLASSES, car_spec, categorical_nb, matrix


def test_holdout_split_is_fixed_and_disjoint() -> None:
    train, test = nb.holdout_split(CAR.records)
    again, _ = nb.holdout_split(CAR.records)
    assert train == again
    assert len(test) == round(0.2 * len(CAR.records)) and len(train) + len(test) == 1728
    key = [tuple(r.values()) for r in train]
    assert not set(key) & {tuple(r.values()) for r in test}  # car rows are all distinct
    with pytest.raises(InvalidQueryError):
        nb.holdout_split(CAR.records, test_fraction=1.0)


@pytest.mark.parametrize("budget", ["split", "sample"])
def test_non_private_model_is_categorical_nb(budget: str) -> None:
    train, test = nb.holdout_split(CAR.records)
    model = nb.non_private_model(build_config(car_spec(budget)), train, alpha=1.0)
    reference = categorical_nb(train, 1.0)
    np.testing.assert_allclose(model.class_log_prior, reference.class_log_prior_, rtol=1e-12)
    for feature, table in zip(model.features, reference.feature_log_prob_, strict=True):
        np.testing.assert_allclose(feature.log_prob, table, rtol=1e-12)
    x_test, _ = matrix(test)
    ours = [p.predicted for p in nb.predict(model, test).predictions]
    assert ours == [CLASSES[c] for c in reference.predict(x_test)]
    assert model.epsilon == math.inf


def test_naive_bayes_modules_are_pure() -> None:
    """ldp_shared.analyses.joint and .naive_bayes import no web, database or SDK code
    (and scikit-learn only inside ``to_categorical_nb``)."""
    import subprocess
    import sys

    code = (
        "import json, sys, ldp_shared.analyses.joint, ldp_shared.analyses.naive_bayes\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(json.loads(out.stdout))
    forbidden = {"fastapi", "starlette", "sqlalchemy", "httpx", "ldp_client", "ldp_aggregator"}
    assert not loaded & (forbidden | {"sklearn"}), sorted(loaded & (forbidden | {"sklearn"}))
