"""Lightning strategies with one addition: the DeepSpeed config is written into the run directory.

``conf/strategy/deepspeed_*.yaml`` instantiate :class:`DeepSpeedStrategy`. Lightning assembles the
DeepSpeed JSON from the strategy's arguments and the trainer's settings (precision -> ``bf16``,
``accumulate_grad_batches`` -> ``gradient_accumulation_steps``, ``gradient_clip_val`` ->
``gradient_clipping``, the loader's batch size -> ``train_micro_batch_size_per_gpu``); the file this
class writes is that final JSON, so a run's folder says exactly what DeepSpeed was given.

Lightning's DeepSpeed strategy only starts on CUDA GPUs (``setup_environment`` raises on CPU): on a
CPU machine the tests drive raw DeepSpeed over gloo instead (ZeRO-3 loading, LoRA init, checkpoint
conversion, test-after-fit loading, mixed image batches: docs/scale-out.md); ``scripts/gpu_check.sh``
runs the strategies on a GPU.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from lightning.pytorch.strategies import DeepSpeedStrategy as _LightningDeepSpeedStrategy

log = logging.getLogger(__name__)

DEEPSPEED_CONFIG_FILE = "deepspeed_config.json"


class DeepSpeedStrategy(_LightningDeepSpeedStrategy):
    """Lightning's ``DeepSpeedStrategy`` that saves its final DeepSpeed config to ``config_file``.

    All other arguments are Lightning's (``stage``, ``offload_optimizer``, ``offload_parameters``,
    ``partition_activations``, ``exclude_frozen_parameters``, ...).
    """

    def __init__(self, *args: Any, config_file: str | None = None,
                 config_overrides: dict[str, Any] | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.config_file = config_file
        # Keys Lightning has no argument for (e.g. zero_force_ds_cpu_optimizer), merged into its config.
        if config_overrides:
            self.config = merge_config(self.config, config_overrides)

    def setup_environment(self) -> None:
        super().setup_environment()
        if self.zero_stage_3:
            # LoRALanguageModule.configure_model calls transformers' from_pretrained inside Lightning's
            # deepspeed.zero.Init: without this handle transformers does not know the weights are being
            # partitioned and fails with "size mismatch ... torch.Size([0])" (Lightning issue #19259).
            self._hf_deepspeed_config = hf_zero3_config(self.config, self.precision_plugin.precision)

    def setup(self, trainer) -> None:
        # Lightning fills in the trainer-dependent keys lazily, at the start of setup(); do it first so
        # the JSON is on disk even when DeepSpeed then fails to start (the case one wants to debug).
        self._init_config_if_needed()
        if self.config_file and self.is_global_zero:
            write_deepspeed_config(self.config, self.config_file)
        super().setup(trainer)


def is_sharded_strategy(strategy) -> bool:
    """ZeRO-3 and FSDP shard the parameters across ranks: rank zero alone cannot save the adapter, and
    generation must keep every rank stepping (``synced_gpus``)."""
    if strategy is None:
        return False
    stage3 = getattr(strategy, "zero_stage_3", None)
    return bool(stage3) if stage3 is not None else type(strategy).__name__.startswith("FSDP")


def hf_zero3_config(config: dict[str, Any], precision: str):
    """transformers' ``HfDeepSpeedConfig`` for ``config``: while the returned object lives,
    ``from_pretrained`` builds models partitioned (zero.Init) and loads each weight into its shards.

    Created before Lightning has filled in the batch size and precision, so those are set here for
    DeepSpeed's config parser only; the engine itself gets Lightning's final config.
    """
    from transformers.integrations import HfDeepSpeedConfig

    config = dict(config)
    config.setdefault("train_micro_batch_size_per_gpu", 1)
    if precision.startswith("bf16"):
        config["bf16"] = {**config.get("bf16", {}), "enabled": True}
    elif precision.startswith("16"):
        config["fp16"] = {**config.get("fp16", {}), "enabled": True}
    return HfDeepSpeedConfig(config)


def merge_config(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """``base`` with ``overrides`` merged in, nested dicts key by key (neither input is changed)."""
    merged = dict(base)
    for key, value in dict(overrides).items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge_config(merged[key], value)
        else:
            merged[key] = value
    return merged


def write_deepspeed_config(config: dict[str, Any], path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config, indent=2, sort_keys=True, default=str) + "\n")
    log.info("DeepSpeed config written to %s", path)
    return path
