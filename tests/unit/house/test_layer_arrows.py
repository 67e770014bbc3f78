"""Issues 24 and 39: imports point downwards in the order of the package's floors. An import that runs upward
stands under a comment that says why (one with "upward" in it), right above it or above the run of import
lines it belongs to; on the lowest floors (data/, formats/, schema/, errors.py) no comment excuses one.
Counted a floor up (package to package), at most one arrow runs back up."""

from __future__ import annotations

import sys
from pathlib import Path

from conftest import REPO_ROOT
from import_walk import absolute_imports

sys.path.insert(0, str(REPO_ROOT / "scripts"))
import import_cycles

# The floors, highest first, as the code uses them (issue 39: read off the package graph of
# scripts/import_cycles.py, not wished): cli and commands on top; the evaluation callback above tasks/
# (DESIGN names it among the users of the task registry); the judges of metrics/ call an llm/ backend with
# a prompt of prompts/; llm/ and pipelines/ read adapters through checkpoints.py; prompts/ render data/'s
# windows and memory/'s retrievals; memory/ embeds with backbones/ over data/'s shards; data/ builds
# schema/'s records and parses formats/' answers. bench/, studies/ and the root's small modules (clock.py,
# atomic_files.py, ...) sit beside them and are not ranked; tests/unit/house/test_import_cycles.py keeps
# every package, ranked or not, out of circles.
LAYERS = ["cli", "commands", "run", "callbacks", "tasks", "pipelines", "metrics", "llm", "checkpoints", "prompts",
          "memory", "backbones", "data", "formats", "schema", "errors"]
# The lowest floors: an upward import here is refused, comment or not, and they import no unranked package.
LOWEST = ("data", "formats", "schema", "errors")
# Package arrows that may run back up (issue 39: from 5 to at most 1); today none does.
MAX_UPWARD_PACKAGE_ARROWS = 1


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
            if here in LOWEST or not explained(lines, lineno):
                found.append(f"{path.relative_to(src)}:{lineno} {here} -> {target}")
    return found


def explained(lines: list[str], lineno: int) -> bool:
    """A comment with "upward" right above line ``lineno`` (1-based), or above the import lines before it."""
    index = lineno - 2
    while index >= 0 and lines[index].strip().startswith(("from ", "import ")):
        index -= 1
    return index >= 0 and lines[index].strip().startswith("#") and "upward" in lines[index]


def upward_package_arrows(src: Path) -> list[str]:
    """``here -> there`` for each pair of floors where a module of ``here`` imports one of ``there`` above it
    (relative, lazy and TYPE_CHECKING imports included: scripts/import_cycles.py's graph)."""
    rank = {name: i for i, name in enumerate(LAYERS)}
    arrows = set()
    for name, targets in import_cycles.graph(src).items():
        here = layer_of(name)
        for target in targets:
            there = layer_of(target)
            if here is not None and there is not None and rank[there] < rank[here]:
                arrows.add(f"{here} -> {there}")
    return sorted(arrows)


def lowest_floor_reaches(src: Path) -> list[str]:
    """``module -> target`` for each import of a lowest floor that lands on neither a floor at or below it
    nor one of the root's small modules (a package beside the floors, bench/ or studies/, is above them)."""
    rank = {name: i for i, name in enumerate(LAYERS)}
    edges = import_cycles.graph(src)
    root_modules = {name for name in edges if name.count(".") == 1
                    and not (src / Path(*name.split("."))).is_dir()}
    found = []
    for name, targets in sorted(edges.items()):
        here = layer_of(name)
        if here not in LOWEST:
            continue
        for target in sorted(targets):
            there = layer_of(target)
            if there is not None and rank[there] >= rank[here]:
                continue
            if there is None and import_cycles.package_of(target) in root_modules:
                continue
            found.append(f"{name} -> {target}")
    return found


def test_every_upward_import_says_why():
    assert unexplained_upward_imports(REPO_ROOT / "src") == []


def test_at_most_one_package_arrow_runs_back_up():
    arrows = upward_package_arrows(REPO_ROOT / "src")
    assert len(arrows) <= MAX_UPWARD_PACKAGE_ARROWS, arrows
    assert not [a for a in arrows if a.split(" -> ")[0] in LOWEST], arrows


def test_the_lowest_floors_import_only_below_them():
    assert lowest_floor_reaches(REPO_ROOT / "src") == []


def test_every_ranked_floor_is_a_package_or_module_of_the_tree():
    """A floor renamed or moved away must leave LAYERS too, or the order checks nothing for it."""
    src = REPO_ROOT / "src" / "egohorizon"
    assert [f for f in LAYERS if not (src / f).is_dir() and not (src / f"{f}.py").is_file()] == []


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / "egohorizon" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_an_upward_import_without_a_comment_is_named(tmp_path):
    src = _tree(tmp_path, {
        "prompts/bare.py": "from egohorizon.metrics.x import y\n",
        "prompts/said.py": "# upward: the reason\nfrom egohorizon.metrics.x import y\nfrom egohorizon.metrics.z import w\n",
        "metrics/down.py": "import egohorizon.prompts.bare\n",
    })
    assert unexplained_upward_imports(src) == ["egohorizon/prompts/bare.py:1 prompts -> egohorizon.metrics.x"]


def test_on_the_lowest_floors_a_comment_excuses_nothing(tmp_path):
    src = _tree(tmp_path, {
        "schema/said.py": "# upward: the reason\nfrom egohorizon.metrics.x import y\n",
        "data/lazy.py": "def f():\n    # upward: the reason\n    from egohorizon.prompts import p\n",
    })
    assert unexplained_upward_imports(src) == ["egohorizon/data/lazy.py:3 data -> egohorizon.prompts",
                                               "egohorizon/schema/said.py:2 schema -> egohorizon.metrics.x"]


def test_package_arrows_up_are_counted_once_per_pair_of_floors(tmp_path):
    src = _tree(tmp_path, {
        "__init__.py": "", "errors.py": "", "clock.py": "",
        "metrics/__init__.py": "", "metrics/a.py": "from egohorizon.llm import b\nfrom egohorizon.data import c\n",
        "llm/__init__.py": "", "llm/b.py": "from ..metrics import a\n",
        "data/__init__.py": "", "data/c.py": "from egohorizon import clock, errors\n",
        "data/d.py": "def f():\n    from egohorizon.llm.b import x\n    from egohorizon.bench import y\n",
        "bench/__init__.py": "",
    })
    assert upward_package_arrows(src) == ["data -> llm", "llm -> metrics"]
    assert lowest_floor_reaches(src) == ["egohorizon.data.d -> egohorizon.bench", "egohorizon.data.d -> egohorizon.llm.b"]
