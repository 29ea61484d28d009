"""``ldpcollect plan``: the planner (:mod:`ldp_shared.planner`) on the command line.

Pure, like the planner: no server. Prints one row per mechanism, best first; ``--json``
prints the :class:`~ldp_shared.wire.plan.Plan` instead. An impossible query is one line
on stderr (the command's usual error reporting) and exit status 1.

    ldpcollect plan --domain 1024 --epsilon 1 --n 100000
    ldpcollect plan --lo 0 --hi 100 --epsilon 2 --target-se 0.5
    ldpcollect plan --epsilon 2 --n 1000000 --second-moment 0.01

The last column holds what the planner chose for the mechanism (its ``parameters``:
hash functions, bins, ε∞ as ``permanent_epsilon``, ...) and, for an (ε, δ) mechanism,
the δ of one report (``local δ``); hashing's collision terms are stated at
``--second-moment`` (F₂ = Σ f² of the values, in (0, 1]; 1, the default, is the worst
case).
"""

from __future__ import annotations

import argparse

from ldp_shared.wire.plan import Plan, PlanEntry


def add_plan_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``plan`` to the sub-commands."""
    plan = commands.add_parser(
        "plan",
        help="rank the mechanisms for an attribute: error at n, or n for a target",
        description="For an attribute (--domain D values, --lo/--hi bounds, or neither: an"
        " open domain) at --epsilon, list every mechanism that plans it, best first: the"
        " standard error at --n (or the reports a --target-se / --target-width needs), the"
        " report size, the central ε if the reports are shuffled, and the heavy-hitter"
        " threshold.",
    )
    plan.add_argument("--epsilon", type=float, required=True, help="ε of one report")
    plan.add_argument("--domain", type=int, default=None, help="number of values (categorical)")
    plan.add_argument("--lo", type=float, default=None, help="lower bound (numeric)")
    plan.add_argument("--hi", type=float, default=None, help="upper bound (numeric)")
    goal = plan.add_mutually_exclusive_group(required=True)
    goal.add_argument("--n", type=int, default=None, help="reports expected")
    goal.add_argument("--target-se", type=float, default=None, help="standard error wanted")
    goal.add_argument("--target-width", type=float, default=None, help="interval width wanted")
    plan.add_argument("--delta", type=float, default=1e-6, help="δ of the central guarantee")
    plan.add_argument("--confidence", type=float, default=0.95, help="interval level")
    plan.add_argument(
        "--second-moment",
        type=float,
        default=1.0,
        help="F₂ = Σ f² of the values, in (0, 1], that hashing's collision term is stated"
        " at (default 1: the worst case; 1/d for d equally common values)",
    )
    plan.add_argument("--json", action="store_true", help="print the plan as JSON")


def _optional(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _choices(entry: PlanEntry) -> str:
    """The planner's parameters of the mechanism and the δ of one report, if any."""
    chosen = [f"{key}={value:g}" for key, value in entry.parameters.items()]
    if entry.local_delta > 0.0:
        chosen.append(f"local δ={entry.local_delta:.3g}")
    return " ".join(chosen) or "-"


def _row(entry: PlanEntry) -> list[str]:
    return [
        entry.mechanism,
        f"{entry.n:,}",
        format(entry.stderr, ".4g"),
        format(entry.interval_width, ".4g"),
        str(entry.report_bytes),
        _optional(entry.central_epsilon, ".4g"),
        _optional(entry.central_epsilon_closed_form, ".4g"),
        _optional(entry.heavy_hitter_threshold, ".4g"),
        _choices(entry),
    ]


def format_plan(plan: Plan) -> str:
    """The plan as an aligned text table, with what was not planned below it."""
    header = ["mechanism", "n", "stderr", "width", "bytes", "central ε", "closed form", "hh"]
    header.append("parameters")
    rows = [header, *(_row(entry) for entry in plan.mechanisms)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header) - 1)]
    lines = [
        "  ".join([*(c.rjust(w) for c, w in zip(row, widths, strict=False)), row[-1]])
        for row in rows
    ]
    lines.append(f"central ε at δ = {plan.delta:g} if the reports pass an honest shuffler")
    if any(entry.second_moment is not None for entry in plan.mechanisms):
        lines.append(f"hashing's collision terms stated at F₂ = {plan.second_moment:g}")
    if plan.unreachable:
        lines.append("cannot reach the target at any n: " + ", ".join(plan.unreachable))
    if plan.not_planned:
        lines.append("not planned for this query: " + ", ".join(plan.not_planned))
    return "\n".join(lines)


def run_plan(args: argparse.Namespace) -> int:
    """Print the plan of the command line's query."""
    from ldp_shared.planner import plan

    result = plan(
        epsilon=args.epsilon,
        domain_size=args.domain,
        lo=args.lo,
        hi=args.hi,
        n=args.n,
        target_stderr=args.target_se,
        target_width=args.target_width,
        delta=args.delta,
        confidence=args.confidence,
        second_moment=args.second_moment,
    )
    print(result.model_dump_json(indent=2) if args.json else format_plan(result))
    return 0
