"""Import circles of src/egohorizon (scripts/import_cycles.py, issue 24): the ones outside the run middle
are gone, and the checker finds a circle, also one hidden behind a lazy or a TYPE_CHECKING import. Issue 39:
no circle among the packages either (the lower floors were one knot: data, metrics, prompts, memory, llm
and backbones imported each other for a constant, an error class or a clock format)."""

from __future__ import annotations

import sys

from conftest import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "scripts"))
import import_cycles


def test_no_import_circle_at_all():
    """Issue 24: the middle became the egohorizon.run package, floors from setup up to dispatch."""
    assert import_cycles.cycles(import_cycles.graph(REPO_ROOT / "src")) == []


def test_no_circle_among_the_packages():
    """Each package (and root module) of src/egohorizon stands for all its modules."""
    assert import_cycles.cycles(import_cycles.package_graph(import_cycles.graph(REPO_ROOT / "src"))) == []


def test_the_run_floors_import_only_downwards():
    floors = ["setup", "training", "eval_target", "eval_build", "evaluation", "studies", "export", "answer_set",
              "comparison", "comparison_eval", "dispatch"]
    edges = import_cycles.graph(REPO_ROOT / "src")
    assert not any(f"egohorizon.run.{name}" in edges["egohorizon.run.setup"] for name in floors)
    assert "egohorizon.run.dispatch" not in set().union(*(edges[f"egohorizon.run.{f}"] for f in floors))
    pairs = [("evaluation", "studies"), ("setup", "evaluation"), ("evaluation", "comparison_eval"),
             ("eval_target", "eval_build"), ("eval_build", "evaluation"), ("eval_target", "evaluation")]
    for lower, higher in pairs:
        assert f"egohorizon.run.{higher}" not in edges[f"egohorizon.run.{lower}"], (lower, higher)


def _package(tmp_path, files: dict[str, str]):
    for name, text in files.items():
        path = tmp_path / "egohorizon" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return import_cycles.graph(tmp_path)


def test_a_lazy_and_a_type_checking_import_still_close_a_circle(tmp_path):
    edges = _package(tmp_path, {
        "__init__.py": "",
        "a.py": "def f():\n    from egohorizon.b import g\n",
        "b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from egohorizon import a\n",
        "c.py": "from . import a\n",
        "pkg/__init__.py": "",
        "pkg/d.py": "from .e import x\n",
        "pkg/e.py": "import egohorizon.pkg.d\n",
    })
    assert edges["egohorizon.a"] == {"egohorizon.b"}
    assert edges["egohorizon.b"] == {"egohorizon.a"}
    assert edges["egohorizon.c"] == {"egohorizon.a"}
    assert import_cycles.cycles(edges) == [["egohorizon.a", "egohorizon.b"], ["egohorizon.pkg.d", "egohorizon.pkg.e"]]


def test_arrows_one_way_make_no_circle(tmp_path):
    edges = _package(tmp_path, {"__init__.py": "", "low.py": "import json\n", "high.py": "from egohorizon.low import *\n"})
    assert import_cycles.cycles(edges) == []


def test_the_package_never_imports_the_lightning_glue():
    """DESIGN: datamodules/ and models/ import egohorizon, never the other way round (lazy imports too)."""
    import ast

    upward = []
    for path in sorted((REPO_ROOT / "src" / "egohorizon").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else [])
            upward += [f"{path.relative_to(REPO_ROOT)}:{node.lineno} {n}" for n in names
                       if n.split(".")[0] in ("models", "datamodules")]
    assert upward == []


def test_two_packages_importing_each_other_are_a_circle_though_no_module_is(tmp_path):
    edges = _package(tmp_path, {
        "__init__.py": "",
        "errors.py": "",
        "data/__init__.py": "",
        "data/items.py": "from egohorizon.metrics.qa import LEVELS\nfrom egohorizon import errors\n",
        "metrics/__init__.py": "",
        "metrics/qa.py": "LEVELS = {}\n",
        "metrics/exports.py": "def read():\n    from ..data.sources import taxonomy\n",
        "data/sources.py": "import egohorizon.errors\n",
    })
    assert import_cycles.cycles(edges) == []
    packages = import_cycles.package_graph(edges)
    assert packages["egohorizon.data"] == {"egohorizon.metrics", "egohorizon.errors"}
    assert packages["egohorizon.errors"] == set()
    assert import_cycles.cycles(packages) == [["egohorizon.data", "egohorizon.metrics"]]
    assert import_cycles.package_of("egohorizon.data.points.leakage") == "egohorizon.data"
    assert import_cycles.package_of("egohorizon") == "egohorizon"
