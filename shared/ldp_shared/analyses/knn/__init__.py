"""k-nearest-neighbour classification from LDP reports (issue 10).

Two protocols were built and measured (``bench/knn.py``, ``docs/knn.md``):

* :mod:`.cells`, **the one kept**: each device reports the joint (cell, class) of its
  record through one frequency oracle, the cells drawn by random hyperplanes; a query's
  class scores are debiased class counts over a Hamming ball of cells.
* :mod:`.perturbed`: each device reports its features by the sampled Piecewise/Hybrid
  mechanism and its class by GRR; neighbours are found in the perturbed space.

:mod:`.collection` runs the cell protocol over a kNN collection (a label collection
with the ``sample`` budget whose public part is :mod:`ldp_shared.knn_cells`);
:mod:`ldp_shared.knn_space` scales records and query points; :mod:`.scores` holds the class scores,
their standard errors and the variance of a debiased sum of counters.
"""

from ldp_shared.analyses.knn.cells import CellCounts, CellProtocol
from ldp_shared.analyses.knn.perturbed import CoordinateProtocol, StoredReports
from ldp_shared.analyses.knn.scores import ClassScores, choose_oracle, set_sum_variance
from ldp_shared.knn_space import Feature, FeatureSpace, categorical, numeric

__all__ = [
    "CellCounts",
    "CellProtocol",
    "ClassScores",
    "CoordinateProtocol",
    "Feature",
    "FeatureSpace",
    "StoredReports",
    "categorical",
    "choose_oracle",
    "numeric",
    "set_sum_variance",
]
