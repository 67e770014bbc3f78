"""What train.py and eval.py do around a run: one run folder, and a failed run that leaves no look-alike.

- ``follow_run_dir``: Hydra creates its run folder (``.hydra/``, ``train.log``) from ``hydra.run.dir``
  before the run starts, and ``paths.run_dir`` cannot default to Hydra's folder and be Hydra's folder's
  source at once (a cycle). So a ``paths.run_dir=DIR`` on the command line is also given to Hydra as
  ``hydra.run.dir=DIR``: everything of the run lands in DIR.
- ``refuse_foreign_run_dir``: a ``paths.run_dir=DIR`` (or ``hydra.run.dir=DIR``) that is the current folder,
  or a non-empty folder that is no run folder (a user's folder, another command's output), is refused
  before Hydra writes ``.hydra/`` into it (issue 36); a run folder (marked by ``setup_run``, or one from
  before markers: ``.hydra/``, ``config.yaml``) is a rerun or a resume.
- ``run_or_exit``: a problem the user can fix (EgohorizonError) ends with ``error: ...`` on stderr and exit
  code 2, no traceback; the run folder is removed when it holds nothing but what the start of the run
  wrote (Hydra's files, the resolved config), else, if this run had started writing to it
  (``mark_started``), it is kept with a ``FAILED`` file saying why. A folder of an earlier run that this
  one never started in (a setting was rejected first) is left as it was.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from egohorizon.owned_output import MARKER

FAILED = "FAILED"
# What a run writes before its work starts; a folder holding only these is no run yet.
START_FILES = {".hydra", "config.yaml", FAILED, MARKER}
_started: set[Path] = set()  # the run folders this process began writing to (setup_run)


def follow_run_dir(argv: list[str]) -> list[str]:
    """``argv`` with ``hydra.run.dir=DIR`` added right after (with the other overrides, before any
    ``--cfg``-like flag) the last ``paths.run_dir=DIR`` override, unless Hydra's folder is set too, or this
    is a multirun (each job's folder is then Hydra's ``sweep.subdir``)."""
    if any(a in ("-m", "--multirun") or a.lstrip("+").startswith("hydra.run.dir=") for a in argv):
        return argv
    given = [i for i, a in enumerate(argv) if i and a.lstrip("+").startswith("paths.run_dir=")]
    if not given:
        return argv
    last = given[-1]
    return [*argv[: last + 1], "hydra.run.dir=" + argv[last].split("=", 1)[1], *argv[last + 1 :]]


RUN_COMMAND = "train.py/eval.py"  # the marker's command in a run folder
_RUN_SIGNS = (".hydra", "config.yaml", "checkpoints")  # a run folder written before markers existed


def refuse_foreign_run_dir(argv: list[str]) -> None:
    """Exit 2 with a message when a run folder given on the command line may not be written (module doc)."""
    from egohorizon.owned_output import OwnershipError, check_place, is_empty, read_marker

    for arg in argv[1:]:
        key, _, value = arg.lstrip("+").partition("=")
        if key not in ("paths.run_dir", "hydra.run.dir") or not value or "${" in value:
            continue
        folder = Path(value)
        try:
            check_place(folder, [], f"{key}=")
            marker = read_marker(folder) if folder.is_dir() else None
            if marker is not None and marker["command"] != RUN_COMMAND:
                raise OwnershipError(f"{key}={value}: written by egohorizon {marker['command']}, not a run folder; "
                                     f"nothing was changed. Give {key} a new folder")
            if marker is None and not is_empty(folder) and not any((folder / n).exists() for n in _RUN_SIGNS):
                raise OwnershipError(f"{key}={value}: a folder that train.py / eval.py did not write (no run "
                                     f"there: no .hydra/, config.yaml or {RUN_COMMAND} marker); nothing was "
                                     f"changed. Give {key} a new or empty folder (no flag replaces another folder)")
        except OwnershipError as error:
            print(f"error: {error}", file=sys.stderr)
            raise SystemExit(2) from None


def run_or_exit(function: Callable[[Any], Any], cfg) -> Any:
    """``function(cfg)``; on an EgohorizonError or a file of defective records (RecordError, e.g.
    data.events=boxes.csv, which ended in a traceback): the message, the folder cleaned or marked, exit 2."""
    from egohorizon.errors import EgohorizonError
    from egohorizon.schema import RecordError

    try:
        return function(cfg)
    except Exception as raised:
        error = _user_error(raised, (EgohorizonError, RecordError))
        if error is None:
            raise
        for folder in _run_folders(cfg):
            discard_or_mark_failed(folder, error, _output_dir(cfg))
        print(f"error: {error}", file=sys.stderr)
        raise SystemExit(2) from None


def _user_error(error: BaseException, kinds: tuple[type, ...]) -> BaseException | None:
    """``error`` if it is one the user can act on, or the one Hydra wrapped while building a target
    (eval.py split=bogus: "Error in call to target ... ConfigError(...)", exit 1, the folder left)."""
    from hydra.errors import InstantiationException

    for _ in range(5):
        if isinstance(error, kinds):
            return error
        if not isinstance(error, InstantiationException) or error.__cause__ is None:
            return None
        error = error.__cause__
    return None


def _run_folders(cfg) -> list[Path]:
    """The run folder and Hydra's (the same unless Hydra's was set apart), those that exist."""
    folders = []
    try:
        folders.append(Path(cfg.paths.run_dir))
    except Exception as error:  # noqa: BLE001 - an unresolvable run_dir: nothing was written there
        logging.getLogger(__name__).debug("paths.run_dir does not resolve: %s", error)
    try:
        from hydra.core.hydra_config import HydraConfig

        folders.append(Path(HydraConfig.get().runtime.output_dir))
    except ValueError:  # not started by @hydra.main (a test composing the config)
        pass
    unique = {folder.resolve(): folder for folder in folders if folder.is_dir()}
    return list(unique.values())


def _output_dir(cfg) -> Path | None:
    try:
        return Path(cfg.paths.output_dir)
    except Exception:  # noqa: BLE001 - no outputs folder known: only the run folder itself is removed
        return None


def discard_or_mark_failed(folder: Path, error: BaseException, output_dir: Path | None = None) -> None:
    """Removes ``folder`` when it holds only start-of-run files and logs (and the folders above it up to
    ``output_dir`` that it leaves empty: Hydra's ``outputs/<task>/runs/``); else writes ``FAILED`` into a
    folder this run had started in."""
    entries = list(folder.iterdir()) if folder.is_dir() else []
    if all(e.name in START_FILES or e.suffix == ".log" for e in entries):
        _close_log_files(folder)
        # Every rank of a multi-process job gets here at once: whatever another rank removed first is fine.
        for entry in entries:
            shutil.rmtree(entry, ignore_errors=True) if entry.is_dir() else entry.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            folder.rmdir()
            _remove_empty_parents(folder, output_dir)
    elif folder.resolve() in _started:
        (folder / FAILED).write_text(f"{type(error).__name__}: {error}\n")


def _remove_empty_parents(folder: Path, output_dir: Path | None) -> None:
    if output_dir is None:
        return
    top, parent = output_dir.resolve(), folder.resolve().parent
    if parent != top and top not in parent.parents:
        return  # a run folder outside outputs/: its parents are the user's
    while parent.is_dir() and (parent == top or top in parent.parents) and not any(parent.iterdir()):
        parent.rmdir()
        parent = parent.parent


def _close_log_files(folder: Path) -> None:
    """Hydra's job log (``train.log``) is open on the root logger; closed before its folder goes."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        if isinstance(handler, logging.FileHandler) and Path(handler.baseFilename).parent == folder.resolve():
            handler.close()
            root.removeHandler(handler)


def mark_started(folder: Path) -> None:
    """The run writes to ``folder`` from now on; a rerun in a folder marked failed starts unmarked (it
    writes a new mark if it fails again)."""
    _started.add(folder.resolve())
    (folder / FAILED).unlink(missing_ok=True)
