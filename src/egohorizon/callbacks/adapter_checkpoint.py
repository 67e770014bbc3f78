"""ModelCheckpoint that also writes a plain PEFT adapter folder beside every checkpoint it keeps.

``checkpoints/epoch=3-step=120.ckpt`` gets ``checkpoints/epoch=3-step=120.adapter/`` (adapter weights,
tokenizer, the prompt's name, version and template, and what produced it), so a checkpoint can be used
with ``PeftModel.from_pretrained`` or ``eval.py ckpt=...`` without Lightning. Removed with its
checkpoint. Under sharded strategies (DeepSpeed ZeRO-3) rank zero does not hold the full adapter:
the export is skipped there and ``egohorizon export-adapter`` converts the checkpoint instead.

``last.ckpt`` is the newest state after every validation, whether or not that validation entered
the top k: Lightning 2.6's ModelCheckpoint rewrites it only when a top-k file was saved at the same
step, so a run whose final validation did not improve kept a ``last.ckpt`` from an earlier step
(a resume or ``export-adapter RUN`` then silently went back in training).
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.trainer.states import TrainerFn

from egohorizon.owned_output import ADAPTER_COMMAND, adapter_inputs, write_marker
from egohorizon.strategies import is_sharded_strategy

log = logging.getLogger(__name__)


def adapter_dir_for(checkpoint_path: str | Path) -> Path:
    path = Path(checkpoint_path)
    return path.with_name(path.stem + ".adapter")


class AdapterCheckpoint(ModelCheckpoint):
    _last_saved_at_step: int | None = None  # global step of the newest last.ckpt written by this run

    def on_validation_end(self, trainer, pl_module) -> None:
        super().on_validation_end(trainer, pl_module)
        if not self._should_save_on_train_epoch_end(trainer):
            self._refresh_last(trainer)

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        super().on_train_epoch_end(trainer, pl_module)
        if self._should_save_on_train_epoch_end(trainer):
            self._refresh_last(trainer)

    def _refresh_last(self, trainer) -> None:
        """Writes last.ckpt at this step where the parent's top-k logic did not (see the module doc)."""
        if self.save_last is not True or trainer.fast_dev_run or trainer.sanity_checking:
            return  # save_last="link" points at the newest top-k file by design
        if trainer.state.fn != TrainerFn.FITTING or self._last_saved_at_step == trainer.global_step:
            return
        if trainer.global_step == 0:
            return  # nothing trained yet
        self._save_last_checkpoint(trainer, self._monitor_candidates(trainer))

    def _save_last_checkpoint(self, trainer, monitor_candidates) -> None:
        super()._save_last_checkpoint(trainer, monitor_candidates)
        if self.save_last:
            self._last_saved_at_step = trainer.global_step

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
            # The marker export-adapter writes: re-exporting this checkpoint into its own folder is a rerun.
            write_marker(target, ADAPTER_COMMAND, adapter_inputs(filepath))
        trainer.strategy.barrier("adapter_checkpoint")

    def _remove_checkpoint(self, trainer, filepath: str) -> None:
        super()._remove_checkpoint(trainer, filepath)
        if trainer.is_global_zero:
            shutil.rmtree(adapter_dir_for(filepath), ignore_errors=True)


def _is_sharded(trainer) -> bool:
    return is_sharded_strategy(trainer.strategy)
