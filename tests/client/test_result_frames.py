"""Results an analyst takes away: every result the SDK answers has ``to_dict()`` (plain
JSON) and ``to_frame()`` (one pandas row per value, rule, period or point, with its
estimate, standard error and interval), and without pandas a typed error says what to
install."""

from __future__ import annotations

import json
import math
import sys
from datetime import UTC, datetime
from typing import get_type_hints

import pandas as pd
import pytest
from pydantic import BaseModel

import ldp_client
from ldp_shared import tabular
from ldp_shared.errors import InvalidQueryError, LDPError, MissingDependencyError
from ldp_shared.tabular import Tabular
from ldp_shared.wire.itemsets import ItemsetResult
from ldp_shared.wire.knn import KnnClassification
from ldp_shared.wire.naive_bayes import NaiveBayesModel
from ldp_shared.wire.releases import FrequencyResult, HeavyHittersResult, MeanResult, QuantileResult
from ldp_shared.wire.training import TrainedModel
from ldp_shared.wire.trends import DifferenceResult, TrendResult

RELEASE = {
    "collection": "survey",
    "attribute": "color",
    "mechanism": "oue",
    "n_reports": 1000,
    "epsilon": 1.0,
    "record_epsilon": 2.0,
    "confidence": 0.95,
}
PER_VALUE = {
    "values": ["red", "blue"],
    "estimate": [0.7, 0.3],
    "counts": [700.0, 300.0],
    "stderr": [0.02, 0.03],
    "ci_low": [0.66, 0.24],
    "ci_high": [0.74, 0.36],
}
FREQUENCIES = FrequencyResult.model_validate(
    {**RELEASE, **PER_VALUE, "postprocess": "norm-sub", "postprocessed": [0.69, 0.31]}
)
MEAN = MeanResult.model_validate(
    {**RELEASE, "attribute": "hours", "mechanism": "duchi", "lo": 0, "hi": 10, "mean": 4.2}
    | {"stderr": 0.1, "ci_low": 4.0, "ci_high": 4.4, "variance": 2.5}
)
QUANTILES = QuantileResult.model_validate(
    {**RELEASE, "mechanism": "histogram", "edges": [0, 10, 20]}
    | {"quantiles": [{"probability": 0.5, "value": 9.5, "ci_low": 8, "ci_high": 11, "bin": 0}]}
)
HEAVY = HeavyHittersResult.model_validate(
    {**RELEASE, **PER_VALUE, "mechanism": "pem", "threshold": 0.05, "false_discovery": 0.01}
    | {"miss": 0.05, "levels_searched": 4, "candidates": 40}
)
WINDOW = {"period": "day", "first": "2026-03-01", "last": "2026-03-02", "periods": 2}
START = datetime(2026, 3, 1, tzinfo=UTC)
TREND = TrendResult.model_validate(
    {
        "collection": "survey",
        "attribute": "color",
        "released_as": "frequencies",
        "confidence": 0.95,
        "window": WINDOW,
        "points": [
            {"period": "2026-03-01", "start": START, "n_reports": 5, "withheld": "5 < 20"},
            {
                "period": "2026-03-02",
                "start": START.replace(day=2),
                "n_reports": 1000,
                "frequencies": FREQUENCIES,
            },
        ],
    }
)
DIFFERENCE = DifferenceResult.model_validate(
    {
        "collection": "survey",
        "attribute": "hours",
        "released_as": "mean",
        "confidence": 0.95,
        "window": WINDOW,
        "baseline": WINDOW,
        "n_reports": 100,
        "baseline_reports": 90,
        "values": ["mean"],
        "estimate": [4.2],
        "baseline_estimate": [4.0],
        "difference": [0.2],
        "stderr": [0.14],
        "ci_low": [-0.07],
        "ci_high": [0.47],
    }
)
KNN = KnnClassification.model_validate(
    {
        "collection": "kc",
        "config_hash": "h",
        "classes": ["a", "b"],
        "k": 5,
        "n_reports": 100,
        "epsilon": 2.0,
        "tables": 2,
        "bits": 3,
        "predictions": [
            {"predicted": "a", "scores": [4.0, 1.0], "stderr": [1.0, 0.9]},
            {"predicted": "b", "scores": [0.5, 4.5], "stderr": [0.8, 1.1], "clipped": ["x"]},
        ],
    }
)
TABLE = [[30.0, 10.0], [5.0, 55.0]]
NAIVE_BAYES = NaiveBayesModel.model_validate(
    {
        "id": "model-0001",
        "collection": "nb",
        "config_hash": "h",
        "created_day": "2026-03-01",
        "label": "y",
        "classes": ["no", "yes"],
        "n_reports": 100,
        "epsilon": 2.0,
        "budget": "split",
        "confidence": 0.95,
        "class_counts": [40.0, 60.0],
        "class_counts_stderr": [3.0, 3.0],
        "class_counts_ci_low": [34.0, 54.0],
        "class_counts_ci_high": [46.0, 66.0],
        "class_smoothed_counts": [41.0, 61.0],
        "class_prior": [0.4, 0.6],
        "class_log_prior": [math.log(0.4), math.log(0.6)],
        "features": [
            {
                "name": "color",
                "values": ["red", "blue"],
                "mechanism": "grr",
                "epsilon": 1.0,
                "p": 0.7,
                "q": 0.3,
                "n_reports": 100,
                "counts": TABLE,
                "stderr": [[2.0, 2.0], [2.0, 2.0]],
                "ci_low": [[26.0, 6.0], [1.0, 51.0]],
                "ci_high": [[34.0, 14.0], [9.0, 59.0]],
                "negative_counts": 0,
                "smoothed_counts": TABLE,
                "probabilities": [[0.75, 0.25], [0.1, 0.9]],
                "log_prob": [[-0.29, -1.39], [-2.3, -0.11]],
            }
        ],
        "smoothing": {"alpha": 1.0, "repair": "clamp", "floor": 1e-9, "rule": "Laplace"},
    }
)
RULE = {
    "antecedent": ["milk"],
    "consequent": ["bread"],
    "support": 0.2,
    "confidence": 0.6,
    "lift": 1.2,
    "antecedent_support": 0.33,
    "consequent_support": 0.5,
    "confidence_stderr": 0.05,
    "confidence_ci_low": 0.5,
    "confidence_ci_high": 0.7,
    "lift_stderr": 0.1,
    "lift_ci_low": 1.0,
    "lift_ci_high": 1.4,
}
PRIVACY = {
    "attribute": "basket",
    "keep_probability": 0.9,
    "n_items": 3,
    "item_epsilon": 2.2,
    "basket_epsilon": 6.6,
    "average_support": 0.3,
    "weight": 1.0,
    "R1": 0.5,
    "R0": 0.9,
    "R": 0.5,
    "privacy": 50.0,
}
ITEMSETS = ItemsetResult.model_validate(
    {
        "collection": "shop",
        "attribute": "basket",
        "n_reports": 100,
        "keep_probability": 0.9,
        "min_support": 0.1,
        "support_reduction": 0.0,
        "threshold": 0.1,
        "max_size": None,
        "min_confidence": 0.5,
        "confidence": 0.95,
        "itemsets": [
            {"items": ["milk"], "support": 0.33, "stderr": 0.04, "ci_low": 0.25, "ci_high": 0.41},
            {"items": ["bread", "milk"], "support": 0.2, "stderr": 0.05}
            | {"ci_low": 0.1, "ci_high": 0.3},
        ],
        "by_length": {"1": 1, "2": 1},
        "rules": [RULE],
        "rules_total": 1,
        "privacy": PRIVACY,
        "levels": [],
        "seconds": 0.1,
    }
)

TRAINED = TrainedModel.model_validate(
    {
        "job": "job-0123456789abcdef",
        "collection": "train",
        "layout": {
            "numeric": [{"name": "x", "lo": 0.0, "hi": 1.0}],
            "categorical": [],
            "label": "y",
            "positive": "yes",
        },
        "coordinates": ["intercept", "x"],
        "weights": [-0.5, 1.5],
        "epsilon": 2.0,
        "delta": 0.0,
        "rounds": 1,
        "curve": [],
        "sklearn": {"coef_": [[1.5]], "intercept_": [-0.5], "classes_": [0, 1]}
        | {"features": ["x"]},
    }
)

RESULTS: dict[str, BaseModel] = {
    "frequencies": FREQUENCIES,
    "means": MEAN,
    "quantiles": QUANTILES,
    "heavy_hitters": HEAVY,
    "naive_bayes": NAIVE_BAYES,
    "itemsets": ITEMSETS,
    "trend": TREND,
    "difference": DIFFERENCE,
    "knn": KNN,
    "trained": TRAINED,
}
"""One result of every kind an analyst's SDK call answers."""

ROWS = {
    "frequencies": 2,
    "means": 1,
    "quantiles": 1,
    "heavy_hitters": 2,
    "naive_bayes": 2 + 2 * 2,
    "itemsets": 1,
    "trend": 1 + 2,
    "difference": 1,
    "knn": 2,
    "trained": 2,
}


@pytest.mark.parametrize("kind", RESULTS)
def test_to_dict_is_plain_json_of_what_the_aggregator_answered(kind: str) -> None:
    result = RESULTS[kind]
    plain = result.to_dict()  # type: ignore[attr-defined]
    assert json.loads(json.dumps(plain)) == plain
    assert plain == json.loads(result.model_dump_json())
    assert type(result).model_validate(plain) == result


@pytest.mark.parametrize("kind", RESULTS)
def test_to_frame_is_one_row_per_entry_with_its_interval(kind: str) -> None:
    result = RESULTS[kind]
    frame = result.to_frame()  # type: ignore[attr-defined]
    assert isinstance(frame, pd.DataFrame) and len(frame) == ROWS[kind]
    assert list(frame.columns) == list(tabular.columns(result))
    if kind not in ("knn", "trained"):  # scores and standard errors; weights
        assert {"ci_low", "ci_high"} <= set(frame.columns) or "confidence_ci_low" in frame
    assert frame.attrs["collection"] == result.collection  # type: ignore[attr-defined]


ANALYST_METHODS = [
    "frequencies",
    "means",
    "quantiles",
    "heavy_hitters",
    "train_naive_bayes",
    "get_naive_bayes",
    "mine_itemsets",
    "trend",
    "difference",
    "classify_knn",
    "training_model",
]


@pytest.mark.parametrize("client", [ldp_client.LDPClient, ldp_client.AsyncLDPClient])
@pytest.mark.parametrize("method", ANALYST_METHODS)
def test_every_result_an_analyst_method_answers_is_tabular(client: type, method: str) -> None:
    answered = get_type_hints(getattr(client, method))["return"]
    assert issubclass(answered, Tabular), answered


def test_the_frames_hold_the_numbers() -> None:
    frequencies = FREQUENCIES.to_frame()
    assert frequencies.to_dict("list") == {
        "value": ["red", "blue"],
        "estimate": [0.7, 0.3],
        "count": [700.0, 300.0],
        "stderr": [0.02, 0.03],
        "ci_low": [0.66, 0.24],
        "ci_high": [0.74, 0.36],
        "postprocessed": [0.69, 0.31],
    }
    assert frequencies.attrs["epsilon"] == 1.0 and "values" not in frequencies.attrs
    mean = MEAN.to_frame().iloc[0].to_dict()
    assert mean == dict(value="mean", estimate=4.2, stderr=0.1, ci_low=4.0, ci_high=4.4) | {
        "variance": 2.5
    }
    assert QUANTILES.to_frame().iloc[0].to_dict() == QUANTILES.quantiles[0].model_dump()
    model = NAIVE_BAYES.to_frame()
    priors = model[model["feature"].isna()]
    assert list(priors["class"]) == ["no", "yes"] and list(priors["probability"]) == [0.4, 0.6]
    cell = model[(model["feature"] == "color") & (model["value"] == "blue")]
    assert list(cell["class"]) == ["no", "yes"] and list(cell["count"]) == [10.0, 55.0]
    assert list(cell["ci_low"]) == [6.0, 51.0]


def test_a_trend_frame_keeps_a_withheld_period() -> None:
    trend = TREND.to_frame()
    assert list(trend["period"]) == ["2026-03-01", "2026-03-02", "2026-03-02"]
    withheld = trend.iloc[0]
    assert withheld["withheld"] == "5 < 20" and math.isnan(withheld["estimate"])
    assert pd.isna(withheld["value"])
    assert list(trend["value"][1:]) == ["red", "blue"]
    assert list(trend["ci_high"][1:]) == [0.74, 0.36]


def test_itemsets_frame_rules_or_itemsets() -> None:
    rules = ITEMSETS.to_frame()
    assert rules.loc[0, "antecedent"] == frozenset({"milk"})
    assert rules.loc[0, "confidence_ci_high"] == 0.7 and bool(rules.loc[0, "informative"])
    itemsets = ITEMSETS.to_frame(what="itemsets")
    assert list(itemsets["length"]) == [1, 2]
    assert list(itemsets["items"]) == [frozenset({"milk"}), frozenset({"bread", "milk"})]
    with pytest.raises(InvalidQueryError):
        ITEMSETS.to_frame(what="baskets")  # type: ignore[arg-type]


def test_knn_frame_has_a_score_and_stderr_per_class() -> None:
    knn = KNN.to_frame()
    columns = ["point", "predicted", "score_a", "stderr_a", "score_b", "stderr_b", "clipped"]
    assert list(knn.columns) == columns
    assert list(knn["score_b"]) == [1.0, 4.5]
    assert list(knn["clipped"]) == ["", "x"]  # the features clipped onto their bounds
    assert TRAINED.to_frame().to_dict("list") == {"coordinate": ["intercept", "x"]} | {
        "weight": [-0.5, 1.5]
    }


def test_without_pandas_to_frame_names_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas now fails
    with pytest.raises(MissingDependencyError, match="pip install pandas") as raised:
        FREQUENCIES.to_frame()
    assert isinstance(raised.value, LDPError) and isinstance(raised.value, ImportError)
    with pytest.raises(MissingDependencyError):
        ITEMSETS.to_frame(what="itemsets")
    # the rest needs no pandas
    assert tabular.columns(MEAN)["estimate"] == [4.2]
    assert FREQUENCIES.to_dict()["values"] == ["red", "blue"]


def test_a_result_without_a_frame_is_refused() -> None:
    with pytest.raises(InvalidQueryError, match="has no frame"):
        tabular.columns(ITEMSETS.privacy)
