"""The README's Configs table and Layout block name every config group file, top-level folder, package,
module, datamodule, model and script of the tree (issue 22, item 27; scripts/readme_tree.py)."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest
from conftest import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "scripts"))
import readme_tree

README = (REPO_ROOT / "README.md").read_text(encoding="utf-8")


def test_the_readme_names_everything_in_the_tree():
    assert readme_tree.missing_configs(README, REPO_ROOT / "conf") == []
    assert readme_tree.missing_layout(README, REPO_ROOT) == []
    done = subprocess.run([sys.executable, str(REPO_ROOT / "scripts" / "readme_tree.py")], capture_output=True,
                          text=True, check=False, timeout=60)
    assert done.returncode == 0 and done.stdout == "", done.stdout + done.stderr


@pytest.fixture
def tree(tmp_path):
    """A copy of the parts of the tree the check reads (not a git checkout: every unhidden folder counts)."""
    for folder in ("conf", "datamodules", "models", "scripts", "src/egohorizon"):
        shutil.copytree(REPO_ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    for folder in readme_tree.top_folders(REPO_ROOT):
        (tmp_path / folder).mkdir(exist_ok=True)
    return tmp_path


def test_a_group_file_the_table_does_not_name_fails(tree):
    (tree / "conf" / "task" / "navigation.yaml").write_text("eval_task: navigation\n")
    (tree / "conf" / "retrieval").mkdir()
    (tree / "conf" / "retrieval" / "bm25.yaml").write_text("k: 10\n")
    assert readme_tree.missing_configs(README, tree / "conf") == [
        "Configs: no row for the group `retrieval` (bm25)",
        "Configs: `task` row does not name `navigation` (conf/task/navigation.yaml)",
    ]


def test_a_brace_range_counts_for_the_experiments_it_spells():
    assert readme_tree.expand("forecast_l{1..3}_k{1,10}") == {
        f"forecast_l{level}_k{k}" for level in (1, 2, 3) for k in (1, 10)}
    assert {"forecast_l5_k10", "forecast_l1"} <= readme_tree._names("`forecast_l{1..5}`, `forecast_l{1..5}_k10`")


def test_a_folder_package_module_or_script_the_layout_does_not_show_fails(tree):
    (tree / "benchmarks").mkdir()
    (tree / "src" / "egohorizon" / "retrieval").mkdir()
    (tree / "src" / "egohorizon" / "retrieval" / "__init__.py").write_text("")
    (tree / "src" / "egohorizon" / "planner.py").write_text("")
    (tree / "datamodules" / "navigation.py").write_text("")
    (tree / "scripts" / "bench_planner.py").write_text("")
    assert readme_tree.missing_layout(README, tree) == [
        "Layout: `benchmarks/` (benchmarks) is not shown",
        "Layout: `planner.py` (src/egohorizon/planner.py) is not shown under `src/egohorizon/`",
        "Layout: `retrieval/` (src/egohorizon/retrieval) is not shown under `src/egohorizon/`",
        "Layout: `navigation.py` (datamodules/navigation.py) is not shown under `datamodules/`",
        "Layout: `bench_planner.py` (scripts/bench_planner.py) is not shown under `scripts/`",
    ]


def test_a_module_named_under_another_folder_does_not_count(tree):
    """models/ must list its own modules: `qa` in the datamodules entry does not show models/qa.py."""
    readme = README.replace("forecast, caption, qa, hands,\n                        abstract (Lightning glue)",
                            "forecast, caption, hands,\n                        abstract (Lightning glue)")
    assert readme != README
    assert readme_tree.missing_layout(readme, tree) == ["Layout: `qa.py` (models/qa.py) is not shown under `models/`"]
