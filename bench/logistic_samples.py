"""How many coordinates a sampled gradient report should carry: Wang et al.'s
``k = ⌊ε/2.5⌋`` against the ``k`` that minimises the report's noise trace, on the
validation parts only (never the test splits).

The noise one report adds, on the ``t = g/bound`` scale, for a gradient ``t``, is
``V(k, t) = Σ_j [(d/k)(Var₁(t_j; ε/k) + t_j²) − t_j²]``: the 1-D mechanism's variance at
``ε/k`` grows with ``k``, the sampling term ``(d/k − 1)‖t‖²`` shrinks with it. The
criterion printed as ``trace_k`` is ``argmin_k V(k, 0) + (d/k − 1)·r²`` for ``r² = 0``
(the plan's zero-gradient trace) and for ``r²`` a quarter of the layout's ``‖x‖₂²``
bound (a gradient half as large as at ``w = 0``). Then LDP-SGD with the library's default
plan for each ``k`` ∈ {1, 2, 3}, at ε = 6 and 8 (where the rule gives 2 and 3), for
``sampled-piecewise`` and ``sampled-hybrid``, ``--seeds`` seeds (default 2), 10⁶ devices:
validation accuracy and AUC. The fixed-``k`` mechanisms are registered here only
(``<name>-k<k>``), for this experiment.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from _common import DATA_DIR, base_parser, emit, log, sized, start_marker
from _logistic_data import load_adult, load_breast_cancer
from ldp_shared.analyses.logistic.planning import plan_training
from ldp_shared.mechanisms.gradient import register_gradient
from ldp_shared.mechanisms.gradient_sampling import (
    SampledGradient,
    SampledHybrid,
    SampledPiecewise,
    sample_count,
)
from logistic import plan_fields, run, summary

EPSILONS = (6.0, 8.0)
SAMPLES = (1, 2, 3)
DEVICES = 1_000_000
SEEDS = 2


def fixed_k(base: type[SampledGradient], k: int) -> type[SampledGradient]:
    """``base`` with ``k`` fixed, registered as ``<name>-k<k>``."""

    @dataclass(frozen=True)
    class Fixed(base):  # type: ignore[valid-type, misc]
        name: ClassVar[str] = f"{base.name}-k{k}"

        @classmethod
        def create(
            cls, dimension: int, epsilon: float, bound: float = 1.0, delta: float | None = None
        ) -> SampledGradient:
            out: SampledGradient = cls(dimension=dimension, epsilon=epsilon, bound=bound,
                                       samples=k)  # fmt: skip
            return out

    return register_gradient(Fixed)


FIXED = {(b.name, k): fixed_k(b, k) for b in (SampledPiecewise, SampledHybrid) for k in SAMPLES}


def trace_choice(base: type[SampledGradient], d: int, eps: float, r2: float) -> int:
    def score(k: int) -> float:
        m = base(dimension=d, epsilon=eps, samples=k)
        return float(m.coordinate_variance(np.zeros((1, d))).sum()) + (d / k - 1) * r2

    return min(range(1, 9), key=score)


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=None, help=f"seeds (default {SEEDS})")
    args = parser.parse_args()
    started = start_marker()
    seeds = args.seeds or (1 if args.quick else SEEDS)
    n = sized(DEVICES, 20_000, 1_000, args)
    folder = Path(os.environ.get("LDP_BENCH_DATA", DATA_DIR))
    datasets: dict[str, Any] = {}
    missing = []
    for name, loader in (("adult", load_adult), ("breast_cancer", load_breast_cancer)):
        ds = loader(folder)
        if ds is None:
            missing.append(name)
            log(f"{name}: not found in {folder}: skipped")
            continue
        d = ds.layout.dimension
        r2 = ds.layout.max_norm("l2") ** 2 / 4
        devices = np.resize(np.arange(len(ds.train.x)), n)
        rows = []
        for (base, k), cls in FIXED.items():
            for eps in EPSILONS:
                plan = plan_training(ds.layout, n, cls.name, eps)
                s = summary([run(ds, plan, devices, seed) for seed in range(seeds)])
                base_cls = SampledPiecewise if base == SampledPiecewise.name else SampledHybrid
                rows.append(
                    {
                        "mechanism": base,
                        "samples": k,
                        "epsilon": eps,
                        "rule_k": sample_count(d, eps),
                        "trace_k_zero_gradient": trace_choice(base_cls, d, eps, 0.0),
                        "trace_k_quarter_bound": trace_choice(base_cls, d, eps, r2),
                        "plan": plan_fields(plan),
                        **{key: v for key, v in s.items() if not key.startswith("test")},
                    }
                )
                log(f"{name} {base} k={k} ε={eps}: val acc {s['validation_accuracy_mean']:.4f}"
                    f", auc {s['validation_auc_mean']:.4f}")  # fmt: skip
        for row in rows:
            for r in row["runs"]:
                r.pop("test")
        datasets[name] = {"dimension": d, "r2_quarter_bound": r2, "results": rows}
    result = {
        **started,
        "method": "sampled k: Wang et al.'s rule against the noise trace; validation only",
        "parameters": {"devices": n, "seeds": seeds, "epsilons": list(EPSILONS)},
        "datasets": datasets,
        "datasets_missing": missing,
    }
    emit("logistic_samples", result, args.quick, args.output)


if __name__ == "__main__":
    main()
