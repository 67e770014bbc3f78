"""Issue 24: no source file over ~400 lines without a reason in its first lines. A long module says why
it stays one file in its docstring ("Why one file: ..."), so a reader knows the length was chosen."""

from __future__ import annotations

from conftest import REPO_ROOT

LIMIT = 400
REASON = "Why one file:"
HEAD_LINES = 40  # the reason must stand near the top, where a reader starts


def long_files_without_a_reason(root=REPO_ROOT) -> list[str]:
    places = [root / "src", root / "datamodules", root / "models", root / "scripts"]
    paths = [p for place in places for p in sorted(place.rglob("*.py"))]
    paths += [root / "train.py", root / "eval.py"]
    found = []
    for path in paths:
        lines = path.read_text().splitlines()
        if len(lines) > LIMIT and not any(REASON in line for line in lines[:HEAD_LINES]):
            found.append(f"{path.relative_to(root)}: {len(lines)} lines")
    return found


def test_every_long_source_file_says_why_it_is_one_file():
    assert long_files_without_a_reason() == []


def test_a_long_file_without_the_reason_is_named(tmp_path):
    (tmp_path / "src").mkdir()
    for name in ("train.py", "eval.py"):
        (tmp_path / name).write_text("")
    (tmp_path / "src" / "short.py").write_text("x = 1\n" * LIMIT)
    (tmp_path / "src" / "long.py").write_text("x = 1\n" * (LIMIT + 1))
    (tmp_path / "src" / "reasoned.py").write_text(f'"""{REASON} one table."""\n' + "x = 1\n" * LIMIT)
    assert long_files_without_a_reason(tmp_path) == [f"src/long.py: {LIMIT + 1} lines"]
