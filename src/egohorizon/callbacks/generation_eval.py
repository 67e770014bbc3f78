"""GenerationEvalCallback: on held-out days, generate, parse and score with the run's task; log, and
write what was predicted.

At the end of validation (val days) and test (test days) each rank generates for its share of the
items (``pl_module.generate_texts``), the raw texts are gathered across ranks here (the metrics stay
plain functions), rank zero parses and scores them with the task (``egohorizon.tasks``: forecast,
qa, ...), and every rank logs the same numbers, so ModelCheckpoint can monitor them on any rank.
Rank zero also writes predictions (JSONL), the task's report and a table of examples.

What the callback needs: the datamodule's ``eval_items(split)`` (item id -> item) and
``eval_options(split)`` (scoring options from the data, merged over ``score_options``), batches with
``ids``; the module's ``generate_texts(batch, batch_idx)``, ``generation`` settings,
``generation_record()`` (dtype and stop rule, in every prediction record), ``prompt`` and
``backbone.model_id``.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import lightning as L
from lightning.pytorch.callbacks import Callback

from egohorizon.tasks import Evaluation, Task, task_class

log = logging.getLogger(__name__)


class GenerationEvalCallback(Callback):
    def __init__(
        self,
        task: str = "forecast",
        score_options: dict[str, Any] | None = None,
        n_examples: int = 8,
        output_dir: str | None = None,
        generate_on_validation: bool = True,
    ):
        """``score_options``: the task's scoring settings (forecast: ``embedder``, ``n_random_draws``,
        ``seed``; qa: ``task_levels``)."""
        self.task_name = task
        task_class(task)  # an unknown task fails here, when the config is built, not after training
        self.score_options = dict(score_options or {})
        self.n_examples = n_examples
        self.output_dir = Path(output_dir) if output_dir else None
        self.generate_on_validation = generate_on_validation
        self._texts: dict[str, dict[str, list[str]]] = {"val": {}, "test": {}}
        self.results: dict[str, Evaluation] = {}  # split -> the latest evaluation (rank zero)
        self.metrics: dict[str, dict[str, float]] = {}  # split -> the latest flat metrics (all ranks)

    def task(self, pl_module) -> Task:
        """The task, set up with the module's generation settings (e.g. how many candidates)."""
        return task_class(self.task_name).from_generation(pl_module.generation)

    # -- collecting ----------------------------------------------------------------------------

    def on_validation_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0):
        if trainer.sanity_checking or not self.generate_on_validation:
            return
        self._collect("val", pl_module, batch, batch_idx)

    def on_test_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0):
        self._collect("test", pl_module, batch, batch_idx)

    def _collect(self, split: str, pl_module, batch: dict[str, Any], batch_idx: int) -> None:
        texts = pl_module.generate_texts(batch, batch_idx)  # padding too: sharded ranks step together
        if not batch.get("padding", False):  # a repeated batch of an evaluation stream (shards.stream)
            self._texts[split].update(zip(batch["ids"], texts))

    # -- scoring -------------------------------------------------------------------------------

    def on_validation_epoch_end(self, trainer, pl_module):
        if trainer.sanity_checking or not self.generate_on_validation:
            return
        self._finish("val", trainer, pl_module)

    def on_test_epoch_end(self, trainer, pl_module):
        self._finish("test", trainer, pl_module)

    def _finish(self, split: str, trainer: L.Trainer, pl_module) -> None:
        local, self._texts[split] = self._texts[split], {}
        texts: dict[str, list[str]] = {}
        # DistributedSampler may repeat items to even out ranks; ids make the union exact.
        for part in gather_objects(local):
            texts.update(part)
        metrics = None
        if trainer.is_global_zero:
            metrics = self._score(split, texts, trainer, pl_module)
        metrics = trainer.strategy.broadcast(metrics, src=0)
        self.metrics[split] = metrics
        pl_module.log_dict(metrics, sync_dist=False)

    def _score(self, split: str, texts: dict[str, list[str]], trainer, pl_module) -> dict[str, float]:
        task = self.task(pl_module)
        items_by_id = trainer.datamodule.eval_items(split)
        missing = set(items_by_id) - set(texts)
        if missing:
            log.warning(
                "%s: %d of %d items got no generated text (scored invalid)",
                split,
                len(missing),
                len(items_by_id),
            )
        items = list(items_by_id.values())
        predictions = {pid: task.parse(texts[pid], item) for pid, item in items_by_id.items() if pid in texts}
        options = {**self.score_options, **trainer.datamodule.eval_options(split)}
        evaluation = task.evaluate(items, predictions, split, **options)
        self.results[split] = evaluation
        self._write(split, task, trainer, pl_module, items, texts, evaluation)
        self._log_examples(split, task, trainer, items, evaluation)
        log.info("%s: %s (epoch %d)", split, task.headline(evaluation), trainer.current_epoch)
        return evaluation.metrics

    def _write(self, split, task: Task, trainer, pl_module, items, texts, evaluation: Evaluation) -> None:
        if self.output_dir is None:
            return
        from egohorizon.schema import write_jsonl

        prompt = pl_module.prompt
        tag = report_tag(split, trainer.current_epoch, trainer.global_step)
        rows = task.prediction_records(
            items,
            texts,
            evaluation.candidates,
            pl_module.backbone.model_id,
            prompt.name,
            prompt.version,
            pl_module.generation["seed"],
        )
        made = pl_module.generation_record()  # the weights' dtype and the stop rule (issue 37)
        write_jsonl(self.output_dir / "predictions" / f"{tag}.jsonl", [{**row, **made} for row in rows])
        report = {
            **evaluation.report,
            "task": task.name,
            "baselines": evaluation.baselines,
            "metrics": evaluation.metrics,
            "model": pl_module.backbone.model_id,
            "prompt": prompt.to_dict(),
            "generation": {**pl_module.generation, **made},
            "epoch": trainer.current_epoch,
            "global_step": trainer.global_step,
        }
        path = self.output_dir / "reports" / f"{tag}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(report, indent=2, default=str))

    def _log_examples(self, split: str, task: Task, trainer, items, evaluation: Evaluation) -> None:
        columns, rows = task.example_rows(items, evaluation, self.n_examples)
        if not rows:
            return
        key = f"{split}/{task.name}_examples"
        for logger in trainer.loggers:
            if hasattr(logger, "log_table"):  # W&B
                logger.log_table(key=key, columns=columns, data=rows)
            elif hasattr(getattr(logger, "experiment", None), "add_text"):  # TensorBoard
                logger.experiment.add_text(key, _markdown_table(columns, rows), trainer.global_step)
        if self.output_dir is not None:  # CSV and any other logger: a file beside the predictions
            path = self.output_dir / "reports" / f"{split}_examples.md"
            path.write_text(_markdown_table(columns, rows) + "\n")


def gather_objects(obj: Any) -> list[Any]:
    """``obj`` from every rank (``torch.distributed.all_gather_object``); ``[obj]`` without a group."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return [obj]
    out: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(out, obj)
    return out


def _markdown_table(columns: list[str], rows: list[list[Any]]) -> str:
    def cell(value: Any) -> str:
        return str(value).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def report_tag(split: str, epoch: int, global_step: int) -> str:
    """The name of a split's predictions and report files: ``test``, or ``val_epochNNN_stepNNNNNN``. The
    step is part of it because validation may run several times in one epoch (``val_check_interval`` in
    steps, as the real-model experiments do), and each pass's predictions and report are kept."""
    return split if split == "test" else f"{split}_epoch{epoch:03d}_step{global_step:06d}"

