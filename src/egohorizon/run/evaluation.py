"""``python eval.py``: evaluate a trained adapter, an untrained backbone prompted in context, and the
repeat-last and random baselines on held-out points; and the context-scaling and per-level studies.
``python eval.py task=caption ckpt=...``: any task's trained adapter on a held-out split, scored by the
task with its baselines; without ``ckpt`` the config's backbone, frozen, with the
task's own prompt and decoding (``python eval.py experiment=abstract_demo backbone=smollm2_135m``: a
real model's zero-shot row beside the trained adapter's).

One road for every task (issue 39): the target (``ckpt``, the held-out runs) is resolved once
(``eval_target``), the datamodule is built as its declared ``evaluation_setup`` asks and the ``model``
predictor generates through Lightning (``eval_build``), and the task scores the predictors
(``Task.score_predictors``: forecasting's baselines, in-context backbone and ``llm`` side by side; any
other task's trained adapter or zero-shot backbone with its own baselines). The scoring is the same code
the training callback uses (``GenerationEvalCallback`` with the run's task), so the numbers mean the same
thing.

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
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from egohorizon.run import eval_build as build
from egohorizon.run.eval_target import EvalTarget, resolve_eval_target


def evaluate_split(cfg: DictConfig, target: EvalTarget, out_dir: Path, model=None,
                   **data_overrides: Any) -> tuple[dict[str, Any], Any, Any]:
    """The configured predictors on the held-out ``split``, scored by the task: the datamodule (built with
    ``data_overrides``: a study's context length or levels), the ``model`` predictor when the task needs
    one (``model``, when given, is reused on the new datamodule: a study's next step), and the task's
    ``score_predictors``. Returns the result (what report.json holds, and the model's ``evaluation``),
    the model (or None) and the datamodule."""
    from egohorizon.tasks import task_class

    task_cls = task_class(cfg.eval_task)
    build.check_predictors(cfg, task_cls)
    datamodule, slot = build.build_eval_datamodule(cfg, target, **build.prompt_settings(cfg, target),
                                                   **data_overrides)
    evaluation = None
    if "model" in cfg.predictors or not task_cls.scores_baselines_alone():
        if model is None:
            model = build.build_eval_model(cfg, target, datamodule, task_cls)
        else:  # the same model on new points: its tokenizer
            datamodule.set_tokenizer(model.backbone.load_tokenizer())
        evaluation = build.model_evaluation(cfg, model, datamodule, slot, out_dir)
    task = task_cls.from_generation(model.generation) if model is not None else task_cls()
    result = task.score_predictors(build.predictor_settings(cfg), datamodule, evaluation, out_dir, cfg.split)
    return result, model, datamodule


def evaluate_run(cfg: DictConfig, run_dir: Path | None = None) -> dict[str, Any]:
    """The configured predictors on one held-out split (the studies are ``egohorizon.run.studies``;
    ``egohorizon.run.evaluate`` chooses between them); writes report.json and metrics.json."""
    if run_dir is None:
        from egohorizon.run.setup import setup_run

        run_dir = setup_run(cfg)
    target = resolve_eval_target(cfg)
    result, model, _ = evaluate_split(cfg, target, run_dir)
    result.update(
        model_id=model.backbone.model_id if model else None,
        ckpt=cfg.get("ckpt"),
        points=cfg.get("points"),
        seed=cfg.seed,
        run_dir=str(run_dir),
        # The runs whose training days were checked against every scored item, and where each split came from.
        held_out_checked=[{"run": str(r.run_dir), "split": r.source, "split_sha256": r.digest} for r in target.runs],
    )
    written = {k: v for k, v in result.items() if k != "evaluation"}
    (run_dir / "report.json").write_text(json.dumps(written, indent=2, default=str))
    (run_dir / "metrics.json").write_text(json.dumps(result["metrics"], indent=2))
    return result
