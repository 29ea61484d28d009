"""Wire types of kNN classification (JSON over HTTP).

``POST /v1/collections/{name}/knn/classify`` takes a :class:`KnnQuery` (query points as
rows of raw feature values, a category as its value's index, and ``k``) and answers a
:class:`KnnClassification`: per point the predicted class, the debiased class scores
and their standard errors (:mod:`ldp_shared.analyses.knn.cells`).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

MAX_QUERY_POINTS = 10_000


class KnnQuery(BaseModel):
    """Points to classify and the neighbourhood size."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    points: list[list[float]] = Field(min_length=1, max_length=MAX_QUERY_POINTS)
    k: int = Field(default=25, description="neighbours (a ball holds at least k reporters)")


class KnnPrediction(BaseModel):
    """One point's answer."""

    model_config = ConfigDict(frozen=True)

    predicted: str
    scores: list[float] = Field(description="debiased class counts over the neighbourhood")
    stderr: list[float] = Field(description="their standard errors (given the neighbourhood)")


class KnnClassification(BaseModel):
    """The answer to a :class:`KnnQuery`."""

    model_config = ConfigDict(frozen=True)

    collection: str
    config_hash: str
    classes: list[str]
    k: int
    n_reports: int
    epsilon: float
    tables: int
    bits: int
    predictions: list[KnnPrediction]
