"""``python train.py``: fit on the training days, test the checkpoint chosen on validation days on the
held-out test days, and write the run's outputs (``fit``, ``test``, ``write_outputs``).

A run folder (``paths.run_dir``) holds: ``config.yaml`` (resolved), ``split.json`` (the day split it
trained and was tested on, with its seed and input digests: ``egohorizon.run.split_record``), ``points/``
(the points and the day split used), ``checkpoints/`` (``*.ckpt`` with ``*.adapter/`` beside each), ``predictions/``,
``reports/``, ``csv/`` and ``wandb/`` logs, ``wandb_id``, and ``metrics.json``.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from egohorizon.errors import ConfigError
from egohorizon.run.config_checks import validate_config
from egohorizon.run.setup import (
    build_backbone,
    build_callbacks,
    build_datamodule,
    build_loggers,
    build_model,
    build_trainer,
    record_split,
    resolve_ckpt_path,
    setup_run,
)

log = logging.getLogger(__name__)

# -- running ----------------------------------------------------------------------------------------


def fit(trainer, model, datamodule, ckpt_path: str | None) -> None:
    trainer.fit(model, datamodule=datamodule, ckpt_path=ckpt_path)


def test(trainer, model, datamodule) -> None:
    """Tests the best checkpoint when one was ranked, else the weights as they are after fit."""
    checkpoint = getattr(trainer, "checkpoint_callback", None)
    best = getattr(checkpoint, "best_model_path", "") if checkpoint else ""
    if best and Path(best).exists() and _zero3(trainer):
        from egohorizon.checkpoints import load_into_partitioned, read_checkpoint

        # trainer.test(ckpt_path=...) under ZeRO-3 fails in DeepSpeed (issue #7272): the best state's
        # trainable weights are consolidated and loaded into the partitioned model, which is tested.
        log.info("testing the best checkpoint %s (loaded into the ZeRO-3 partitions)", best)
        load_into_partitioned(model, read_checkpoint(best))
        trainer.test(model, datamodule=datamodule, verbose=False)
    elif best and Path(best).exists():
        log.info("testing the best checkpoint %s", best)
        trainer.test(model, datamodule=datamodule, ckpt_path=best, verbose=False)
    else:
        log.info("no ranked checkpoint: testing the current weights")
        trainer.test(model, datamodule=datamodule, verbose=False)


def _zero3(trainer) -> bool:
    return bool(getattr(trainer.strategy, "zero_stage_3", False))


def stopped_for_requeue(trainer) -> bool:
    from egohorizon.callbacks.slurm_requeue import SlurmRequeue

    return any(isinstance(c, SlurmRequeue) and c.requeued for c in trainer.callbacks)


def late_slurm_signals(trainer) -> int:
    """Slurm's warning signals that came after the last training step (the run finished instead)."""
    from egohorizon.callbacks.slurm_requeue import SlurmRequeue

    return sum(c.late_signals for c in trainer.callbacks if isinstance(c, SlurmRequeue))


def eval_callback(trainer):
    from egohorizon.callbacks.generation_eval import GenerationEvalCallback

    for callback in trainer.callbacks:
        if isinstance(callback, GenerationEvalCallback):
            return callback
    return None


def write_outputs(
    cfg: DictConfig, trainer, model, run_dir: Path, val_losses: dict[str, float] | None = None
) -> dict[str, Any]:
    """``metrics.json``: the evaluation callback's metrics per split, the validation objective that
    ranked the checkpoints, the test summary rows (reported, never used to choose), what ran."""
    callback = eval_callback(trainer)
    split_metrics = dict(callback.metrics) if callback else {}
    test_evaluation = callback.results.get("test") if callback else None
    checkpoint = getattr(trainer, "checkpoint_callback", None)
    prompt = model.prompt
    out = {
        "run_dir": str(run_dir),
        "model_id": model.backbone.model_id,
        "prompt": {"name": prompt.name, "version": prompt.version},
        "seed": cfg.seed,
        "global_step": trainer.global_step,
        "best_checkpoint": getattr(checkpoint, "best_model_path", None) or None,
        "last_checkpoint": str(run_dir / "checkpoints" / "last.ckpt")
        if (run_dir / "checkpoints" / "last.ckpt").exists()
        else None,
        "objective": objective_value(cfg, checkpoint, split_metrics.get("val", {})),
        "metrics": split_metrics or {**(val_losses or {}), **_loss_metrics(trainer)},
    }
    out["summary"], out["summary_text"] = summarise(cfg, model, test_evaluation, out)
    if trainer.is_global_zero:
        (run_dir / "metrics.json").write_text(json.dumps(out, indent=2))
    return out


def summarise(cfg: DictConfig, model, evaluation, outputs: dict[str, Any]) -> tuple[list, str]:
    """The summary rows and table of the run's task (``eval_task``: an egohorizon.tasks entry); a task
    without generation metrics yet gets its held-out losses; a run told not to test says so."""
    if not cfg.get("test_after_fit", True):
        return [], (
            f"Not tested (test_after_fit=false): `python eval.py ckpt={outputs['run_dir']}` scores the run's "
            f"held-out test days.\nCheckpoint chosen on validation: {outputs['objective']['name']} = "
            f"{_fmt(outputs['objective']['value'])}"
        )
    name = cfg.get("eval_task")
    if name:
        from egohorizon.tasks import task_class

        task = task_class(name).from_generation(model.generation)
        rows = task.summary_rows(evaluation)
        return rows, task.format_summary(rows, outputs["objective"])
    losses = outputs["metrics"]
    value = outputs["objective"]["value"]
    return [], (
        f"Held-out loss: val {_fmt(losses.get('val/loss'))}, test {_fmt(losses.get('test/loss'))} "
        f"(no generation metrics for this task yet)\nCheckpoint chosen on validation: "
        f"{outputs['objective']['name']} = {_fmt(value)}"
    )


def _fmt(value) -> str:
    return "n/a" if value is None else f"{float(value):.4f}"


def _loss_metrics(trainer) -> dict[str, float]:
    """The held-out losses Lightning collected (a run without an evaluation callback)."""
    return {k: float(v) for k, v in trainer.callback_metrics.items() if k in ("val/loss", "test/loss")}


def objective_value(cfg: DictConfig, checkpoint, val_metrics: dict[str, float]) -> dict[str, Any]:
    """The validation metric a sweep optimises (``cfg.objective``): the best checkpoint's score when
    the checkpoint callback ranks by it, else the last validation's value. Never a test metric: a
    setting chosen on the test split is a leak of the test set into the method."""
    name = str(cfg.objective)
    if not name.startswith("val/"):
        raise ConfigError(f"objective: {name!r} is not a validation metric (expected 'val/...')")
    value = None
    if checkpoint is not None and getattr(checkpoint, "monitor", None) == name:
        best = getattr(checkpoint, "best_model_score", None)
        value = float(best) if best is not None else None
    if value is None:
        value = val_metrics.get(name)
    if value is None:
        log.warning("objective %s: no value (was it logged at validation?)", name)
    return {"name": name, "mode": str(cfg.get("objective_mode", "max")), "value": value}


def train(cfg: DictConfig) -> dict[str, Any]:
    """``python train.py``: fit on the training days, then test on the held-out test days."""
    validate_config(cfg)  # before any folder, logger or model: a wrong number names its key
    run_dir = setup_run(cfg)
    datamodule = build_datamodule(cfg)
    record_split(cfg, datamodule, run_dir)
    backbone = build_backbone(cfg, datamodule)
    model = build_model(cfg, backbone, datamodule)
    trainer = build_trainer(cfg, build_callbacks(cfg), build_loggers(cfg, run_dir))
    _log_hyperparameters(trainer, cfg, model)
    fit(trainer, model, datamodule, resolve_ckpt_path(cfg, run_dir))
    if stopped_for_requeue(trainer):
        # Slurm asked the job to stop and it was requeued: the requeued job resumes, tests and writes
        # metrics.json; testing here would run into the time limit and report a half-trained model.
        log.info("stopped for a Slurm requeue at step %d: not testing", trainer.global_step)
        close_loggers(trainer)
        return {"run_dir": str(run_dir), "requeued": True, "global_step": trainer.global_step}
    val_losses = _loss_metrics(trainer)  # the last validation's; trainer.test replaces them
    if cfg.get("test_after_fit", True):
        test(trainer, model, datamodule)
    outputs = write_outputs(cfg, trainer, model, run_dir, val_losses)
    close_loggers(trainer)
    late = late_slurm_signals(trainer)
    if late:
        log.info("%d Slurm signal(s) came after training ended: the run finished what was left (test, "
                 "outputs) instead of requeuing", late)
    return outputs


def close_loggers(trainer) -> None:
    """Ends the W&B run now (it would at exit), so its closing lines come before the caller's summary."""
    for logger in trainer.loggers:
        if type(logger).__name__ == "WandbLogger" and trainer.is_global_zero:
            import wandb

            wandb.finish()


def _log_hyperparameters(trainer, cfg: DictConfig, model) -> None:
    """The resolved config and the prompt (name, version, template) go to every logger."""
    params = OmegaConf.to_container(cfg, resolve=True)
    params["prompt_template"] = model.prompt.to_dict()
    params["model_id"] = model.backbone.model_id
    for logger in trainer.loggers:
        logger.log_hyperparams(params)
