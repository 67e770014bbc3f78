"""A run's day split, recorded in its folder and read back by eval.py and ``egohorizon compare``, so a
run is scored on its own held-out days and never on a day it trained on (issue 22, items 1-2).

Task-independent: every datamodule says which day split it used (``TaskDataModule.day_split()``) and
which (participant, day) pairs each held-out item comes from (``TaskDataModule.item_days(split)``);
this module writes the record, reads it back and checks scored items against it.

The record, ``<run>/split.json``, is a ``DaySplit`` file (``DaySplit.load`` reads it and a datamodule's
``split_file`` takes it) with a ``run`` block beside it: the run's task and seed, a digest of the split
itself, and the sha256 of the data files that fixed it (events, shard index, split and points files).

A run written before the record existed has none. Its split is then taken from ``points/splits.json``
(a forecast run saved it beside its points) or rebuilt from its own ``config.yaml`` (the datamodule
built again with the run's data settings and seed), and a warning says which.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from egohorizon.data.splits import DaySplit
from egohorizon.errors import DataError, EgohorizonError

log = logging.getLogger(__name__)

RECORD_FILE = "split.json"
# Files inside a data folder that fix what a split holds (the digest covers the ones present).
FOLDER_INPUTS = ("events.jsonl", "index.json", "split.json", "splits.json", "clips.jsonl", "points_val.jsonl",
                 "points_test.jsonl")

Day = tuple[str, str]  # (participant, day)


@dataclass
class RunSplit:
    """One run's day split and where it was read from (``source``: the record, or how it was rebuilt)."""

    run_dir: Path
    split: DaySplit
    source: str
    seed: Any = None
    inputs: dict[str, Any] = field(default_factory=dict)
    evaluated: bool = False  # the run of the evaluated checkpoint (eval.py uses its split), not one compared

    def days(self, name: str) -> set[Day]:
        return self.split.days_in(name)

    @property
    def digest(self) -> str:
        return split_digest(self.split)


# -- writing -----------------------------------------------------------------------------------------

def split_digest(split: DaySplit) -> str:
    """sha256 of the split's days (not of its settings): two runs with one digest hold out the same days."""
    days = json.dumps(split.to_dict()["participants"], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(days.encode("utf-8")).hexdigest()


def file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def data_inputs(data: Mapping[str, Any], run_dir: Path) -> dict[str, Any]:
    """``data.<key>: {path, sha256}`` for every data setting naming an existing file (or a folder, by the
    files in it that fix a split), except the run's own outputs (``save_points_to``)."""
    inputs: dict[str, Any] = {}
    for key, value in sorted(data.items()):
        if not isinstance(value, str) or not value:
            continue
        path = Path(value)
        try:
            if path.resolve().is_relative_to(run_dir.resolve()):
                continue
            files = [path] if path.is_file() else [path / n for n in FOLDER_INPUTS if (path / n).is_file()]
        except OSError:
            continue
        if files:
            inputs[f"data.{key}"] = {"path": value, "sha256": {f.name: file_digest(f) for f in files}}
    return inputs


def write_split_record(run_dir: str | Path, datamodule, cfg) -> Path | None:
    """``<run>/split.json``: the prepared datamodule's day split with the run's task, seed and inputs.
    A datamodule that knows no day split (points read from a file) gets no record, and a warning."""
    from omegaconf import OmegaConf

    run_dir = Path(run_dir)
    split = datamodule.day_split()
    if split is None:
        log.warning("%s: the datamodule (%s) knows no day split; eval.py and compare cannot check that this "
                    "run is scored on days it did not train on", run_dir, type(datamodule).__name__)
        return None
    data = OmegaConf.to_container(cfg.data, resolve=True) if cfg.get("data") is not None else {}
    record = split.to_dict()
    record["run"] = {"task": cfg.get("eval_task"), "seed": cfg.get("seed"), "data_seed": data.get("seed"),
                     "split_sha256": split_digest(split), "inputs": data_inputs(data, run_dir)}
    path = run_dir / RECORD_FILE
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


# -- reading -----------------------------------------------------------------------------------------

def read_run_split(run_dir: str | Path) -> RunSplit | None:
    """The run's day split: its record, else (a run from before records) ``points/splits.json`` or the
    split rebuilt from its ``config.yaml``, with a warning; None when none of these exists."""
    run_dir = Path(run_dir)
    record = run_dir / RECORD_FILE
    if record.is_file():
        try:
            obj = json.loads(record.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise DataError(f"{record}: not a JSON split record ({error})") from None
        run = obj.get("run") if isinstance(obj, dict) else None
        run = run if isinstance(run, dict) else {}
        found = RunSplit(run_dir, DaySplit.from_dict(obj, source=str(record)), str(record), run.get("seed"),
                         run.get("inputs") or {})
        check_record(found, run.get("split_sha256"))
        return found
    config = _run_config(run_dir)
    seed = config.get("seed") if config is not None else None
    saved = run_dir / "points" / "splits.json"
    if saved.is_file():
        log.warning("%s has no %s (written before runs recorded their split): using %s, the day split its "
                    "datamodule saved (seed %s)", run_dir, RECORD_FILE, saved, seed)
        return RunSplit(run_dir, DaySplit.load(saved), f"{saved} (no {RECORD_FILE}: an older run)", seed)
    if config is None or config.get("data") is None:
        return None
    try:
        split = rebuild_split(config)
    except EgohorizonError as error:
        raise DataError(f"{run_dir}: no {RECORD_FILE} (a run from before runs recorded their split), and its day "
                        f"split cannot be rebuilt from its config.yaml: {error}") from None
    if split is None:
        return None
    log.warning("%s has no %s (written before runs recorded their split): its day split was rebuilt from its "
                "config.yaml (data %s, seed %s)", run_dir, RECORD_FILE, config.data.get("_target_"), seed)
    return RunSplit(run_dir, split, f"rebuilt from {run_dir / 'config.yaml'} (no {RECORD_FILE}: an older run)", seed)


def check_record(found: RunSplit, recorded_digest: Any) -> None:
    """A ``split.json`` must still hold the days the run trained on (issue 36, item 4): an edited record
    (a training day swapped into the test days) would have eval.py score the model on a day it trained
    on. Checked against the split the run's datamodule saved (``points/splits.json``) and the digest
    recorded with the days; a disagreement is refused naming the days that moved."""
    record = found.run_dir / RECORD_FILE
    saved = found.run_dir / "points" / "splits.json"
    if saved.is_file():
        moved = moved_days(DaySplit.load(saved), found.split)
        if moved:
            raise DataError(f"{record}: its day split disagrees with {saved}, the split the run's datamodule "
                            f"saved when it trained: {moved}; restore the run's split.json")
    if recorded_digest and recorded_digest != found.digest:
        moved = ""
        config = _run_config(found.run_dir)
        if config is not None and config.get("data") is not None:
            try:  # the split the run trained on, rebuilt from its config, names the days
                rebuilt = rebuild_split(config)
                moved = f": {moved_days(rebuilt, found.split)}" if rebuilt is not None else ""
            except EgohorizonError:
                moved = ""
        raise DataError(f"{record}: its days no longer match the digest recorded with them (run.split_sha256 "
                        f"{recorded_digest[:12]}..., the days give {found.digest[:12]}...): the file was edited "
                        f"after the run trained{moved}; restore the run's split.json")


def moved_days(trained: DaySplit, record: DaySplit, limit: int = 8) -> str:
    """The days whose split differs between ``trained`` and ``record``, as "p/day train -> test"."""
    days = {(p, d) for p, by_day in trained.days.items() for d in by_day}
    days |= {(p, d) for p, by_day in record.days.items() for d in by_day}
    moved = sorted((p, d) for p, d in days if trained.get(p, d) != record.get(p, d))
    text = ", ".join(f"{p}/{d} {trained.get(p, d)} -> {record.get(p, d)}" for p, d in moved[:limit])
    return text + (f" (+{len(moved) - limit} more)" if len(moved) > limit else "")


def _run_config(run_dir: Path):
    from omegaconf import OmegaConf

    path = run_dir / "config.yaml"
    return OmegaConf.load(path) if path.is_file() else None


def run_config(target: str | Path):
    """The resolved config (an OmegaConf DictConfig) of the run ``target`` (a run folder, ``*.ckpt`` or
    adapter folder) belongs to (``<run>/config.yaml``), or None."""
    from egohorizon.checkpoints import run_dir_of_target

    run_dir = run_dir_of_target(target)
    return _run_config(run_dir) if run_dir is not None else None


def rebuild_split(config) -> DaySplit | None:
    """The day split the run's datamodule makes from the run's resolved data settings (its seed among
    them); nothing is written into the old run's folder."""
    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    data = OmegaConf.to_container(config.data, resolve=True)
    if "save_points_to" in data:
        data["save_points_to"] = None
    datamodule = instantiate(data, _convert_="all")
    datamodule.prepare()
    return datamodule.day_split()


def run_split_of(target: str | Path | None) -> RunSplit | None:
    """The day split of the run a run folder, ``*.ckpt`` or adapter folder belongs to (None: no run folder)."""
    from egohorizon.checkpoints import run_dir_of_target

    if not target:
        return None
    run_dir = run_dir_of_target(target)
    return read_run_split(run_dir) if run_dir is not None else None


# -- checking ----------------------------------------------------------------------------------------

def days_of_item(item: Any) -> set[Day]:
    """The (participant, day) pairs an item's gold comes from: a forecast point's target days, else the
    item's ``day`` (or ``meta.day``: a QA item's question day). Empty when the item names none."""
    participant = getattr(item, "participant", None)
    meta = getattr(item, "meta", None)
    meta = meta if isinstance(meta, dict) else {}
    days = list(meta.get("target_days") or []) + [getattr(item, "day", None) or meta.get("day")]
    return {(participant, day) for day in days if participant and day}


def format_days(days: Iterable[Day], limit: int = 8) -> str:
    listed = sorted(days)
    text = ", ".join(f"{p}/{d}" for p, d in listed[:limit])
    return text + (f" (+{len(listed) - limit} more)" if len(listed) > limit else "")


def training_hits(item_days: Mapping[str, Iterable[Day]], run: RunSplit) -> dict[Day, list[str]]:
    """Training days of ``run`` that held-out items come from: day -> the item ids."""
    train = run.days("train")
    hits: dict[Day, list[str]] = defaultdict(list)
    for item_id, days in item_days.items():
        for day in days:
            if day in train:
                hits[day].append(item_id)
    return dict(hits)


def check_held_out(item_days: Mapping[str, Iterable[Day]], runs: Sequence[RunSplit], what: str) -> None:
    """Refuses (DataError) when any scored item comes from a training day of any of ``runs``, naming the
    days; warns when items name no day (they cannot be checked)."""
    problems = []
    for run in runs:
        hits = training_hits(item_days, run)
        if hits:
            n_items = len({i for ids in hits.values() for i in ids})
            problems.append(f"{n_items} of its {len(item_days)} items come from {len(hits)} training day(s) of "
                            f"the run {run.run_dir} ({format_days(hits)}; its split: {run.source})")
    if problems:
        raise DataError(f"{what}: " + "; ".join(problems) + ". A run is scored only on days it did not train on: "
                        "evaluate it on its own held-out days (leave points= and the split unset) or on "
                        "points made with its own split")
    undated = [i for i, days in item_days.items() if not days]
    if undated and runs:
        log.warning("%s: %d of %d items name no participant day (e.g. %s); they cannot be checked against the "
                    "runs' training days", what, len(undated), len(item_days), undated[0])


def held_out_days(runs: Sequence[RunSplit], name: str) -> list[set[Day]]:
    return [run.days(name) for run in runs]


def check_same_held_out(runs: Sequence[RunSplit], name: str, labels: Sequence[str]) -> None:
    """Refuses (DataError) runs whose ``name`` (test or val) days differ, naming each run's held-out days
    that are training days of another run (or, where none are, the days that differ)."""
    held = held_out_days(runs, name)
    if all(days == held[0] for days in held[1:]):
        return
    problems = []
    for i, (run, label) in enumerate(zip(runs, labels)):
        for j, (other, other_label) in enumerate(zip(runs, labels)):
            leaked = held[i] & other.days("train") if i != j else set()
            if leaked:
                problems.append(f"{len(leaked)} {name} day(s) of {label} are training days of {other_label} "
                                f"({format_days(leaked)})")
    if not problems:
        differ = set.union(*held) - set.intersection(*held)
        problems.append(f"{len(differ)} {name} day(s) are held out by some runs only ({format_days(differ)})")
    shared = set.intersection(*held)
    raise DataError(f"compare: the runs hold out different {name} days: " + "; ".join(problems)
                    + f". Compare runs trained with the same day split (same data and seed), or pass "
                    f"--intersect-held-out to score every checkpoint on the {len(shared)} {name} day(s) all "
                    "runs hold out")


def intersect_split(runs: Sequence[RunSplit], name: str) -> tuple[DaySplit, set[Day]]:
    """The first run's split with its ``name`` days cut to those every run holds out as ``name``; its
    other ``name`` days move to the other held-out split, which the evaluation does not score (so they
    are neither scored nor added to the training data)."""
    shared = set.intersection(*held_out_days(runs, name))
    if not shared:
        raise DataError(f"compare --intersect-held-out: the runs share no {name} day (their {name} days: "
                        + "; ".join(f"{r.run_dir}: {format_days(r.days(name))}" for r in runs) + ")")
    other = "val" if name == "test" else "test"
    first = runs[0].split
    days = {p: {d: (s if s != name or (p, d) in shared else other) for d, s in by_day.items()}
            for p, by_day in first.days.items()}
    settings = {**{k: v for k, v in first.settings.items() if k != "path"}, "intersect_of": [str(r.run_dir) for r in runs]}
    return DaySplit(days=days, settings=settings), shared


def keep_points_on(points_file: Path, days: set[Day], out: Path) -> tuple[int, int]:
    """The points of ``points_file`` whose every target day is in ``days``, written to ``out``; returns
    (kept, total)."""
    from egohorizon.schema import ForecastPoint, load_jsonl, write_jsonl

    points = load_jsonl(points_file, ForecastPoint)
    kept = [p for p in points if days_of_item(p) and days_of_item(p) <= days]
    write_jsonl(out, kept)
    return len(kept), len(points)
