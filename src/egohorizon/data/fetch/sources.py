"""Where a data set's files are read from: its git repository at the pinned commit, or a local copy.

The git source uses the ordinary ``git`` client: a bare cache repository, one shallow fetch of the
pinned commit without file contents (``--depth 1 --filter=blob:none``: commit and trees only), then
each file's blob on its own (``git cat-file`` fetches a missing blob from the promisor remote). So an
interrupted fetch loses at most the file in flight: the next run keeps the files already checked and
asks only for the rest. A server without partial clone sends every blob of the commit in the first
fetch instead, which works the same, only larger.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import IO

from egohorizon.data.fetch.sets import DataSet, FileEntry
from egohorizon.errors import DataError

CHUNK = 1 << 20
CACHE_MARK = "egohorizon-fetch-cache"  # written into every cache we create: only those are ever removed
LFS_POINTER = b"version https://git-lfs.github.com/spec/v1"


class LocalSource:
    """``--from DIR``: a copy laid out as a data home (``DIR/<set folder>/<path>``) or as the set's own
    repository (``DIR/<path>``)."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)
        if not self.root.is_dir():
            raise DataError(f"--from {self.root}: no such folder")

    def where(self, dataset: DataSet, entry: FileEntry) -> str:
        for path in (self.root / dataset.folder / entry.path, self.root / entry.path):
            if path.is_file():
                return str(path)
        return str(self.root / dataset.folder / entry.path)

    def copy(self, dataset: DataSet, entry: FileEntry, handle: IO[bytes], digest) -> None:
        path = Path(self.where(dataset, entry))
        if not path.is_file():
            raise DataError(f"{path}: missing from --from {self.root} (nor at {self.root / entry.path})")
        with open(path, "rb") as source:
            for chunk in iter(lambda: source.read(CHUNK), b""):
                digest.update(chunk)
                handle.write(chunk)

    def close(self) -> None:
        pass


class GitSource:
    """The set's repository at its commit, through a cache repository at ``cache`` (kept until done)."""

    def __init__(self, dataset: DataSet, cache: Path):
        self.dataset, self.cache = dataset, cache
        if shutil.which("git") is None:
            raise DataError("git is not installed: install it, or give a copy of the files with --from DIR")
        if not (cache / CACHE_MARK).is_file():
            self._git("init", "--quiet", "--bare", "--template=", str(cache), in_cache=False)
            (cache / CACHE_MARK).write_text(f"{dataset.url} {dataset.commit}\n")
        self._git("config", "remote.origin.url", dataset.url)  # re-pointed each time: --url may change
        if self._git("cat-file", "-t", dataset.commit, check=False).strip() != "commit":
            self._git("fetch", "--quiet", "--no-tags", "--depth", "1", "--filter=blob:none", "origin", dataset.commit)

    def where(self, dataset: DataSet, entry: FileEntry) -> str:
        return f"{dataset.url}@{dataset.commit[:7]}:{entry.path}"

    def copy(self, dataset: DataSet, entry: FileEntry, handle: IO[bytes], digest) -> None:
        # git's messages go to a file, not a second pipe: a pipe nobody reads while the blob streams
        # could fill and stall git.
        with tempfile.TemporaryFile() as messages:
            process = subprocess.Popen(self._command("cat-file", "blob", f"{dataset.commit}:{entry.path}"),
                                       stdout=subprocess.PIPE, stderr=messages, env=_git_env())
            head = b""
            with process.stdout:
                for chunk in iter(lambda: process.stdout.read(CHUNK), b""):
                    head = head or chunk[:len(LFS_POINTER)]
                    digest.update(chunk)
                    handle.write(chunk)
            if process.wait() != 0:
                messages.seek(0)
                error = messages.read().decode(errors="replace")
                raise DataError(f"{self.where(dataset, entry)}: git could not read it ({_git_message(error)})")
        if head == LFS_POINTER:
            raise DataError(f"{self.where(dataset, entry)}: stored with Git LFS upstream (git gives only its "
                            "pointer); give the file with --from DIR")

    def close(self) -> None:
        """Removes the cache once every file is in place; only a folder carrying our mark."""
        if (self.cache / CACHE_MARK).is_file():
            shutil.rmtree(self.cache)

    def _command(self, *args: str) -> list[str]:
        return ["git", "-C", str(self.cache), *args]

    def _git(self, *args: str, in_cache: bool = True, check: bool = True) -> str:
        command = self._command(*args) if in_cache else ["git", *args]
        done = subprocess.run(command, capture_output=True, text=True, env=_git_env(), check=False)
        if check and done.returncode != 0:
            raise DataError(f"{self.dataset.url} @ {self.dataset.commit}: git {args[0]} failed "
                            f"({_git_message(done.stderr)}); check the network, or give a copy with --from DIR")
        return done.stdout


def _git_env() -> dict[str, str]:
    # Never wait for a password on a terminal: a public repository needs none, and a fetch run by an
    # experiment has no one to type it.
    return {**os.environ, "GIT_TERMINAL_PROMPT": "0"}


def _git_message(text: str) -> str:
    """git's own reason: its first fatal/error line (what follows is advice), else its last line."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    reasons = [line for line in lines if line.startswith(("fatal:", "error:"))]
    return (reasons or lines or ["no message"])[0 if reasons else -1]
