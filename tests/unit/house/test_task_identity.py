"""Issue 39 §3: a task's identity is said once. The forecast group key ``L<level>_K<k>`` is spelled only by
``schema.forecast_groups.metric_key``; K is held to one rule, ``schema.forecast_groups.KS_BOUND``, at every
door (``data.ks``, ``sweep.ks``, ``build_points``); the data bounds are each datamodule's own (config_checks
keeps no ``data.*`` list), and every bound names a setting its datamodule takes; the level x K grid of
experiment files is gone (one K is ``data.ks=[10]`` on the command line, both a multirun)."""

from __future__ import annotations

import importlib
import inspect
import re
from dataclasses import replace

from conftest import REPO_ROOT

from egohorizon.run.config_checks import BOUNDS
from egohorizon.schema.forecast_groups import KS_BOUND

# An f-string or a YAML interpolation that builds the key: L{...}_K{...} or L${...}_K${...}.
KEY_SPELLING = re.compile(r"L\$?\{[^}]*\}_K\$?\{")
THE_ONE_PLACE = REPO_ROOT / "src" / "egohorizon" / "schema" / "forecast_groups.py"
DATAMODULES = sorted(p.stem for p in (REPO_ROOT / "datamodules").glob("*.py") if p.stem not in {"__init__", "base"})


def key_spellings(root=REPO_ROOT) -> list[str]:
    places = [root / "src", root / "datamodules", root / "models", root / "scripts", root / "conf"]
    paths = [p for place in places for p in sorted(place.rglob("*")) if p.suffix in {".py", ".yaml", ".sh"}]
    return [f"{path.relative_to(root)}:{n}" for path in paths if path != THE_ONE_PLACE
            for n, line in enumerate(path.read_text().splitlines(), 1) if KEY_SPELLING.search(line)]


def test_the_group_key_is_spelled_in_one_place():
    assert key_spellings() == []


def test_a_second_spelling_is_named(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "conf").mkdir()
    (tmp_path / "src" / "a.py").write_text('key = f"L{level}_K{k}"\n')
    (tmp_path / "conf" / "b.yaml").write_text("objective: val/x_L${data.levels[0]}_K${data.ks[0]}\n")
    assert key_spellings(tmp_path) == ["src/a.py:1", "conf/b.yaml:1"]


def datamodule_classes():
    from datamodules.base import TaskDataModule

    for stem in DATAMODULES:
        module = importlib.import_module(f"datamodules.{stem}")
        for klass in vars(module).values():
            if inspect.isclass(klass) and issubclass(klass, TaskDataModule) and klass.__module__ == module.__name__:
                yield klass


def test_every_k_bound_is_the_one_k_rule():
    """A bound on a list of K (``ks``) anywhere is KS_BOUND under its own key, not a restatement of it."""
    bounds = [*BOUNDS, *(bound for klass in datamodule_classes() for bound in getattr(klass, "SETTING_BOUNDS", ()))]
    k_bounds = [bound for bound in bounds if bound.key.split(".")[-1] == "ks"]
    assert {bound.key for bound in k_bounds} == {"sweep.ks", "ks"}
    assert [b.key for b in k_bounds if b != replace(KS_BOUND, key=b.key)] == []


def test_no_central_list_of_data_bounds():
    assert [bound.key for bound in BOUNDS if bound.key.startswith("data.")] == []


def test_every_datamodule_bound_names_a_setting_of_its_datamodule():
    from datamodules.base import TaskDataModule

    checked = 0
    for stem in DATAMODULES:
        module = importlib.import_module(f"datamodules.{stem}")
        for klass in vars(module).values():
            if not (inspect.isclass(klass) and issubclass(klass, TaskDataModule) and klass.__module__ == module.__name__):
                continue
            settings = {name for base in klass.__mro__ if "__init__" in vars(base)
                        for name in inspect.signature(vars(base)["__init__"]).parameters}
            bounds = [bound.key for bound in getattr(klass, "SETTING_BOUNDS", ())]
            assert bounds, f"{klass.__name__} declares no SETTING_BOUNDS"
            assert set(bounds) <= settings, f"{klass.__name__}: bounds of no setting {sorted(set(bounds) - settings)}"
            assert len(bounds) == len(set(bounds)), f"{klass.__name__}: a setting bounded twice"
            checked += 1
    assert checked == len(DATAMODULES)


# Issue 39 §3: when the ten forecast_l<L>_k1/_k10 files went, 14 experiments were left; the issue allows
# those other issues add. Each one added since is named here with its issue, so a new experiment file is a
# decision someone writes down, not a count that creeps up.
EXPERIMENTS_LEFT_BY_ISSUE_39 = 14
ADDED_SINCE = {
    "demo_epic_smollm2.yaml": "issue 37 (make demo's real run)",
    "hands_effnet_smollm2.yaml": "issue 40 item 2 (the hand annotator on real EgoHands frames)",
    "forecast_epic_long.yaml": "issue 38 item 4 (the long EPIC run)",
}


def test_the_experiments_are_no_level_by_k_grid():
    names = sorted(p.name for p in (REPO_ROOT / "conf" / "experiment").glob("*.yaml"))
    assert [n for n in names if re.fullmatch(r"forecast_l\d_k\d+\.yaml", n)] == []
    assert sorted(set(ADDED_SINCE) - set(names)) == []  # one removed: take it off the list too
    newer = [n for n in names if n not in ADDED_SINCE]
    assert len(newer) <= EXPERIMENTS_LEFT_BY_ISSUE_39, f"name a new experiment in ADDED_SINCE with its issue: {newer}"
