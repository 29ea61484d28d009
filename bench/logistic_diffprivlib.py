"""diffprivlib's LogisticRegression on Adult at 10⁶ people, at the ε values that
``bench/logistic.py`` leaves to ``--no-diffprivlib`` for time (one fit is minutes).

    bench/.venv-logistic/bin/python bench/logistic_diffprivlib.py [--epsilons 0.1 0.5 2 8]

One seed per ε, the same population, splits and scoring as ``bench/logistic.py``
(``_logistic_peers.diffprivlib_cell``). Writes ``bench/results/logistic_diffprivlib.json``.
"""

from __future__ import annotations

import time

from _common import DATA_DIR, base_parser, emit, log, start_marker
from _logistic_data import load_adult
from _logistic_peers import diffprivlib_cell, population_counts

PEOPLE = 1_000_000


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.1, 0.5, 2.0, 8.0])
    args = parser.parse_args()
    started = start_marker()
    ds = load_adult(DATA_DIR)
    if ds is None:
        emit(
            "logistic_diffprivlib",
            {**started, "skipped": f"{DATA_DIR} has no adult.data/.test/.names"},
            args.quick,
            args.output,
        )
        return
    people = 20_000 if args.quick else PEOPLE
    counts = population_counts(len(ds.train.x), people)
    rows = []
    for epsilon in args.epsilons:
        log(f"[logistic_diffprivlib] ε = {epsilon:g}")
        t = time.perf_counter()
        row = diffprivlib_cell(ds, counts, epsilon, 1)
        row["seconds"] = time.perf_counter() - t
        rows.append(row)
    emit(
        "logistic_diffprivlib", {**started, "people": people, "rows": rows}, args.quick, args.output
    )


if __name__ == "__main__":
    main()
