"""kNN classification of the analyst's query points from a kNN collection's statistics.

The mathematics is :mod:`ldp_shared.analyses.knn.collection` (the cell protocol over a
label collection with the ``sample`` budget). A query reads the statistics only
(``T·2^b·k`` counters, never the reports); the query points are classified in memory and
never stored or logged.
"""

from __future__ import annotations

from sqlalchemy import Engine

from ldp_aggregator.release import central_of, current_stats
from ldp_aggregator.storage.collections import StoredCollection
from ldp_shared.analyses.knn.collection import classify, protocol_of
from ldp_shared.periods import Window
from ldp_shared.wire.knn import KnnClassification, KnnQuery


def classify_points(
    engine: Engine, collection: StoredCollection, query: KnnQuery, window: Window | None = None
) -> KnnClassification:
    """Predicted classes, debiased class scores and standard errors of the query points.

    A number outside its bounds is clipped onto them, as devices clip theirs, and the
    point's prediction names it (``clipped``). A shuffled collection's answer states the
    central guarantee of the reports it was computed from (``central``).
    :class:`~ldp_shared.errors.InvalidQueryError` for a collection that is not a kNN one,
    a point of the wrong dimension, with NaN or a category index out of range, or ``k``
    outside 1 … 10⁹;
    :class:`~ldp_shared.errors.InsufficientReportsError` below the release minimum (of
    the reports of ``window``'s periods, if given).
    """
    config = collection.config
    protocol_of(config)  # refuse another kind of collection before reading anything
    stats = current_stats(engine, collection, window)
    result = classify(config, stats.n_reports, stats.sums, query)
    return result.model_copy(update={"central": central_of(config, stats.n_reports)})
