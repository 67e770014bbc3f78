"""A JSON-lines results file that one job appends to: locked while open (a second job on the same folder
is refused), a torn last line left by a killed run cut off, each record one ``os.write`` so a kill tears
at most the line being written. The caption job (``caption.results.ResultsLog``) and the abstraction job
(``abstract.results.DaysLog``) read their records their own way on top of it, each through
``read_keyed_lines`` (the one reader of such files: whole lines only, every ignored line named)."""

from __future__ import annotations

import errno
import fcntl
import json
import os
from pathlib import Path
from typing import Any, Self

from egohorizon.errors import ConfigError


def read_keyed_lines(path: Path, key: str, expected: str, redo: str) -> tuple[list[tuple[str, dict[str, Any]]], list[str]]:
    """The JSON-object lines of ``path`` that carry a non-empty string ``key``, in file order, as
    (its value, the record); and problems (``file:line: what``) for every line that was ignored.

    A last line without its newline is a torn write (``LockedAppendLog`` cuts it off when the file is
    next opened for appending): ignored and reported with ``redo`` (what happens to its record).
    ``expected`` says what ``key`` should hold, for the message. A missing file reads as empty."""
    kept: list[tuple[str, dict[str, Any]]] = []
    problems: list[str] = []
    data = path.read_bytes() if path.is_file() else b""
    lines = data.split(b"\n")
    if lines[-1]:
        problems.append(f"{path}:{len(lines)}: partial last line ({len(lines[-1])} bytes, a run was killed while "
                        f"writing it); {redo}")
    for number, raw in enumerate(lines[:-1], start=1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            problems.append(f"{path}:{number}: not a JSON line ({error}); ignored")
            continue
        value = record.get(key) if isinstance(record, dict) else None
        if not isinstance(value, str) or not value:
            problems.append(f"{path}:{number}: field '{key}': expected {expected}; ignored")
            continue
        kept.append((value, record))
    return kept, problems


class LockedAppendLog:
    """Subclasses implement ``open()`` from ``_lock``, ``_cut_torn_tail`` and ``_open_for_append``."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._fd: int | None = None
        self._lock_fd: int | None = None

    def _lock(self, busy_hint: str = "") -> None:
        """Takes the folder's lock without waiting; ``busy_hint`` ends the refusal's message."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        lock = self.path.with_name(f".{self.path.name}.lock")
        self._lock_fd = os.open(lock, os.O_CREAT | os.O_RDWR, 0o644)
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            os.close(self._lock_fd)
            self._lock_fd = None
            if error.errno in (errno.EAGAIN, errno.EACCES):
                raise ConfigError(f"{self.path} is being written by another running job (lock {lock}){busy_hint}"
                                  ) from None
            raise

    def _cut_torn_tail(self) -> int:
        """Cuts a partial last line off; returns how many bytes went (0: the file ends with a newline)."""
        if not self.path.is_file():
            return 0
        with open(self.path, "r+b") as handle:
            size = handle.seek(0, os.SEEK_END)
            if size == 0:
                return 0
            handle.seek(size - 1)
            if handle.read(1) == b"\n":
                return 0
            handle.seek(0)
            keep = handle.read().rfind(b"\n") + 1
            handle.truncate(keep)
            return size - keep

    def _open_for_append(self) -> None:
        self._fd = os.open(self.path, os.O_CREAT | os.O_WRONLY | os.O_APPEND, 0o644)

    def append(self, record: dict[str, Any]) -> None:
        line = (json.dumps(record, ensure_ascii=False, default=str) + "\n").encode("utf-8")
        written = os.write(self._fd, line)
        if written != len(line):  # a full disk: leave a torn line for the next open to cut off, and stop
            raise OSError(errno.ENOSPC, f"{self.path}: wrote {written} of {len(line)} bytes")

    def close(self) -> None:
        if self._fd is not None:
            os.fsync(self._fd)
            os.close(self._fd)
            self._fd = None
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # releases the lock
            self._lock_fd = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
