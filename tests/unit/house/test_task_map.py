"""docs/task-map.md is the tree's own task map (scripts/task_map.py), so a task's slice stays visible."""

from __future__ import annotations

import subprocess
import sys


def test_the_task_map_is_current(repo_root):
    done = subprocess.run([sys.executable, "scripts/task_map.py", "--check"], check=False, cwd=repo_root,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_every_task_of_the_registry_has_a_column_and_its_own_task_file(repo_root):
    sys.path.insert(0, str(repo_root / "scripts"))
    import task_map

    from egohorizon.tasks import TASKS

    assert set(task_map.TASK_WORDS) == set(TASKS)
    found = task_map.task_map()
    for task in TASKS:
        assert f"{task}.py" in found[task]["src/egohorizon/tasks"], task
        assert f"{task}.yaml" in found[task]["conf/task"], task
