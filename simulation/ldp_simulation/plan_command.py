"""``ldpcollect plan``: the planner (:mod:`ldp_shared.planner`) on the command line.

Pure, like the planner: no server. Prints one row per mechanism, best first; ``--json``
prints the :class:`~ldp_shared.wire.plan.Plan` instead. An impossible query is one line
on stderr (the command's usual error reporting) and exit status 1.

    ldpcollect plan --domain 1024 --epsilon 1 --n 100000
    ldpcollect plan --lo 0 --hi 100 --epsilon 2 --target-se 0.5
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
    plan.add_argument("--json", action="store_true", help="print the plan as JSON")


def _optional(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


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
    ]


def format_plan(plan: Plan) -> str:
    """The plan as an aligned text table, with what was not planned below it."""
    header = ["mechanism", "n", "stderr", "width", "bytes", "central ε", "closed form", "hh"]
    rows = [header, *(_row(entry) for entry in plan.mechanisms)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(cell.rjust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]
    lines.append(f"central ε at δ = {plan.delta:g} if the reports pass an honest shuffler")
    if plan.unreachable:
        lines.append("cannot reach the target at any n: " + ", ".join(plan.unreachable))
    if plan.not_planned:
        lines.append("not planned for this attribute: " + ", ".join(plan.not_planned))
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
    )
    print(result.model_dump_json(indent=2) if args.json else format_plan(result))
    return 0
