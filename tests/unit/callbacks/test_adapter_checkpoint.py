"""AdapterCheckpoint keeps last.ckpt at the newest step, also when the final validation did not improve."""

from __future__ import annotations

import lightning.pytorch as pl
import torch
from lightning.pytorch.demos.boring_classes import BoringModel

from egohorizon.callbacks.adapter_checkpoint import AdapterCheckpoint


class WorseningModel(BoringModel):
    """Its validation score is best at the first validation and worse at every later one."""

    def on_validation_epoch_end(self) -> None:
        self.log("val/score", -float(self.global_step))


def _fit(tmp_path, callback, **trainer_kwargs):
    trainer = pl.Trainer(default_root_dir=tmp_path, callbacks=[callback], logger=False, enable_progress_bar=False,
                         enable_model_summary=False, num_sanity_val_steps=0, limit_val_batches=1, **trainer_kwargs)
    trainer.fit(WorseningModel())
    return trainer


def _step(path) -> int:
    return torch.load(path, weights_only=False)["global_step"]


def test_last_checkpoint_is_the_final_step_when_the_final_validation_is_worse(tmp_path):
    callback = AdapterCheckpoint(dirpath=tmp_path / "checkpoints", monitor="val/score", mode="max",
                                 save_top_k=1, save_last=True, filename="step={step}", auto_insert_metric_name=False)
    _fit(tmp_path, callback, max_steps=6, val_check_interval=2, limit_train_batches=64)
    assert _step(tmp_path / "checkpoints" / "last.ckpt") == 6  # Lightning 2.6 alone leaves it at step 2
    assert callback.best_model_path.endswith("step=2.ckpt")  # the choice is still the best validation
    assert _step(callback.best_model_path) == 2


def test_last_checkpoint_with_validation_at_epoch_ends(tmp_path):
    callback = AdapterCheckpoint(dirpath=tmp_path / "checkpoints", monitor="val/score", mode="max",
                                 save_top_k=1, save_last=True, filename="step={step}", auto_insert_metric_name=False)
    _fit(tmp_path, callback, max_epochs=3, limit_train_batches=2)
    assert _step(tmp_path / "checkpoints" / "last.ckpt") == 6
    assert _step(callback.best_model_path) == 2
    assert sorted(p.name for p in (tmp_path / "checkpoints").glob("*.ckpt")) == ["last.ckpt", "step=2.ckpt"]


class AdapterModel(WorseningModel):
    """Saves a stand-in adapter folder, as LoRALanguageModule.save_adapter does (weights in a file)."""

    def save_adapter(self, folder) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        torch.save(self.state_dict(), folder / "adapter_model.bin")


def test_adapter_folders_carry_export_adapters_marker(tmp_path):
    """Issue 36: export-adapter replaces only what it wrote; the adapter beside a checkpoint counts as its own,
    so exporting a checkpoint again into that folder is a rerun, and another checkpoint's needs --force."""
    import pytest

    from egohorizon.owned_output import OwnershipError, release_all
    from egohorizon.run.export import claim_export

    callback = AdapterCheckpoint(dirpath=tmp_path / "checkpoints", save_last=True, filename="step={step}")
    pl.Trainer(default_root_dir=tmp_path, callbacks=[callback], logger=False, enable_progress_bar=False,
               enable_model_summary=False, num_sanity_val_steps=0, limit_val_batches=1, max_steps=2,
               limit_train_batches=2).fit(AdapterModel())
    checkpoints = tmp_path / "checkpoints"
    claim_export(checkpoints / "last.adapter", checkpoints / "last.ckpt", tmp_path)
    release_all()
    with pytest.raises(OwnershipError, match="from other inputs"):
        claim_export(checkpoints / "last.adapter", checkpoints / "step=2.ckpt", tmp_path)
    claim_export(checkpoints / "last.adapter", checkpoints / "step=2.ckpt", tmp_path, force=True)
    release_all()
