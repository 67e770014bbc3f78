"""The absolute imports of a Python file, lazy ones included, read with ast: what the house tests check."""

from __future__ import annotations

import ast


def absolute_imports(source: str, filename: str) -> list[tuple[int, str]]:
    """(line, module) of each ``import X`` / ``from X import ...`` (relative imports left out)."""
    found = []
    for node in ast.walk(ast.parse(source, filename=filename)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found
