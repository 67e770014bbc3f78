"""ForecastEvalCallback: on held-out days, generate, parse and score; log, and write what was predicted.

At the end of validation (val days) and test (test days) each rank generates for its share of the
points (``ForecastModule.generate_texts``), the raw texts are gathered across ranks here (the metrics
stay plain functions), rank zero parses and scores them (SPEC §1) with the repeat-last and random
baselines, and every rank logs the same numbers, so ModelCheckpoint can monitor them on any rank.
Rank zero also writes predictions (JSONL), the SPEC §6 report and a table of examples.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import lightning as L
from lightning.pytorch.callbacks import Callback

from egohorizon.tasks.forecast import (
    Evaluation,
    candidates_from_texts,
    evaluate,
    example_rows,
    prediction_records,
)

log = logging.getLogger(__name__)


class ForecastEvalCallback(Callback):
    def __init__(
        self,
        embedder: str = "minilm",
        n_random_draws: int = 5,
        seed: int = 0,
        n_examples: int = 8,
        output_dir: str | None = None,
        generate_on_validation: bool = True,
    ):
        self.embedder_name = embedder
        self.n_random_draws, self.seed, self.n_examples = n_random_draws, seed, n_examples
        self.output_dir = Path(output_dir) if output_dir else None
        self.generate_on_validation = generate_on_validation
        self._texts: dict[str, dict[str, list[str]]] = {"val": {}, "test": {}}
        self._embedder = None
        self.results: dict[str, Evaluation] = {}  # split -> the latest evaluation (rank zero)
        self.metrics: dict[str, dict[str, float]] = {}  # split -> the latest flat metrics (all ranks)

    @property
    def embedder(self):
        if self._embedder is None:
            from egohorizon.metrics.embedders import get_embedder

            self._embedder = get_embedder(self.embedder_name)
        return self._embedder

    # -- collecting ----------------------------------------------------------------------------

    def on_validation_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0):
        if trainer.sanity_checking or not self.generate_on_validation:
            return
        self._collect("val", pl_module, batch, batch_idx)

    def on_test_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0):
        self._collect("test", pl_module, batch, batch_idx)

    def _collect(self, split: str, pl_module, batch: dict[str, Any], batch_idx: int) -> None:
        texts = pl_module.generate_texts(batch, batch_idx)
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
        # DistributedSampler may repeat points to even out ranks; ids make the union exact.
        for part in gather_objects(local):
            texts.update(part)
        metrics = None
        if trainer.is_global_zero:
            metrics = self._score(split, texts, trainer, pl_module)
        metrics = trainer.strategy.broadcast(metrics, src=0)
        self.metrics[split] = metrics
        pl_module.log_dict(metrics, sync_dist=False)

    def _score(self, split: str, texts: dict[str, list[str]], trainer, pl_module) -> dict[str, float]:
        points_by_id = trainer.datamodule.points_by_id(split)
        missing = set(points_by_id) - set(texts)
        if missing:
            log.warning(
                "%s: %d of %d points got no generated text (scored invalid)",
                split,
                len(missing),
                len(points_by_id),
            )
        points = list(points_by_id.values())
        gen = pl_module.generation
        candidates = {
            pid: candidates_from_texts(t, gen["mode"], gen["num_candidates"]) for pid, t in texts.items()
        }
        evaluation = evaluate(
            points,
            candidates,
            self.embedder,
            split,
            self.n_random_draws,
            self.seed,
            max_candidates=int(gen["num_candidates"]),
        )
        self.results[split] = evaluation
        self._write(split, trainer, pl_module, points, texts, evaluation)
        self._log_examples(split, trainer, points, evaluation)
        overall = evaluation.report["overall"]
        log.info(
            "%s: S %.4f, S_norm %s, invalid %d/%d (epoch %d)",
            split,
            overall["S"] or 0.0,
            _fmt(overall["S_norm"]),
            overall["invalid"],
            overall["n"],
            trainer.current_epoch,
        )
        return evaluation.metrics

    def _write(self, split, trainer, pl_module, points, texts, evaluation: Evaluation) -> None:
        if self.output_dir is None:
            return
        from egohorizon.schema import write_jsonl

        prompt = pl_module.prompt
        tag = split if split == "test" else f"{split}_epoch{trainer.current_epoch:03d}"
        rows = prediction_records(
            points,
            texts,
            evaluation.candidates,
            pl_module.backbone.model_id,
            prompt.name,
            prompt.version,
            pl_module.generation["seed"],
        )
        write_jsonl(self.output_dir / "predictions" / f"{tag}.jsonl", rows)
        report = {
            **evaluation.report,
            "baselines": evaluation.baselines,
            "metrics": evaluation.metrics,
            "model": pl_module.backbone.model_id,
            "prompt": prompt.to_dict(),
            "generation": pl_module.generation,
            "epoch": trainer.current_epoch,
            "global_step": trainer.global_step,
        }
        path = self.output_dir / "reports" / f"{tag}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(report, indent=2, default=str))

    def _log_examples(self, split: str, trainer, points, evaluation: Evaluation) -> None:
        columns, rows = example_rows(points, evaluation, self.n_examples)
        if not rows:
            return
        key = f"{split}/forecast_examples"
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


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"
