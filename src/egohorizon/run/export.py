"""``egohorizon export-adapter``: a run's checkpoint (Lightning ``.ckpt`` or DeepSpeed ZeRO folder) to a
plain PEFT adapter folder.

Like ``egohorizon.run`` this reads the run's (resolved) config, ``<run>/config.yaml``, to rebuild the
LightningModule the checkpoint belongs to: the model config of the run, with the base model that the
checkpoint records (``egohorizon.backbone.path``, e.g. the tiny backbone's cached folder, or the hub id)
loaded as a plain transformers backbone, as ``eval.py`` loads adapters. The conversion itself is
``egohorizon.checkpoints``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from egohorizon.checkpoints import (
    Checkpoint,
    default_export_dir,
    export_adapter,
    find_checkpoint,
    read_checkpoint,
    run_dir_of,
)
from egohorizon.errors import ConfigError, DataError
from egohorizon.owned_output import (
    ADAPTER_COMMAND,
    MERGED_COMMAND,
    adapter_inputs,
    claim_folder,
    replace_folder,
    write_marker,
)

log = logging.getLogger(__name__)


def base_model_of(checkpoint: Checkpoint, base_path: str | None = None) -> str:
    """The base model the adapter goes onto: ``base_path`` if given, else what the checkpoint records."""
    if base_path:
        return base_path
    recorded: dict[str, Any] = checkpoint.meta.get("egohorizon") or {}
    path = (recorded.get("backbone") or {}).get("path") or recorded.get("model_id")
    if not path:
        raise DataError(f"{checkpoint.path}: the checkpoint does not say which base model it was trained on; "
                        "pass --base PATH")
    return str(path)


def build_run_module(run_dir: Path, checkpoint: Checkpoint, base_path: str | None = None, dtype: str | None = None):
    """The run's LightningModule, built (``configure_model``) with fresh adapter weights. ``dtype``: the
    frozen base's (None: torch's default, float32); the trainable weights are float32 either way, so the
    exported adapter holds the checkpoint's values exactly."""
    from omegaconf import OmegaConf

    from egohorizon.backbones import HFBackbone
    from egohorizon.run.setup import build_model

    config_file = run_dir / "config.yaml"
    if not config_file.is_file():
        raise ConfigError(f"{run_dir}: no config.yaml (the resolved config train.py writes into a run folder); "
                          "is this a run folder?")
    cfg = OmegaConf.load(config_file)
    if not cfg.model.get("lora"):
        raise ConfigError(f"{config_file}: model.lora is empty: this run trained no adapter to export")
    backbone = HFBackbone(path=base_model_of(checkpoint, base_path), dtype=dtype)
    module = build_model(cfg, backbone)
    module.gradient_checkpointing = False  # a training-time memory saving; irrelevant to the weights
    module.configure_model()
    for param in module.parameters():
        if param.requires_grad and param.is_floating_point():  # saved modules are copies of bf16 base layers
            param.data = param.data.float()
    return module


def export_run_adapter(run_dir: str | Path | None, ckpt: str | Path | None = None, out: str | Path | None = None,
                       base_path: str | None = None, force: bool = False) -> Path:
    """Finds the checkpoint (``ckpt``, else the run's newest), converts it, writes the adapter to ``out``
    (default: beside the checkpoint, ``<name>.adapter``). ``out`` is claimed before the model is built
    (``claim_export``). Returns the adapter folder."""
    checkpoint_path = find_checkpoint(run_dir, ckpt)
    run_dir = Path(run_dir) if run_dir is not None else run_dir_of(checkpoint_path)
    target = Path(out) if out else default_export_dir(checkpoint_path)
    claim_export(target, checkpoint_path, run_dir, base_path, force)
    checkpoint = read_checkpoint(checkpoint_path)
    log.info("%s: %s checkpoint at step %s", checkpoint_path, checkpoint.kind, checkpoint.global_step)
    # The base in bfloat16: only the trainable weights are written, and a 7B base in float32 took ~30 GB.
    module = build_run_module(run_dir, checkpoint, base_path, dtype="bfloat16")
    if getattr(module, "generation", {}).get("answer_set") == "train":  # saved beside the adapter (models.caption)
        from egohorizon.run.answer_set import run_answer_set

        module.set_answers(run_answer_set(run_dir))
    return export_adapter(module, checkpoint, target, base_path)


def claim_export(out: Path, checkpoint_path: Path, run_dir: Path, base_path: str | None = None,
                 force: bool = False, merged_from: Path | None = None) -> Path:
    """``out`` as the adapter folder of ``checkpoint_path`` (or, with ``merged_from``, as the model merged
    from that adapter): refused if it is the run, holds it, is the current folder, or a folder that
    export-adapter (or the checkpoint callback) did not write (issue 36: ``--out .`` emptied the folder)."""
    command, inputs = ADAPTER_COMMAND, adapter_inputs(checkpoint_path, base_path)
    if merged_from is not None:
        command, inputs = MERGED_COMMAND, adapter_inputs(merged_from, base_path)
    return claim_folder(out, command, inputs, input_paths=[run_dir, checkpoint_path], force=force)


# What a merged folder keeps of its adapter: the prompt it was trained with, its settings, its answers.
ADAPTER_FILES_KEPT = ("egohorizon_adapter.json", "prompt.json", "answer_set.json", "export.json")


def merge_adapter(adapter: str | Path, out: str | Path, base_path: str | None = None) -> Path:
    """The adapter merged into its base model (peft ``merge_and_unload``) as a full transformers folder in
    bfloat16 (weights, config, processor or tokenizer) plus the adapter's prompt file and settings and
    ``egohorizon_merged.json``: what vLLM serves when the adapter cannot be a LoRA module there (vision-tower
    LoRA, saved embeddings; egohorizon.llm.serving). The base loads in bfloat16, not float32: a 7B base is
    ~15 GB of host memory, not ~30."""
    import json
    import shutil
    import tempfile

    import torch
    from peft import PeftModel

    from egohorizon.backbones import HFBackbone
    from egohorizon.backbones.composite_names import not_servable
    from egohorizon.checkpoints import read_adapter_meta
    from egohorizon.llm.serving import MERGED_INFO_FILE

    adapter, out = Path(adapter), Path(out)
    meta = read_adapter_meta(adapter)
    base = base_path or meta.get("base_path") or meta.get("model_id")
    if not base:
        raise DataError(f"{adapter}/egohorizon_adapter.json: names no base model; pass --base PATH")
    refusal = not_servable(str(base), "merged into one model")
    if refusal:
        raise ConfigError(f"{adapter}: {refusal}")
    kind = (meta.get("backbone") or {}).get("model_kind") or "auto"
    backbone = HFBackbone(path=str(base), kind=kind, dtype="bfloat16")
    merged = PeftModel.from_pretrained(backbone.load_model(), str(adapter)).merge_and_unload()
    merged = merged.to(torch.bfloat16)  # peft keeps adapters (and saved modules) in float32 on a bf16 base
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        merged.save_pretrained(staging)
        (backbone.load_processor() or backbone.load_tokenizer()).save_pretrained(staging)
        prompt_file = f"{(meta.get('prompt') or {}).get('name', 'caption')}.txt"  # not merges.txt & co.
        for path in (adapter / name for name in (*ADAPTER_FILES_KEPT, prompt_file)):
            if path.is_file():
                shutil.copy2(path, staging / path.name)
        info = {"adapter": str(adapter.resolve()), "base": str(base), "dtype": "bfloat16"}
        (staging / MERGED_INFO_FILE).write_text(json.dumps(info, indent=2) + "\n")
        write_marker(staging, MERGED_COMMAND, adapter_inputs(adapter, base_path))
        replace_folder(staging, out, MERGED_COMMAND)  # only a merged folder of this command is replaced
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    log.info("%s merged into %s: %s", adapter, base, out)
    return out
