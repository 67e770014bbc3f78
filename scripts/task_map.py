"""Writes docs/task-map.md: the five tasks against the folders they touch, so a task's slice of the house
is seen at once (issue 39). The map is read off the tree, never typed by hand:

    python scripts/task_map.py           # rewrites docs/task-map.md
    python scripts/task_map.py --check   # exit 1 when docs/task-map.md is not what the tree gives

The tasks are the registry's (``TASKS`` in src/egohorizon/tasks/__init__.py, read with ast), so a new task
gets its column with no edit here. A file belongs to a task when its stem starts with the task's name or
with a name its metric or prompt file took before the task existed (``OLDER_NAMES``: ``nextme``, ``boxes``).
Files shared by every task (``base.py``, ``lora_lm.py``, the evaluation callback, run/) are listed once,
under "Shared". tests/unit/house/test_task_map.py runs the check, so a new task file that the map
does not show fails the tests.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "task-map.md"

REGISTRY = ROOT / "src" / "egohorizon" / "tasks" / "__init__.py"
# task -> the first words of its files' stems that are not its name (see the docstring)
OLDER_NAMES = {"forecast": ("nextme",), "qa": ("egomonth",), "hands": ("box", "judge_hand")}


def registered_tasks() -> list[str]:
    """The names in the task registry, in its order, read without importing egohorizon."""
    for node in ast.parse(REGISTRY.read_text()).body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if any(isinstance(target, ast.Name) and target.id == "TASKS" for target in targets):
            return list(ast.literal_eval(node.value))
    raise SystemExit(f"{REGISTRY.relative_to(ROOT)}: no TASKS registry")


TASK_WORDS = {task: (task, *OLDER_NAMES.get(task, ())) for task in registered_tasks()}
# The folders a task's slice lies in, in the order a new task is written (DESIGN.md: "a new task is files").
FOLDERS = (
    "src/egohorizon/tasks", "models", "datamodules", "conf/task", "conf/model", "conf/data",
    "conf/experiment", "src/egohorizon/prompts", "src/egohorizon/formats", "src/egohorizon/metrics",
    "src/egohorizon/pipelines", "tests/unit/tasks", "tests/unit/glue", "tests/integration",
)
SHARED = ("src/egohorizon/tasks/__init__.py", "src/egohorizon/tasks/base.py", "models/lora_lm.py",
          "datamodules/base.py", "src/egohorizon/callbacks/generation_eval.py", "src/egohorizon/run/")


def _entries(folder: Path) -> list[Path]:
    """Files and sub-folders (a pipeline is a folder) of one folder, without caches and __init__."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir()
                  if p.name not in {"__init__.py", "__pycache__"} and not p.name.startswith("."))


def _stem(path: Path) -> str:
    name = path.name.removeprefix("test_")
    return name.split(".")[0]


def _owner(path: Path) -> str | None:
    stem = _stem(path)
    for task, words in TASK_WORDS.items():
        if stem.startswith(words):
            return task
    return None


def task_map() -> dict[str, dict[str, list[str]]]:
    """task -> folder -> the names of that task's files in it."""
    found: dict[str, dict[str, list[str]]] = {task: {} for task in TASK_WORDS}
    for folder in FOLDERS:
        for entry in _entries(ROOT / folder):
            task = _owner(entry)
            if task is not None:
                name = entry.name + ("/" if entry.is_dir() else "")
                found[task].setdefault(folder, []).append(name)
    return found


def render() -> str:
    found = task_map()
    lines = ["# The five tasks and the folders they touch",
             "",
             ("Written by `python scripts/task_map.py` from the tree (never by hand); "
              "`tests/unit/house/test_task_map.py` fails when it is stale. A new task is its own files in these "
              "folders plus one line in the task registry (`src/egohorizon/tasks/__init__.py`, `TASKS`)."),
             "",
             "| folder | " + " | ".join(TASK_WORDS) + " |",
             "|---|" + "---|" * len(TASK_WORDS)]
    for folder in FOLDERS:
        cells = [", ".join(f"`{n}`" for n in found[task].get(folder, [])) for task in TASK_WORDS]
        if any(cells):
            lines.append(f"| `{folder}/` | " + " | ".join(cells) + " |")
    lines += ["", "Shared by every task (a new task edits none of them): "
              + ", ".join(f"`{s}`" for s in SHARED) + ".", ""]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if not OUT.is_file() or OUT.read_text() != text:
            print(f"{OUT.relative_to(ROOT)} is stale: run python scripts/task_map.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
