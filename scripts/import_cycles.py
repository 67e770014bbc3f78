"""Which modules of src/egohorizon import each other in a circle, and which of its packages do? Read with
ast, nothing imported.

    python scripts/import_cycles.py          # one line per circle (its modules or packages, sorted); exit 1 if any

Every ``import`` counts: one inside a function (a lazy import hides a circle, it does not remove it) and
one under ``if TYPE_CHECKING:`` (two modules that need each other's names are one module in two files,
whenever the names are needed). ``from a.b import c`` is an
arrow to ``a.b.c`` when that is a module, else to ``a.b``. A circle is a strongly connected component of
two or more modules (or a module importing itself); tests/unit/house/test_import_cycles.py checks the count.

A package circle (issue 39) is the same at the level of the project's packages: each module stands for its
top-level package or root module (``egohorizon.data.points.leakage`` is ``egohorizon.data``,
``egohorizon.errors`` itself), so ``data`` importing ``metrics`` for a constant while ``metrics`` imports
``data`` for a reader is one circle, though no module imports itself back.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "egohorizon"


def modules(src: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every .py under ``src/egohorizon`` (a package is its __init__)."""
    found = {}
    for path in sorted((src / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _imports(tree: ast.AST):
    """Every Import / ImportFrom node, wherever it is."""
    return (node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom)))


def arrows(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The modules of ``known`` that module ``name`` (at ``path``) imports."""
    is_package = path.name == "__init__.py"
    targets: set[str] = set()
    for node in _imports(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        else:
            base = node.module or ""
            if node.level:
                anchor = name.split(".") if is_package else name.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            candidates = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        for target in candidates:
            while target and target not in known:  # `import a.b.c.Thing`-like tails: the nearest module
                target = target.rpartition(".")[0]
            if target:
                targets.add(target)
    return targets


def graph(src: Path) -> dict[str, set[str]]:
    known = modules(src)
    return {name: arrows(name, path, known) for name, path in known.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with a circle in them (Tarjan, iterative), each sorted, sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in edges.get(node, ()):
                    found.append(sorted(component))
    return sorted(found)


def package_of(module: str) -> str:
    """The top-level package or root module a module belongs to: ``egohorizon.data.points.leakage`` ->
    ``egohorizon.data``, ``egohorizon.errors`` -> itself, ``egohorizon`` -> itself."""
    return ".".join(module.split(".")[:2])


def package_graph(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    """The module graph seen a floor up: package -> the other packages its modules import."""
    packages: dict[str, set[str]] = {}
    for name, targets in edges.items():
        here = package_of(name)
        packages.setdefault(here, set()).update(package_of(t) for t in targets)
    for here, targets in packages.items():
        targets.discard(here)
    return packages


def main() -> int:
    edges = graph(ROOT / "src")
    found = cycles(edges) + cycles(package_graph(edges))
    for component in found:
        print(" <-> ".join(component))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
