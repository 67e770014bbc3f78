"""``python eval.py``: evaluate a trained adapter, an untrained backbone prompted in context, and the
repeat-last and random baselines on held-out points; and the context-scaling and per-level studies.
``python eval.py task=caption ckpt=...``: any task's trained adapter on a held-out split, scored by the
task with its baselines (``evaluate_task_model``); without ``ckpt`` the config's backbone, frozen, with the
task's own prompt and decoding (``python eval.py experiment=abstract_demo backbone=smollm2_135m``: a
real model's zero-shot row beside the trained adapter's).

Like ``egohorizon.run`` this reads the Hydra config; the scoring is the same code the training
callback uses (``GenerationEvalCallback`` with the run's task), so the numbers mean the same thing.

- ``ckpt`` set (an ``*.adapter`` folder, a ``*.ckpt`` with its adapter beside it, or a run folder):
  the adapter is loaded onto its base model (from the adapter's ``egohorizon_adapter.json`` unless
  ``base_path`` is given) and prompted with the prompt file saved beside it.
- ``ckpt`` unset and ``model`` among the predictors: the backbone of the config, frozen, prompted in
  context to return ``num_candidates`` trajectories in one answer.
- ``llm`` among the predictors: any chat model behind ``egohorizon.llm`` (an OpenAI-compatible server
  such as vLLM or a hosted API, or a local transformers model), prompted in context with every
  candidate in one answer; answers are cached on disk, so a re-run makes no new calls.
- ``points``: a points JSONL file to evaluate instead of the data config's held-out split.
- a run's own held-out days: with ``ckpt`` in a run folder, the run's recorded day split
  (``split.json``, ``egohorizon.run.split_record``) replaces one drawn with this config's seed, and every
  scored item is checked against the run's training days (and, from compare, every compared run's):
  an item from a training day is refused with the days named, whatever ``points`` or split is given.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from egohorizon.checkpoints import read_adapter_meta, resolve_adapter
from egohorizon.errors import ConfigError, DataError

log = logging.getLogger(__name__)

# -- points -----------------------------------------------------------------------------------------


def build_eval_datamodule(cfg: DictConfig, runs: list | None = None, **data_overrides: Any):
    """The data config's datamodule, built with ``data_overrides`` (the adapter's prompt settings, a
    study's context length or levels) and prepared. A datamodule that can put any split in its test
    slot (``eval_split``: the forecast one) gets ``split`` there, and the ``points`` file instead of
    any split when one is given; another is evaluated through its own val/test loaders.

    ``runs`` (default ``held_out_runs(cfg)``): the evaluated run's day split goes to a datamodule that
    takes a ``split_file`` (unless ``data.split_file`` is given), and the items of the
    evaluated split are checked against every run's training days (``check_held_out``)."""
    from hydra.utils import instantiate

    accepted = datamodule_arguments(cfg)
    runs = held_out_runs(cfg) if runs is None else runs
    own = next((run for run in runs if run.evaluated), None)
    # With points=FILE the split only tells the habit baselines the run's training days (ForecastDataModule).
    if own is not None and "split_file" in accepted and not cfg.data.get("split_file"):
        data_overrides.setdefault("split_file", str(own_split_file(cfg, own)))
    if "max_train_points" in accepted and "max_eval_points" in cfg.data:
        # Evaluation needs few training points (only an in-context tiny backbone's tokenizer reads them).
        data_overrides.setdefault("max_train_points", cfg.data.max_eval_points)
    if "eval_split" in accepted:
        data_overrides["eval_split"] = cfg.split
    if cfg.get("points"):
        if "points_file" not in accepted:
            raise ConfigError(
                f"points={cfg.points}: the {cfg.data._target_} datamodule takes no points file; "
                "its held-out items come from its data settings (split=val|test)"
            )
        data_overrides["points_file"] = cfg.points
    datamodule = instantiate(cfg.data, _convert_="all", **data_overrides)
    try:
        datamodule.prepare()
    except DataError as error:
        if cfg.get("points") or not (own is not None and "split_file" in data_overrides
                                     and not cfg.data.get("split_file")):
            raise
        raise DataError(f"ckpt={cfg.ckpt}: evaluated on the run's own day split ({own.source}), which does not "
                        f"fit these data: {error}. Evaluate with the data the run trained on ({_trained_on(own)})"
                        ) from None
    if runs:
        from egohorizon.run.split_record import check_held_out

        slot = "test" if "eval_split" in accepted else cfg.split
        what = f"eval: the {cfg.split} items" + (f" of points={cfg.points}" if cfg.get("points") else "")
        check_held_out(datamodule.item_days(slot), runs, what)
    return datamodule


def datamodule_arguments(cfg: DictConfig) -> set[str]:
    """The keyword arguments the data config's datamodule class takes."""
    return class_arguments(cfg.data._target_)


def class_arguments(target: str) -> set[str]:
    """The keyword arguments of a class, with its bases' where it passes ``**kwargs`` on to them (the
    visual forecast datamodule)."""
    import inspect

    from hydra.utils import get_class

    names: set[str] = set()
    for cls in get_class(target).__mro__:
        if "__init__" not in vars(cls):
            continue
        parameters = inspect.signature(cls.__init__).parameters
        names |= {n for n, p in parameters.items() if n != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}
        if not any(p.kind is p.VAR_KEYWORD for p in parameters.values()):
            break
    return names


def held_out_runs(cfg: DictConfig) -> list:
    """The runs whose training days no scored item may come from (``split_record.RunSplit``): the run
    ``ckpt`` belongs to (its ``split.json``, or for an older run its split rebuilt, with a warning) and,
    from ``egohorizon compare``, every compared run (``held_out_guard``: ``{run, split_file}`` entries)."""
    from egohorizon.data.splits import DaySplit
    from egohorizon.run.split_record import RunSplit, run_split_of

    runs = []
    if cfg.get("ckpt"):
        own = run_split_of(cfg.ckpt)
        if own is not None:
            own.evaluated = True
            runs.append(own)
        else:
            log.warning("ckpt=%s: no run folder with a day split beside it (split.json, points/splits.json or "
                        "config.yaml); the evaluated items cannot be checked against its training days", cfg.ckpt)
    for entry in cfg.get("held_out_guard") or []:
        if any(Path(entry.run).resolve() == run.run_dir.resolve() for run in runs):
            continue  # the evaluated run itself: checked once
        runs.append(RunSplit(Path(entry.run), DaySplit.load(entry.split_file), str(entry.split_file)))
    return runs


def _trained_on(run) -> str:
    """The run's data inputs as its split record names them, or where to find its data settings."""
    recorded = [f"{key}={value.get('path')}" for key, value in (run.inputs or {}).items()]
    return ", ".join(recorded) or f"see its {run.run_dir / 'config.yaml'}"


def own_split_file(cfg: DictConfig, run) -> Path:
    """The evaluated run's day split, saved into this evaluation's folder (``evaluated_split.json``) for
    the datamodule's ``split_file``: the items come from the run's own held-out days, not from a split
    drawn with this config's seed."""
    path = run.split.save(Path(cfg.paths.run_dir) / "evaluated_split.json")
    log.info("ckpt=%s: evaluating on the run's own day split (%s; run seed %s, this config's seed %s)",
             cfg.ckpt, run.source, run.seed, cfg.get("seed"))
    return path


def prompt_settings(cfg: DictConfig) -> dict[str, Any]:
    """What the datamodule must render prompts with, decided before it is built: a trained adapter's
    own prompt file (saved beside it), or, for an untrained backbone prompted in context, what its
    datamodule class asks for (``in_context_settings``: forecasting lists every candidate in one answer)."""
    if "model" not in cfg.predictors:
        return {}
    if cfg.get("ckpt"):
        adapter = resolve_adapter(cfg.ckpt)
        meta = read_adapter_meta(adapter)
        prompt_file = adapter / f"{meta['prompt']['name']}.txt"
        return {"prompt": str(prompt_file)} if prompt_file.is_file() else {}
    from hydra.utils import get_class

    generation = OmegaConf.to_container(cfg.model.generation, resolve=True)
    return get_class(cfg.data._target_).in_context_settings(generation)


# -- the model predictor ----------------------------------------------------------------------------


def build_eval_model(cfg: DictConfig, datamodule, candidates_in_one_answer: bool = True):
    """The ``model`` predictor (a trained adapter, or the config's backbone prompted in context); hands
    its tokenizer to the datamodule, which was built with ``prompt_settings``. The untrained backbone
    lists every candidate in one answer (forecasting's in-context predictor) unless
    ``candidates_in_one_answer`` is off: then it decodes as the task's model config says, with the
    task's prompt (another task's zero-shot row)."""
    from hydra.utils import instantiate

    from egohorizon.backbones import HFBackbone

    if cfg.get("ckpt"):
        adapter = resolve_adapter(cfg.ckpt)
        meta = read_adapter_meta(adapter)
        backbone = HFBackbone(path=cfg.get("base_path") or meta["base_path"])
        _warn_on_data_mismatch(meta.get("data") or {}, datamodule)
        model = instantiate(
            cfg.model,
            backbone=backbone,
            adapter=str(adapter),
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
        generation = OmegaConf.to_container(cfg.model.generation, resolve=True)
        if candidates_in_one_answer:  # in context: one answer that lists every candidate, as the prompt asks
            generation["mode"] = "in_prompt"
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


def model_evaluation(cfg: DictConfig, model, datamodule, out_dir: Path):
    """Generates and scores through Lightning's test loop (or, for ``split=val`` on a datamodule
    without ``eval_split``, its validation loop) and ``GenerationEvalCallback`` with the config's
    task. Returns the task's ``Evaluation``; its metric keys name the evaluated split."""
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
    if "eval_split" in datamodule_arguments(cfg) or cfg.split == "test":
        trainer.test(model, datamodule=datamodule, verbose=False)
        evaluation = callback.results.get("test")
    elif cfg.split == "val":
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


# -- putting predictors together --------------------------------------------------------------------


def evaluate_predictors(cfg: DictConfig, datamodule, model, out_dir: Path, split: str) -> dict[str, Any]:
    """The configured predictors on the datamodule's test slot, scored by the task's predictor scorer
    (``tasks.PREDICTOR_SCORERS``; forecasting's is ``tasks.forecast_predictors``); ``model`` (None
    without the ``model`` predictor) is generated and scored through Lightning first. Returns the
    report dict."""
    from egohorizon.tasks import predictor_scorer

    task = cfg.eval_task
    scorer = predictor_scorer(task)
    if scorer is None:
        raise ConfigError(f"eval_task={task}: the task scores only a trained adapter (set ckpt=...)")
    evaluation = model_evaluation(cfg, model, datamodule, out_dir) if "model" in cfg.predictors else None
    settings = {key: cfg[key] for key in ("predictors", "embedder", "n_random_draws", "seed")}
    settings["predictors"] = list(settings["predictors"])
    settings["llm"] = OmegaConf.to_container(cfg.llm, resolve=True) if cfg.get("llm") is not None else {}
    return scorer(settings, datamodule, evaluation, out_dir, split)


def evaluate_task_model(cfg: DictConfig, run_dir: Path, runs: list | None = None) -> tuple[dict[str, Any], Any]:
    """A trained adapter of any task (``eval_task``) on the held-out ``split``: generation through
    Lightning and ``GenerationEvalCallback``, scored by the task with its own baselines; the summary
    rows and table are the task's, as at the end of training. Returns the result and the model."""
    from egohorizon.tasks import task_class

    if not cfg.get("ckpt") and "model" not in cfg.predictors:
        raise ConfigError(
            f"eval_task={cfg.eval_task}: set ckpt=<adapter folder, *.ckpt or run folder>, or keep `model` among "
            "the predictors to score the untrained backbone; only forecasting scores the baselines alone"
        )
    from egohorizon.tasks import PREDICTORS

    unknown = set(cfg.predictors) - set(PREDICTORS)
    if unknown:
        raise ConfigError(f"predictors: unknown {sorted(unknown)}; choose from {list(PREDICTORS)}")
    # Without ckpt: the config's backbone, frozen, with the task's own prompt and decoding (zero-shot).
    settings = prompt_settings(cfg) if cfg.get("ckpt") else {}
    datamodule = build_eval_datamodule(cfg, runs=runs, **settings)
    model = build_eval_model(cfg, datamodule, candidates_in_one_answer=False)
    evaluation = model_evaluation(cfg, model, datamodule, run_dir)
    task = task_class(cfg.eval_task).from_generation(model.generation)
    rows = task.summary_rows(evaluation)
    result = {
        "task": task.name,
        "split": cfg.split,
        "n_points": len(datamodule.eval_items(cfg.split)),
        "predictors": ["model", *evaluation.baselines],
        "metrics": dict(evaluation.metrics),
        "reports": {"model": evaluation.report, **evaluation.baselines},
        "rows": rows,
        "text": task.format_summary(rows, title=f"Held-out {cfg.split} days"),
        "evaluation": evaluation,
    }
    return result, model


# -- entry ------------------------------------------------------------------------------------------


def evaluate_run(cfg: DictConfig, run_dir: Path | None = None) -> dict[str, Any]:
    """The configured predictors on one held-out split (the studies are ``egohorizon.run.studies``;
    ``egohorizon.run.evaluate`` chooses between them)."""
    if run_dir is None:
        from egohorizon.run.setup import setup_run

        run_dir = setup_run(cfg)
    from egohorizon.tasks import predictor_scorer

    runs = held_out_runs(cfg)
    if predictor_scorer(cfg.eval_task) is not None:  # baselines, in context, llm
        datamodule = build_eval_datamodule(cfg, runs=runs, **prompt_settings(cfg))
        model = build_eval_model(cfg, datamodule) if "model" in cfg.predictors else None
        result = evaluate_predictors(cfg, datamodule, model, run_dir, cfg.split)
    else:
        result, model = evaluate_task_model(cfg, run_dir, runs)
    result.update(
        model_id=model.backbone.model_id if model else None,
        ckpt=cfg.get("ckpt"),
        points=cfg.get("points"),
        seed=cfg.seed,
        run_dir=str(run_dir),
        # The runs whose training days were checked against every scored item, and where each split came from.
        held_out_checked=[{"run": str(r.run_dir), "split": r.source, "split_sha256": r.digest} for r in runs],
    )
    written = {k: v for k, v in result.items() if k != "evaluation"}
    (run_dir / "report.json").write_text(json.dumps(written, indent=2, default=str))
    (run_dir / "metrics.json").write_text(json.dumps(result["metrics"], indent=2))
    return result
