"""Issue 39 §2: what eval.py builds a datamodule with to evaluate a held-out split is declared by the class
(``TaskDataModule.takes_split_file`` and ``evaluation_setup``), asked before it is built."""

from __future__ import annotations

import pytest

from datamodules.abstract import AbstractDataModule
from datamodules.caption import CaptionDataModule
from datamodules.forecast import ForecastDataModule
from datamodules.forecast_visual import VisualForecastDataModule
from datamodules.hands import HandsDataModule
from datamodules.qa import QADataModule
from egohorizon.errors import ConfigError


def test_forecasting_puts_any_split_in_its_test_slot_and_takes_points_a_split_and_a_train_cap():
    for cls in (ForecastDataModule, VisualForecastDataModule):
        assert cls.takes_split_file()
        setup = cls.evaluation_setup("val", points_file="p.jsonl", split_file="s.json", data={"max_eval_points": 7})
        assert setup.slot == "test"
        assert setup.arguments == {"split_file": "s.json", "max_train_points": 7, "eval_split": "val",
                                   "points_file": "p.jsonl"}
        # No max_eval_points in the data settings: the training points are left as configured.
        assert cls.evaluation_setup("test", data={}).arguments == {"eval_split": "test"}


def test_the_other_tasks_evaluate_a_split_in_its_own_loader():
    for cls in (CaptionDataModule, AbstractDataModule):
        assert cls.takes_split_file()
        assert cls.evaluation_setup("val", split_file="s.json").arguments == {"split_file": "s.json"}
    for cls in (QADataModule, HandsDataModule):
        assert not cls.takes_split_file()
        setup = cls.evaluation_setup("val")
        assert (setup.slot, setup.arguments) == ("val", {})


def test_a_points_file_is_refused_by_a_datamodule_that_takes_none_naming_it():
    with pytest.raises(ConfigError, match=r"points=x.jsonl: the datamodules.qa.QADataModule datamodule takes no "
                                          r"points file"):
        QADataModule.evaluation_setup("test", points_file="x.jsonl")
