"""The answer set of a training run, written beside an adapter (``answer_set.json``) that lacks it.

``train.py`` writes the file into every adapter folder of a run with ``model.generation.answer_set=train``
(``models.caption.CaptionModule.save_adapter``) and ``egohorizon export-adapter`` into the adapters it
exports. Adapters saved before the file existed get it from ``egohorizon caption answer-set ADAPTER``:
the run's datamodule is rebuilt from ``<run>/config.yaml`` (the same shards, the same day split) and
its training windows' answers are collected by the code the training used
(``egohorizon.llm.answer_set.training_answer_set``). Nothing is retrained; no weight is read.
"""

from __future__ import annotations

import logging
from pathlib import Path

from egohorizon.errors import ConfigError
from egohorizon.llm.answer_set import AnswerSet, write_answer_set

log = logging.getLogger(__name__)


def run_answer_set(run_dir: str | Path) -> AnswerSet:
    """The training answers of the run in ``run_dir`` (its config.yaml's datamodule)."""
    from omegaconf import OmegaConf

    from egohorizon.llm.answer_set import training_answer_set
    from egohorizon.run.setup import build_datamodule

    config_file = Path(run_dir) / "config.yaml"
    if not config_file.is_file():
        raise ConfigError(f"{run_dir}: no config.yaml (the resolved config train.py writes into a run folder); "
                          "pass --run with the adapter's run folder")
    cfg = OmegaConf.load(config_file)
    datamodule = build_datamodule(cfg)
    if not hasattr(datamodule, "training_answers"):
        raise ConfigError(f"{config_file}: data {cfg.data.get('_target_')} has no training answers (not a "
                          "caption run)")
    return training_answer_set(datamodule)


def add_answer_set(model: str | Path, run_dir: str | Path | None = None, force: bool = False) -> dict:
    """Writes ``answer_set.json`` into the adapter ``model`` (a *.adapter folder, a .ckpt, or a run
    folder: its best adapter) from its run's training windows; returns what was written."""
    from egohorizon.checkpoints import read_adapter_meta, resolve_adapter, run_dir_of
    from egohorizon.llm.answer_set import ANSWER_SET_FILE, read_answer_set

    adapter = resolve_adapter(str(model)).resolve()
    meta = read_adapter_meta(adapter)
    if (meta.get("generation") or {}).get("answer_set") != "train":
        raise ConfigError(f"{adapter}: this adapter was not trained with model.generation.answer_set=train; it "
                          "decodes freely and needs no answer set")
    if (adapter / ANSWER_SET_FILE).is_file() and not force:
        existing = read_answer_set(adapter)  # a corrupt file is named here; --force writes it again
        raise ConfigError(f"{adapter / ANSWER_SET_FILE}: exists ({len(existing.answers)} answers); pass --force "
                          "to write it again")
    answer_set = run_answer_set(run_dir or run_dir_of(adapter))
    path = write_answer_set(adapter, answer_set)
    log.info("%s: %d answers of %d training windows", path, len(answer_set.answers), answer_set.training_windows)
    return {"adapter": str(adapter), **answer_set.summary(), "file": str(path)}
