"""`egohorizon points` on the demo world: every level and K, held-out days, the guard re-run on the files."""

import pytest

from egohorizon.cli import main
from egohorizon.data.points.leakage import check_points
from egohorizon.data.splits import DaySplit
from egohorizon.schema import Event, ForecastPoint, load_jsonl


@pytest.mark.slow
def test_points_command_on_the_demo_world(tmp_path, capsys):
    from egohorizon.data.demo import ensure_demo_world

    world = ensure_demo_world(tmp_path / "demo")
    out = tmp_path / "points"
    assert main(["points", "--events", str(world), "--out", str(out), "--max-points", "40",
                 "--context", "20"]) == 0
    table = capsys.readouterr().out
    assert table.splitlines()[0].split()[:4] == ["split", "days", "L1", "K1"]
    events = load_jsonl(world / "events.jsonl", Event)
    split = DaySplit.load(out / "splits.json")
    for split_name in ("train", "val", "test"):
        points = load_jsonl(out / f"points_{split_name}.jsonl", ForecastPoint)
        assert check_points(points, events, split, expected_split=split_name) == len(points)
        at_l3 = [p for p in points if p.level == 3]
        assert {p.k for p in at_l3} == {1, 10} and len(at_l3) == 80  # the forecaster trains on L3
        assert len({p.participant for p in points}) == 2
