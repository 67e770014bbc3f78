"""The hierarchy figures: one day's icicle chart (``egohorizon data plot-day``) and the per-level
table + PNG (``data stats --plot``, written by ``egohorizon abstract``), on a small hand-built hierarchy."""

from __future__ import annotations

from pathlib import Path

import pytest
from event_days import day_hierarchy
from PIL import Image

from egohorizon.cli import main
from egohorizon.data.events.figures import format_level_table, level_rows, plot_day, write_level_figures
from egohorizon.data.events.hierarchy import check_hierarchy
from egohorizon.errors import DataError
from egohorizon.schema import Event, write_jsonl


@pytest.fixture
def events() -> list[Event]:
    events = day_hierarchy("p1", "2025-03-03") + day_hierarchy("p1", "2025-03-04") + day_hierarchy("p2", "2025-03-03")
    assert check_hierarchy(events).ok
    return events


def opens_as_png(path: Path) -> tuple[int, int]:
    with Image.open(path) as image:
        assert image.format == "PNG"
        image.load()  # decodes every pixel: a truncated file fails here
        return image.size


def test_plot_day_draws_the_day_and_repeats_byte_for_byte(events, tmp_path):
    out = plot_day(events, "2025-03-04", tmp_path / "day.png")  # only p1 has that day
    width, height = opens_as_png(out)
    assert width > 1000 and height > 200
    again = plot_day(events, "2025-03-04", tmp_path / "again.png")
    assert out.read_bytes() == again.read_bytes()


def test_plot_day_names_what_exists_on_bad_input(events, tmp_path):
    with pytest.raises(DataError, match=r"2 participants have that day \(p1, p2\); pass --participant"):
        plot_day(events, "2025-03-03", tmp_path / "x.png")
    with pytest.raises(DataError, match=r"--day '2025-03-05': no events .*days: 2025-03-03, 2025-03-04"):
        plot_day(events, "2025-03-05", tmp_path / "x.png")
    with pytest.raises(DataError, match=r"no events of participant p2 on that day; days: 2025-03-03$"):
        plot_day(events, "2025-03-04", tmp_path / "x.png", participant="p2")
    with pytest.raises(DataError, match=r"--participant 'p9': not in the events; participants: p1, p2"):
        plot_day(events, "2025-03-03", tmp_path / "x.png", participant="p9")
    assert not (tmp_path / "x.png").exists()


def test_plot_day_command(events, tmp_path, capsys):
    write_jsonl(tmp_path / "h" / "events.jsonl", events)
    out = tmp_path / "p2.png"
    assert main(["data", "plot-day", str(tmp_path / "h"), "--day", "2025-03-03", "--participant", "p2",
                 "--out", str(out)]) == 0
    assert capsys.readouterr().out.strip() == str(out)
    opens_as_png(out)
    assert main(["data", "plot-day", str(tmp_path / "h"), "--day", "March 3", "--out", str(tmp_path / "x.png")]) == 2
    err = capsys.readouterr().err
    assert "--day 'March 3': no events" in err and "Traceback" not in err
    assert main(["data", "plot-day", str(tmp_path / "none"), "--day", "2025-03-03", "--out", str(out)]) == 2
    assert "no events .jsonl file found" in capsys.readouterr().err


def test_level_table_and_png(events, tmp_path, capsys):
    rows = level_rows(events)
    assert [(r["level"], r["count"], r["compression"]) for r in rows] == [
        ("L1", 36, None), ("L2", 12, 3.0), ("L3", 6, 2.0)]
    assert rows[0]["mean_duration_s"] == 50.0 and rows[1]["mean_duration_s"] == 170.0
    table = format_level_table(rows)
    assert "| L2 | 12 | 2.8 min | 3.00x |" in table and "| L1 | 36 | 50.0 s | - |" in table
    narrow = format_level_table([{"level": "L2", "count": 12, "mean_duration_s": 60.0, "compression": 1.2}])
    assert "1.20x (outside 1.6-11x)" in narrow
    written = write_level_figures(events, tmp_path / "fig")
    assert (tmp_path / "fig" / "levels.md").read_text() == table
    opens_as_png(Path(written["levels_png"]))
    assert write_level_figures([], tmp_path / "empty") == {} and not (tmp_path / "empty").exists()
    write_jsonl(tmp_path / "events.jsonl", events)
    assert main(["data", "stats", str(tmp_path / "events.jsonl"), "--plot", str(tmp_path / "stats.png")]) == 0
    assert "L3" in capsys.readouterr().out
    opens_as_png(tmp_path / "stats.png")


@pytest.mark.parametrize("argv", [["data", "plot-day", "EVENTS", "--day", "2025-03-03", "--out", "OUT"],
                                  ["data", "stats", "EVENTS", "--plot", "OUT"]])
def test_a_figure_name_matplotlib_cannot_write_is_refused_before_reading(capsys, tmp_path, argv):
    """Bad-input pass: --out day.txt read every event, then crashed in savefig with a ValueError
    traceback ("Format 'txt' is not supported")."""
    events = tmp_path / "events.jsonl"
    write_jsonl(events, day_hierarchy("p1", "2025-03-03"))
    out = tmp_path / "day.txt"
    with pytest.raises(SystemExit) as exit_:
        main([str(events) if a == "EVENTS" else str(out) if a == "OUT" else a for a in argv])
    assert exit_.value.code == 2 and not out.exists()
    assert f"{out}: expected an image file name ending in .png, .pdf, .svg" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["data", "stats"], ["data", "plot-day", "--day", "2025-03-03", "--out", "OUT"]])
def test_an_empty_events_file_is_refused(capsys, tmp_path, argv):
    """Bad-input pass: `data stats empty.jsonl` printed 0 participants, 0 events, "hierarchy: OK", exit 0."""
    empty = tmp_path / "events.jsonl"
    empty.write_text("")
    assert main([*(str(tmp_path / "day.png") if a == "OUT" else a for a in argv), str(empty)]) == 2
    assert f"error: {empty}: no events; expected JSON Lines of events (SPEC §5)" in capsys.readouterr().err
