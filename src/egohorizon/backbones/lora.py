"""LoRA (peft) on a transformers model: the language blocks as the ``lora`` settings say and, when
asked (``vision=True``), every linear layer of the vision tower too (its blocks and the merger that
maps image patches into the language model's width).

The ``lora`` settings are peft ``LoraConfig`` arguments (conf/finetune/*.yaml). Those configs name
the language projections (``q_proj`` ... ``down_proj``) and exclude ``.*visual.*``, because Qwen2.5-VL's
vision MLP reuses the names ``gate_proj``/``up_proj``/``down_proj``. With ``vision=True`` the targets
become explicit module names: what the settings select, plus the vision tower's linear layers.
"""

from __future__ import annotations

import re
from typing import Any

from egohorizon.errors import ConfigError

# Module names under which transformers VLMs keep their vision encoder and projector.
VISION_TOWERS = ("visual", "vision_tower", "vision_model", "multi_modal_projector")


def add_lora(model, lora: dict[str, Any], vision: bool = False):
    """``model`` wrapped by peft with a fresh LoRA adapter (on the vision tower too when ``vision``)."""
    from peft import LoraConfig, get_peft_model

    settings = with_vision_targets(model, lora) if vision else dict(lora)
    model = get_peft_model(model, LoraConfig(task_type="CAUSAL_LM", **settings))
    reinitialise_partitioned_lora(model)
    return model


def reinitialise_partitioned_lora(model) -> int:
    """Under ZeRO-3 (Lightning runs ``configure_model`` inside ``deepspeed.zero.Init``) every new
    ``lora_A``/``lora_B`` is partitioned as it is created, so peft's ``kaiming_uniform_``/``zeros_`` ran
    on empty tensors (peft warns "Initializing zero-element tensors is a no-op") and training would
    start from random ``lora_B``: a damaged base model. Each partitioned layer is gathered, initialised
    again by peft on rank zero and scattered back (``GatheredParameters(modifier_rank=0)`` broadcasts
    rank zero's values). Returns the number of layers re-initialised (0 without ZeRO-3)."""
    layers = [
        (module, name)
        for module in model.modules()
        if hasattr(module, "reset_lora_parameters") and hasattr(module, "lora_A")
        for name in module.lora_A
        if hasattr(module.lora_A[name].weight, "ds_id")  # a DeepSpeed ZeRO-3 parameter
    ]
    if not layers:
        return 0
    import deepspeed

    config = model.peft_config
    for module, name in layers:
        params = list(module.lora_A[name].parameters()) + list(module.lora_B[name].parameters())
        with deepspeed.zero.GatheredParameters(params, modifier_rank=0):
            if not deepspeed.comm.is_initialized() or deepspeed.comm.get_rank() == 0:
                module.reset_lora_parameters(name, config[name].init_lora_weights)
    return len(layers)


def with_vision_targets(model, lora: dict[str, Any]) -> dict[str, Any]:
    """``lora`` with ``target_modules`` spelled out as module names, vision tower's linears included,
    and ``exclude_modules`` applied here (so it cannot exclude the vision targets again)."""
    vision = vision_linear_names(model)
    if not vision:
        raise ConfigError(
            f"model.lora_vision: {type(model).__name__} has no vision tower "
            f"(no module named one of {VISION_TOWERS}); set lora_vision=false"
        )
    targets, exclude = lora.get("target_modules"), lora.get("exclude_modules")
    if targets is None:
        raise ConfigError(
            "model.lora.target_modules: needed to choose the language modules beside the vision ones"
        )
    language = [
        name
        for name, module in model.named_modules()
        if not list(module.children())
        and not _in_vision_tower(name)
        and _peft_matches(name, targets)
        and not (exclude and _peft_matches(name, exclude))
    ]
    return {**lora, "target_modules": language + vision, "exclude_modules": None}


def vision_linear_names(model) -> list[str]:
    import torch

    return [
        name
        for name, module in model.named_modules()
        if isinstance(module, torch.nn.Linear) and _in_vision_tower(name)
    ]


def _in_vision_tower(name: str) -> bool:
    return any(part in VISION_TOWERS for part in name.split("."))


def _peft_matches(name: str, pattern: str | list[str]) -> bool:
    """peft's rule: a string is a regex for the whole name, a list holds names or name suffixes."""
    if isinstance(pattern, str):
        return re.fullmatch(pattern, name) is not None
    return any(name == p or name.endswith(f".{p}") for p in pattern)


def merged_copy(model, dtype: str):
    """A copy of ``model`` to generate with: its LoRA adapter merged into the weights (peft's
    ``merge_and_unload``), cast to ``dtype`` (``"bfloat16"``), in eval mode, with no gradients. ``model``
    itself is untouched, so its adapter goes on training from the same weights. One cast for a whole
    evaluation pass instead of autocast, which casts every weight again at each decoding step."""
    import copy

    import torch

    clone = copy.deepcopy(model)
    if hasattr(clone, "merge_and_unload"):
        clone = clone.merge_and_unload()
    clone = clone.to(getattr(torch, dtype)).eval()
    for param in clone.parameters():
        param.requires_grad_(False)
        param.grad = None  # deepcopy copied the live model's gradients: not needed here
    return clone
