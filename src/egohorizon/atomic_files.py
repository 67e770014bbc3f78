"""Writing a file so that a reader (or a rerun after a kill) sees the old file or the whole new one, never
half of it: the bytes go to a temporary file beside the target, which ``os.replace`` then renames over
it (atomic on POSIX within one folder). A failure or Ctrl-C mid-write removes the temporary file and
re-raises. The one copy of this pattern in the project; standard library only (schema and the
torch-free commands use it).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any


def temp_path(path: Path) -> Path:
    """The temporary name used while ``path`` is written: hidden, beside it, per process
    (``schema.remove_stale_temps`` finds the ones a killed writer left)."""
    return path.with_name(f".{path.name}.tmp-{os.getpid()}")


@contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "w") -> Iterator[IO]:
    """A handle to write ``path`` through (text in UTF-8 with line ends as written, or binary with
    ``mode="wb"``); the file
    appears under its name only when the ``with`` block ends without an exception. Creates the folder."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_path(path)
    try:
        with open(tmp, mode, **({} if "b" in mode else {"encoding": "utf-8", "newline": ""})) as handle:
            yield handle
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    with atomic_open(path) as handle:
        handle.write(text)


def write_json_atomic(path: str | os.PathLike, obj: Any, indent: int = 1, default: Any = None) -> None:
    """``obj`` as JSON (UTF-8 kept as is, a final newline); ``default`` as in ``json.dumps``."""
    write_text_atomic(path, json.dumps(obj, indent=indent, ensure_ascii=False, default=default) + "\n")
