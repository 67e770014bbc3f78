"""Cue-driven switches (issue 15, item 1): an option of the demo world that leaves the default world as
it is, draws cues before announced switches, and marks the forecast points that start at one."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from egohorizon.data.demo import load_demo_world
from egohorizon.data.demo.cues.switches import CUE_OF_KEY, CUES_FILE, CueIndex, mark_cue_points, read_cues
from egohorizon.data.demo.render import render
from egohorizon.data.demo.writer import build_demo_world, ensure_demo_world, is_current
from egohorizon.errors import DataError

WORLD = {"seed": 0, "participants": 1, "weeks": 2}


@pytest.fixture(scope="module")
def worlds(tmp_path_factory):
    root = tmp_path_factory.mktemp("cues")
    plain = build_demo_world(root / "plain", **WORLD)
    cued = build_demo_world(root / "cued", cue_switches=True, **WORLD)
    return plain, load_demo_world(cued.path)


def test_default_world_is_unchanged(worlds):
    plain, cued = worlds
    for name in ("events.jsonl", "recordings.jsonl", "transcript.jsonl"):
        assert (plain.path / name).read_bytes() == (cued.path / name).read_bytes(), name
    assert not (plain.path / CUES_FILE).exists()
    assert "cue_switches" not in json.loads((plain.path / "world.json").read_text())
    plain_meta = {k: v for k, v in plain.meta.items() if k != "generation_s"}
    cued_meta = {k: v for k, v in cued.meta.items() if k not in ("generation_s", "cue_switches")}
    assert plain_meta == cued_meta
    # the default world's frames are the renderer's, untouched, including at the cue times of the cue world
    for cue in cued.cues.cues[:10]:
        for t in (cue["start"], cue["t_switch"] - 1):
            image, gaze, confidence = plain.render_frame(cue["session"], t, 64)
            direct, direct_gaze, direct_conf = render(plain.action_at(cue["session"], t), 0, cue["session"], t, 64)
            assert image.tobytes() == direct.tobytes() and (gaze, confidence) == (direct_gaze, direct_conf)


def test_cues_are_drawn_only_in_their_window(worlds):
    plain, cued = worlds
    assert cued.cues is not None and len(cued.cues.cues) > 20
    kinds = {c["kind"] for c in cued.cues.cues}
    assert kinds == {"phone", "person"}
    for cue in cued.cues.cues[:15]:
        session = cue["session"]
        assert cue["start"] < cue["t_switch"] and 3 <= cue["t_switch"] - cue["start"] <= 8
        inside = cued.render_frame(session, cue["t_switch"] - 1, 64)[0]
        assert inside.tobytes() != plain.render_frame(session, cue["t_switch"] - 1, 64)[0].tobytes()
        for t in (cue["start"] - 1, cue["t_switch"]):  # before the cue and at the switch: no cue
            if cued.session(session).start <= t <= cued.session(session).end and cued.cues.at(session, t) is None:
                assert cued.render_frame(session, t, 64)[0].tobytes() == plain.render_frame(session, t, 64)[0].tobytes()
        switch = next(e for e in cued.events if e.id == cue["event"])
        assert switch.start == cue["t_switch"] and CUE_OF_KEY[switch.meta["key"]] == cue["kind"]


def test_gaze_moves_onto_the_cue_when_looked_at(worlds):
    _, cued = worlds
    looked = [c for c in cued.cues.cues if c["gaze_on_cue"]]
    assert 0.5 < len(looked) / len(cued.cues.cues) < 0.9
    from egohorizon.data.demo.cues.switches import cue_box

    hits = 0
    for cue in looked[:20]:
        _, gaze, _ = cued.render_frame(cue["session"], cue["start"], 100)
        if gaze is not None:
            x0, y0, x1, y1 = cue_box(cue["kind"], 100)
            hits += x0 - 10 <= gaze[0] <= x1 + 10 and y0 - 10 <= gaze[1] <= y1 + 10
    assert hits >= 15


def test_ensure_regenerates_for_the_option(tmp_path):
    path = ensure_demo_world(tmp_path / "w", **WORLD)
    assert is_current(path, **WORLD) and not is_current(path, cue_switches=True, **WORLD)
    ensure_demo_world(path, cue_switches=True, **WORLD)
    assert is_current(path, cue_switches=True, **WORLD) and not is_current(path, **WORLD)
    assert (path / CUES_FILE).is_file()


def test_points_at_a_cue_are_marked(worlds):
    from egohorizon.data.points.build import build_points
    from egohorizon.data.splits import make_day_split

    _, cued = worlds
    split = make_day_split(cued.events, seed=0, min_history_days=2)
    points = build_points(cued.events, split, levels=(1, 2), ks=(1,), n_context=5, seed=0)
    every = [p for name in points for p in points[name]]
    n = mark_cue_points(every, cued.cues)
    switches = {(c["participant"], c["t_switch"]) for c in cued.cues.cues}
    marked = {(p.participant, p.t0) for p in every if p.meta["cue_driven"]}
    assert n == sum(p.meta["cue_driven"] for p in every) > 10
    assert marked == {(p.participant, p.t0) for p in every if (p.participant, p.t0) in switches}
    assert all(p.meta["cue"] in ("phone", "person") for p in every if p.meta["cue_driven"])
    # the mark does not disturb the leakage guard
    from egohorizon.data.points.leakage import check_points

    check_points(points["test"], cued.events, split, expected_split="test")


def test_bad_cue_line_is_named(tmp_path):
    path = tmp_path / CUES_FILE
    path.write_text('{"participant": "p01", "session": "s", "t_switch": 5, "start": 9, "kind": "phone", '
                    '"event": "e", "gaze_on_cue": true}\n{"participant": "p01"}\n')
    with pytest.raises(DataError) as error:
        read_cues(path)
    assert f"{path}:1: fields start/t_switch" in str(error.value) and f"{path}:2: missing field(s)" in str(error.value)


def test_cue_index_window():
    index = CueIndex([{"participant": "p", "session": "s", "t_switch": 10.0, "start": 6.0, "kind": "phone",
                       "event": "e", "gaze_on_cue": False}])
    assert [index.at("s", t) is not None for t in (5, 6, 9.9, 10)] == [False, True, True, False]
    assert index.at("other", 7) is None


def test_cli_option_and_points_file(tmp_path):
    world = tmp_path / "w"
    run = [sys.executable, "-m", "egohorizon.cli"]
    done = subprocess.run(run + ["demo", "--out", str(world), "--participants", "1", "--weeks", "2",
                                 "--cue-switches", "--json"], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["cue_switches"]["cues"] > 0
    done = subprocess.run(run + ["points", "--events", str(world), "--out", str(tmp_path / "p"), "--levels", "1",
                                 "--k", "1", "--context", "5", "--min-history-days", "2"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(x) for x in (tmp_path / "p" / "points_train.jsonl").read_text().splitlines()]
    assert any(p["meta"]["cue_driven"] for p in lines) and all("cue_driven" in p["meta"] for p in lines)
    manifest = json.loads((tmp_path / "p" / "points_manifest.json").read_text())
    assert manifest["cue_driven"]["train"] == sum(p["meta"]["cue_driven"] for p in lines)
