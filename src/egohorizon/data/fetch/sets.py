"""The public annotation sets the project fetches: where each comes from (its own git repository at a
pinned commit), its license and citation, and the sha256 of every file the experiments read.

``sets.json`` is the manifest. Its checksums were computed from ``../shared/data``'s copies, which are
those commits' files (``../shared/data/SOURCES.md``); a file is taken only when its bytes match. Files
stored with Git LFS upstream (EPIC_100_train.csv) are not in it: a git fetch sees only their pointer.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from egohorizon.errors import ConfigError

MANIFEST = Path(__file__).with_name("sets.json")
# The three sets `data convert epic-kitchens` reads (EPIC-100 text and split, EPIC-55 dates and labels,
# RULSTM's text-less train segments), fetched together under one name: what the EPIC experiments need.
GROUPS = {"epic-kitchens": ("epic-kitchens-100", "epic-kitchens-55", "rulstm")}


@dataclass(frozen=True)
class FileEntry:
    path: str  # as in the repository, "/"-separated; also its place under the set's folder
    sha256: str
    size: int


@dataclass(frozen=True)
class DataSet:
    name: str
    folder: str  # the folder under a data home, as ../shared/data names it
    url: str
    commit: str  # a full 40-hex commit: a shallow fetch asks for exactly this object
    license: str
    citation: str
    files: tuple[FileEntry, ...]
    left_out: str = ""  # what the manifest leaves out and what replaces it

    @property
    def size(self) -> int:
        return sum(entry.size for entry in self.files)

    def with_remote(self, url: str | None = None, commit: str | None = None) -> DataSet:
        """The same files from another repository or commit (a mirror); the checksums still decide."""
        return dataclasses.replace(self, url=url or self.url, commit=commit or self.commit)


def load_sets(path: Path = MANIFEST) -> dict[str, DataSet]:
    raw = json.loads(path.read_text(encoding="utf-8"))
    return {name: DataSet(name=name, folder=item["folder"], url=item["url"], commit=item["commit"],
                          license=item["license"], citation=item["citation"], left_out=item.get("left_out", ""),
                          files=tuple(FileEntry(p, f["sha256"], f["size"]) for p, f in item["files"].items()))
            for name, item in raw.items()}


SETS = load_sets()
NAMES = (*GROUPS, *SETS)


def resolve(names: list[str] | tuple[str, ...]) -> list[DataSet]:
    """The sets behind ``names`` (a group stands for its sets), each once, in the order named."""
    chosen: dict[str, DataSet] = {}
    for name in names:
        if name not in NAMES:
            raise ConfigError(f"data fetch: {name!r} is not one of {', '.join(NAMES)}")
        for member in GROUPS.get(name, (name,)):
            chosen.setdefault(member, SETS[member])
    return list(chosen.values())


def sha256_of(path: str | os.PathLike) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def file_problem(home: Path, dataset: DataSet, entry: FileEntry) -> str | None:
    """None when ``home`` holds the file with the manifest's bytes; else what is wrong with it."""
    path = home / dataset.folder / entry.path
    if not path.is_file():
        return f"{path}: missing"
    if path.stat().st_size != entry.size or sha256_of(path) != entry.sha256:
        return f"{path}: sha256 differs from the manifest"
    return None


def problems(home: Path, datasets: list[DataSet]) -> list[str]:
    """Every file of ``datasets`` that ``home`` lacks or holds with other bytes."""
    return [problem for dataset in datasets for entry in dataset.files
            if (problem := file_problem(home, dataset, entry))]
