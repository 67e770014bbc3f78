"""The pieces of one evaluation, built from the config for the target ``eval_target`` resolved: the
datamodule (through its declared contract, ``TaskDataModule.evaluation_setup``), the ``model`` predictor
and the Lightning loop that generates and scores it (``GenerationEvalCallback`` with the run's task, the
same code the training callback runs, so the numbers mean the same thing). ``evaluation.py`` puts them
together on its one road."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from egohorizon.errors import ConfigError, DataError

# eval.py's log lines keep the name they always had (the lines came from evaluation.py before issue 39)
log = logging.getLogger("egohorizon.run.evaluation")


def datamodule_class(cfg: DictConfig):
    from hydra.utils import get_class

    return get_class(cfg.data._target_)


def check_predictors(cfg: DictConfig, task_cls) -> None:
    """Refuses unknown predictors, and a task that scores only a model when there is none to score."""
    from egohorizon.tasks import PREDICTORS

    if not task_cls.scores_baselines_alone() and not cfg.get("ckpt") and "model" not in cfg.predictors:
        raise ConfigError(
            f"eval_task={cfg.eval_task}: set ckpt=<adapter folder, *.ckpt or run folder>, or keep `model` among "
            "the predictors to score the untrained backbone; only forecasting scores the baselines alone"
        )
    unknown = set(cfg.predictors) - set(PREDICTORS)
    if unknown:
        raise ConfigError(f"predictors: unknown {sorted(unknown)}; choose from {list(PREDICTORS)}")


def predictor_settings(cfg: DictConfig) -> dict[str, Any]:
    """What a task's predictor scorer reads of eval.yaml, as plain values: predictors, embedder,
    n_random_draws, seed and the ``llm`` block."""
    settings = {key: cfg[key] for key in ("predictors", "embedder", "n_random_draws", "seed")}
    settings["predictors"] = list(settings["predictors"])
    settings["llm"] = OmegaConf.to_container(cfg.llm, resolve=True) if cfg.get("llm") is not None else {}
    return settings


# -- the datamodule ----------------------------------------------------------------------------------


def build_eval_datamodule(cfg: DictConfig, target, **data_overrides: Any):
    """The data config's datamodule, built with ``data_overrides`` (the adapter's prompt settings, a
    study's context length or levels) and what its ``evaluation_setup`` asks for (the split, the
    ``points`` file, the evaluated run's own day split where it ``takes_split_file`` and ``data.split_file``
    is unset), then prepared; the items of the evaluated split are checked against every held-out run's
    training days (``check_held_out``). Returns the datamodule and the loader slot that holds the split."""
    from hydra.utils import instantiate

    cls = datamodule_class(cfg)
    own = target.own
    # With points=FILE the split only tells the habit baselines the run's training days (ForecastDataModule).
    offered = own is not None and not cfg.data.get("split_file") and cls.takes_split_file()
    split_file = str(target.save_own_split(cfg)) if offered else None
    data = OmegaConf.to_container(cfg.data, resolve=True, throw_on_missing=False)
    setup = cls.evaluation_setup(cfg.split, points_file=cfg.get("points"), split_file=split_file, data=data)
    datamodule = instantiate(cfg.data, _convert_="all", **{**data_overrides, **setup.arguments})
    try:
        datamodule.prepare()
    except DataError as error:
        if cfg.get("points") or not (offered and "split_file" in setup.arguments):
            raise
        raise DataError(f"ckpt={cfg.ckpt}: evaluated on the run's own day split ({own.source}), which does not "
                        f"fit these data: {error}. Evaluate with the data the run trained on ({target.trained_on()})"
                        ) from None
    if target.runs:
        from egohorizon.run.split_record import check_held_out

        what = f"eval: the {cfg.split} items" + (f" of points={cfg.points}" if cfg.get("points") else "")
        check_held_out(datamodule.item_days(setup.slot), target.runs, what)
    return datamodule, setup.slot


def prompt_settings(cfg: DictConfig, target) -> dict[str, Any]:
    """What the datamodule must render prompts with, decided before it is built: a trained adapter's
    own prompt file (saved beside it), or, for an untrained backbone prompted in context, what its
    datamodule class asks for (``in_context_settings``: forecasting lists every candidate in one answer)."""
    if "model" not in cfg.predictors:
        return {}
    if target.ckpt:
        prompt_file = target.adapter / f"{target.meta['prompt']['name']}.txt"
        return {"prompt": str(prompt_file)} if prompt_file.is_file() else {}
    generation = OmegaConf.to_container(cfg.model.generation, resolve=True)
    return datamodule_class(cfg).in_context_settings(generation)


# -- the model predictor ----------------------------------------------------------------------------


def build_eval_model(cfg: DictConfig, target, datamodule, task_cls):
    """The ``model`` predictor (a trained adapter, or the config's backbone prompted in context); hands
    its tokenizer to the datamodule, which was built with ``prompt_settings``. The untrained backbone
    decodes as the task asks of a model prompted in context (``Task.in_context_generation``: forecasting
    lists every candidate in one answer; another task decodes as its model config says)."""
    from hydra.utils import instantiate

    from egohorizon.backbones import HFBackbone

    if target.ckpt:
        meta = target.meta
        backbone = HFBackbone(path=cfg.get("base_path") or meta["base_path"])
        _warn_on_data_mismatch(meta.get("data") or {}, datamodule)
        model = instantiate(
            cfg.model,
            backbone=backbone,
            adapter=str(target.adapter),
            lora=None,
            prompt=datamodule.prompt_name,
            generation=adapter_generation(
                OmegaConf.to_container(cfg.model.generation, resolve=True), meta.get("generation"),
                command_line_keys("model.generation"),
            ),
            _convert_="all",
        )
    else:
        backbone = instantiate(cfg.backbone, _convert_="all")
        backbone.prepare(corpus=datamodule.training_corpus)
        generation = task_cls.in_context_generation(OmegaConf.to_container(cfg.model.generation, resolve=True))
        model = instantiate(
            cfg.model, backbone=backbone, lora=None, adapter=None, generation=generation, _convert_="all"
        )
    datamodule.set_tokenizer(backbone.load_tokenizer())
    datamodule.set_processor(backbone.load_processor())  # as in training: None for a text-only backbone
    return model


def adapter_generation(configured: dict[str, Any], recorded: dict[str, Any] | None,
                       overridden: set[str] | None) -> dict[str, Any]:
    """How a trained adapter decodes in ``eval.py``: as it was validated in its run (the decoding
    recorded beside it), with only the keys the user set on the command line changed, and this
    evaluation's seed. Without a record (older adapters) or outside a Hydra run (``overridden`` None:
    a config composed in code means what it says), the configured decoding as is."""
    if not recorded or overridden is None or "*" in overridden:
        return configured
    generation = {**recorded, **{k: v for k, v in configured.items() if k in overridden}}
    if "seed" in configured:
        generation["seed"] = configured["seed"]
    return generation


def command_line_keys(prefix: str) -> set[str] | None:
    """Keys under ``prefix`` that this Hydra run's command line sets (``model.generation.num_beams=1``
    gives ``num_beams``; ``model.generation={...}`` gives ``{"*"}``); None outside a Hydra run."""
    from hydra.core.hydra_config import HydraConfig

    if not HydraConfig.initialized():
        return None
    keys: set[str] = set()
    for override in HydraConfig.get().overrides.task:
        name = override.split("=", 1)[0].lstrip("+~")
        if name == prefix:
            return {"*"}  # the whole block replaced
        if name.startswith(prefix + "."):
            keys.add(name[len(prefix) + 1:].split(".", 1)[0])
    return keys


def _warn_on_data_mismatch(trained: dict[str, Any], datamodule) -> None:
    for key in ("n_context", "max_length"):
        now = getattr(datamodule, key, None)
        if trained.get(key) is not None and now is not None and trained[key] != now:
            log.warning("the adapter was trained with data.%s=%s; evaluating with %s", key, trained[key], now)


# -- generating and scoring the model ---------------------------------------------------------------


def score_options(cfg: DictConfig) -> dict[str, Any]:
    """The task's scoring options (``score_options`` in conf/task/<task>.yaml, which the generation-eval
    callback is configured with), with eval.yaml's ``embedder``, ``n_random_draws`` and ``seed``
    replacing the ones it names (so ``embedder=exact`` reaches every task that embeds)."""
    given = cfg.get("score_options")  # an empty {} is falsy but still a DictConfig
    options = OmegaConf.to_container(given, resolve=True) if given is not None else {}
    for key in ("embedder", "n_random_draws", "seed"):
        if key in options and cfg.get(key) is not None:
            options[key] = cfg[key]
    return options


def model_evaluation(cfg: DictConfig, model, datamodule, slot: str, out_dir: Path):
    """Generates and scores through Lightning's test loop (or, where the datamodule holds the split in its
    ``val`` slot, its validation loop) and ``GenerationEvalCallback`` with the config's task. Returns the
    task's ``Evaluation``; its metric keys name the evaluated split."""
    from hydra.utils import instantiate

    task = cfg.eval_task
    configured = (cfg.get("callbacks") or {}).get("generation_eval")
    if configured is None:
        raise ConfigError("eval: the config has no callbacks.generation_eval (conf/callbacks/default.yaml) "
                          "to score with; leave callbacks at its default")
    # The callback train.py ran with, as configured, writing into this evaluation's folder.
    callback = instantiate(configured, score_options=score_options(cfg), n_examples=cfg.get("n_examples", 8),
                           output_dir=str(out_dir), generate_on_validation=True, _convert_="all")
    trainer = instantiate(
        cfg.trainer,
        callbacks=[callback],
        logger=False,
        enable_checkpointing=False,
        strategy=instantiate(cfg.strategy) if cfg.get("strategy") else "auto",
    )
    if slot == "test":
        trainer.test(model, datamodule=datamodule, verbose=False)
        evaluation = callback.results.get("test")
    elif slot == "val":
        trainer.validate(model, datamodule=datamodule, verbose=False)
        evaluation = callback.results.get("val")
    else:
        raise ConfigError(f"split={cfg.split}: the {task} task evaluates split=val or split=test")
    if evaluation is None:
        raise ConfigError(f"eval: the {cfg.split} split gave the {task} evaluation nothing to score")
    evaluation.metrics = {_split_key(k, cfg.split): v for k, v in evaluation.metrics.items()}
    return evaluation


def _split_key(key: str, split: str) -> str:
    name = key.split("/", 1)[1] if "/" in key else key
    return f"{split}/{name}"
