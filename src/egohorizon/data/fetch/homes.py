"""Data homes: the folders the fetched annotation sets live in, and which one an experiment reads.

Lookup order: ``$EGOHORIZON_DATA``, then ``$EGOHORIZON_SHARED_DATA`` (the older name, kept as an
alias), then ``../shared/data`` beside the checkout, then ``data/sources`` in the checkout (where
``egohorizon data fetch`` writes when neither variable is set). The first place whose files all match
the manifest wins: a half-fetched or changed copy is passed over, never read.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from egohorizon.data.fetch.sets import DataSet, problems, resolve
from egohorizon.errors import ConfigError

ENV = "EGOHORIZON_DATA"
ALIAS = "EGOHORIZON_SHARED_DATA"
DEFAULT = Path("data") / "sources"  # under the checkout; data/ is git-ignored


@dataclass(frozen=True)
class Home:
    label: str  # how a message names the place: "$EGOHORIZON_DATA", "../shared/data", ...
    path: Path


def checkout() -> Path | None:
    """The egohorizon checkout (egohorizon.repo_conf), or None outside one."""
    from egohorizon.repo_conf import repo_root

    try:
        return repo_root()
    except ConfigError:
        return None


def homes(environ: Mapping[str, str] | None = None, root: Path | None = None) -> list[Home]:
    """The places looked in, in order; ``root`` is the checkout (found from the working folder if None)."""
    environ = os.environ if environ is None else environ
    root = checkout() if root is None else root
    found = [Home(f"${name}", Path(environ[name]).expanduser()) for name in (ENV, ALIAS) if environ.get(name)]
    if root is not None:
        found += [Home("../shared/data", root.parent / "shared" / "data"), Home(str(DEFAULT), root / DEFAULT)]
    unique: dict[Path, Home] = {}
    for home in found:
        unique.setdefault(home.path.resolve(), home)
    return list(unique.values())


def write_home(environ: Mapping[str, str] | None = None, root: Path | None = None) -> Home:
    """Where a fetch puts files: ``$EGOHORIZON_DATA``, else its alias, else ``data/sources`` of the checkout."""
    environ = os.environ if environ is None else environ
    for name in (ENV, ALIAS):
        if environ.get(name):
            return Home(f"${name}", Path(environ[name]).expanduser())
    root = checkout() if root is None else root
    if root is None:
        raise ConfigError(f"no data home: not inside an egohorizon checkout and ${ENV} is not set; "
                          f"set {ENV}=DIR (a folder you can write)")
    return Home(str(DEFAULT), root / DEFAULT)


def fetch_command(names: list[str] | tuple[str, ...]) -> str:
    return f"egohorizon data fetch {' '.join(names)}"


def find_home(names: list[str] | tuple[str, ...], environ: Mapping[str, str] | None = None,
              root: Path | None = None) -> Path:
    """The first data home holding every file of ``names`` (sets or groups) with the manifest's bytes.
    Raises ConfigError naming each place looked in, what it lacks, and the command that fetches them."""
    datasets: list[DataSet] = resolve(names)
    report = []
    for home in homes(environ, root):
        if not home.path.is_dir():
            report.append(f"{home.label} = {home.path}: no such folder")
            continue
        wrong = problems(home.path, datasets)
        if not wrong:
            return home.path
        report.append(f"{home.label} = {home.path}: {len(wrong)} of {sum(len(d.files) for d in datasets)} "
                      f"files missing or changed (first: {wrong[0]})")
    looked = "; ".join(report) or f"no place to look (${ENV} is not set and there is no checkout)"
    raise ConfigError(f"the {' + '.join(d.name for d in datasets)} annotation files are in no data home "
                      f"({looked}). Fetch them: {fetch_command(names)} (or --from DIR, a copy you have)")
