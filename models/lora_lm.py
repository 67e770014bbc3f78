"""LoRALanguageModule: a transformers (vision-)language backbone with a LoRA adapter (peft), the one
LightningModule every language task subclasses (forecaster now; captioner, QA model, hand detector).

It owns what the tasks share: building the model in ``configure_model`` (so DeepSpeed ZeRO-3 and
``bf16-true`` can build it under their own contexts), LoRA on the language blocks and, with
``lora_vision``, on the vision tower (egohorizon.backbones.lora), the loss on batches with or without
images, optimizers and schedulers (partials from the config), Lightning checkpoints trimmed to the
trainable weights (the adapter and any ``modules_to_save``; the frozen base is reloaded from the
backbone), ``save_adapter`` (a plain PEFT adapter folder with the tokenizer and the prompt beside it:
litgpt's prompt_style.yaml habit), and seeded generation of N candidates per input, conditioned on
the batch's images when it has some, on one LoRA-merged bfloat16 copy per evaluation pass where the device
computes bfloat16 natively (``generation.dtype``; the training model is not touched).

Batches (egohorizon.backbones.collate describes them): ``input_ids``, ``attention_mask``, ``labels``
for the loss; ``prompt_ids``, ``prompt_mask`` (left-padded) for generation; with images also
``pixel_values``, ``image_grid_thw``, ``mm_token_type_ids`` and ``prompt_mm_token_type_ids``.

A subclass sets ``default_prompt`` and, where it generates differently, ``generation_defaults``,
``sequences_per_input`` and ``max_new_tokens``. Parsing and scoring the texts belong to the task.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import lightning as L
import torch

from egohorizon.backbones import Backbone, needs_mm_token_type_ids
from egohorizon.backbones.answer_loss import answer_logits_to_keep, shifted_cross_entropy
from egohorizon.checkpoints import ADAPTER_META_FILE
from egohorizon.errors import ConfigError
from egohorizon.llm.shared_prompt import generate_candidates
from egohorizon.precision import GENERATION_DTYPES, generation_dtype

log = logging.getLogger(__name__)

PROMPT_FILE = "prompt.json"
# Passed to the model as they are when a batch has them (images and their token types).
VISION_KEYS = ("pixel_values", "image_grid_thw")


class LoRALanguageModule(L.LightningModule):
    generation_defaults: ClassVar[dict[str, Any]] = {
        "num_candidates": 3,
        "strategy": "sample",  # sample (seeded) | beam
        "temperature": 0.7,
        "top_p": 1.0,
        "top_k": 0,
        "num_beams": None,  # beam search width; defaults to num_candidates
        "max_new_tokens": 24,
        "seed": 0,
        # The weights' dtype at generation: auto is bfloat16 where the device computes it natively
        # (egohorizon.precision.generation_dtype), through one merged copy per evaluation pass.
        "dtype": "auto",
    }
    default_prompt: ClassVar[str | None] = None  # the prompt file used when ``prompt`` is not given

    def __init__(
        self,
        backbone: Backbone,
        optimizer: Callable[..., torch.optim.Optimizer],
        scheduler: Callable[..., Any] | None = None,
        lora: dict[str, Any] | None = None,
        lora_vision: bool = False,
        adapter: str | None = None,
        gradient_checkpointing: bool = False,
        generation: dict[str, Any] | None = None,
        prompt: str | None = None,
    ):
        super().__init__()
        unknown = set(generation or {}) - set(self.generation_defaults)
        if unknown:
            raise ConfigError(
                f"model.generation: unknown keys {sorted(unknown)}; known: {sorted(self.generation_defaults)}"
            )
        dtype = (generation or {}).get("dtype", "auto")
        if dtype not in GENERATION_DTYPES:
            raise ConfigError(f"model.generation.dtype: expected one of {GENERATION_DTYPES}, got {dtype!r}")
        self.save_hyperparameters(ignore=["backbone", "optimizer", "scheduler"])
        self.backbone = backbone
        self.optimizer_factory, self.scheduler_factory = optimizer, scheduler
        self.lora = dict(lora) if lora else None
        self.lora_vision = lora_vision
        self.adapter = adapter
        self.gradient_checkpointing = gradient_checkpointing
        self.generation = {**self.generation_defaults, **(generation or {})}
        self.prompt_name = prompt
        self.model = None
        self.tokenizer = None
        # The merged low-precision copy generation runs on, for one evaluation pass (a dict, not an
        # attribute: a Module attribute would become a submodule and land in checkpoints).
        self._generation_copy: dict[str, Any] = {}
        self.adapter_metadata: dict[str, Any] = {}  # set by egohorizon.run.setup.build_model: data settings saved beside adapters
        # Lightning checkpoints hold only trainable weights; the frozen base comes from the backbone.
        self.strict_loading = False

    @property
    def prompt(self):
        """The versioned prompt (name, version, template) this model is trained and evaluated with."""
        from egohorizon.prompts import load_prompt

        name = self.prompt_name or self.default_prompt
        if name is None:
            raise ConfigError(f"model.prompt: {type(self).__name__} has no default prompt; set one")
        return load_prompt(name)

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
            from egohorizon.backbones.lora import add_lora

            model = add_lora(model, self.lora, vision=self.lora_vision)
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

    def _inputs(self, input_ids, attention_mask, mm_token_type_ids=None, **vision) -> dict[str, Any]:
        inputs = {"input_ids": input_ids, "attention_mask": attention_mask, **vision}
        if self._mm:  # transformers 5 Qwen-VL needs the tensor; text only: every token is type 0
            types = (
                torch.zeros_like(input_ids, dtype=torch.int)
                if mm_token_type_ids is None
                else mm_token_type_ids
            )
            inputs["mm_token_type_ids"] = types
        elif vision:
            raise ConfigError(f"{self.backbone.model_id} takes no images, but the batch has {sorted(vision)}")
        return inputs

    @staticmethod
    def _vision(batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        return {key: batch[key] for key in VISION_KEYS if key in batch}

    # -- training ------------------------------------------------------------------------------

    def forward(self, input_ids, attention_mask, labels=None, logits_to_keep: int = 0, **vision):
        extra = {"logits_to_keep": logits_to_keep} if logits_to_keep else {}
        return self.model(**self._inputs(input_ids, attention_mask, **vision), labels=labels, **extra)

    def _loss(self, batch: dict[str, Any]) -> torch.Tensor:
        """transformers' loss over the answer tokens, the head run only where it is read (answer_loss)."""
        labels = batch["labels"]
        keep = answer_logits_to_keep(labels)
        logits = self(
            batch["input_ids"],
            batch["attention_mask"],
            mm_token_type_ids=batch.get("mm_token_type_ids"),
            logits_to_keep=keep,
            **self._vision(batch),
        ).logits
        return shifted_cross_entropy(logits, labels[:, labels.shape[1] - logits.shape[1] :])

    def _count_skipped(self, split: str, batch: dict[str, Any]) -> bool:
        """Logs ``<split>/skipped_samples`` (samples the collator left out: unreadable images; summed over
        the epoch); False when the batch has nothing left to compute on."""
        if batch.get("skipped"):
            self.log(f"{split}/skipped_samples", float(batch["skipped"]), reduce_fx="sum", on_step=False,
                     on_epoch=True, batch_size=1)
        return "input_ids" in batch

    def training_step(self, batch: dict[str, Any], batch_idx: int) -> torch.Tensor | None:
        if not self._count_skipped("train", batch):
            return None  # Lightning skips backward; the optimizer finds no gradient to apply
        loss = self._loss(batch)
        self.log("train/loss", loss, prog_bar=True, batch_size=batch["input_ids"].shape[0])
        return loss

    def validation_step(self, batch: dict[str, Any], batch_idx: int) -> None:
        self._held_out_loss("val", batch)

    def test_step(self, batch: dict[str, Any], batch_idx: int) -> None:
        self._held_out_loss("test", batch)

    def _held_out_loss(self, split: str, batch: dict[str, Any]) -> None:
        if not self._count_skipped(split, batch):
            return
        loss = self._loss(batch)
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
        scheduler = build_scheduler(
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

    def sequences_per_input(self) -> int:
        """How many output texts ``generate_texts`` returns per input (one candidate each)."""
        return self.generation["num_candidates"]

    def max_new_tokens(self, batch: dict[str, Any]) -> int:
        return self.generation["max_new_tokens"]

    def _sharded(self) -> bool:
        from egohorizon.strategies import is_sharded_strategy

        try:
            strategy = self.trainer.strategy
        except RuntimeError:  # generating outside a Trainer
            return False
        return is_sharded_strategy(strategy)

    def _sampling_arguments(self) -> dict[str, Any]:
        g, per_input = self.generation, self.sequences_per_input()
        if g["strategy"] == "beam":
            return {"do_sample": False, "num_beams": max(g["num_beams"] or per_input, per_input)}
        if g["strategy"] == "sample":
            return {
                "do_sample": True,
                "temperature": g["temperature"],
                "top_p": g["top_p"],
                "top_k": g["top_k"],
            }
        raise ConfigError(f"model.generation.strategy: expected 'sample' or 'beam', got {g['strategy']!r}")

    def generation_extras(self, batch: dict[str, Any], prompt_length: int) -> dict[str, Any]:
        """More ``generate`` arguments for this batch (a subclass's logits processor); none by default."""
        return {}

    def generation_constraints(self, batch: dict[str, Any]) -> dict[str, Any]:
        """Extra ``generate`` arguments that restrict what may be written (e.g. a
        ``prefix_allowed_tokens_fn``); none by default."""
        return {}

    def stop_rule(self) -> str:
        """When a candidate stops before ``max_new_tokens`` (besides EOS): recorded beside predictions and
        in the llm cache key. ``max_new_tokens`` here; the forecaster may stop at K actions."""
        return "max_new_tokens"

    def generation_dtype(self) -> str:
        """The weights' dtype ``generate_texts`` uses: ``generation.dtype`` resolved for this device and
        backbone; a sharded model (ZeRO-3, FSDP) generates as it is, in the trainer's precision."""
        if self._sharded():
            return str(next(self.model.parameters()).dtype).removeprefix("torch.")
        return generation_dtype(self.generation["dtype"], self.device.type, toy=self.backbone.toy)

    def generation_record(self) -> dict[str, str]:
        """What every prediction record says about how its text was generated, beside model and seed."""
        return {"dtype": self.generation_dtype(), "stop": self.stop_rule()}

    def generation_model(self):
        """The model to generate with: the training model when it already has the generation dtype,
        else one merged copy in that dtype (egohorizon.backbones.lora.merged_copy), kept for the rest of
        the evaluation pass. The training model and its adapter are never changed."""
        dtype = self.generation_dtype()
        if self._sharded() or next(self.model.parameters()).dtype == getattr(torch, dtype):
            return self.model
        if self._generation_copy.get("dtype") != dtype:
            from egohorizon.backbones.lora import merged_copy

            self._generation_copy = {"dtype": dtype, "model": merged_copy(self.model, dtype)}
            log.info("generating with a merged %s copy of the model", dtype)
        return self._generation_copy["model"]

    def release_generation_model(self) -> None:
        """Drop the merged copy: the weights may change (training goes on) or the pass is over."""
        self._generation_copy = {}

    # One copy per evaluation pass: made on the pass's first batch, dropped at its start and end.
    def on_validation_epoch_start(self) -> None:
        self.release_generation_model()

    def on_validation_epoch_end(self) -> None:
        self.release_generation_model()

    def on_test_epoch_start(self) -> None:
        self.release_generation_model()

    def on_test_epoch_end(self) -> None:
        self.release_generation_model()

    def on_train_batch_start(self, batch: Any, batch_idx: int) -> None:
        self.release_generation_model()  # a copy made outside a pass must not outlive a weight update

    @torch.no_grad()
    def generate_texts(self, batch: dict[str, Any], batch_idx: int = 0) -> list[list[str]]:
        """Raw output texts per input: ``sequences_per_input()`` each (all of the batch's in one
        ``generate`` call), seeded by the batch index, from the left-padded prompts and, when the batch
        has them, the images, on ``generation_model()``."""
        per_input = self.sequences_per_input()
        if "prompt_ids" not in batch:  # every sample was left out (unreadable images): nothing to write
            return []
        kwargs: dict[str, Any] = {
            "max_new_tokens": self.max_new_tokens(batch),
            "num_return_sequences": per_input,
            "pad_token_id": self.tokenizer.pad_token_id,
            "eos_token_id": self.tokenizer.eos_token_id,
            # Sharded weights (ZeRO-3, FSDP): every rank must keep stepping until all ranks are done.
            "synced_gpus": self._sharded(),
            **self._sampling_arguments(),
            **self.generation_constraints(batch),
        }
        prompt_ids = batch["prompt_ids"]
        kwargs.update(self.generation_extras(batch, prompt_ids.shape[1]))
        model = self.generation_model()
        dtype = next(model.parameters()).dtype
        vision = {key: value.to(dtype) if value.is_floating_point() else value
                  for key, value in self._vision(batch).items()}  # pixels in the weights' dtype
        inputs = self._inputs(
            prompt_ids,
            batch["prompt_mask"],
            mm_token_type_ids=batch.get("prompt_mm_token_type_ids"),
            **vision,
        )
        devices = [self.device] if self.device.type == "cuda" else []
        # Seeded per batch and isolated from the training RNG: the same seed gives the same outputs.
        with torch.random.fork_rng(devices=devices):
            torch.manual_seed(self.generation["seed"] * 1_000_003 + batch_idx)
            out = generate_candidates(model, per_input, with_images=bool(vision), **inputs, **kwargs)
        texts = self.tokenizer.batch_decode(out[:, prompt_ids.shape[1] :], skip_special_tokens=True)
        return [texts[i * per_input : (i + 1) * per_input] for i in range(prompt_ids.shape[0])]


def build_scheduler(factory, optimizer, total_steps: float):
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
