"""``egohorizon data fetch``: put a data set's files into a data home, each checked against the manifest.

A file already in the home with the manifest's bytes is kept; a missing one is fetched; one whose
bytes differ is refused by name and fetched again, but only when this command wrote it (its name is in
the folder's ledger, ``.egohorizon-fetch.json``, added before its first byte): anything else is left as
it is and named. Every file is written under a temporary name and renamed once its sha256 matches, so
an interrupted fetch leaves whole, checked files, and the same command resumes with the rest. The
license and citation of each set are printed and written beside its files (LICENSE-AND-CITATION.md).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Callable, Mapping
from pathlib import Path

from egohorizon.atomic_files import atomic_open, write_json_atomic, write_text_atomic
from egohorizon.data.fetch.homes import ENV, find_home, write_home
from egohorizon.data.fetch.sets import DataSet, FileEntry, file_problem, resolve
from egohorizon.data.fetch.sources import GitSource, LocalSource
from egohorizon.errors import ConfigError, DataError
from egohorizon.owned_output import LOCK, lock_folder, release

log = logging.getLogger(__name__)

LEDGER = ".egohorizon-fetch.json"
ABOUT = "LICENSE-AND-CITATION.md"
CACHE = ".egohorizon-fetch-cache"


def fetch(names: list[str] | tuple[str, ...], *, from_dir: str | os.PathLike | None = None,
          remotes: Mapping[str, tuple[str | None, str | None]] | None = None,
          say: Callable[[str], None] = log.info, environ: Mapping[str, str] | None = None,
          root: Path | None = None) -> Path:
    """Makes ``names`` (sets or groups) complete in a data home and returns it. Without ``from_dir``, a
    home that already holds them all is used as it is (nothing written); otherwise the files go into the
    write home (``$EGOHORIZON_DATA``), read from ``from_dir`` or each set's git repository
    (``remotes[name] = (url, commit)`` overrides the manifest's, for a mirror)."""
    remotes = remotes or {}
    datasets = [dataset.with_remote(*remotes.get(dataset.name, (None, None))) for dataset in resolve(names)]
    if from_dir is None:
        try:
            found = find_home(names, environ, root)
        except ConfigError:
            found = None
        if found is not None:
            for dataset in datasets:
                say_terms(dataset, say)
            say(f"every file already in {found} (sha256 checked); nothing fetched")
            return found
    home = write_home(environ, root)
    for dataset in datasets:
        say_terms(dataset, say)
        source = LocalSource(from_dir) if from_dir is not None else None
        fetch_set(dataset, home.path, home.label, source, say)
    return home.path


def say_terms(dataset: DataSet, say: Callable[[str], None]) -> None:
    say(f"{dataset.name}: {dataset.url} @ {dataset.commit[:7]} ({_files(len(dataset.files))}, "
        f"{dataset.size / 1e6:.1f} MB)")
    say(f"  license: {dataset.license}")
    say(f"  cite: {dataset.citation}")
    if dataset.left_out:
        say(f"  left out: {dataset.left_out}")


def fetch_set(dataset: DataSet, home: Path, label: str, source: LocalSource | None,
              say: Callable[[str], None]) -> None:
    """Fills ``home/<folder>`` with the set's files; ``source`` None means its git repository."""
    folder = home / dataset.folder
    ledger = _read_ledger(folder)
    todo = [entry for entry in dataset.files if _needs(home, dataset, entry, ledger, say)]
    if todo or not (folder / ABOUT).is_file():
        _check_writable(folder, home, label)
    if todo:
        # issue 36: two fetches of one set at once: the second is refused (a lock), never a mixed folder
        lock_folder(folder, "data fetch", option=f"data home {label}:")
        try:
            source = source or GitSource(dataset, home / CACHE / f"{dataset.name}.git")
            for entry in todo:
                _install(dataset, entry, folder, ledger, source)
                say(f"  {entry.path} ({entry.size:,} B)")
            source.close()
            _remove_if_empty(home / CACHE)
        finally:
            # the lock file goes too: a data home holds the manifest's files, the ledger and the terms only
            # (every file is checked by sha256 before it is renamed in, so a rare race costs no wrong byte)
            (folder / LOCK).unlink(missing_ok=True)
            release(folder)
    _write_about(dataset, folder, ledger)
    say(f"  {_files(len(todo))} fetched, {len(dataset.files) - len(todo)} already there; in {folder}")


def _needs(home: Path, dataset: DataSet, entry: FileEntry, ledger: set[str], say) -> bool:
    problem = file_problem(home, dataset, entry)
    if problem is None or problem.endswith("missing"):
        return problem is not None
    if entry.path not in ledger:
        raise DataError(f"{problem}; it was not written by egohorizon data fetch, so it is left as it is: "
                        f"move it away, or set {ENV} to another folder")
    say(f"  refused {home / dataset.folder / entry.path}: sha256 differs from the manifest; fetching it again")
    return True


def _install(dataset: DataSet, entry: FileEntry, folder: Path, ledger: set[str], source) -> None:
    target = folder / entry.path
    if entry.path not in ledger:  # listed before the first byte: whatever the fetch writes is its own
        ledger.add(entry.path)
        write_json_atomic(folder / LEDGER, {"set": dataset.name, "written": sorted(ledger)})
    for stale in target.parent.glob(f".{target.name}.tmp-*"):  # a killed run's temporary copy of our file
        stale.unlink()
    digest = hashlib.sha256()
    with atomic_open(target, "wb") as handle:  # renamed into place only if no exception
        source.copy(dataset, entry, handle, digest)
        if digest.hexdigest() != entry.sha256:
            raise DataError(f"{source.where(dataset, entry)}: sha256 {digest.hexdigest()} differs from the "
                            f"manifest's {entry.sha256}; refused, not written")


def _write_about(dataset: DataSet, folder: Path, ledger: set[str]) -> None:
    about = folder / ABOUT
    if about.is_file() and ABOUT not in ledger:
        return  # someone else's file of that name: left as it is
    if ABOUT not in ledger:
        ledger.add(ABOUT)
        write_json_atomic(folder / LEDGER, {"set": dataset.name, "written": sorted(ledger)})
    rows = "\n".join(f"| {e.path} | {e.size} | {e.sha256} |" for e in dataset.files)
    write_text_atomic(about, (
        f"# {dataset.name}\n\nFetched by `egohorizon data fetch {dataset.name}` from {dataset.url} at commit "
        f"{dataset.commit}; each file checked against egohorizon's manifest (sha256).\n\n"
        f"- License: {dataset.license}\n- Cite: {dataset.citation}\n"
        + (f"- Left out: {dataset.left_out}\n" if dataset.left_out else "")
        + f"\n| file | bytes | sha256 |\n|---|---|---|\n{rows}\n"))


def _read_ledger(folder: Path) -> set[str]:
    path = folder / LEDGER
    if not path.is_file():
        return set()
    try:
        return set(json.loads(path.read_text(encoding="utf-8"))["written"])
    except (ValueError, KeyError, TypeError) as error:
        raise DataError(f"{path}: not the fetch's ledger ({error}); move it away and fetch again") from None


def _check_writable(folder: Path, home: Path, label: str) -> None:
    probe = folder / f".egohorizon-write-check-{os.getpid()}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as error:
        raise DataError(f"data home {home} ({label}) is not writable ({error.strerror}: {error.filename}); "
                        f"set {ENV} to a folder you can write") from None


def _remove_if_empty(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:
        pass  # absent, or holds another set's cache still in use


def _files(count: int) -> str:
    return f"{count} file{'' if count == 1 else 's'}"
