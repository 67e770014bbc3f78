"""``egohorizon compare``: evaluate several checkpoints on one set of held-out points, then tabulate.

Each checkpoint is evaluated by ``eval.py``'s own code (``egohorizon.run_eval``: adapter onto its
base model, generation through Lightning's test loop, scoring by ``GenerationEvalCallback``), composed
from ``conf/eval.yaml`` with ``ckpt=<adapter>`` and ``points=<file>``, so a row here is exactly what
``python eval.py ckpt=... points=...`` reports. Checkpoints without an adapter folder beside them
(DeepSpeed ZeRO runs) are exported first (``egohorizon.run_export``). The table, plots, page and W&B
run are ``egohorizon.compare``'s.

Like ``egohorizon.run`` this module reads Hydra configs.
"""

from __future__ import annotations

import json
import logging
import os
import re
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, open_dict

from egohorizon.compare import CompareEntry, checkpoint_labels
from egohorizon.errors import ConfigError

log = logging.getLogger(__name__)

# Data settings an adapter records (egohorizon_adapter.json) that change how its prompts are built.
PROMPT_SETTINGS = ("n_context", "max_length", "use_chat_template", "eval_prompt_candidates")


def conf_dir() -> Path:
    """The repository's ``conf/`` (``$EGOHORIZON_CONF`` overrides)."""
    path = Path(os.environ.get("EGOHORIZON_CONF") or Path(__file__).resolve().parents[2] / "conf")
    if not (path / "eval.yaml").is_file():
        raise ConfigError(f"{path}: no eval.yaml; set EGOHORIZON_CONF to the repository's conf/ folder")
    return path


def default_points(targets: list[str]) -> Path:
    """The held-out test points of the first run folder among ``targets`` (``<run>/points/points_test.jsonl``)."""
    for target in targets:
        path = Path(target)
        for run in (path, path.parent.parent if path.parent.name == "checkpoints" else path.parent):
            candidate = run / "points" / "points_test.jsonl"
            if candidate.is_file():
                return candidate
    raise ConfigError("compare: no --points given and no run folder with points/points_test.jsonl among the "
                      "checkpoints; pass --points FILE")


def adapter_for(target: str, export_to: Path) -> Path:
    """An adapter folder for a run folder, ``.ckpt``, or adapter folder; a checkpoint without one beside
    it (a DeepSpeed run) is exported to ``export_to`` (a ``*.adapter`` path) first."""
    from egohorizon.run_eval import resolve_adapter

    try:
        return resolve_adapter(target)
    except ConfigError:
        path = Path(target)
        if not (path.suffix == ".ckpt" or (path / "checkpoints").is_dir()):
            raise
    from egohorizon.run_export import export_run_adapter

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


def prompt_overrides(adapter: Path) -> list[str]:
    """``data.*`` overrides that rebuild the prompts the adapter was trained with."""
    meta_file = adapter / "egohorizon_adapter.json"
    data = json.loads(meta_file.read_text()).get("data", {}) if meta_file.is_file() else {}
    return [f"data.{key}={json.dumps(data[key])}" for key in PROMPT_SETTINGS if key in data]


def eval_config(adapter: Path, points: Path, run_dir: Path, overrides: list[str]) -> DictConfig:
    """``conf/eval.yaml`` as ``eval.py ckpt=<adapter> points=<points> paths.run_dir=<run_dir>`` composes it.

    The three paths are set on the composed config, not written into override strings: Hydra's override
    grammar reads ``=``, ``,``, brackets, quotes and spaces as syntax, and Lightning names checkpoints
    ``epoch=003-step=1000.ckpt`` (issue 9, item 10). ``overrides`` are the user's own ``--set`` strings.
    """
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException

    with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
        try:
            cfg = compose("eval", overrides=["predictors=[model,repeat_last,random]", *prompt_overrides(adapter),
                                             *overrides])
        except HydraException as error:  # OverrideParseException, ConfigCompositionException, ...
            raise ConfigError(f"compare --set {' --set '.join(overrides) or '(none)'}: not valid eval.yaml "
                              f"overrides: {error}") from None
    with open_dict(cfg):
        cfg.ckpt = config_literal(str(adapter))
        cfg.points = config_literal(str(points))
        cfg.paths.run_dir = config_literal(str(run_dir))
    return cfg


def config_literal(text: str) -> str:
    """``text`` as an OmegaConf string value that reads back as itself: ``${`` would start an
    interpolation, so it is escaped (``\\${``), and so are the backslashes right before it."""
    return re.sub(r"(\\*)\$\{", lambda m: m.group(1) * 2 + "\\${", text)


def evaluate_checkpoint(adapter: Path, points: Path, run_dir: Path, overrides: list[str]) -> dict[str, Any]:
    """``eval.py ckpt=<adapter> points=<points>`` in this process; returns run_eval's result dict."""
    from egohorizon.run_eval import evaluate_run

    return evaluate_run(eval_config(adapter, points, run_dir, overrides))


def evaluate_checkpoints(targets: list[str], points: Path, out_dir: Path,
                         overrides: list[str] = ()) -> list[CompareEntry]:
    """One CompareEntry per target, all scored on ``points`` with the same seed and embedder."""
    entries = []
    for label, target in zip(checkpoint_labels(targets), targets):
        name = re.sub(r"[^A-Za-z0-9._-]+", "_", label)
        adapter = adapter_for(target, out_dir / "exported" / f"{name}.adapter")
        run_dir = out_dir / "evals" / name
        log.info("evaluating %s (%s) on %s", label, adapter, points)
        result = evaluate_checkpoint(adapter, points, run_dir, list(overrides))
        reports = result["reports"]
        entries.append(CompareEntry(label=label, path=str(adapter), global_step=global_step_of(adapter),
                                    report=reports["model"],
                                    baselines={"repeat_last": reports["repeat_last"]} if "repeat_last" in reports else {}))
    return entries
