"""Checkpoints of a run: find them, read their trainable weights, export a plain PEFT adapter.

Two kinds of checkpoint reach here:

- a Lightning ``.ckpt`` file (single device, DDP): ``state_dict`` holds the trainable weights only
  (``LoRALanguageModule.on_save_checkpoint`` drops the frozen base), beside ``global_step``,
  ``hyper_parameters`` and the ``egohorizon`` block (backbone, model id);
- a DeepSpeed ZeRO checkpoint folder (``strategy=deepspeed_*``; Lightning names the folder like a file,
  ``last.ckpt/``): every rank's shard of the fp32 master weights and optimizer state, consolidated here
  with DeepSpeed's own ``zero_to_fp32`` (``get_fp32_state_dict_from_zero_checkpoint``). Lightning's
  client state (global step, hyper-parameters, ...) sits in the rank-0 model-states file.

Also here, the one reader of what a trained adapter records (``egohorizon_adapter.json``) and the rules
that lead from a ``ckpt=`` / ``--model`` target to its adapter folder and its run folder.

Nothing here reads a Hydra config: the caller builds the LightningModule (``egohorizon.run`` does,
from the run's ``config.yaml``) and ``export_adapter`` loads the weights into it and saves the adapter
through the module's own ``save_adapter`` (adapter weights, tokenizer, prompt files).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from egohorizon.errors import ConfigError, DataError

log = logging.getLogger(__name__)

# Lightning wraps the LightningModule before handing it to DeepSpeed; its keys carry this prefix.
DEEPSPEED_MODULE_PREFIX = "_forward_module."
EXPORT_INFO_FILE = "export.json"
ADAPTER_META_FILE = "egohorizon_adapter.json"  # written by models.lora_lm.LoRALanguageModule.save_adapter


# -- adapters and their run folders -----------------------------------------------------------------


def resolve_adapter(ckpt: str | Path) -> Path:
    """An adapter folder from ``ckpt``: the folder itself, the ``.adapter`` beside a ``.ckpt``, or the
    best (else last) adapter of a run folder."""
    path = Path(ckpt)
    if path.suffix == ".ckpt":
        path = path.with_name(path.stem + ".adapter")
    elif (path / "checkpoints").is_dir():
        metrics = path / "metrics.json"
        best = json.loads(metrics.read_text()).get("best_checkpoint") if metrics.is_file() else None
        path = (
            Path(best).with_name(Path(best).stem + ".adapter")
            if best
            else path / "checkpoints" / "last.adapter"
        )
    if not (path / "adapter_config.json").is_file():
        raise ConfigError(
            f"ckpt={ckpt}: no adapter folder found (looked for {path}/adapter_config.json); "
            "pass a *.adapter folder, a *.ckpt saved by train.py, or a run folder"
        )
    check_adapter_weights(path)
    return path


def check_adapter_weights(folder: Path) -> None:
    """Names an ``adapter_model.safetensors`` that is cut short or damaged (a copy interrupted, a full
    disk) before anything loads it: eval.py, compare and serve ended in safetensors' traceback, and
    eval.py left a half-written run folder (issue 36, item 11). Reads the header only."""
    path = Path(folder) / "adapter_model.safetensors"
    if not path.is_file():
        return
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(path), framework="numpy"):
            pass  # opening checks the header and that the tensors it lists fill the file exactly
    except (SafetensorError, OSError) as error:
        raise DataError(f"{path}: not a complete safetensors file ({error}); the adapter was cut short or "
                          "damaged: copy or export it again") from None


def read_adapter_meta(adapter: str | Path) -> dict[str, Any]:
    """The adapter folder's ``egohorizon_adapter.json`` (base model, prompt, generation, data settings)."""
    folder = Path(adapter)
    path = folder / ADAPTER_META_FILE
    if not (folder / "adapter_config.json").is_file():
        raise ConfigError(f"{folder}: not a LoRA adapter folder (no adapter_config.json); pass a *.adapter "
                          "folder saved by train.py")
    if not path.is_file():
        raise ConfigError(f"{path}: missing; this adapter was not saved by train.py, so its base model and "
                          "prompt are unknown (pass --base-model and --prompt)")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ConfigError(f"{path}: not valid JSON ({error})") from None


def run_dir_of(path: Path) -> Path:
    """``<run>/checkpoints/x.ckpt``, ``<run>/checkpoints/x.adapter`` and ``<run>/hpc_ckpt_1.ckpt`` all
    belong to ``<run>``."""
    parent = path.parent
    return parent.parent if parent.name == "checkpoints" else parent


def run_dir_of_target(target: str | Path) -> Path | None:
    """The run folder a run folder, ``*.ckpt``, or adapter folder belongs to (where train.py wrote its
    resolved ``config.yaml``); an exported adapter's ``export.json`` names its checkpoint. None when
    no run folder can be found."""
    path = Path(target)
    if (path / "checkpoints").is_dir():
        return path
    if path.suffix == ".ckpt" or path.parent.name == "checkpoints":
        return run_dir_of(path)
    info = path / EXPORT_INFO_FILE
    if info.is_file():
        checkpoint = json.loads(info.read_text()).get("checkpoint")
        return run_dir_of(Path(checkpoint)) if checkpoint else None
    return None


@dataclass
class Checkpoint:
    """The trainable weights of one checkpoint and what Lightning stored beside them."""

    path: Path
    kind: str  # "lightning" | "deepspeed"
    state_dict: dict[str, Any]
    global_step: int | None
    meta: dict[str, Any] = field(default_factory=dict)  # hyper_parameters, egohorizon, epoch, ...


# -- finding -----------------------------------------------------------------------------------------


def recorded_task(target: str | Path) -> str | None:
    """The task (``eval_task``) that the run ``target`` belongs to recorded in its ``config.yaml`` (written
    resolved, so plain YAML), or None. The config as a config is ``egohorizon.run``'s to read."""
    import yaml

    run = run_dir_of_target(target)
    if run is None or not (run / "config.yaml").is_file():
        return None
    config = yaml.safe_load((run / "config.yaml").read_text(encoding="utf-8"))
    task = config.get("eval_task") if isinstance(config, dict) else None
    return str(task) if task else None

def is_deepspeed_checkpoint(path: str | Path) -> bool:
    """A ZeRO checkpoint folder: a ``latest`` tag file or a tag folder with ``*model_states.pt``."""
    path = Path(path)
    if not path.is_dir():
        return False
    return (path / "latest").is_file() or any(path.glob("*/*model_states.pt"))


def run_checkpoints(run_dir: str | Path) -> list[Path]:
    """A run's checkpoints, oldest first (by ``written_at``): ``checkpoints/*.ckpt`` and the
    ``hpc_ckpt_<n>.ckpt`` that Lightning's SLURM handler writes into the run folder on preemption."""
    run_dir = Path(run_dir)
    found = list((run_dir / "checkpoints").glob("*.ckpt")) + list(run_dir.glob("hpc_ckpt_*.ckpt"))
    return sorted(found, key=lambda p: (written_at(p), p.name))


def written_at(path: Path) -> float:
    """When a checkpoint was last written: a file's modification time, or for a DeepSpeed folder the
    newest of its files'. DeepSpeed saving into an existing ``last.ckpt/`` rewrites ``latest`` and the
    files of its tag folder, which leaves the mtime of ``last.ckpt/`` itself unchanged."""
    times = [path.stat().st_mtime]
    if path.is_dir():
        times += [f.stat().st_mtime for f in path.rglob("*") if f.is_file()]
    return max(times)


def resume_checkpoint(run_dir: str | Path) -> Path | None:
    """What a restarted run resumes from: the newer of ``checkpoints/last.ckpt`` and the newest
    ``hpc_ckpt_<n>.ckpt`` (written when Slurm asked the job to stop), or None for a fresh start.

    After the preemption signal the job may run on for a few steps and write ``last.ckpt`` again
    before Slurm stops it, so neither file is always the newer one: the last write decides
    (``written_at``: inside a DeepSpeed folder, its newest file).
    """
    run_dir = Path(run_dir)
    candidates = [p for p in [run_dir / "checkpoints" / "last.ckpt", *run_dir.glob("hpc_ckpt_*.ckpt")] if p.exists()]
    return max(candidates, key=lambda p: (written_at(p), p.name)) if candidates else None


def find_checkpoint(run_dir: str | Path | None, ckpt: str | Path | None = None) -> Path:
    """``ckpt`` when given (absolute, or relative to the run folder), else what the run would resume
    from (``resume_checkpoint``), else its newest checkpoint."""
    if ckpt is not None:
        candidates = [Path(ckpt)] + ([Path(run_dir) / ckpt] if run_dir is not None else [])
        for candidate in candidates:
            if candidate.exists():
                return candidate
        raise DataError(f"--ckpt {ckpt}: no such checkpoint file or folder")
    if run_dir is None:
        raise DataError("no run folder and no --ckpt: nothing to read")
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise DataError(f"{run_dir}: no such run folder")
    found = resume_checkpoint(run_dir) or (run_checkpoints(run_dir) or [None])[-1]
    if found is None:
        raise DataError(f"{run_dir}: no checkpoint (looked for checkpoints/*.ckpt and hpc_ckpt_*.ckpt)")
    return found


# -- reading -----------------------------------------------------------------------------------------

def read_checkpoint(path: str | Path) -> Checkpoint:
    path = Path(path)
    if is_deepspeed_checkpoint(path):
        return _read_deepspeed(path)
    if path.is_file():
        return _read_lightning(path)
    raise DataError(f"{path}: neither a Lightning .ckpt file nor a DeepSpeed checkpoint folder")


def _read_lightning(path: Path) -> Checkpoint:
    import torch

    try:
        # weights_only=False: a Lightning checkpoint holds plain Python objects (hyper-parameters,
        # loop state) besides tensors; these are the user's own run files.
        raw = torch.load(path, map_location="cpu", weights_only=False, mmap=True)
    except Exception as error:  # noqa: BLE001 (unpickling a truncated or foreign file raises anything)
        raise DataError(f"{path}: cannot read as a Lightning checkpoint ({type(error).__name__}: {error})") from None
    if not isinstance(raw, dict) or "state_dict" not in raw:
        raise DataError(f"{path}: not a Lightning checkpoint (no 'state_dict' entry)")
    meta = {k: v for k, v in raw.items() if k not in ("state_dict", "optimizer_states")}
    return Checkpoint(path=path, kind="lightning", state_dict=dict(raw["state_dict"]),
                      global_step=raw.get("global_step"), meta=meta)


def deepspeed_tag(folder: Path) -> str:
    latest = folder / "latest"
    if latest.is_file():
        return latest.read_text().strip()
    tags = sorted(p.parent.name for p in folder.glob("*/*model_states.pt"))
    if not tags:
        raise DataError(f"{folder}: no 'latest' file and no tag folder with model states")
    return tags[-1]


def _read_deepspeed(folder: Path) -> Checkpoint:
    import torch
    from deepspeed.utils.zero_to_fp32 import get_fp32_state_dict_from_zero_checkpoint

    tag = deepspeed_tag(folder)
    states = sorted((folder / tag).glob("*model_states.pt"))
    if not states:
        raise DataError(f"{folder / tag}: no *model_states.pt file (an incomplete DeepSpeed checkpoint?)")
    try:
        # Only the trainable weights: the frozen base is rebuilt from the backbone, and the fp32
        # consolidation of a 7B base would need tens of GB for nothing.
        state_dict = get_fp32_state_dict_from_zero_checkpoint(str(folder), tag=tag, exclude_frozen_parameters=True)
        # Lightning's client state (global step, hyper-parameters) is stored in rank 0's model states.
        client = torch.load(states[0], map_location="cpu", weights_only=False, mmap=True)
    except (OSError, RuntimeError, ValueError, KeyError) as error:
        raise DataError(f"{folder}: cannot read the DeepSpeed checkpoint ({type(error).__name__}: {error})") from None
    state_dict = {_strip_prefix(k, DEEPSPEED_MODULE_PREFIX): v for k, v in state_dict.items()}
    deepspeed_keys = {"module", "buffer_names", "optimizer", "param_shapes", "frozen_param_shapes",
                      "shared_params", "frozen_param_fragments", "lr_scheduler", "data_sampler", "random_ltd",
                      "ds_config", "optimizer_states"}
    meta = {k: v for k, v in client.items() if k not in deepspeed_keys}
    meta["deepspeed"] = {"tag": tag, "version": client.get("ds_version"), "world_size": client.get("dp_world_size")}
    return Checkpoint(path=folder, kind="deepspeed", state_dict=state_dict,
                      global_step=client.get("global_step"), meta=meta)


def _strip_prefix(key: str, prefix: str) -> str:
    return key.removeprefix(prefix)


# -- loading and exporting ---------------------------------------------------------------------------

def load_trainable_weights(module, checkpoint: Checkpoint) -> None:
    """Loads ``checkpoint`` into ``module`` (built, with its adapter in place), insisting that every
    trainable parameter of the module is in the checkpoint and that nothing in it goes unused."""
    trainable = {name for name, p in module.named_parameters() if p.requires_grad}
    if not trainable:
        raise DataError(f"{checkpoint.path}: the model built from the run's config has nothing trainable "
                        "(no LoRA configured?)")
    missing = sorted(trainable - set(checkpoint.state_dict))
    if missing:
        raise DataError(f"{checkpoint.path}: {len(missing)} trainable weight(s) missing from the checkpoint, "
                        f"e.g. {missing[:3]}; was it written by a run with another LoRA config?")
    result = module.load_state_dict(checkpoint.state_dict, strict=False)
    if result.unexpected_keys:
        raise DataError(f"{checkpoint.path}: {len(result.unexpected_keys)} weight(s) the model does not have, "
                        f"e.g. {sorted(result.unexpected_keys)[:3]}")


def load_into_partitioned(module, checkpoint: Checkpoint) -> int:
    """Loads ``checkpoint``'s trainable weights into ``module`` whose parameters ZeRO-3 has partitioned
    (after a DeepSpeed fit), on every rank: each weight is gathered, set on rank zero and scattered
    back. What train.py's test does instead of ``trainer.test(ckpt_path=...)``, which under ZeRO-3
    loads through an engine without optimizer and fails in ``_restore_from_bit16_weights`` (DeepSpeed
    issue #7272). Returns the number of weights loaded."""
    import deepspeed
    import torch

    trainable = {name: p for name, p in module.named_parameters() if p.requires_grad}
    missing = sorted(set(trainable) - set(checkpoint.state_dict))
    if missing:
        raise DataError(f"{checkpoint.path}: {len(missing)} trainable weight(s) missing from the checkpoint, "
                        f"e.g. {missing[:3]}")
    rank = torch.distributed.get_rank() if torch.distributed.is_initialized() else 0
    for name, param in trainable.items():
        with deepspeed.zero.GatheredParameters([param], modifier_rank=0), torch.no_grad():
            if rank == 0:
                param.copy_(checkpoint.state_dict[name].to(param.dtype))
    return len(trainable)


def export_adapter(module, checkpoint: Checkpoint, out_dir: str | Path, base: str | None = None) -> Path:
    """Writes a PEFT adapter folder for ``checkpoint`` into ``out_dir``, replacing only an earlier adapter
    folder (``owned_output``: one this export or the checkpoint callback marked; never a user's folder).

    ``module`` is the run's LightningModule after ``configure_model()``; it must offer
    ``save_adapter(folder)`` (every LoRALanguageModule does). The folder gets an ``export.json`` naming the
    source checkpoint, its kind and its global step.
    """
    import shutil
    import tempfile

    from egohorizon.owned_output import ADAPTER_COMMAND, adapter_inputs, replace_folder, write_marker

    if not hasattr(module, "save_adapter"):
        raise DataError(f"{type(module).__name__} cannot save an adapter (no save_adapter method)")
    load_trainable_weights(module, checkpoint)
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    # Written beside the target and renamed into place: a reader never sees half an adapter.
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    try:
        module.save_adapter(staging)
        info = {"checkpoint": str(checkpoint.path), "kind": checkpoint.kind, "global_step": checkpoint.global_step,
                "epoch": checkpoint.meta.get("epoch")}
        if "deepspeed" in checkpoint.meta:
            info["deepspeed"] = checkpoint.meta["deepspeed"]
        (staging / EXPORT_INFO_FILE).write_text(json.dumps(info, indent=2, default=str) + "\n")
        write_marker(staging, ADAPTER_COMMAND, adapter_inputs(checkpoint.path, base))
        replace_folder(staging, out_dir, ADAPTER_COMMAND)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    log.info("adapter of %s (step %s) written to %s", checkpoint.path, checkpoint.global_step, out_dir)
    return out_dir


def default_export_dir(checkpoint_path: Path) -> Path:
    """``checkpoints/last.ckpt`` -> ``checkpoints/last.adapter`` (where AdapterCheckpoint puts its own)."""
    return checkpoint_path.with_name(checkpoint_path.stem + ".adapter")
