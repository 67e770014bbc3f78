"""ModelCheckpoint that also writes a plain PEFT adapter folder beside every checkpoint it keeps.

``checkpoints/epoch=3-step=120.ckpt`` gets ``checkpoints/epoch=3-step=120.adapter/`` (adapter weights,
tokenizer, the prompt's name, version and template, and what produced it), so a checkpoint can be used
with ``PeftModel.from_pretrained`` or ``eval.py ckpt=...`` without Lightning. Removed with its
checkpoint. Under sharded strategies (DeepSpeed ZeRO-3) rank zero does not hold the full adapter:
the export is skipped there and ``egohorizon export-adapter`` converts the checkpoint instead.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from lightning.pytorch.callbacks import ModelCheckpoint

from egohorizon.strategies import is_sharded_strategy

log = logging.getLogger(__name__)


def adapter_dir_for(checkpoint_path: str | Path) -> Path:
    path = Path(checkpoint_path)
    return path.with_name(path.stem + ".adapter")


class AdapterCheckpoint(ModelCheckpoint):
    def _save_checkpoint(self, trainer, filepath: str) -> None:
        super()._save_checkpoint(trainer, filepath)
        if not hasattr(trainer.lightning_module, "save_adapter"):
            return
        if _is_sharded(trainer):
            log.info(
                "adapter export skipped under %s; use `egohorizon export-adapter`",
                type(trainer.strategy).__name__,
            )
            return
        if trainer.is_global_zero:
            target = adapter_dir_for(filepath)
            shutil.rmtree(target, ignore_errors=True)  # last.ckpt is rewritten in place
            trainer.lightning_module.save_adapter(target)
        trainer.strategy.barrier("adapter_checkpoint")

    def _remove_checkpoint(self, trainer, filepath: str) -> None:
        super()._remove_checkpoint(trainer, filepath)
        if trainer.is_global_zero:
            shutil.rmtree(adapter_dir_for(filepath), ignore_errors=True)


def _is_sharded(trainer) -> bool:
    return is_sharded_strategy(trainer.strategy)
