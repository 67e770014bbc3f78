"""experiment=demo_epic_smollm2 (scripts/demo.sh): it composes and resolves as a small diff over
forecast_epic_smollm2 (the full run, left as it is); experiment=forecast_epic_long (issue 38 item 4) as a
small diff over the demo."""

from __future__ import annotations

from pathlib import Path

from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from egohorizon.run.resolvers import register_resolvers

REPO_ROOT = Path(__file__).resolve().parents[3]
# Every key the demo may change (docs/real-model.md, "The demo", says why each was chosen).
DEMO_KEYS = {"task_name", "data.n_context", "data.max_length", "data.max_eval_points",
             "data.max_test_points_by_k", "model.lora.lora_dropout", "model.optimizer.lr", "model.scheduler.num_warmup_steps",
             "model.generation.actions", "trainer.max_steps", "trainer.val_check_interval"}


def _resolved(experiment: str, tmp_path: Path) -> dict:
    register_resolvers()
    with initialize_config_dir(config_dir=str(REPO_ROOT / "conf"), version_base="1.3"):
        cfg = compose("train", overrides=[f"experiment={experiment}", "logger=csv", f"paths.run_dir={tmp_path}/run"])
    return OmegaConf.to_container(cfg, resolve=True)


def _flat(tree: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value and all(isinstance(k, str) for k in value):
            out.update(_flat(value, f"{name}."))
        else:
            out[name] = value
    return out


def _changed(a: dict, b: dict) -> set[str]:
    """The flat keys whose values differ between two resolved configs (or that only one has)."""
    return {k for k in a.keys() | b.keys() if a.get(k) != b.get(k)}


def test_the_demo_experiment_resolves_as_a_small_diff_of_the_full_run(tmp_path):
    demo = _flat(_resolved("demo_epic_smollm2", tmp_path))
    full = _flat(_resolved("forecast_epic_smollm2", tmp_path))
    changed = _changed(demo, full)
    assert changed <= DEMO_KEYS, changed - DEMO_KEYS
    assert demo["backbone._target_"] == "egohorizon.backbones.GGUFBackbone"  # the real SmolLM2, not the toy
    assert demo["data.convert_from.root"] is None and demo["data.split_strategy"] == "official"
    assert demo["objective"] == "val/forecast_S_norm" and demo["data.max_test_points_by_k"] == {1: 120}


# What the long run may change over the demo (its experiment file says why each).
LONG_KEYS = {"task_name", "data.max_train_points", "data.max_test_points_by_k", "model.scheduler.num_warmup_steps",
             "trainer.max_steps", "trainer.val_check_interval"}


def test_the_long_run_resolves_as_a_small_diff_of_the_demo(tmp_path):
    long = _flat(_resolved("forecast_epic_long", tmp_path))
    demo = _flat(_resolved("demo_epic_smollm2", tmp_path))
    changed = _changed(long, demo)
    assert changed <= LONG_KEYS, changed - LONG_KEYS
    assert long["backbone._target_"] == "egohorizon.backbones.GGUFBackbone"  # the real SmolLM2, not the toy
    assert long["data.max_train_points"] == 600 and long["data.max_test_points_by_k"] == {1: 120, 10: 120}
    assert (long["trainer.max_steps"], long["trainer.val_check_interval"]) == (300, 75)


def test_make_demo_runs_the_real_demo():
    """`make demo` is the real one (issue 37): scripts/demo.sh, which trains experiment=demo_epic_smollm2."""
    makefile = (REPO_ROOT / "Makefile").read_text()
    recipe = makefile.split("\ndemo:", 1)[1].split("\n\n", 1)[0]
    assert "scripts/demo.sh" in recipe and "forecast_l3" not in recipe
    assert "experiment=demo_epic_smollm2" in (REPO_ROOT / "scripts" / "demo.sh").read_text()
