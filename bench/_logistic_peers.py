"""Central-DP and non-private peers of ``bench/logistic.py`` on a population of ``n``
people holding copies of a data set's distinct training records (see ``_central_dp.py``).

Every peer sees the same population as our devices: ``np.resize(arange(m), n)``, so with
``n < m`` the first ``n`` records and otherwise each record ``⌊n/m⌋`` or ``⌈n/m⌉`` times.
"""

from __future__ import annotations

import statistics
import time
import warnings
from typing import Any

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score

from _central_dp import (
    ITERATIONS,
    RECIPES,
    load_diffprivlib_models,
    recipe_fit,
    recipe_predict,
)
from _logistic_data import Dataset, Split
from ldp_shared.rand import seeded_rng

DIFFPRIVLIB, DIFFPRIVLIB_IMPORT = load_diffprivlib_models()
MANY = 100_000


def scores(p: np.ndarray, split: Split) -> dict[str, float]:
    return {
        "accuracy": float(np.mean((p > 0.5) == split.y)),
        "auc": float(roc_auc_score(split.y, p)),
    }


def population_counts(m: int, n: int) -> np.ndarray:
    """How many of the ``n`` people hold each of the ``m`` distinct records."""
    return np.bincount(np.resize(np.arange(m), n), minlength=m)


def mean_std(values: list[float]) -> tuple[float, float]:
    return statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else 0.0


def summarise(method: str, epsilon: float | None, runs: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"method": method, "epsilon": epsilon}
    for part in ("validation", "test"):
        for metric in ("accuracy", "auc"):
            mean, std = mean_std([r[part][metric] for r in runs])
            out[f"{part}_{metric}_mean"], out[f"{part}_{metric}_std"] = mean, std
    out["seconds_mean"] = statistics.fmean(r["seconds"] for r in runs)
    out["runs"] = runs
    return out


def recipe_cell(
    ds: Dataset, counts: np.ndarray, recipe: str, eps: float, delta: float, seeds: int
) -> dict[str, Any]:
    """The recipe at total (ε, δ): ``T`` chosen on validation (seed 0), then ``seeds`` runs."""
    x, y = ds.train.x, ds.train.y

    def fit(iterations: int, seed: int) -> tuple[np.ndarray, dict[str, float]]:
        return recipe_fit(recipe, x, y, counts, eps, delta, iterations, seeded_rng(seed))

    def val_accuracy(iterations: int) -> float:
        w, _ = fit(iterations, 0)
        return scores(recipe_predict(recipe, w, ds.validation.x), ds.validation)["accuracy"]

    chosen = max(ITERATIONS, key=val_accuracy)
    runs = []
    for seed in range(seeds):
        started = time.perf_counter()
        w, info = fit(chosen, 1000 + seed)
        runs.append(
            {
                "validation": scores(recipe_predict(recipe, w, ds.validation.x), ds.validation),
                "test": scores(recipe_predict(recipe, w, ds.test.x), ds.test),
                "seconds": time.perf_counter() - started,
            }
        )
    row = summarise(recipe, eps, runs)
    row.update(iterations=chosen, delta=0.0 if recipe == "central-laplace" else delta, **info)
    return row


def diffprivlib_cell(ds: Dataset, counts: np.ndarray, eps: float, seeds: int) -> dict[str, Any]:
    """diffprivlib's LogisticRegression on the ``n`` rows (materialised: it ignores sample
    weights), ``data_norm`` the layout's bound without the intercept; one seed above
    :data:`MANY` people (a fit on 10⁶ rows is the slow part of the whole benchmark)."""
    if counts.sum() > MANY:
        seeds = 1
    if DIFFPRIVLIB is None:
        return {"method": "diffprivlib", "epsilon": eps, "skipped": DIFFPRIVLIB_IMPORT}
    rows = np.repeat(np.arange(len(counts)), counts)
    x, y = ds.train.x[rows, 1:], ds.train.y[rows]
    norm = float(np.sqrt(ds.layout.max_norm("l2") ** 2 - 1.0))
    runs = []
    for seed in range(seeds):
        started = time.perf_counter()
        clf = DIFFPRIVLIB.LogisticRegression(
            epsilon=eps, data_norm=norm, random_state=2000 + seed, max_iter=1000
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clf.fit(x, y)

        def predict(split: Split, model: Any = clf) -> np.ndarray:
            out: np.ndarray = model.predict_proba(split.x[:, 1:])[:, 1]
            return out

        runs.append(
            {
                "validation": scores(predict(ds.validation), ds.validation),
                "test": scores(predict(ds.test), ds.test),
                "seconds": time.perf_counter() - started,
            }
        )
    return {**summarise("diffprivlib", eps, runs), "data_norm": norm}


def sklearn_cell(ds: Dataset, counts: np.ndarray) -> dict[str, Any]:
    """Non-private scikit-learn (default C = 1) on the population (as sample weights)."""
    started = time.perf_counter()
    keep = counts > 0
    clf = LogisticRegression(max_iter=10_000).fit(
        ds.train.x[keep, 1:], ds.train.y[keep], sample_weight=counts[keep]
    )
    run = {
        "validation": scores(clf.predict_proba(ds.validation.x[:, 1:])[:, 1], ds.validation),
        "test": scores(clf.predict_proba(ds.test.x[:, 1:])[:, 1], ds.test),
        "seconds": time.perf_counter() - started,
    }
    return summarise("sklearn", None, [run])


def central_rows(
    ds: Dataset,
    n: int,
    epsilons: tuple[float, ...],
    delta: float,
    seeds: int,
    diffprivlib: bool = True,
) -> list[dict[str, Any]]:
    """Every central peer at every ε (and non-private scikit-learn once) for ``n`` people;
    ``diffprivlib=False`` leaves diffprivlib out (6 to 8 minutes a fit on 10⁶ Adult rows
    on the shared machine)."""
    counts = population_counts(len(ds.train.x), n)
    rows = [sklearn_cell(ds, counts)]
    for eps in epsilons:
        for recipe in RECIPES:
            rows.append(recipe_cell(ds, counts, recipe, eps, delta, seeds))
        if diffprivlib:
            rows.append(diffprivlib_cell(ds, counts, eps, seeds))
    for row in rows:
        row["devices"] = n
    return rows
