"""The registry of dashboard panels, in tab order. A new analysis adds its module and
one entry here (see :mod:`ldp_aggregator.ui.panel`)."""

from __future__ import annotations

from ldp_aggregator.ui.panel import Panel
from ldp_aggregator.ui.panels import (
    days,
    frequencies,
    heavy_hitters,
    itemsets,
    jobs,
    knn,
    means,
    naive_bayes,
    overview,
    quantiles,
    training,
    trend,
)

PANELS: tuple[Panel, ...] = (
    overview.PANEL,
    days.PANEL,
    frequencies.PANEL,
    heavy_hitters.PANEL,
    means.PANEL,
    quantiles.PANEL,
    trend.PANEL,
    naive_bayes.PANEL,
    knn.PANEL,
    itemsets.PANEL,
    training.PANEL,
    jobs.PANEL,
)
