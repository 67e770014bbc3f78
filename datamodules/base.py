"""TaskDataModule: what ``egohorizon.run`` may call on any task's datamodule, with defaults.

``run.train`` builds a datamodule from the config and then, in this order:

1. ``prepare()``: build or load what the splits need (forecast points, the demo world's shards), once,
   before anything else; the split is fixed here.
2. ``training_corpus()``: texts of the training split, only called when a backbone needs them (the
   tiny offline backbone trains its tokenizer on them; a real one never calls it).
3. ``set_tokenizer(tokenizer)`` and ``set_processor(processor)``: the backbone's text tokenizer, and its
   image processor (None for a text-only backbone). A datamodule that feeds images needs the processor.
4. Lightning's ``train/val/test_dataloader``.
5. ``eval_items(split)``: item id -> item of a held-out split, what the generation-eval callback parses
   and scores (``egohorizon.tasks``); only tasks that have a callback need it. ``eval_options(split)``:
   scoring options that only the data knows, added to the callback's ``score_options`` (the caption
   task's most frequent training action); none by default.
6. ``day_split()`` and ``item_days(split)``: the day split used and each held-out item's (participant,
   day) pairs; the run records the split (``split.json``) and eval.py and compare check scored items
   against it (``egohorizon.run.split_record``).

eval.py (``egohorizon.run.eval_build``) asks the class, before building it, what it takes to evaluate a
held-out split: ``takes_split_file()`` (a day split file, such as the evaluated run's own, replaces the
split drawn from the data settings) and ``evaluation_setup(split, points_file, split_file, data)`` (the
constructor arguments beside the data config's, and the loader slot that then holds the split). These
declared answers are the contract; nobody reads a constructor's signature.

Nothing is patched into a datamodule from outside: these calls are the whole interface.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import lightning as L


@dataclass(frozen=True)
class EvalSetup:
    """What eval.py builds a datamodule with to evaluate one held-out split, and where the split then is."""

    arguments: dict[str, Any] = field(default_factory=dict)  # constructor arguments beside the data config's
    slot: str = "test"  # the loader ("test" or "val") that holds the evaluated split once built


class TaskDataModule(L.LightningDataModule):
    tokenizer: Any = None
    processor: Any = None
    # The data settings that shape a prompt: compare prompts each checkpoint with the values its adapter
    # recorded (egohorizon_adapter.json, "data"), whatever the first run's data config says. The prompt
    # file itself is not among them: eval.py reads it from beside the adapter.
    PROMPT_SETTINGS: ClassVar[tuple[str, ...]] = ("use_chat_template", "max_length")
    # The data settings recorded beside every adapter this datamodule trains, read from the data config:
    # what eval.py, compare, serve and the offline jobs need to prompt the adapter as it was trained. A
    # task adds its own (ForecastDataModule: levels, K, context).
    ADAPTER_SETTINGS: ClassVar[tuple[str, ...]] = ("prompt", *PROMPT_SETTINGS)

    @classmethod
    def in_context_settings(cls, generation: dict[str, Any]) -> dict[str, Any]:
        """Data settings for an untrained backbone prompted in context, given the model's ``generation``
        config; decided before the datamodule is built. None by default (ForecastDataModule: one answer
        that lists every candidate)."""
        return {}

    @classmethod
    def takes_split_file(cls) -> bool:
        """Whether a ``split_file`` argument (a day split file: a run's ``split.json``) replaces the split
        this datamodule draws itself; eval.py then passes the evaluated run's own and compare the runs'
        shared one. No by default."""
        return False

    @classmethod
    def evaluation_setup(cls, split: str, points_file: str | None = None, split_file: str | None = None,
                         data: Mapping[str, Any] | None = None) -> EvalSetup:
        """How eval.py builds this datamodule to evaluate the held-out ``split`` (val or test), given its
        ``points=`` file, the evaluated run's day split file (only offered where ``takes_split_file``) and
        the resolved data settings. By default the split's own loader, a day split file when given, and
        no points file (refused: the held-out items come from the data settings)."""
        if points_file:
            from egohorizon.errors import ConfigError

            raise ConfigError(
                f"points={points_file}: the {cls.__module__}.{cls.__qualname__} datamodule takes no points file; "
                "its held-out items come from its data settings (split=val|test)"
            )
        return EvalSetup({"split_file": split_file} if split_file else {}, slot=split)

    def prepare(self) -> None:
        """Build or load the splits' inputs; called once, before the backbone is prepared."""

    def training_corpus(self) -> list[str]:
        """Texts of the training split for a tokenizer trained in code; none by default."""
        return []

    def set_tokenizer(self, tokenizer) -> None:
        self.tokenizer = tokenizer

    def set_processor(self, processor) -> None:
        self.processor = processor

    def eval_options(self, split: str) -> dict[str, Any]:
        """Options for the task's ``evaluate`` that come from the data (e.g. training-day statistics)."""
        return {}

    def day_split(self):
        """The ``DaySplit`` the splits were made with (recorded in the run folder as ``split.json``,
        ``egohorizon.run.split_record``), or None when the datamodule knows none (points read from a file)."""
        from egohorizon.data.splits import DaySplit

        split = getattr(self, "split", None)
        return split if isinstance(split, DaySplit) else None

    def item_days(self, split: str) -> dict[str, set[tuple[str, str]]]:
        """Item id -> the (participant, day) pairs its gold comes from, for the held-out items of ``split``:
        what eval.py and compare check against a run's training days."""
        from egohorizon.run.split_record import days_of_item

        return {item_id: days_of_item(item) for item_id, item in self.eval_items(split).items()}

    def eval_items(self, split: str) -> dict[str, Any]:
        """The held-out items of ``split`` by id; a datamodule without generation metrics has none."""
        from egohorizon.errors import ConfigError

        raise ConfigError(
            f"{type(self).__name__} has no items to score (split {split!r}): this task has no "
            "generation-eval callback yet; remove it from the callbacks"
        )



def load_events(events_path: str | None, demo_dir: str | None) -> list:
    """``data.events`` (an events.jsonl, or a folder holding one), else the demo world in ``demo_dir``
    (generated there on first use)."""
    from pathlib import Path

    from egohorizon.errors import ConfigError
    from egohorizon.schema import Event, load_jsonl

    if events_path:
        path = Path(events_path)
        path = path / "events.jsonl" if path.is_dir() else path
        if not path.is_file():
            raise ConfigError(f"data.events: {path} does not exist")
        return load_jsonl(path, Event)
    from egohorizon.data.demo import ensure_demo_world, load_demo_world

    return load_demo_world(ensure_demo_world(demo_dir)).events
