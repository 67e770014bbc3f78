"""ForecastModule: a transformers backbone with a LoRA adapter (peft), trained to forecast actions.

The backbone is built in ``configure_model`` (so DeepSpeed ZeRO-3 and ``bf16-true`` can build it under
their own contexts). Lightning checkpoints keep only the trainable weights (the adapter and any
``modules_to_save``); the frozen base is reloaded from the backbone. ``save_adapter`` writes a plain
PEFT adapter folder with the tokenizer and the prompt (name, version, template) beside it, so an
adapter is never separated from the prompt it was trained on (litgpt's prompt_style.yaml habit).

Generation returns raw texts; parsing and scoring belong to ``ForecastEvalCallback``.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lightning as L
import torch

from egohorizon.backbones import Backbone, needs_mm_token_type_ids
from egohorizon.errors import ConfigError

log = logging.getLogger(__name__)

ADAPTER_META_FILE = "egohorizon_adapter.json"
PROMPT_FILE = "prompt.json"
GENERATION_DEFAULTS = {
    "mode": "sequences",  # sequences: N outputs, one candidate each; in_prompt: 1 output with N candidates
    "num_candidates": 3,
    "strategy": "sample",  # sample (seeded) | beam
    "temperature": 0.7,
    "top_p": 1.0,
    "top_k": 0,
    "num_beams": None,  # beam search width; defaults to num_candidates
    "max_new_tokens": 24,  # plus max_new_tokens_per_action * K of the batch
    "max_new_tokens_per_action": 24,
    "seed": 0,
}


class ForecastModule(L.LightningModule):
    def __init__(
        self,
        backbone: Backbone,
        optimizer: Callable[..., torch.optim.Optimizer],
        scheduler: Callable[..., Any] | None = None,
        lora: dict[str, Any] | None = None,
        adapter: str | None = None,
        gradient_checkpointing: bool = False,
        generation: dict[str, Any] | None = None,
        prompt: str | None = None,
    ):
        super().__init__()
        unknown = set(generation or {}) - set(GENERATION_DEFAULTS)
        if unknown:
            raise ConfigError(
                f"model.generation: unknown keys {sorted(unknown)}; known: {sorted(GENERATION_DEFAULTS)}"
            )
        self.save_hyperparameters(ignore=["backbone", "optimizer", "scheduler"])
        self.backbone = backbone
        self.optimizer_factory, self.scheduler_factory = optimizer, scheduler
        self.lora = dict(lora) if lora else None
        self.adapter = adapter
        self.gradient_checkpointing = gradient_checkpointing
        self.generation = {**GENERATION_DEFAULTS, **(generation or {})}
        self.prompt_name = prompt
        self.model = None
        self.tokenizer = None
        self.adapter_metadata: dict[str, Any] = {}  # set by run.py: data settings saved beside adapters
        # Lightning checkpoints hold only trainable weights; the frozen base comes from the backbone.
        self.strict_loading = False

    @property
    def prompt(self):
        """The versioned prompt (name, version, template) this model is trained and evaluated with."""
        from egohorizon.prompts import load_prompt
        from egohorizon.prompts.forecast import FORECAST_PROMPT_NAME

        return load_prompt(self.prompt_name or FORECAST_PROMPT_NAME)

    # -- building ------------------------------------------------------------------------------

    def configure_model(self) -> None:
        if self.model is not None:
            return
        model = self.backbone.load_model()
        self.tokenizer = self.backbone.load_tokenizer()
        if self.adapter:
            from peft import PeftModel

            model = PeftModel.from_pretrained(model, self.adapter, is_trainable=bool(self.lora))
            log.info("loaded adapter %s", self.adapter)
        elif self.lora:
            from peft import LoraConfig, get_peft_model

            model = get_peft_model(model, LoraConfig(task_type="CAUSAL_LM", **self.lora))
        else:
            model.requires_grad_(False)  # prompting an untrained backbone in context: nothing to train
        if self.gradient_checkpointing:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
            if hasattr(model, "enable_input_require_grads"):
                model.enable_input_require_grads()  # frozen embeddings would cut the checkpointed graph
        self._mm = needs_mm_token_type_ids(model)
        # from_pretrained returns eval mode; Lightning keeps submodule modes, so LoRA dropout would stay off.
        model.train()
        self.model = model
        trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
        total = sum(p.numel() for p in model.parameters())
        log.info(
            "%s: %d of %d parameters trainable (%.2f%%)",
            self.backbone.model_id,
            trainable,
            total,
            100 * trainable / max(total, 1),
        )

    def _inputs(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> dict[str, torch.Tensor]:
        inputs = {"input_ids": input_ids, "attention_mask": attention_mask}
        if self._mm:  # text only: every token is type 0 (transformers 5 Qwen-VL needs the tensor)
            inputs["mm_token_type_ids"] = torch.zeros_like(input_ids, dtype=torch.int)
        return inputs

    # -- training ------------------------------------------------------------------------------

    def forward(self, input_ids, attention_mask, labels=None):
        return self.model(**self._inputs(input_ids, attention_mask), labels=labels)

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        loss = self(batch["input_ids"], batch["attention_mask"], batch["labels"]).loss
        self.log("train/loss", loss, prog_bar=True, batch_size=batch["input_ids"].shape[0])
        return loss

    def validation_step(self, batch: dict[str, Any], batch_idx: int) -> None:
        self._held_out_loss("val", batch)

    def test_step(self, batch: dict[str, Any], batch_idx: int) -> None:
        self._held_out_loss("test", batch)

    def _held_out_loss(self, split: str, batch: dict[str, Any]) -> None:
        loss = self(batch["input_ids"], batch["attention_mask"], batch["labels"]).loss
        self.log(f"{split}/loss", loss, sync_dist=True, batch_size=batch["input_ids"].shape[0])

    def configure_optimizers(self):
        params = [p for p in self.model.parameters() if p.requires_grad]
        if not params:
            raise ConfigError(
                "model: nothing to train (no lora and no adapter); use eval.py to evaluate a backbone"
            )
        optimizer = self.optimizer_factory(params)
        if self.scheduler_factory is None:
            return optimizer
        scheduler = _build_scheduler(
            self.scheduler_factory, optimizer, self.trainer.estimated_stepping_batches
        )
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}

    # -- checkpoints ---------------------------------------------------------------------------

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        trainable = {name for name, p in self.named_parameters() if p.requires_grad}
        checkpoint["state_dict"] = {k: v for k, v in checkpoint["state_dict"].items() if k in trainable}
        checkpoint["egohorizon"] = {"backbone": self.backbone.describe(), "model_id": self.backbone.model_id}

    def save_adapter(self, folder: str | Path) -> Path:
        """A plain PEFT adapter folder + tokenizer + prompt + egohorizon_adapter.json (what produced it)."""
        folder = Path(folder)
        if not hasattr(self.model, "peft_config"):
            raise ConfigError("save_adapter: this model has no LoRA adapter")
        self.model.save_pretrained(folder)
        self.tokenizer.save_pretrained(folder)
        prompt = self.prompt
        (folder / PROMPT_FILE).write_text(json.dumps(prompt.to_dict(), indent=2, ensure_ascii=False))
        # The same prompt as a loadable file (load_prompt(path)), so eval renders exactly what was trained.
        (folder / f"{prompt.name}.txt").write_text(f"# version: {prompt.version}\n{prompt.template}")
        meta = {
            "model_id": self.backbone.model_id,
            "base_path": self.backbone.base_path,
            "backbone": self.backbone.describe(),
            "prompt": {"name": prompt.name, "version": prompt.version},
            "generation": self.generation,
            **self.adapter_metadata,
        }
        (folder / ADAPTER_META_FILE).write_text(json.dumps(meta, indent=2, default=str))
        return folder

    # -- generation ----------------------------------------------------------------------------

    def _sharded(self) -> bool:
        from egohorizon.callbacks.adapter_checkpoint import is_sharded_strategy

        try:
            strategy = self.trainer.strategy
        except RuntimeError:  # generating outside a Trainer
            return False
        return is_sharded_strategy(strategy)

    @torch.no_grad()
    def generate_texts(self, batch: dict[str, Any], batch_idx: int = 0) -> list[list[str]]:
        """Raw output texts per point: ``num_candidates`` sequences each (mode ``sequences``) or one."""
        g = self.generation
        per_point = g["num_candidates"] if g["mode"] == "sequences" else 1
        kwargs: dict[str, Any] = {
            "max_new_tokens": g["max_new_tokens"] + g["max_new_tokens_per_action"] * max(batch["k"]),
            "num_return_sequences": per_point,
            "pad_token_id": self.tokenizer.pad_token_id,
            "eos_token_id": self.tokenizer.eos_token_id,
            # Sharded weights (ZeRO-3, FSDP): every rank must keep stepping until all ranks are done.
            "synced_gpus": self._sharded(),
        }
        if g["strategy"] == "beam":
            kwargs.update(do_sample=False, num_beams=max(g["num_beams"] or per_point, per_point))
        elif g["strategy"] == "sample":
            kwargs.update(do_sample=True, temperature=g["temperature"], top_p=g["top_p"], top_k=g["top_k"])
        else:
            raise ConfigError(
                f"model.generation.strategy: expected 'sample' or 'beam', got {g['strategy']!r}"
            )
        prompt_ids, prompt_mask = batch["prompt_ids"], batch["prompt_mask"]
        devices = [self.device] if self.device.type == "cuda" else []
        # Seeded per batch and isolated from the training RNG: the same seed gives the same outputs.
        with torch.random.fork_rng(devices=devices):
            torch.manual_seed(g["seed"] * 1_000_003 + batch_idx)
            out = self.model.generate(**self._inputs(prompt_ids, prompt_mask), **kwargs)
        texts = self.tokenizer.batch_decode(out[:, prompt_ids.shape[1] :], skip_special_tokens=True)
        return [texts[i * per_point : (i + 1) * per_point] for i in range(prompt_ids.shape[0])]


def _build_scheduler(factory, optimizer, total_steps: float):
    """Schedulers that want the run length (transformers' warmup schedules) get ``num_training_steps``."""
    import inspect

    func = getattr(factory, "func", factory)
    try:
        wants_total = "num_training_steps" in inspect.signature(func).parameters
    except (TypeError, ValueError):
        wants_total = False
    if wants_total:
        if not math.isfinite(total_steps):
            raise ConfigError(
                "model.scheduler needs a finite run: set trainer.max_steps or trainer.max_epochs"
            )
        return factory(optimizer, num_training_steps=int(total_steps))
    return factory(optimizer)
