"""Central ε of shuffled reports: both bounds over a grid of n and ε₀, and the vectors.

For δ = 10⁻⁶, every n of ``SIZES`` and every local ε₀ of ``EPSILONS``, prints the closed
form (Feldman, McMillan and Talwar 2021, Thm 3.1; ε₀ where its condition fails), the
numerical bound of their clone reduction (``ldp_shared.shuffling``), which of the two
:func:`central_epsilon` reports, and how long the numerical bound took. Then the published
vectors: Apple's README (n = 10⁵, ε₀ = 4: numerical 0.1675 to 0.1728, closed form 0.5378)
and the issue's (n = 10⁶, ε₀ = 4: closed form about 0.20). ``docs/shuffling.md`` shows
the table.
"""

from __future__ import annotations

import time
from typing import Any

from _common import base_parser, emit, log, sized, start_marker
from ldp_shared.shuffling import central_epsilon, numerical_cells

DELTA = 1e-6
SIZES = [10**3, 10**4, 10**5, 10**6]
EPSILONS = [0.5, 1.0, 2.0, 4.0, 8.0]


def row(epsilon0: float, n: int, delta: float = DELTA) -> dict[str, Any]:
    start = time.perf_counter()
    g = central_epsilon(epsilon0, n, delta)
    seconds = time.perf_counter() - start
    return {
        "epsilon0": epsilon0,
        "n": n,
        "delta": delta,
        "closed_form": g.epsilon_closed_form,
        "numerical": g.epsilon_numerical,
        "reported": g.epsilon,
        "cells": numerical_cells(epsilon0, n, delta),
        "seconds": seconds,
    }


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    args = parser.parse_args()
    result: dict[str, Any] = start_marker()
    sizes = sized(SIZES, SIZES[:3], SIZES[:1], args)
    rows = []
    for n in sizes:
        for epsilon0 in EPSILONS:
            rows.append(row(epsilon0, n))
            log(f"n={n} ε₀={epsilon0}: {rows[-1]['reported']:.4f}")
    apple = row(4.0, 10**5)
    issue = row(4.0, 10**6)
    result.update(
        {
            "delta": DELTA,
            "table": rows,
            "vectors": {
                "apple_readme_n1e5_eps4": {
                    **apple,
                    "published_closed_form": 0.5378040242374512,
                    "published_numerical_range": [0.1675385583317841, 0.172790550755978],
                    "numerical_in_range": 0.1675385583317841
                    <= apple["numerical"]
                    <= 0.172790550755978,
                },
                "issue_n1e6_eps4": {**issue, "published_closed_form_about": 0.20},
            },
        }
    )
    emit("accountant", result, args.quick, args.output)


if __name__ == "__main__":
    main()
