"""The cell protocol as a label collection: the device path and statistics of the service.

The device report of :class:`~.cells.CellProtocol` under OUE is exactly what a label
collection with the ``sample`` budget sends (Yilmaz et al.'s naive-Bayes reports, see
:mod:`ldp_shared.analyses.joint`): the collection has one attribute per table,
``cell_0 … cell_{T−1}``, each with the ``2^b`` cell codes as its domain, and the label;
each device carries ONE attribute chosen uniformly (the table) jointly with its class,
unary-encoded at the whole ε. So the SDK's own privatizer and the aggregator's own
ingestion and sufficient statistics serve the kNN model unchanged:

* :func:`collection_spec` gives that collection's spec for a protocol;
* :func:`cell_records` turns a device's scaled features and class into the record the
  SDK privatizes (its cell in every table; the privatizer keeps one);
* :func:`counts_from_collection` reads the per-table counters and report counts out of
  the collection's statistics, ready for :meth:`~.cells.CellProtocol.scores`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ldp_shared.analyses.joint import Sums, attribute_reports, attribute_sums
from ldp_shared.analyses.knn.cells import CellCounts, CellProtocol
from ldp_shared.collection import CollectionConfig
from ldp_shared.errors import ConfigurationError, InsufficientReportsError
from ldp_shared.schema import CollectionSpec


def cell_attribute(table: int) -> str:
    return f"cell_{table}"


def collection_spec(
    name: str, protocol: CellProtocol, label: str, classes: Sequence[str], min_reports: int
) -> CollectionSpec:
    """The label collection (OUE, ``sample`` budget) whose reports the protocol reads."""
    if protocol.oracle != "oue" or len(classes) != protocol.classes:
        raise ConfigurationError("a cell collection reports by OUE over the protocol's classes")
    cells = [str(h) for h in range(protocol.cells)]
    attributes: list[dict[str, Any]] = [
        {"name": cell_attribute(t), "domain": cells, "mechanism": "oue"}
        for t in range(protocol.tables)
    ]
    attributes.append({"name": label, "domain": list(classes), "mechanism": "oue"})
    return CollectionSpec.model_validate(
        {
            "name": name,
            "epsilon": protocol.epsilon,
            "budget": "sample",
            "label": label,
            "attributes": attributes,
            "release": {"min_reports": min_reports},
        }
    )


def cell_records(
    protocol: CellProtocol, z: Any, labels: Sequence[int], label: str, classes: Sequence[str]
) -> dict[str, list[str]]:
    """Columns for the SDK's privatizer: every table's cell code and the class name."""
    codes = protocol.codes(np.asarray(z, dtype=np.float64))
    columns = {
        cell_attribute(t): [str(int(h)) for h in codes[:, t]] for t in range(protocol.tables)
    }
    columns[label] = [classes[int(c)] for c in labels]
    return columns


def counts_from_collection(
    protocol: CellProtocol, config: CollectionConfig, n: int, sums: Sums
) -> CellCounts:
    """The protocol's counters from the collection's statistics (``n`` reports).

    :class:`InsufficientReportsError` below the collection's ``release.min_reports``;
    :class:`ConfigurationError` when the collection is not the protocol's (its ε, its
    cells, or its channel differ).
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
