"""The lowest floor of ``egohorizon.run``: seed and create the run folder, and build each piece of a run
from its Hydra config (``build_datamodule``, ``build_backbone``, ``build_model``, ``build_callbacks``,
``build_loggers``, ``build_trainer``), in small functions so a strategy or a cluster plugin changes one of
them. Imports nothing else of ``egohorizon.run``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from egohorizon.errors import ConfigError

log = logging.getLogger(__name__)

# -- setup ------------------------------------------------------------------------------------------


def setup_run(cfg: DictConfig) -> Path:
    """Seeds everything, creates the run folder and writes the resolved config there (rank zero)."""
    import lightning as L
    from lightning.pytorch.utilities import rank_zero_only

    from egohorizon.owned_output import describe_inputs, write_marker
    from egohorizon.run.run_guard import RUN_COMMAND, mark_started

    _quiet_libraries()
    L.seed_everything(cfg.seed, workers=True)
    run_dir = Path(cfg.paths.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    mark_started(run_dir)
    if rank_zero_only.rank == 0:
        (run_dir / "config.yaml").write_text(OmegaConf.to_yaml(cfg, resolve=True))
        write_marker(run_dir, RUN_COMMAND, describe_inputs({}))  # a run folder: train.py/eval.py may write it again
    return run_dir


def _quiet_libraries() -> None:
    """transformers' per-call progress bars drown the training log on small models."""
    import os

    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    _route_lightning_logs_to_root()


def _route_lightning_logs_to_root() -> None:
    """Lightning adds its own stream handler when it is imported before logging is configured (here,
    before Hydra's job logging); with Hydra's root handler too, every message printed twice."""
    import logging

    if not logging.getLogger().hasHandlers():
        return
    for name in ("lightning", "lightning.pytorch", "lightning.fabric"):
        lightning_log = logging.getLogger(name)
        for handler in list(lightning_log.handlers):
            if type(handler) is logging.StreamHandler:
                lightning_log.removeHandler(handler)
        lightning_log.propagate = True


# -- building ---------------------------------------------------------------------------------------


def build_datamodule(cfg: DictConfig):
    from hydra.utils import instantiate

    datamodule = instantiate(cfg.data, _convert_="all")
    datamodule.prepare()  # datamodules/base.py: the calls egohorizon.run makes, in order
    return datamodule


def record_split(cfg: DictConfig, datamodule, run_dir: Path) -> None:
    """``split.json``: the day split the run trains and is tested on, so eval.py and compare score it on
    its own held-out days whatever seed or data they are given (``egohorizon.run.split_record``)."""
    from lightning.pytorch.utilities import rank_zero_only

    from egohorizon.run.split_record import write_split_record

    if rank_zero_only.rank == 0:
        write_split_record(run_dir, datamodule, cfg)


def build_backbone(cfg: DictConfig, datamodule):
    """The backbone, prepared (the tiny one trains its tokenizer on the training text), and its
    tokenizer and image processor (None for a text-only backbone) handed to the datamodule."""
    from hydra.utils import instantiate

    backbone = instantiate(cfg.backbone, _convert_="all")
    backbone.prepare(corpus=datamodule.training_corpus)
    datamodule.set_tokenizer(backbone.load_tokenizer())
    datamodule.set_processor(backbone.load_processor())
    return backbone


def build_model(cfg: DictConfig, backbone, datamodule=None):
    from hydra.utils import instantiate

    model = instantiate(cfg.model, backbone=backbone, _convert_="all")
    # the task: caption and abstract refuse another task's adapter by it (caption_setup.require_task)
    model.adapter_metadata = {"task": cfg.get("eval_task"), "data": _data_settings(cfg), "seed": cfg.seed}
    return model


def _data_settings(cfg: DictConfig) -> dict[str, Any]:
    """The data settings the task's datamodule class says its adapters record (``ADAPTER_SETTINGS``)."""
    from hydra.utils import get_class

    keys = getattr(get_class(cfg.data._target_), "ADAPTER_SETTINGS", ())
    data = OmegaConf.to_container(cfg.data, resolve=True)
    return {key: data.get(key) for key in keys}


def build_callbacks(cfg: DictConfig) -> list:
    from hydra.utils import instantiate

    return [instantiate(c) for c in (cfg.get("callbacks") or {}).values() if c and "_target_" in c]


def build_loggers(cfg: DictConfig, run_dir: Path) -> list:
    """CSV, W&B, ... from the logger group. W&B is offline unless a project is set, and its run id is
    kept in ``run_dir/wandb_id`` so a resumed run continues the same W&B run."""
    from hydra.utils import instantiate

    loggers = []
    for conf in (cfg.get("logger") or {}).values():
        if not conf or "_target_" not in conf:
            continue
        if conf._target_.endswith("WandbLogger"):
            loggers.append(instantiate(conf, **_wandb_arguments(conf, run_dir)))
        else:
            loggers.append(instantiate(conf))
    return loggers


def _wandb_arguments(conf: DictConfig, run_dir: Path) -> dict[str, Any]:
    id_file = run_dir / "wandb_id"
    if id_file.is_file():
        run_id = id_file.read_text().strip()
    else:
        import uuid

        from lightning.pytorch.utilities import rank_zero_only

        run_id = uuid.uuid4().hex[:8]  # W&B accepts any short [a-z0-9] id
        # Only rank zero logs to W&B; under srun every rank gets here at once, and another rank's id
        # written last would send the resumed run to a new W&B run.
        if rank_zero_only.rank == 0:
            id_file.write_text(run_id + "\n")
    offline = conf.get("offline")
    return {
        "id": run_id,
        "resume": "allow",
        "project": conf.get("project") or "egohorizon",
        "offline": (conf.get("project") is None) if offline is None else bool(offline),
    }


def build_trainer(cfg: DictConfig, callbacks: list, loggers: list):
    from hydra.utils import instantiate

    strategy = instantiate(cfg.strategy) if cfg.get("strategy") else "auto"
    return instantiate(cfg.trainer, callbacks=callbacks, logger=loggers or False, strategy=strategy)


def resolve_ckpt_path(cfg: DictConfig, run_dir: Path) -> str | None:
    """``auto``: what the run folder says to resume from (a requeued job: the newer of
    ``checkpoints/last.ckpt`` and a Slurm ``hpc_ckpt_<n>.ckpt``), else a fresh start."""
    from egohorizon.checkpoints import resume_checkpoint

    value = cfg.get("ckpt_path")
    if value in (None, "", "null", "none"):
        return None
    if value == "auto":
        found = resume_checkpoint(run_dir)
        if found is not None:
            log.info("resuming from %s", found)
        return str(found) if found is not None else None
    if not Path(value).exists():
        raise ConfigError(f"ckpt_path: {value} does not exist")
    return str(value)
