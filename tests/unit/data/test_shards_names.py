"""Shard paths and window keys from participant/day/session ids (issue 22 item 3): ids that read alike
(``Zoë``/``Zoé``, ``p1``/``../p1``) get their own shards, no id writes outside the shard folder, and
``shards verify`` catches an index with two entries naming one file or a path leaving the folder."""

from __future__ import annotations

import json
import re

import pytest
from shard_helpers import DAY0, make_source

from egohorizon.cli import main
from egohorizon.data.shards import writer
from egohorizon.data.shards.index import ShardIndex
from egohorizon.data.shards.writer import build_shards, plan_shards
from egohorizon.data.windows.sample import WindowConfig, safe_name
from egohorizon.errors import ConfigError, DataError

CONFIG = WindowConfig(long_side=32, crop_size=16)
ALIKE = ["Zoë", "Zoé", "p1", "../p1", "/tmp/p1", "-p1", ""]


def test_safe_name_keeps_safe_ids_and_hashes_every_changed_one():
    assert [safe_name(t) for t in ("p1", "2023-11-14", "s_01", "undated-P01_101")] == \
        ["p1", "2023-11-14", "s_01", "undated-P01_101"]  # unchanged: shards built before keep their paths
    names = [safe_name(t) for t in ALIKE]
    assert len(set(names)) == len(ALIKE)
    assert all(re.fullmatch(r"[A-Za-z0-9_-]+", n) for n in names)
    assert names[0].startswith("Zoe-") and names[1].startswith("Zoe-")  # the readable part stays
    assert names[3].startswith("p1-") and names[4].startswith("tmp-p1-")
    long = "a" * 50
    assert len(safe_name(long)) == 40 and safe_name(long) != safe_name(long + "b")


def test_ids_that_read_alike_get_their_own_shards_inside_the_folder(tmp_path, capsys):
    out = tmp_path / "out" / "shards"
    sources = [make_source(participant=p or "", day="2023-11-14", start=DAY0 + i * 3600)
               for i, p in enumerate(ALIKE)]
    index = build_shards(sources, out, config=CONFIG, samples_per_shard=8, deid="off", screen_text=False)
    assert sorted(e["participant"] for e in index.shards) == sorted(ALIKE)
    assert len({e["path"] for e in index.shards}) == len(ALIKE)
    assert all(e["samples"] == 3 for e in index.shards)
    # Nothing was written beside the output folder (../p1 and /tmp/p1 stay inside it).
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["shards"]
    assert main(["shards", "verify", str(out)]) == 0
    assert f"{len(ALIKE)} shards, {3 * len(ALIKE)} good samples, 0 shard(s)" in capsys.readouterr().out


def _old_safe_name(text: str, max_length: int = 40) -> str:
    """safe_name before issue 22: `Zoë` and `Zoé` were both `Zo`."""
    return re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-") or "x"


def test_a_folder_built_with_colliding_names_fails_verify_and_a_rebuild_fixes_it(tmp_path, monkeypatch, capsys):
    out = tmp_path / "shards"
    sources = [make_source(participant=p, start=DAY0 + i * 3600) for i, p in enumerate(["Zoë", "Zoé"])]
    with monkeypatch.context() as old:  # the writer as it was: one path for both participants
        old.setattr("egohorizon.data.windows.sample.safe_name", _old_safe_name)
        old.setattr(writer, "safe_name", _old_safe_name)
        old.setattr(writer, "_check_unique_names", lambda groups: None)
        build_shards(sources, out, config=CONFIG, samples_per_shard=8, deid="off", screen_text=False)
    assert [e["path"] for e in ShardIndex.load(out).shards] == ["Zo/2023-11-14/Zo_2023-11-14_00000.tar"] * 2
    assert main(["shards", "verify", str(out)]) == 1
    err = capsys.readouterr().out  # the problems; the summary goes to stderr
    assert "field 'shards[1].path': 'Zo/2023-11-14/Zo_2023-11-14_00000.tar' is also the path of shards[0]" in err
    assert "Zoë/2023-11-14 and Zoé/2023-11-14" in err and "rebuild the shards" in err
    # The rebuild into the same folder gives each participant its shard and removes the shared one.
    index = build_shards(sources, out, config=CONFIG, samples_per_shard=8, deid="off", screen_text=False)
    assert sorted(e["path"].split("/")[0] for e in index.shards) == sorted([safe_name("Zoë"), safe_name("Zoé")])
    assert not (out / "Zo").exists()
    assert main(["shards", "verify", str(out)]) == 0
    assert "2 shards, 6 good samples, 0 shard(s) with problems" in capsys.readouterr().out


@pytest.mark.parametrize("path", ["../outside.tar", "/etc/passwd", "p1/../../outside.tar"])
def test_verify_refuses_an_index_path_outside_the_folder(tmp_path, capsys, path):
    out = tmp_path / "shards"
    build_shards([make_source()], out, config=CONFIG, samples_per_shard=8, deid="off", screen_text=False)
    obj = json.loads((out / "index.json").read_text())
    obj["shards"][0]["path"] = path
    (out / "index.json").write_text(json.dumps(obj))
    assert main(["shards", "verify", str(out)]) == 1
    captured = capsys.readouterr()
    assert f"field 'shards[0].path': {path!r} is outside the shard folder" in captured.out
    assert "1 problem(s) with the index" in captured.err
    index = ShardIndex.load(out)
    with pytest.raises(DataError, match="outside the shard folder"):  # the stream never opens it either
        index.urls()


def test_an_id_spelled_like_anothers_hashed_name_is_refused(tmp_path):
    sources = [make_source(participant="Zoë"), make_source(participant=safe_name("Zoë"), start=DAY0 + 3600)]
    with pytest.raises(ConfigError, match="both map to the shard folder"):
        plan_shards(sources, CONFIG, samples_per_shard=8)


def test_two_recordings_with_one_window_key_are_refused():
    # a_b/c and a/b_c: different folders, but both keys read a_b_c_s1_w00000.
    sources = [make_source(participant="a_b", day="c"), make_source(participant="a", day="b_c")]
    with pytest.raises(ConfigError, match="both give the window key a_b_c_s1_w00000"):
        plan_shards(sources, CONFIG, samples_per_shard=8)
