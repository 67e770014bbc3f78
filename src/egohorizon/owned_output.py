"""Outputs are owned (issue 36, "Data loss"): a command replaces only what it wrote itself.

Every folder a command writes gets a marker, ``.egohorizon-output.json``, naming the command and a digest of
its inputs (the input files' paths and contents, and the settings that change what is written). Before a
command writes a folder, ``claim_folder`` decides:

- never: the current folder or one above it, an input itself or a folder above an input (replacing it
  would delete the input), or a non-empty folder without the command's marker (a user's folder, a
  folder of runs, another command's output): ``--force`` does not change this;
- a folder this command marked with the same inputs: a rerun, which resumes or writes the same files;
- marked with other inputs: refused unless ``--force``, which clears the folder first (never a mix);
- a folder another running job is writing (a lock held while the command runs): refused.

A file to write (``--out FILE``) may not be one of the inputs (``hands detect --gold b.jsonl --out
b.jsonl`` read and replaced the same file). The one copy of these rules; standard library only, so the
torch-free commands, the checkpoint callback and train.py's start use it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from egohorizon.atomic_files import write_json_atomic
from egohorizon.errors import ConfigError

MARKER = ".egohorizon-output.json"
LOCK = ".egohorizon-output.lock"
_HASHED_UP_TO = 64 * 2**20  # an input file's bytes go into the digest up to this size (videos: path and size)
_held: dict[Path, int] = {}  # folder -> the lock's file descriptor, held until release()
_created: set[Path] = set()  # folders a claim created (removed again if the command wrote nothing there)


class OwnershipError(ConfigError):
    """A folder or file the command may not write; the message names it and what would allow it."""


def _file_digest(path: Path) -> dict[str, Any]:
    stat = path.stat()
    entry: dict[str, Any] = {"size": stat.st_size}
    if stat.st_size <= _HASHED_UP_TO:
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(2**20), b""):
                digest.update(block)
        entry["sha256"] = digest.hexdigest()
    return entry


def describe_inputs(settings: Mapping[str, Any], inputs: Mapping[str, Any] | Iterable[Any] = ()) -> dict:
    """What the marker records: ``settings`` as given, and each input (``{role: path or paths}``, or paths)
    resolved with its file's size and digest (a folder by its path alone: a recording or a run is too big to
    read here; a name that is no path, such as a hub id, as given)."""
    roles = inputs if isinstance(inputs, Mapping) else {"input": list(inputs)}
    paths: dict[str, dict[str, Any]] = {}
    for role, values in roles.items():
        found = {}
        for raw in values if isinstance(values, (list, tuple)) else [values]:
            if raw is None or str(raw) == "":
                continue
            path = Path(raw).expanduser()
            if not path.exists():  # a hub id or a served model's name: as given
                found[str(raw)] = {}
                continue
            resolved = path.resolve()
            found[str(resolved)] = _file_digest(resolved) if resolved.is_file() else {}
        if found:
            paths[role] = found
    return {"settings": json.loads(json.dumps(dict(settings), default=str, sort_keys=True)), "paths": paths}


def digest_of(inputs: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(inputs, sort_keys=True, default=str).encode()).hexdigest()


def read_marker(folder: Path) -> dict[str, Any] | None:
    try:
        record = json.loads((folder / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and isinstance(record.get("command"), str) else None


def write_marker(folder: str | os.PathLike, command: str, inputs: Mapping[str, Any]) -> None:
    """Marks ``folder`` as ``command``'s output made from ``inputs`` (``describe_inputs``)."""
    write_json_atomic(Path(folder) / MARKER, {"command": command, "digest": digest_of(inputs), "inputs": inputs})


def _contents(folder: Path) -> list[str]:
    if not folder.is_dir():
        return []
    return sorted(e.name for e in folder.iterdir() if e.name not in (MARKER, LOCK) and not e.name.startswith(LOCK))


def is_empty(folder: str | os.PathLike) -> bool:
    """No folder, or one that holds nothing but the marker and lock of a claim (a fresh output)."""
    return not _contents(Path(folder))


def carry_marker(folder: Path, staging: Path) -> None:
    """Copies ``folder``'s marker into ``staging`` before ``staging`` replaces it (a writer that builds its
    output beside the target and renames it into place, as ``ingest`` does)."""
    if (folder / MARKER).is_file():
        shutil.copy2(folder / MARKER, staging / MARKER)


def check_place(out: Path, input_paths: Iterable[str | os.PathLike | None], option: str = "--out") -> None:
    """Refuses the current folder (or one above it), an input, or a folder above an input."""
    target = out.expanduser().resolve()
    named = f"{option}{'' if option.endswith('=') else ' '}{out}"  # "--out DIR", "paths.run_dir=DIR"
    here = Path.cwd().resolve()
    if target == here or target in here.parents:
        where = "the current folder" if target == here else f"a folder above the current folder ({here})"
        raise OwnershipError(f"{named}: is {where}; writing there could replace what you are working in. "
                             f"Give {option.rstrip('=')} a new folder")
    for raw in input_paths:
        if raw is None or str(raw) == "":
            continue
        source = Path(raw).expanduser().resolve()
        if target == source or target in source.parents:
            what = "is the input" if target == source else "holds the input"
            raise OwnershipError(f"{named}: {what} {raw}; writing there would replace it. "
                                 f"Give {option.rstrip('=')} another folder (no flag allows this)")


def claim_folder(out: str | os.PathLike, command: str, inputs: Mapping[str, Any], *,
                 input_paths: Iterable[str | os.PathLike | None] = (), force: bool = False,
                 flag: str = "--force", option: str = "--out", lock_suffix: str = "",
                 legacy: Iterable[str] = ()) -> Path:
    """Makes ``out`` this command's folder for ``inputs`` (``describe_inputs``): refuses what the module doc
    says, takes the folder's lock (``lock_suffix``: parallel parts of one job, each its own lock) and writes
    the marker. ``legacy``: files whose presence shows the command's output written before markers existed
    (a demo world's ``world.json``): such a folder is a rerun. Returns the folder; ``release`` (or the
    process's end) lets go of the lock."""
    out = Path(out)
    input_paths, legacy = list(input_paths), tuple(legacy)
    check_place(out, input_paths, option)
    _check_owner(out, command, inputs, force, flag, option, legacy)
    if not out.exists():
        _created.add(out.resolve())
    out.mkdir(parents=True, exist_ok=True)
    _lock(out, command, option, lock_suffix)
    try:
        if _check_owner(out, command, inputs, force, flag, option, legacy) == "replace":
            _clear(out)
        write_marker(out, command, inputs)
    except BaseException:
        release(out)
        raise
    return out


def _check_owner(out: Path, command: str, inputs: Mapping[str, Any], force: bool, flag: str, option: str,
                 legacy: tuple[str, ...] = ()) -> str:
    """"new", "same" (a rerun) or "replace" (this command's output of other inputs, with ``flag``)."""
    contents = _contents(out)
    marker = read_marker(out) if out.is_dir() else None
    if marker is None:
        if not contents:
            return "new"
        if any((out / name).exists() for name in legacy):
            return "same"
        shown = ", ".join(contents[:3]) + (", ..." if len(contents) > 3 else "")
        raise OwnershipError(f"{option} {out}: a folder that egohorizon {command} did not write ({len(contents)} "
                             f"entries, e.g. {shown}; no {MARKER}); nothing was changed. Give {option} a new or "
                             f"empty folder ({flag} replaces only a folder this command wrote itself)")
    if marker["command"] != command:
        raise OwnershipError(f"{option} {out}: written by egohorizon {marker['command']}, not {command}; nothing "
                             f"was changed. Give {option} another folder ({flag} replaces only a folder this "
                             "command wrote itself)")
    if marker.get("digest") == digest_of(inputs) or not contents:
        return "same"
    if force:
        return "replace"
    raise OwnershipError(f"{option} {out}: written by egohorizon {command} from other inputs "
                         f"({_difference(marker.get('inputs') or {}, inputs)}); nothing was changed. Rerun with "
                         f"the same inputs to resume, give {option} another folder, or add {flag} to replace it")


def _difference(before: Mapping[str, Any], now: Mapping[str, Any]) -> str:
    """The first few settings or inputs that differ, for the refusal's message."""
    found = []
    for kind in ("settings", "paths"):
        old, new = before.get(kind) or {}, now.get(kind) or {}
        for key in sorted(set(old) | set(new)):
            a, b = old.get(key), new.get(key)
            if a == b:
                continue
            if kind == "paths" and a and b and set(a) == set(b):
                found.append(f"{key}: {', '.join(p for p in b if a[p] != b[p])} changed since")
            else:
                a, b = (", ".join(x) if x else x for x in (a, b)) if kind == "paths" else (a, b)
                found.append(f"{key}: {a!r} there, {b!r} now")
    return "; ".join(found[:4]) or "another version of the marker"


def _clear(folder: Path) -> None:
    """Empties a folder this command marked (``--force``): what it wrote for other inputs goes."""
    for name in _contents(folder):
        entry = folder / name
        shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()


def _lock(folder: Path, command: str, option: str, suffix: str) -> None:
    key = folder.resolve()
    if key in _held:
        return  # this process claimed it already (a command calling another's writer)
    lock = folder / (LOCK + (f".{suffix}" if suffix else ""))
    fd = os.open(lock, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as error:
        os.close(fd)
        if error.errno in (errno.EAGAIN, errno.EACCES):
            raise OwnershipError(f"{option} {folder}: another egohorizon {command} is writing this folder now (lock "
                                 f"{lock}); wait for it to finish, or give this run another {option}") from None
        raise
    _held[key] = fd


def lock_folder(folder: str | os.PathLike, command: str, option: str = "--out") -> Path:
    """Takes ``folder``'s lock for a command that adds files to a shared place rather than claiming a
    folder of its own (``data fetch`` into a data home): a second such run at once is refused, never mixed.
    ``release`` lets go."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    _lock(folder, command, option, "")
    return folder


def release(folder: str | os.PathLike) -> None:
    fd = _held.pop(Path(folder).resolve(), None)
    if fd is not None:
        with contextlib.suppress(OSError):
            os.close(fd)


def release_all(failed: bool = False) -> None:
    """Lets go of every claim; after a ``failed`` command, a folder its claim created and nothing was written
    to is removed again (a wrong input must not leave an output folder looking like a result)."""
    for folder in list(_held):
        release(folder)
    for folder in list(_created):
        _created.discard(folder)
        if failed and folder.is_dir() and is_empty(folder):
            for entry in folder.iterdir():
                entry.unlink()
            folder.rmdir()


def check_written_by(folder: str | os.PathLike, command: str, option: str = "OUT") -> Path:
    """Refuses to add files to ``folder`` unless ``command`` marked it: a command that completes another's
    output (``caption merge`` writing a caption run's events.jsonl) must not write into a user's folder or
    another command's output."""
    folder = Path(folder)
    marker = read_marker(folder) if folder.is_dir() else None
    if marker is None or marker["command"] != command:
        who = f"written by egohorizon {marker['command']}" if marker else f"no {MARKER}"
        raise OwnershipError(f"{option} {folder}: not a folder that egohorizon {command} wrote ({who}); nothing "
                             "was changed")
    return folder


def check_output_file(out: str | os.PathLike, input_paths: Iterable[str | os.PathLike | None],
                      option: str = "--out") -> Path:
    """Refuses a file to write that is one of the inputs (or a link to one)."""
    out = Path(out)
    if not out.exists():
        return out
    for raw in input_paths:
        if raw is None or str(raw) == "":
            continue
        source = Path(raw).expanduser()
        if source.exists() and os.path.samefile(out, source):
            raise OwnershipError(f"{option} {out}: is the input {raw}; writing it would replace what is being "
                                 f"read. Give {option} another file name")
    return out


def replace_folder(staging: Path, out: Path, command: str) -> None:
    """Moves the finished ``staging`` folder (marked, ``write_marker``) to ``out``: an existing ``out`` is
    replaced only when it is empty or this command's marked output; a reader never sees half of either."""
    if out.exists():
        marker = read_marker(out)
        if _contents(out) and (marker is None or marker["command"] != command):
            raise OwnershipError(f"{out}: a folder that egohorizon {command} did not write; nothing was changed. "
                                 "Give another output folder")
        aside = out.with_name(f".{out.name}.replaced-{os.getpid()}")
        os.rename(out, aside)
        os.rename(staging, out)
        shutil.rmtree(aside, ignore_errors=True)
    else:
        os.rename(staging, out)


# What an adapter folder is made from, for the marker that ``export-adapter`` and the checkpoint callback
# both write (so re-exporting a run's own adapter folder is a rerun): the checkpoint's path, not its bytes
# (last.ckpt is rewritten as training goes on, and its adapter with it), and the base model if one was named.
ADAPTER_COMMAND = "export-adapter"
MERGED_COMMAND = "export-adapter --merge"


def adapter_inputs(checkpoint: str | os.PathLike, base: str | None = None) -> dict[str, Any]:
    return describe_inputs({"checkpoint": str(Path(checkpoint).resolve()), "base": base})
