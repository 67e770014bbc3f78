"""Test modules import helpers from tests/support/, never a test module of another folder (issue 24): such
an import works only when pytest happened to collect that folder first (its folder is put on sys.path as
it is collected), so `pytest tests/unit/run/test_compare_tasks.py` alone failed with ModuleNotFoundError."""

from __future__ import annotations

from pathlib import Path

from conftest import REPO_ROOT
from import_walk import absolute_imports

TESTS = REPO_ROOT / "tests"


def imported_test_modules(path: Path) -> list[tuple[int, str]]:
    """(line, module) of each absolute import of a ``test_*`` module in ``path``, lazy ones included."""
    return [(lineno, name.split(".")[0]) for lineno, name in absolute_imports(path.read_text(encoding="utf-8"), str(path))
            if name.split(".")[0].startswith("test_")]


def cross_folder_imports(root: Path) -> list[str]:
    """``file:line: imports test_x (in folder)`` for each import of a test module outside the file's folder."""
    wrong = []
    for path in sorted(root.rglob("*.py")):
        for line, module in imported_test_modules(path):
            if (path.parent / f"{module}.py").is_file():
                continue
            homes = sorted(str(p.parent.relative_to(root)) for p in root.rglob(f"{module}.py")) or ["nowhere"]
            wrong.append(f"{path.relative_to(root)}:{line}: imports {module} (in {', '.join(homes)}); "
                         "move what it shares to a module of tests/support/")
    return wrong


def test_no_test_module_imports_another_folders_test_module():
    assert cross_folder_imports(TESTS) == []


def test_the_check_finds_a_cross_folder_import_also_a_lazy_one(tmp_path):
    for name, text in {
        "unit/a/test_one.py": "def helper():\n    pass\n",
        "unit/a/test_two.py": "from test_one import helper\n",  # same folder: fine
        "unit/b/test_three.py": "import os\n\n\ndef test_x():\n    from test_one import helper\n",
        "support/helpers.py": "import test_one\n",
    }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert cross_folder_imports(tmp_path) == [
        "support/helpers.py:1: imports test_one (in unit/a); move what it shares to a module of tests/support/",
        "unit/b/test_three.py:5: imports test_one (in unit/a); move what it shares to a module of tests/support/",
    ]
