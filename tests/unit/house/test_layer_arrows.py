"""Issue 24: imports point downwards in DESIGN.md's order of the package's layers; an import that runs
upward stands under a comment that says why (one with "upward" in it), right above it or above the run
of import lines it belongs to."""

from __future__ import annotations

from pathlib import Path

from conftest import REPO_ROOT
from import_walk import absolute_imports

# DESIGN.md "Layers", highest first (cli and commands on top; backbones, bench, memory, studies and the
# root's small modules sit beside them and are not ranked). The evaluation callback sits above tasks/:
# DESIGN names it among the users of the task registry.
LAYERS = ["cli", "commands", "run", "checkpoints", "callbacks", "tasks", "pipelines", "llm", "data", "metrics",
          "formats", "prompts", "schema"]


def layer_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "egohorizon" and parts[1] in LAYERS else None


def module_name(path: Path, src: Path) -> str:
    return ".".join(path.relative_to(src).with_suffix("").parts).removesuffix(".__init__")


def unexplained_upward_imports(src: Path) -> list[str]:
    rank = {name: i for i, name in enumerate(LAYERS)}
    found = []
    for path in sorted((src / "egohorizon").rglob("*.py")):
        here = layer_of(module_name(path, src))
        if here is None:
            continue
        text = path.read_text()
        lines = text.splitlines()
        for lineno, target in absolute_imports(text, str(path)):
            there = layer_of(target)
            if there is None or rank[there] >= rank[here]:
                continue
            if not explained(lines, lineno):
                found.append(f"{path.relative_to(src)}:{lineno} {here} -> {target}")
    return found


def explained(lines: list[str], lineno: int) -> bool:
    """A comment with "upward" right above line ``lineno`` (1-based), or above the import lines before it."""
    index = lineno - 2
    while index >= 0 and lines[index].strip().startswith(("from ", "import ")):
        index -= 1
    return index >= 0 and lines[index].strip().startswith("#") and "upward" in lines[index]


def test_every_upward_import_says_why():
    assert unexplained_upward_imports(REPO_ROOT / "src") == []


def test_an_upward_import_without_a_comment_is_named(tmp_path):
    package = tmp_path / "egohorizon"
    (package / "schema").mkdir(parents=True)
    (package / "metrics").mkdir()
    (package / "schema" / "bare.py").write_text("from egohorizon.metrics.x import y\n")
    (package / "schema" / "said.py").write_text("# upward: the reason\nfrom egohorizon.metrics.x import y\n"
                                                "from egohorizon.metrics.z import w\n")
    (package / "metrics" / "down.py").write_text("import egohorizon.schema.bare\n")
    assert unexplained_upward_imports(tmp_path) == ["egohorizon/schema/bare.py:1 schema -> egohorizon.metrics.x"]
