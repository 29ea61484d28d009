"""Coverage and width of the naive Bayes count intervals: score (the default) against normal.

For a few small label collections, draws ``--runs`` independent collections of the same
records through the real path (``Privatizer`` → packed reports → ``decode_reports`` →
``build_model``) and checks every released interval of the model against the true count:
each joint count ``N(x_j = v, c)`` among the reports that carried feature ``j``, and
each class count ``N(c)`` among all reports. Two intervals on the same models: the
released ``score`` interval (continuity-corrected, ``ldp_shared.analyses.naive_bayes
.counts``) and the previous ``normal`` one, ``count ± z·stderr`` with the released
standard error. Prints, per setting and interval, the lowest and mean coverage over the
model's counts (with the Monte-Carlo standard error of one count's coverage), the counts
below 94 % and the mean width.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from _common import base_parser, emit, log, start_marker
from ldp_shared.analyses.naive_bayes import build_model
from ldp_shared.codec import Privatizer, decode_reports, encode_columns, records_to_columns
from ldp_shared.collection import CollectionConfig, build_config
from ldp_shared.kernel import z_value
from ldp_shared.rand import seeded_rng
from ldp_shared.schema import CollectionSpec
from ldp_shared.wire.naive_bayes import NaiveBayesModel, NaiveBayesTrainRequest

SEED = 20261124
CONFIDENCE = 0.95


def spec(epsilon: float, budget: str, label: int, features: list[int]) -> CollectionSpec:
    """A collection of ``features`` (their numbers of values) and a label of ``label``
    classes, OUE throughout."""
    attributes = [
        {"name": f"x{j}", "domain": [f"v{i}" for i in range(d)], "mechanism": "oue"}
        for j, d in enumerate(features)
    ]
    attributes.append({"name": "y", "domain": [f"c{i}" for i in range(label)], "mechanism": "oue"})
    return CollectionSpec.model_validate(
        {
            "name": "nb-intervals",
            "epsilon": epsilon,
            "budget": budget,
            "label": "y",
            "attributes": attributes,
            "release": {"min_reports": 1},
        }
    )


def sparse_records(table: list[list[int]]) -> list[dict[str, str]]:
    """Records of one feature whose joint counts are ``table`` (row = class, column = value)."""
    return [
        {"x0": f"v{v}", "y": f"c{c}"}
        for c, row in enumerate(table)
        for v, count in enumerate(row)
        for _ in range(count)
    ]


def two_feature_records(n: int) -> list[dict[str, str]]:
    """``n`` records of two features (4 and 3 values) and 3 classes: class c0 dominant,
    class c2 rare, each feature concentrated on one value per class."""
    out = []
    for i in range(n):
        c = 0 if i % 10 < 7 else (1 if i % 10 < 9 else 2)
        x0, x1 = (c + int(i % 7 == 0)) % 4, (c + int(i % 5 == 0)) % 3
        out.append({"x0": f"v{x0}", "x1": f"v{x1}", "y": f"c{c}"})
    return out


SMALL_TABLE = [[21, 21, 2, 2, 2, 2], [21, 21, 2, 2, 2, 2]]
SETTINGS: list[tuple[str, CollectionSpec, list[dict[str, str]]]] = [
    (
        "1 feature (d=6), k=2, OUE ε=6, split, n=100",
        spec(6.0, "split", 2, [6]),
        sparse_records(SMALL_TABLE),
    ),
    (
        "1 feature (d=6), k=2, OUE ε=6, split, n=1,000",
        spec(6.0, "split", 2, [6]),
        sparse_records([[10 * c for c in row] for row in SMALL_TABLE]),
    ),
    (
        "2 features (d=4, 3), k=3, OUE ε=4, sample, n=300",
        spec(4.0, "sample", 3, [4, 3]),
        two_feature_records(300),
    ),
]


def true_counts(
    config: CollectionConfig, cells: list[NDArray[np.int64]], carried: NDArray[np.int64] | None
) -> list[NDArray[np.int64]]:
    """Per feature, the true joint counts (class-major) among the reports that carried it."""
    out = []
    for attribute, cell in zip(config.features, cells, strict=True):
        mine = cell if carried is None else cell[carried == attribute.sample_index]
        out.append(np.bincount(mine, minlength=attribute.cells).reshape(attribute.d, -1).T)
    return out


def released(model: NaiveBayesModel, z: float) -> dict[str, tuple[NDArray[Any], NDArray[Any]]]:
    """Every count's interval, flattened (features then classes), score and normal."""
    counts = np.concatenate([np.ravel(f.counts) for f in model.features] + [model.class_counts])
    stderr = np.concatenate(
        [np.ravel(f.stderr) for f in model.features] + [model.class_counts_stderr]
    )
    low = np.concatenate([np.ravel(f.ci_low) for f in model.features] + [model.class_counts_ci_low])
    high = np.concatenate(
        [np.ravel(f.ci_high) for f in model.features] + [model.class_counts_ci_high]
    )
    return {"score": (low, high), "normal": (counts - z * stderr, counts + z * stderr)}


def coverage(
    spec_: CollectionSpec, records: list[dict[str, str]], runs: int, rng: np.random.Generator
) -> dict[str, Any]:
    config = build_config(spec_)
    n, z = len(records), z_value(CONFIDENCE)
    assert config.label is not None
    label = np.array([config.label.domain.index(r["y"]) for r in records])
    cells = encode_columns(config, records_to_columns(config, records))
    reports = Privatizer(config).privatize_many(records * runs, rng)
    request = NaiveBayesTrainRequest(confidence=CONFIDENCE)
    hits: dict[str, list[NDArray[np.bool_]]] = {"score": [], "normal": []}
    widths: dict[str, list[NDArray[np.float64]]] = {"score": [], "normal": []}
    for run in range(runs):
        chunk = reports[run * n : (run + 1) * n]
        carried = chunk[:, 0].astype(np.int64) if config.selector_bytes else None
        model = build_model(
            config, n, decode_reports(config, chunk).sums, request, model_id="m", created_day="d"
        )
        truth = np.concatenate(
            [t.ravel() for t in true_counts(config, cells, carried)]
            + [np.bincount(label, minlength=config.label.k)]
        )
        for name, (low, high) in released(model, z).items():
            hits[name].append((low <= truth) & (truth <= high))
            widths[name].append(high - low)
    out: dict[str, Any] = {"n": n, "counts": int(hits["score"][0].size)}
    for name in hits:
        rate = np.mean(hits[name], axis=0)
        out[name] = {
            "min_coverage": float(rate.min()),
            "mean_coverage": float(rate.mean()),
            "counts_below_0.94": int(np.sum(rate < 0.94)),
            "mean_width": float(np.mean(widths[name])),
        }
    out["mc_stderr_at_0.95"] = math.sqrt(0.95 * 0.05 / runs)
    log(f"n = {n}, {out['counts']} counts: done")
    return out


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=4_000, help="collections per setting")
    args = parser.parse_args()
    runs = 300 if args.quick else args.runs
    result: dict[str, Any] = {**start_marker(), "confidence": CONFIDENCE, "runs": runs}
    rng = seeded_rng(SEED)
    result["settings"] = [
        {"setting": name, **coverage(spec_, records, runs, rng)}
        for name, spec_, records in SETTINGS
    ]
    emit("naive_bayes_intervals", result, args.quick, args.output)


if __name__ == "__main__":
    main()
