"""``egohorizon compare``: evaluate several checkpoints of one task on the same held-out items, then
tabulate.

The task comes from each checkpoint's run folder (``eval_task`` in the resolved ``config.yaml``
train.py writes there); checkpoints of different tasks are refused. Each checkpoint is evaluated by
``eval.py``'s own code (``egohorizon.run.evaluation``: adapter onto its base model, generation through
Lightning, scoring by ``GenerationEvalCallback`` with the task), composed from ``conf/eval.yaml`` with
``task=<task>``, ``ckpt=<adapter>``, the first run's data settings (which fix the items: shards, day
split, levels) and, for forecasting, ``points=<file>``, so a row here is exactly what ``python eval.py
task=... ckpt=...`` reports.

Held-out days (``plan_held_out``): each run's day split is read from its folder
(``egohorizon.run.split_record``); runs whose held-out days differ are refused, naming the days one run
holds out and another trained on, unless ``--intersect-held-out`` asks for the days all of them hold
out (the points kept on them, or a split file cut to them). Every evaluation then checks each scored
item against every compared run's training days. Checkpoints without an adapter folder beside them
(DeepSpeed ZeRO runs) are exported first (``egohorizon.run.export``). The table, plots, page and W&B
run are ``egohorizon.run.comparison``'s.

Like ``egohorizon.run`` this module reads Hydra configs.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, open_dict

from egohorizon.checkpoints import (
    ADAPTER_META_FILE,
    read_adapter_meta,
    resolve_adapter,
    run_dir_of_target,
)
from egohorizon.errors import ConfigError
from egohorizon.repo_conf import conf_dir
from egohorizon.run.comparison import CompareEntry, check_comparable, checkpoint_labels, entry_from_evaluation
from egohorizon.run.split_record import run_config

log = logging.getLogger(__name__)

# Data settings an adapter records (egohorizon_adapter.json) that change how its prompts are built.


def default_points(targets: list[str]) -> Path | None:
    """The held-out test points of the first run folder among ``targets`` that saved some
    (``<run>/points/points_test.jsonl``, a forecast run); None when none did (the items then come from
    the first run's data config)."""
    for target in targets:
        run = run_dir_of_target(target)
        if run is not None and (run / "points" / "points_test.jsonl").is_file():
            return run / "points" / "points_test.jsonl"
    return None


def task_of(target: str, config: DictConfig | None) -> str:
    """The task a checkpoint was trained for: its run config's ``eval_task`` (conf/task/<name>.yaml)."""
    name = config.get("eval_task") if config is not None else None
    if not name:
        where = "has no config.yaml beside it" if config is None else "config.yaml names no eval_task"
        raise ConfigError(f"compare: {target}: cannot tell its task (its run folder {where}); pass --task NAME")
    return str(name)


def tasks_of(targets: list[str], configs: list[DictConfig | None], task: str | None = None) -> str:
    """The one task every checkpoint belongs to (``task`` when given: it must match what is recorded)."""
    from egohorizon.errors import DataError
    from egohorizon.tasks import Task, task_class

    found = {}
    for target, config in zip(targets, configs):
        recorded = config.get("eval_task") if config is not None else None
        found[target] = str(recorded) if recorded else (task or task_of(target, config))
    names = set(found.values()) | ({task} if task else set())
    if len(names) > 1:
        listed = ", ".join(f"{t} ({n})" for t, n in found.items())
        raise DataError(f"compare: checkpoints of different tasks: {listed}"
                        + (f"; --task {task}" if task else "") + ". Compare one task at a time")
    name = names.pop()
    try:
        cls = task_class(name)  # an unknown task is named now, before anything is evaluated
    except ValueError as error:
        raise ConfigError(f"compare: {error}") from None
    missing = [hook for hook in ("item_ids", "compare_rows") if getattr(cls, hook) is getattr(Task, hook)]
    if missing or not cls.compare_groups:
        raise ConfigError(f"compare: the {name} task does not implement the compare hooks of tasks/base.py "
                          f"({', '.join(missing or ['compare_groups'])}); it cannot be compared yet")
    return name


def items_data(config: DictConfig | None, target: str) -> dict[str, Any]:
    """The first run's data settings, which fix the held-out items every checkpoint is scored on (the
    shards, the day split, the levels...). Values inside that run's own folder (where it saved its
    points) are left out: the evaluation writes into its own folder."""
    from omegaconf import OmegaConf

    if config is None or "data" not in config:
        return {}
    run = run_dir_of_target(target)
    data = OmegaConf.to_container(config.data, resolve=True)
    return {k: config_literal(v) if isinstance(v, str) else v for k, v in data.items()
            if not (isinstance(v, str) and run is not None and _inside(v, run))}


def _inside(value: str, folder: Path) -> bool:
    try:
        return Path(value).resolve().is_relative_to(folder.resolve())
    except (OSError, ValueError):
        return False


def adapter_for(target: str, export_to: Path) -> Path:
    """An adapter folder for a run folder, ``.ckpt``, or adapter folder; a checkpoint without one beside
    it (a DeepSpeed run) is exported to ``export_to`` (a ``*.adapter`` path) first."""

    try:
        return resolve_adapter(target)
    except ConfigError:
        path = Path(target)
        if not (path.suffix == ".ckpt" or (path / "checkpoints").is_dir()):
            raise
    from egohorizon.run.export import export_run_adapter

    path = Path(target)
    run_dir, ckpt = (path, None) if (path / "checkpoints").is_dir() else (None, path)
    log.info("%s: no adapter folder; exporting one to %s", target, export_to)
    return export_run_adapter(run_dir, ckpt, export_to)


def global_step_of(adapter: Path) -> int | None:
    """The training step an adapter comes from: its export.json, else its sibling checkpoint."""
    info = adapter / "export.json"
    if info.is_file():
        return json.loads(info.read_text()).get("global_step")
    sibling = adapter.with_suffix(".ckpt")
    if sibling.is_file():
        import torch

        return torch.load(sibling, map_location="cpu", weights_only=False, mmap=True).get("global_step")
    match = re.search(r"step=(\d+)", adapter.name)
    return int(match.group(1)) if match else None


def adapter_data(adapter: Path, data_target: str) -> dict[str, Any]:
    """The data settings an adapter records (egohorizon_adapter.json) that change how its prompts are
    built, as its datamodule class (``data_target``) declares them (``PROMPT_SETTINGS``): each
    checkpoint is prompted as it was trained."""
    from hydra.utils import get_class

    keys = getattr(get_class(data_target), "PROMPT_SETTINGS", ())
    data = (read_adapter_meta(adapter).get("data") or {}) if (adapter / ADAPTER_META_FILE).is_file() else {}
    return {key: data[key] for key in keys if key in data}


def eval_config(adapter: Path, points: Path | None, run_dir: Path, overrides: list[str], task: str,
                data: dict[str, Any] | None = None) -> DictConfig:
    """``conf/eval.yaml`` as ``eval.py task=<task> ckpt=<adapter> points=<points> paths.run_dir=<run_dir>``
    composes it, with ``data`` (the first run's data settings) under the adapter's prompt settings
    under the user's own ``data.*`` overrides.

    The paths are set on the composed config, not written into override strings: Hydra's override
    grammar reads ``=``, ``,``, brackets, quotes and spaces as syntax, and Lightning names checkpoints
    ``epoch=003-step=1000.ckpt`` (issue 9, item 10). ``overrides`` are the user's own ``--set`` strings.
    """
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf import OmegaConf

    with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
        try:
            cfg = compose("eval", overrides=[f"task={task}", "predictors=[model,repeat_last,random]", *overrides])
        except HydraException as error:  # OverrideParseException, ConfigCompositionException, ...
            raise ConfigError(f"compare --set {' --set '.join(overrides) or '(none)'}: not valid eval.yaml "
                              f"overrides: {error}") from None
    with open_dict(cfg):
        if data:
            same_class = data.get("_target_") == cfg.data.get("_target_")
            cfg.data = OmegaConf.merge(cfg.data, data) if same_class else OmegaConf.create(data)
        for key, value in adapter_data(adapter, cfg.data._target_).items():
            if key in cfg.data:
                cfg.data[key] = value
        users = [o.lstrip("+") for o in overrides if o.lstrip("+").startswith("data.")]
        if users:
            cfg.data = OmegaConf.merge(cfg.data, OmegaConf.from_dotlist(users).data)
        cfg.ckpt = config_literal(str(adapter))
        cfg.points = config_literal(str(points)) if points is not None else None
        cfg.paths.run_dir = config_literal(str(run_dir))
    return cfg


def config_literal(text: str) -> str:
    """``text`` as an OmegaConf string value that reads back as itself: ``${`` would start an
    interpolation, so it is escaped (``\\${``), and so are the backslashes right before it."""
    return re.sub(r"(\\*)\$\{", lambda m: m.group(1) * 2 + "\\${", text)


def evaluate_checkpoint(adapter: Path, points: Path | None, run_dir: Path, overrides: list[str],
                        task: str, data: dict[str, Any] | None = None,
                        guard: list[dict[str, str]] | None = None) -> dict[str, Any]:
    """``eval.py task=<task> ckpt=<adapter> points=<points>`` in this process; returns run_eval's result.
    ``guard``: ``{run, split_file}`` of every compared run, whose training days no scored item may be on."""
    from egohorizon.run.evaluation import evaluate_run

    cfg = eval_config(adapter, points, run_dir, overrides, task, data)
    if guard:
        with open_dict(cfg):
            cfg.held_out_guard = [{"run": config_literal(g["run"]), "split_file": config_literal(g["split_file"])}
                                  for g in guard]
    return evaluate_run(cfg)


@dataclass
class HeldOutPlan:
    """What every checkpoint is scored on, decided from the compared runs' day splits."""

    split: str                                  # the evaluated split (test, or val with --set split=val)
    points: Path | None                         # the forecast points file (cut to the shared days)
    split_file: Path | None = None              # a day split for datamodules that take one
    guard: list[dict[str, str]] = field(default_factory=list)  # every known run's split, for eval's check
    notes: list[str] = field(default_factory=list)             # for the page
    info: dict[str, Any] = field(default_factory=dict)         # for comparison.json


def evaluated_split(overrides: list[str]) -> str:
    """The split the evaluations score: ``--set split=val``, else test."""
    chosen = "test"
    for override in overrides:
        key, _, value = override.lstrip("+").partition("=")
        if key == "split":
            chosen = value
    return chosen


def plan_held_out(targets: list[str], points: Path | None, out_dir: Path, overrides: list[str] = (),
                  intersect: bool = False, configs: list[DictConfig | None] | None = None) -> HeldOutPlan:
    """Reads each run's day split; refuses runs whose held-out days differ (``check_same_held_out``)
    unless ``intersect``, which scores on the days all runs hold out: the points kept on them
    (``held_out_points.jsonl``) or a split cut to them (``splits/intersection.json``). Each known split
    is saved under ``splits/`` and handed to every evaluation's held-out check."""
    from egohorizon.errors import DataError
    from egohorizon.run.split_record import (
        check_same_held_out,
        format_days,
        intersect_split,
        keep_points_on,
        run_split_of,
    )

    name = evaluated_split(list(overrides))
    configs = configs if configs is not None else [run_config(t) for t in targets]
    labels = checkpoint_labels(targets)
    plan = HeldOutPlan(split=name, points=points)
    runs, known = [], []
    for label, target in zip(labels, targets):
        run = run_split_of(target)
        if run is None:
            plan.notes.append(f"{label}: no run folder with a day split (split.json); its training days were not "
                              "checked.")
            log.warning(plan.notes[-1])
            continue
        path = run.split.save(out_dir / "splits" / f"{_safe(label)}.json")
        plan.guard.append({"run": str(run.run_dir), "split_file": str(path)})
        runs.append(run)
        known.append(label)
    plan.info = {"split": name, "runs": {label: {"split": r.source, "split_sha256": r.digest,
                                                 f"n_{name}_days": len(r.days(name))}
                                         for label, r in zip(known, runs)}}
    # One run folder compared with itself (several checkpoints of one run) is one split.
    distinct = list({str(r.run_dir): r for r in runs}.values())
    if not distinct:
        return plan
    takes_split_file = _takes_split_file(configs[0])
    differ = any(r.days(name) != distinct[0].days(name) for r in distinct[1:])
    if not differ:
        if takes_split_file:  # with points, the split gives the habit baselines their training days only
            plan.split_file = Path(plan.guard[0]["split_file"])
        plan.notes.append(f"Held-out {name} days: the {len(distinct)} run(s) hold out the same "
                          f"{len(distinct[0].days(name))} {name} day(s) (split sha256 {distinct[0].digest[:12]}); "
                          "every checkpoint was scored on them.")
        return plan
    if not intersect:
        check_same_held_out(distinct, name, [str(r.run_dir) for r in distinct])
    cut, shared = intersect_split(distinct, name)
    counts = ", ".join(f"{len(r.days(name))} ({r.run_dir.name})" for r in distinct)
    note = (f"Scored on the intersection of the runs' held-out {name} days (--intersect-held-out): "
            f"{len(shared)} day(s) ({format_days(shared)}) of their {counts} {name} days.")
    plan.info.update(intersect_days=sorted(f"{p}/{d}" for p, d in shared))
    if points is not None:
        kept_file = out_dir / "held_out_points.jsonl"
        kept, total = keep_points_on(points, shared, kept_file)
        if not kept:
            raise DataError(f"compare --intersect-held-out: none of the {total} points of {points} is on the "
                            f"{len(shared)} {name} day(s) all runs hold out ({format_days(shared)})")
        note += f" {kept} of the {total} points of {points} are on them."
        plan.points = kept_file
        plan.info.update(points_kept=kept, points_total=total, points_source=str(points))
    elif takes_split_file:
        plan.split_file = cut.save(out_dir / "splits" / "intersection.json")
    else:
        target = configs[0].data.get("_target_") if configs[0] is not None else "?"
        raise DataError(f"compare --intersect-held-out: the {target} datamodule takes no split file or points "
                        "file, so its items cannot be cut to the shared held-out days; compare runs trained on "
                        "the same data split")
    plan.notes.append(note)
    return plan


def _takes_split_file(config: DictConfig | None) -> bool:
    """Whether the run's datamodule says it takes a day split file (``TaskDataModule.takes_split_file``)."""
    from hydra.utils import get_class

    target = config.data.get("_target_") if config is not None and "data" in config else None
    return bool(target) and get_class(str(target)).takes_split_file()


def _safe(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", label)


def evaluate_checkpoints(targets: list[str], points: Path | None, out_dir: Path, overrides: list[str] = (),
                         task: str | None = None, plan: HeldOutPlan | None = None) -> list[CompareEntry]:
    """One CompareEntry per target, all of one task and scored on the same items (``points``, else the
    first run's data settings) with the same seed and scoring options, on held-out days every compared
    run holds out (``plan``, default ``plan_held_out``). Checkpoints of different tasks or with
    different held-out days are refused before anything is evaluated; items that differ after
    (``check_comparable``)."""
    from egohorizon.tasks import task_class

    configs = [run_config(target) for target in targets]
    name = tasks_of(list(targets), configs, task)
    plan = plan if plan is not None else plan_held_out(list(targets), points, out_dir, overrides, configs=configs)
    points = plan.points
    data = items_data(configs[0], targets[0])
    if plan.split_file is not None:
        data["split_file"] = config_literal(str(plan.split_file))
    entries = []
    for label, target in zip(checkpoint_labels(targets), targets):
        safe = re.sub(r"[^A-Za-z0-9._-]+", "_", label)
        adapter = adapter_for(target, out_dir / "exported" / f"{safe}.adapter")
        run_dir = out_dir / "evals" / safe
        log.info("evaluating %s (%s, task %s) on %s", label, adapter, name, points or "the first run's items")
        result = evaluate_checkpoint(adapter, points, run_dir, list(overrides), name, data, plan.guard)
        evaluation = result.get("evaluation")
        if evaluation is None:
            raise ConfigError(f"compare: {label}: the evaluation scored no model (predictors {result.get('predictors')})")
        task_obj = task_class(name)()
        entries.append(entry_from_evaluation(label, str(adapter), global_step_of(adapter), task_obj, evaluation,
                                             str(run_dir)))
    check_comparable(entries)
    return entries
