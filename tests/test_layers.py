"""Layers point down only (DESIGN.md, docs/ARCHITECTURE.md).

Every module of the package is read with ``ast``; every import, function-level ones included (those
under ``if TYPE_CHECKING:`` aside: they never run), is an edge. A module may import its own layer or a
layer listed below it; the import graph has no cycle.

    base <- instance <- family <- formulations <- registry <- pipeline <- app
                               ^- executor (model, instances, families' plans and cost; never
                                  formulations or the registry)
"""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterator
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FAMILIES = ("sharon", "gloria", "hamlet", "joinorder")

#: layer -> the layers it may import (besides itself)
MAY_IMPORT: dict[str, set[str]] = {
    "base": set(),
    "instance": {"base"},
    "family": {"base", "instance"},
    "formulations": {"base", "instance", "family"},
    "executor": {"base", "instance", "family"},
    "registry": {"base", "instance", "family", "formulations"},
    "pipeline": {"base", "instance", "family", "formulations", "registry", "executor"},
    "app": {"base", "instance", "family", "formulations", "registry", "executor", "pipeline"},
}

#: Known upward imports and cycle edges, each to be removed by the helper that owns the importing file:
#: (module, imported module) -> owner: what is to be done. The integrator empties it as their work lands.
ALLOWED: dict[tuple[str, str], str] = {}


def package_dirs() -> dict[str, Path]:
    """Package name -> folder, from pyproject.toml (``formulations/`` is ``cepopt.formulations``)."""
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    return {name: ROOT / folder for name, folder in conf.items()}


def modules() -> dict[str, Path]:
    """Every module of the package: dotted name -> file."""
    out: dict[str, Path] = {}
    dirs = package_dirs()
    for pkg, folder in dirs.items():
        for path in sorted(folder.rglob("*.py")):
            rel = path.relative_to(folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            if "results" in rel.parts:
                continue
            name = ".".join([pkg, *parts])
            if any(name.startswith(other + ".") or name == other
                   for other in dirs if other != pkg and other.startswith(pkg + ".")):
                continue  # a sub-package mapped to its own folder
            out[name] = path
    return out


def layer(module: str) -> str:
    """The layer of a module of the package."""
    parts = module.split(".")
    sub = parts[1] if len(parts) > 1 else ""
    if sub in FAMILIES:
        return "registry" if parts[-1] == "methods" else "family"
    return {
        "": "app", "cli": "app", "experiments": "app", "benchmarking": "app", "warmup": "app",
        "pipeline": "pipeline",
        "registry": "registry",
        "formulations": "formulations",
        "executor": "executor",
        "instance": "instance", "instances": "instance",
    }.get(sub, "base")


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST, module: str, is_package: bool) -> Iterator[tuple[str, list[str], int]]:
    """(imported module, imported names, line) for every import that runs."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _type_checking(node):
            yield from (x for n in node.orelse for x in _imports(ast.Module([n], []), module, is_package))
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, [], node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                pkg = module.split(".") if is_package else module.split(".")[:-1]
                pkg = pkg[: len(pkg) - node.level + 1]
                base = ".".join(pkg + ([base] if base else []))
            yield base, [a.name for a in node.names], node.lineno
        else:
            yield from _imports(node, module, is_package)


@cache
def import_graph() -> dict[str, dict[str, int]]:
    """module -> {imported module of the package: line}."""
    mods = modules()
    graph: dict[str, dict[str, int]] = {}
    for name, path in mods.items():
        edges: dict[str, int] = {}
        tree = ast.parse(path.read_text(), str(path))
        for target, names, line in _imports(tree, name, path.name == "__init__.py"):
            if not (target == "cepopt" or target.startswith("cepopt.")):
                continue
            hits = [f"{target}.{n}" for n in names if f"{target}.{n}" in mods]
            for hit in hits or [target]:
                while hit not in mods and "." in hit:
                    hit = hit.rsplit(".", 1)[0]
                if hit != name:
                    edges.setdefault(hit, line)
        graph[name] = edges
    return graph


def test_every_module_is_mapped():
    mods = modules()
    assert "cepopt.formulations.sharon" in mods and "cepopt.executor.api" in mods and "cepopt.registry" in mods
    assert all(layer(m) in MAY_IMPORT for m in mods)


def checked_graph() -> dict[str, dict[str, int]]:
    """The import graph without the allowed edges."""
    return {mod: {t: line for t, line in edges.items() if (mod, t) not in ALLOWED}
            for mod, edges in import_graph().items()}


def test_allow_list_is_current():
    graph = import_graph()
    stale = [edge for edge in ALLOWED if edge[1] not in graph.get(edge[0], {})]
    assert not stale, f"allow-list entries no longer needed (remove them): {stale}"


def test_imports_point_down():
    upward = []
    for mod, edges in checked_graph().items():
        for target, line in edges.items():
            src, dst = layer(mod), layer(target)
            if dst != src and dst not in MAY_IMPORT[src]:
                upward.append(f"{mod}:{line} ({src}) imports {target} ({dst})")
    assert not upward, "upward imports:\n" + "\n".join(upward)


def test_no_import_cycles():
    graph = checked_graph()
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in graph.get(node, {}):
            if state.get(nxt) == 1:
                cycles.append(path[path.index(nxt):] + [nxt] if nxt in path else [node, nxt])
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = 2

    for mod in sorted(graph):
        if mod not in state:
            visit(mod, [mod])
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)
