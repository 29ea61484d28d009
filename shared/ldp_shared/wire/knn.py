"""Wire types of kNN classification (JSON over HTTP).

``POST /v1/collections/{name}/knn/classify`` takes a :class:`KnnQuery` (query points as
rows of raw feature values, a category as its value's index, and ``k``) and answers a
:class:`KnnClassification`: per point the predicted class, the debiased class scores
and their standard errors (:mod:`ldp_shared.analyses.knn.cells`); for a shuffled
collection also the central guarantee of its reports (:mod:`ldp_shared.central`).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from ldp_shared.central import CentralRelease
from ldp_shared.errors import InvalidQueryError
from ldp_shared.request_model import RequestModel
from ldp_shared.tabular import Columns, Tabular
from ldp_shared.wire.base import central_field, checked_range

MAX_QUERY_POINTS = 10_000
MAX_NEIGHBOURS = 1_000_000_000
"""The largest ``k``: a neighbourhood of more reports than a collection holds is all of
them, so a larger ``k`` says nothing more (and ``10³⁰`` is a mistake, refused)."""


class KnnQuery(RequestModel):
    """Points to classify and the neighbourhood size."""

    points: list[Annotated[list[float], Field(min_length=1)]] = Field(
        min_length=1,
        max_length=MAX_QUERY_POINTS,
        description="rows of raw feature values, one per point, in the collection's order",
    )
    k: int = Field(
        default=25,
        description="neighbours (a ball holds at least k reporters)",
        json_schema_extra=checked_range(ge=1, le=MAX_NEIGHBOURS),
    )

    def check_k(self) -> int:
        """``k``; :class:`InvalidQueryError` outside 1 … :data:`MAX_NEIGHBOURS`."""
        if not 1 <= self.k <= MAX_NEIGHBOURS:
            big = abs(self.k) >= 10**40  # shown by its size, not its digits
            shown = f"an integer near 2^{self.k.bit_length()}" if big else f"{self.k:,}"
            raise InvalidQueryError(
                f"k must be a whole number from 1 to {MAX_NEIGHBOURS:,} (neighbours: a"
                f" neighbourhood of all the reports needs no more), got {shown}"
            )
        return self.k


class KnnPrediction(BaseModel):
    """One point's answer."""

    model_config = ConfigDict(frozen=True)

    predicted: str
    scores: list[float] = Field(description="debiased class counts over the neighbourhood")
    stderr: list[float] = Field(description="their standard errors (given the neighbourhood)")
    clipped: list[str] = Field(
        default_factory=list,
        description=(
            "the features of this point that lay outside their bounds and were clipped onto"
            " them, as a device clips its own values (empty when none): the point was"
            " classified as if it had those boundary values"
        ),
    )


class KnnClassification(BaseModel, Tabular):
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
    central: CentralRelease | None = central_field()

    def frame_columns(self) -> Columns:
        """One row per query point: ``point`` (its index), ``predicted``, then
        ``score_{class}`` and ``stderr_{class}`` for every class, and ``clipped``."""
        table: Columns = {
            "point": list(range(len(self.predictions))),
            "predicted": [prediction.predicted for prediction in self.predictions],
        }
        for c, label in enumerate(self.classes):
            table[f"score_{label}"] = [prediction.scores[c] for prediction in self.predictions]
            table[f"stderr_{label}"] = [prediction.stderr[c] for prediction in self.predictions]
        table["clipped"] = [", ".join(prediction.clipped) for prediction in self.predictions]
        return table
