"""The modules of flows/ import each other downward only: their import graph, read from the source, has no cycle.

Imports inside functions count too: hiding an import in a function dodges the cycle at import time but
keeps the two modules tangled.
"""

import ast
from pathlib import Path

FLOWS = Path(__file__).resolve().parent.parent / "flows"


def flows_imports(path: Path, modules: set[str]) -> set[str]:
    """The flows modules that the module at `path` imports anywhere in its body (a function's imports too)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # `from . import x`, `from .x import y` inside flows/
                base = f"flows.{node.module}" if node.module else "flows"
            else:
                base = node.module or ""
            names = [base] + [f"{base}.{alias.name}" for alias in node.names]  # `from flows import stages`
        else:
            continue
        out.update(name for name in names if name in modules)
    return out - {f"flows.{path.stem}"}


def import_graph() -> dict[str, set[str]]:
    """{module: the flows modules it imports} for every module of the flows package."""
    paths = {f"flows.{p.stem}": p for p in sorted(FLOWS.glob("*.py")) if p.stem != "__init__"}
    return {name: flows_imports(path, set(paths)) for name, path in paths.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of `graph` as [a, b, ..., a], or None when it has none (depth-first search)."""
    state: dict[str, str] = {}  # "open" while on the current path, "done" once every path from it was seen
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = "open"
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        state[node] = "done"
        path.pop()
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_the_graph_is_read_from_the_source():
    graph = import_graph()
    assert {"flows.generation", "flows.ladder", "flows.layout", "flows.stages"} <= set(graph)
    assert "flows.layout" in graph["flows.stages"]  # `from flows.layout import ...`
    assert "flows.stages" in graph["flows.generation"]  # `from flows import ..., stages, ...`


def test_find_cycle_names_the_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"b"}}) == ["b", "b"]


def test_flows_modules_import_each_other_without_a_cycle():
    cycle = find_cycle(import_graph())
    assert cycle is None, "flows modules import each other in a circle: " + " -> ".join(cycle)
