"""A kNN collection's classifier: the cell protocol over a label collection's statistics.

The device report of :class:`~.cells.CellProtocol` under OUE is exactly what a label
collection with the ``sample`` budget sends (Yilmaz et al.'s naive-Bayes reports, see
:mod:`ldp_shared.analyses.joint`): one attribute per table, ``cell_0 … cell_{T−1}``,
each with the ``2^b`` cell codes as its domain, and the label; each device carries ONE
table jointly with its class, unary-encoded at the whole ε (:mod:`ldp_shared.knn_cells`
holds the public part: features, hyperplanes, the device's cells). So the SDK's
privatizer and the aggregator's ingestion and sufficient statistics serve the kNN model
unchanged:

* :func:`collection_spec` gives that collection's spec;
* :func:`protocol_of` the protocol of a kNN collection's config;
* :func:`counts_from_collection` reads the per-table counters and report counts out of
  the statistics (:class:`InsufficientReportsError` below the release minimum);
* :func:`classify` answers a :class:`~ldp_shared.wire.knn.KnnQuery` from them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ldp_shared.analyses.joint import Sums, attribute_reports, attribute_sums
from ldp_shared.analyses.knn.cells import CellCounts, CellProtocol
from ldp_shared.collection import CollectionConfig
from ldp_shared.errors import ConfigurationError, InsufficientReportsError, InvalidQueryError
from ldp_shared.knn_cells import KnnCells, cell_attribute
from ldp_shared.schema import CollectionSpec
from ldp_shared.wire.knn import KnnClassification, KnnPrediction, KnnQuery


def collection_spec(
    name: str,
    cells: KnnCells,
    epsilon: float,
    label: str,
    classes: Sequence[str],
    min_reports: int,
) -> CollectionSpec:
    """The label collection (OUE, ``sample`` budget) of a kNN model."""
    codes = [str(h) for h in range(1 << cells.bits)]
    attributes: list[dict[str, Any]] = [
        {"name": a, "domain": codes, "mechanism": "oue"} for a in cells.attribute_names()
    ]
    attributes.append({"name": label, "domain": list(classes), "mechanism": "oue"})
    return CollectionSpec.model_validate(
        {
            "name": name,
            "epsilon": epsilon,
            "budget": "sample",
            "label": label,
            "attributes": attributes,
            "release": {"min_reports": min_reports},
            "knn": cells.model_dump(),
        }
    )


def protocol_of(config: CollectionConfig) -> CellProtocol:
    """The cell protocol of a kNN collection (:class:`InvalidQueryError` for another)."""
    cells = config.spec.knn
    if cells is None or config.label is None:
        raise InvalidQueryError(
            f"collection {config.name!r} is not a kNN collection (its spec has no 'knn')"
        )
    assert config.epsilon is not None
    return CellProtocol(
        cells.space.dimension,
        len(config.label.domain),
        config.epsilon,
        tables=cells.tables,
        bits=cells.bits,
        seed=cells.seed,
        mechanism="oue",
    )


def counts_from_collection(
    protocol: CellProtocol, config: CollectionConfig, n: int, sums: Sums
) -> CellCounts:
    """The protocol's counters from the collection's statistics (``n`` reports).

    :class:`InsufficientReportsError` below the collection's ``release.min_reports``;
    :class:`ConfigurationError` when the collection is not the protocol's.
    """
    minimum = config.spec.release.min_reports
    if n < minimum:
        raise InsufficientReportsError(
            f"collection {config.name!r} has {n} reports; its release policy needs at least"
            f" {minimum} before it classifies"
        )
    counts = protocol.empty_counts()
    for t in range(protocol.tables):
        attribute = config.attribute(cell_attribute(t))
        if attribute.cells != protocol.domain or attribute.bit_channel != (protocol.p, protocol.q):
            raise ConfigurationError(f"collection {config.name!r} is not this protocol's")
        counts.reports[t] = attribute_reports(attribute, n, sums)
        # the joint cell of value h and class c is h·k + c: the protocol's own layout
        counts.sums[t] = attribute_sums(attribute, sums).astype(np.int64)
    return counts


def classify(config: CollectionConfig, n: int, sums: Sums, query: KnnQuery) -> KnnClassification:
    """Classify the query points of a kNN collection from its statistics."""
    protocol = protocol_of(config)
    cells = config.spec.knn
    assert cells is not None and config.label is not None and config.epsilon is not None
    query.check_k()
    space = cells.space
    t, outside = space.scale_queries(query.points)
    scores = protocol.scores(
        counts_from_collection(protocol, config, n, sums), space.standardise(t), k=query.k
    )
    classes = list(config.label.domain)
    names = [f.name for f in space.features]
    predictions = [
        KnnPrediction(
            predicted=classes[int(c)],
            scores=s.tolist(),
            stderr=e.tolist(),
            clipped=[names[j] for j in np.flatnonzero(o)],
        )
        for c, s, e, o in zip(scores.predicted, scores.scores, scores.stderr, outside, strict=True)
    ]
    return KnnClassification(
        collection=config.name,
        config_hash=config.config_hash,
        classes=classes,
        k=query.k,
        n_reports=n,
        epsilon=config.epsilon,
        tables=cells.tables,
        bits=cells.bits,
        predictions=predictions,
    )
