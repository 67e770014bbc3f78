"""Is the README's "Configs" table and "Layout" block still the tree? Names what they leave out.

    python scripts/readme_tree.py          # exit 1 and one line per missing name; exit 0 when complete

- Configs (``## Configs``): every config group (a folder of conf/ holding .yaml files: ``task``,
  ``hydra/launcher``, ...) has a table row whose first cell names it, and that row names every option
  of the group (each file's stem). Brace ranges and lists count: ``forecast_l{1..5}_k1``, ``{csv,none}``.
- Layout (``## Layout``): every top-level folder of the repository, every package and module of
  ``src/egohorizon/``, every module of ``datamodules/`` and ``models/``, and every file of ``scripts/``.
  A ``*`` pattern counts (``compare*.py``).

tests/unit/house/test_readme_tree.py runs the same check, so a new group file, package or script that the README
does not mention fails the tests.
"""

from __future__ import annotations

import fnmatch
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SKIPPED = {"__pycache__", "__init__.py", ".git", ".venv", "outputs", "data", "node_modules"}


def section(readme: str, heading: str) -> str:
    """The text under the ``## heading...`` line, up to the next ``## `` heading."""
    match = re.search(rf"^## {re.escape(heading)}.*?$(.*?)(?=^## |\Z)", readme, flags=re.MULTILINE | re.DOTALL)
    if not match:
        raise SystemExit(f"README.md: no '## {heading}' section")
    return match.group(1)


def expand(token: str) -> set[str]:
    """``a{1..3}b`` -> a1b, a2b, a3b; ``{x,y}`` -> x, y (nested and repeated braces too)."""
    match = re.search(r"\{([^{}]*)\}", token)
    if not match:
        return {token}
    inner = match.group(1)
    span = re.fullmatch(r"(\d+)\.\.(\d+)", inner)
    choices = [str(n) for n in range(int(span[1]), int(span[2]) + 1)] if span else inner.split(",")
    return {name for choice in choices for name in expand(token[: match.start()] + choice + token[match.end() :])}


def _names(text: str) -> set[str]:
    """Every backticked token of ``text`` (and its brace expansions), and the words inside them."""
    names: set[str] = set()
    for token in re.findall(r"`([^`]+)`", text):
        for name in expand(token.strip()):
            names.add(name)
            names.update(re.findall(r"[\w/.*-]+", name))
    return names


def config_groups(conf: Path) -> dict[str, list[str]]:
    """Group name (``hydra/launcher``) -> its options (file stems), for every folder holding .yaml files."""
    groups = {}
    for folder in sorted(p for p in conf.rglob("*") if p.is_dir()):
        options = sorted(p.stem for p in folder.glob("*.yaml"))
        if options:
            groups[folder.relative_to(conf).as_posix()] = options
    return groups


def missing_configs(readme: str, conf: Path) -> list[str]:
    rows = [line for line in section(readme, "Configs").splitlines() if line.startswith("| `")]
    by_group: dict[str, str] = {}
    for row in rows:
        first = row.split("|")[1]
        for group in re.findall(r"`([^`]+)`", first):
            by_group[group] = row
    missing = []
    for group, options in config_groups(conf).items():
        if group not in by_group:
            missing.append(f"Configs: no row for the group `{group}` ({', '.join(options)})")
            continue
        named = _names("|".join(by_group[group].split("|")[2:]))
        missing += [f"Configs: `{group}` row does not name `{option}` (conf/{group}/{option}.yaml)"
                    for option in options if option not in named]
    return missing


def top_folders(root: Path) -> list[str]:
    """The repository's top-level folders: those git tracks files in (no .venv, outputs/, caches); outside
    a git checkout, every folder not hidden."""
    try:
        tracked = subprocess.run(["git", "-C", str(root), "ls-files"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith(".") and p.name not in SKIPPED)
    return sorted({line.split("/", 1)[0] for line in tracked.stdout.splitlines() if "/" in line})


def layout_entries(root: Path) -> list[tuple[str, str, str]]:
    """(name the Layout must show, path it stands for, the Layout entry it must be shown under: "" for
    anywhere, else a folder entry such as ``src/egohorizon/``)."""
    def listed(folder: Path, pattern: str = "*") -> list[Path]:
        return sorted(p for p in folder.glob(pattern) if p.name not in SKIPPED and not p.name.endswith(".pyc"))

    entries = [(f"{name}/", name, "") for name in top_folders(root)]
    package = root / "src" / "egohorizon"
    entries += [(f"{p.name}/" if p.is_dir() else p.name, str(p.relative_to(root)), "src/egohorizon/")
                for p in listed(package) if p.is_dir() or p.suffix == ".py"]
    for folder in ("datamodules", "models"):
        entries += [(p.name, str(p.relative_to(root)), f"{folder}/") for p in listed(root / folder, "*.py")]
    entries += [(p.name, str(p.relative_to(root)), "scripts/") for p in listed(root / "scripts") if p.is_file()]
    return entries


def entry_text(block: str, folder: str) -> str:
    """The Layout lines of one folder entry: its line and the more indented lines below it."""
    lines = block.splitlines()
    for i, line in enumerate(lines):
        indent = len(line) - len(line.lstrip())
        if line.strip().startswith(folder):
            rest = [line[indent + len(folder):]]
            for below in lines[i + 1:]:
                if below.strip() and len(below) - len(below.lstrip()) <= indent:
                    break
                rest.append(below)
            return "\n".join(rest)
    return ""


def missing_layout(readme: str, root: Path) -> list[str]:
    block = section(readme, "Layout")
    missing = []
    for name, path, scope in layout_entries(root):
        text = entry_text(block, scope) if scope else block
        if not _shown(name, text):
            where = f" under `{scope}`" if scope else ""
            missing.append(f"Layout: `{name}` ({path}) is not shown{where}")
    return missing


def _shown(name: str, text: str) -> bool:
    """A file by its name (run.py), a module also by its stem in a list (datamodules: forecast, qa, ...),
    or by a ``*`` pattern (compare*.py); a folder by ``name/``."""
    words = set(re.findall(r"[\w.*/-]+", text))
    if name.endswith("/"):
        return name in words or any(w.startswith(name) for w in words)
    stems = {w.rstrip(",") for w in words} | {w.rstrip(",").removesuffix(".py") for w in words}
    return (name in stems or name.removesuffix(".py") in stems
            or any("*" in w and fnmatch.fnmatch(name, w.rstrip(",")) for w in words))


def main() -> int:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    missing = missing_configs(readme, ROOT / "conf") + missing_layout(readme, ROOT)
    for line in missing:
        print(line)
    if missing:
        print(f"README.md: {len(missing)} name(s) missing from the Configs / Layout sections", file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    raise SystemExit(main())
