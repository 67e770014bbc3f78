"""Each validation pass keeps its own predictions and report: two passes in one epoch (val_check_interval in
steps) were written to the same val_epoch000 files, the second overwriting the first."""

from __future__ import annotations

from egohorizon.callbacks.generation_eval import report_tag


def test_two_validations_in_one_epoch_get_two_names():
    first, second = report_tag("val", 0, 50), report_tag("val", 0, 100)
    assert first == "val_epoch000_step000050" and second == "val_epoch000_step000100"


def test_names_sort_in_training_order_and_keep_the_epoch_prefix_scripts_glob():
    names = [report_tag("val", epoch, step) for epoch, step in [(0, 50), (0, 100), (1, 150), (2, 1000)]]
    assert names == sorted(names) and all(name.startswith("val_epoch") for name in names)


def test_the_test_split_has_one_name():
    assert report_tag("test", 3, 1200) == "test"
