"""No import circles between the project's modules, read from the sources.

Every ``import`` counts, also one inside a function or under ``TYPE_CHECKING``: an import
deferred to break a circle at run time still ties the two modules together for a reader.
``from package import name`` counts as an import of ``package.name`` when that is a
module. None is known and left (:data:`KNOWN` is empty): the last one, of the released
results' data frames, ended when each wire model came to lay out its own columns
(:meth:`ldp_shared.tabular.Tabular.frame_columns`).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {
    "ldp_shared": "shared",
    "ldp_client": "client",
    "ldp_aggregator": "aggregator",
    "ldp_simulation": "simulation",
}
KNOWN: set[frozenset[str]] = set()
"""Circles known and left: none."""


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package, folder in PACKAGES.items():
        for path in (ROOT / folder / package).rglob("*.py"):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def _imported(module: str, path: Path, known: Mapping[str, Path]) -> Iterator[str]:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                here = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
                here = here[: len(here) - node.level + 1]
                base = ".".join([*here, base] if base else here)
            submodules = [f"{base}.{alias.name}" for alias in node.names]
            if all(name in known for name in submodules):
                yield from submodules
            else:
                yield base
                yield from (name for name in submodules if name in known)


def import_graph() -> dict[str, set[str]]:
    """Each module of the four packages → the project's modules it imports."""
    modules = _modules()
    return {
        module: {m for m in _imported(module, path, modules) if m in modules and m != module}
        for module, path in modules.items()
    }


def circles(graph: Mapping[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            step = next(edges, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(sorted(graph.get(step, ())))))
                elif step in on_stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def test_the_finder_sees_a_circle_and_a_chain() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert circles(graph) == [frozenset({"a", "b", "c"})]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_the_graph_holds_deferred_and_type_only_imports() -> None:
    graph = import_graph()
    assert "ldp_shared.analyses.itemsets.rules" in graph["ldp_client.itemsets"]  # in a function
    assert "ldp_client.policy" in graph["ldp_client.ledger"]  # under TYPE_CHECKING only


def test_no_import_circles_but_known_ones() -> None:
    unexpected = [sorted(c) for c in circles(import_graph()) if c not in KNOWN]
    assert unexpected == []
