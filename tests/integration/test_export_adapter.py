"""Finding, reading and exporting checkpoints (egohorizon.checkpoints, egohorizon export-adapter).

The DeepSpeed ZeRO case is in test_deepspeed_export.py; here: which checkpoint a run resumes from or
exports, errors on bad input, and a Lightning checkpoint of a real toy run exported through the CLI.
"""

from __future__ import annotations

import json
import os

import pytest

from egohorizon.checkpoints import (
    Checkpoint,
    find_checkpoint,
    is_deepspeed_checkpoint,
    load_trainable_weights,
    read_checkpoint,
    resume_checkpoint,
    run_checkpoints,
)
from egohorizon.errors import ConfigError, DataError


def touch(path, mtime: float):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x")
    os.utime(path, (mtime, mtime))
    return path


def test_resume_checkpoint_is_the_newer_of_last_and_hpc(tmp_path):
    assert resume_checkpoint(tmp_path) is None
    last = touch(tmp_path / "checkpoints" / "last.ckpt", 1000)
    touch(tmp_path / "checkpoints" / "epoch=9-step=90.ckpt", 3000)  # a top-k checkpoint is not resumed
    assert resume_checkpoint(tmp_path) == last
    hpc1 = touch(tmp_path / "hpc_ckpt_1.ckpt", 2000)
    assert resume_checkpoint(tmp_path) == hpc1
    os.utime(last, (2500, 2500))  # the job ran on after the signal and wrote last.ckpt again
    assert resume_checkpoint(tmp_path) == last


def test_find_checkpoint_explicit_default_and_missing(tmp_path):
    ckpt = touch(tmp_path / "checkpoints" / "a.ckpt", 1000)
    assert find_checkpoint(tmp_path, "checkpoints/a.ckpt") == ckpt  # relative to the run folder
    assert find_checkpoint(None, ckpt) == ckpt
    assert find_checkpoint(tmp_path) == ckpt  # no last/hpc: the newest checkpoint
    with pytest.raises(DataError, match="no such checkpoint"):
        find_checkpoint(tmp_path, "nope.ckpt")
    with pytest.raises(DataError, match="no such run folder"):
        find_checkpoint(tmp_path / "missing")
    with pytest.raises(DataError, match="no checkpoint"):
        find_checkpoint(tmp_path / "checkpoints")


def test_bad_checkpoints_are_named_in_the_error(tmp_path):
    torch = pytest.importorskip("torch")
    garbage = tmp_path / "garbage.ckpt"
    garbage.write_bytes(b"not a checkpoint")
    with pytest.raises(DataError, match="garbage.ckpt: cannot read"):
        read_checkpoint(garbage)
    foreign = tmp_path / "foreign.ckpt"
    torch.save({"weights": torch.zeros(1)}, foreign)
    with pytest.raises(DataError, match="no 'state_dict'"):
        read_checkpoint(foreign)
    empty_dir = tmp_path / "folder.ckpt"
    empty_dir.mkdir()
    assert not is_deepspeed_checkpoint(empty_dir)
    with pytest.raises(DataError, match="neither a Lightning"):
        read_checkpoint(empty_dir)
    (empty_dir / "latest").write_text("checkpoint")
    assert is_deepspeed_checkpoint(empty_dir)
    with pytest.raises(DataError, match="no \\*model_states.pt"):
        read_checkpoint(empty_dir)


def test_loading_insists_on_every_trainable_weight():
    torch = pytest.importorskip("torch")
    module = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Linear(2, 1))
    module[0].requires_grad_(False)
    full = {k: v.clone() + 1 for k, v in module.state_dict().items() if k.startswith("1.")}
    load_trainable_weights(module, Checkpoint(path="x", kind="lightning", state_dict=full, global_step=1))
    assert torch.equal(module[1].bias, full["1.bias"])
    with pytest.raises(DataError, match="1 trainable weight\\(s\\) missing"):
        load_trainable_weights(module, Checkpoint(path="x", kind="lightning",
                                                  state_dict={"1.weight": full["1.weight"]}, global_step=1))
    with pytest.raises(DataError, match="the model does not have"):
        load_trainable_weights(module, Checkpoint(path="x", kind="lightning",
                                                  state_dict={**full, "2.weight": full["1.weight"]}, global_step=1))


def test_export_needs_the_run_config(tmp_path):
    torch = pytest.importorskip("torch")
    from egohorizon.run.export import export_run_adapter

    (tmp_path / "checkpoints").mkdir()
    torch.save({"state_dict": {}, "global_step": 1, "egohorizon": {"backbone": {"path": "x"}}},
               tmp_path / "checkpoints" / "last.ckpt")
    with pytest.raises(ConfigError, match="no config.yaml"):
        export_run_adapter(tmp_path)


@pytest.mark.slow
def test_lightning_checkpoint_of_a_toy_run_exports_through_the_cli(tmp_path, repo_root):
    torch = pytest.importorskip("torch")
    from forecast_toy_world import write_toy_events
    from hydra import compose, initialize_config_dir
    from peft import PeftModel
    from safetensors.torch import load_file

    from egohorizon.backbones import load_pretrained_model
    from egohorizon.cli import main
    from egohorizon.run import train
    from egohorizon.run.export import build_run_module

    events = write_toy_events(tmp_path)
    overrides = ["experiment=forecast_l3", "data=forecast_events", f"data.events={events}", "data.n_context=4",
                 "data.max_train_points=12", "data.max_eval_points=3", "data.batch_size=4", "backbone.hidden_size=32",
                 "backbone.intermediate_size=64", "backbone.num_layers=1", "backbone.num_heads=2",
                 "backbone.num_kv_heads=1", "backbone.vocab_size=300", f"backbone.cache_dir={tmp_path}/cache",
                 f"paths.run_dir={tmp_path}/run", "trainer.max_steps=4", "test_after_fit=false", "logger=csv",
                 "trainer.enable_progress_bar=false", "model.optimizer.lr=1e-2"]
    with initialize_config_dir(config_dir=str(repo_root / "conf"), version_base="1.3"):
        train(compose("train", overrides=overrides))
    run = tmp_path / "run"

    assert main(["export-adapter", str(run), "--out", str(tmp_path / "exported")]) == 0
    exported, saved = tmp_path / "exported", run / "checkpoints" / "last.adapter"
    info = json.loads((exported / "export.json").read_text())
    assert info["kind"] == "lightning" and info["global_step"] == 4
    # The same weights as the adapter AdapterCheckpoint saved beside last.ckpt during training ...
    mine, theirs = load_file(exported / "adapter_model.safetensors"), load_file(saved / "adapter_model.safetensors")
    assert mine.keys() == theirs.keys() and all(torch.equal(mine[k], theirs[k]) for k in mine)
    # ... and the same outputs as the run's module with the checkpoint loaded.
    checkpoint = read_checkpoint(run / "checkpoints" / "last.ckpt")
    module = build_run_module(run, checkpoint)
    load_trainable_weights(module, checkpoint)
    ids = module.tokenizer(["have breakfast, then"], return_tensors="pt")
    with torch.no_grad():
        expected = module(ids["input_ids"], ids["attention_mask"]).logits
        module.model = PeftModel.from_pretrained(load_pretrained_model(module.backbone.base_path, kind="vlm"),
                                                 exported).eval()
        got = module(ids["input_ids"], ids["attention_mask"]).logits
    torch.testing.assert_close(got, expected)
    # export-adapter builds the base in bfloat16 (a 7B base: ~15 GB, not ~30), the trainable weights in float32.
    exporting = build_run_module(run, checkpoint, dtype="bfloat16")
    frozen = {p.dtype for p in exporting.parameters() if not p.requires_grad}
    assert frozen == {torch.bfloat16} and {p.dtype for p in exporting.parameters() if p.requires_grad} == {torch.float32}
    # Issue 36: re-exporting into the run's own adapter folder (AdapterCheckpoint's marker) and into the
    # earlier export are reruns; a user's folder and the run itself are refused, and nothing is lost.
    assert main(["export-adapter", str(run)]) == 0 and (saved / "export.json").is_file()
    assert main(["export-adapter", str(run), "--out", str(exported)]) == 0
    user = tmp_path / "mine"
    user.mkdir()
    (user / "notes.txt").write_text("mine")
    before = sorted(p.name for p in run.rglob("*"))
    for out in (user, run, tmp_path):
        assert main(["export-adapter", str(run), "--out", str(out)]) == 2
    assert (user / "notes.txt").read_text() == "mine" and sorted(p.name for p in run.rglob("*")) == before


def test_a_deepspeed_folder_rewritten_after_an_hpc_checkpoint_is_the_newer(tmp_path):
    # DeepSpeed saves last.ckpt/ as a folder: saving again rewrites `latest` and the files of its tag
    # folder, the folder's own mtime stays that of its creation (before the hpc_ckpt here).
    last = tmp_path / "checkpoints" / "last.ckpt"
    touch(last / "checkpoint" / "mp_rank_00_model_states.pt", 1000)
    touch(last / "latest", 1000)
    os.utime(last, (1000, 1000))
    hpc = touch(tmp_path / "hpc_ckpt_1.ckpt" / "checkpoint" / "mp_rank_00_model_states.pt", 2000).parent.parent
    os.utime(hpc, (2000, 2000))
    assert resume_checkpoint(tmp_path) == hpc
    # the job ran on after the signal: DeepSpeed wrote last.ckpt/ again, inside
    touch(last / "checkpoint" / "mp_rank_00_model_states.pt", 2500)
    touch(last / "latest", 2500)
    assert last.stat().st_mtime == 1000
    assert resume_checkpoint(tmp_path) == last
    assert find_checkpoint(tmp_path) == last  # what export-adapter RUN takes
    assert run_checkpoints(tmp_path)[-1] == last
