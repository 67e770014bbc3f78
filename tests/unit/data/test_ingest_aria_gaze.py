"""Issue 22, items 4 and 18: MPS eye-gaze CSVs with a column missing, a cut line or an empty number are
refused with file, line and column named (projectaria-tools reads all three as 0 without a word), and
projectaria-tools' own console output stays out of a successful run unless -v is given."""

from __future__ import annotations

import csv
import json
import logging

import pytest

pytest.importorskip("projectaria_tools")

from egohorizon.cli import main
from egohorizon.data.ingest.aria import ingest_aria, read_gaze
from egohorizon.errors import DataError

DATA = "projectaria-tools-testdata/data"
AEA = DATA + "/gen1/aria_everyday_activities_test_data"
GAZE_FILES = {
    "general": AEA + "/mps/eye_gaze/general_eye_gaze.csv",
    "legacy": DATA + "/gen1/mps_sample/eye_gaze/eyegaze.csv",
    "vergence": DATA + "/gen1/mps_sample/eye_gaze_vergence/generalized_gaze.csv",
    "gen2": DATA + "/gen2/mps_sample/eye_gaze/general_eye_gaze.csv",
}


def _rows(path):
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))


def _write(path, rows):
    with open(path, "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows(rows)
    return path


def _without(shared_data, tmp_path, kind, column):
    rows = _rows(shared_data / GAZE_FILES[kind])
    i = rows[0].index(column)
    return _write(tmp_path / f"{kind}.csv", [r[:i] + r[i + 1:] for r in rows])


# Each of these columns, when absent, is read by projectaria-tools 2.3.0 as 0 (vergence, Gen2) or
# makes it read no row at all (Gen1 general): the frames ended up "outside" with exit 0.
@pytest.mark.parametrize("kind, column, layout", [
    ("general", "yaw_low_rads_cpf", "Gen1 eye gaze"),
    ("general", "pitch_rads_cpf", "Gen1 eye gaze"),
    ("legacy", "depth_m", "Gen1 eye gaze"),
    ("vergence", "right_yaw_rads_cpf", "Gen1 vergence eye gaze"),
    ("vergence", "tracking_timestamp_us", "Gen1 vergence eye gaze"),
    ("gen2", "right_yaw_rads_cpf", "Gen2 eye gaze"),
    ("gen2", "tx_left_eye_cpf", "Gen2 eye gaze"),
])
def test_missing_gaze_column_is_named(shared_data, tmp_path, kind, column, layout):
    path = _without(shared_data, tmp_path, kind, column)
    with pytest.raises(DataError, match=rf"{kind}.csv:1: not a complete {layout} header: "
                                        rf"missing column\(s\) {column} "):
        read_gaze(path)


def test_cut_line_and_empty_number_name_the_line(shared_data, tmp_path):
    rows = _rows(shared_data / GAZE_FILES["gen2"])
    cut = _write(tmp_path / "cut.csv", rows[:3] + [rows[3][:4]] + rows[4:])
    with pytest.raises(DataError, match=r"cut.csv:4: 4 fields where the header has 13 \(a cut or damaged line\)"):
        read_gaze(cut)
    rows[2][rows[0].index("yaw_rads_cpf")] = ""
    empty = _write(tmp_path / "empty.csv", rows)
    with pytest.raises(DataError, match=r"empty.csv:3: field 'yaw_rads_cpf': expected a number, got ''"):
        read_gaze(empty)


def test_every_shipped_gaze_layout_reads_without_console_output(shared_data, capfd):
    layouts = {kind: read_gaze(shared_data / path).layout for kind, path in GAZE_FILES.items()}
    assert layouts == {"general": "Gen1 eye gaze", "legacy": "Gen1 eye gaze",
                       "vergence": "Gen1 vergence eye gaze", "gen2": "Gen2 eye gaze"}
    out, err = capfd.readouterr()
    assert out == "" and err == ""  # not "Loaded #EyeGazes" nor "Failed to parse eye gaze vergence file"


def test_cli_refuses_gaze_without_a_column(shared_data, tmp_path, capsys):
    gaze = _without(shared_data, tmp_path, "general", "pitch_rads_cpf")
    code = main(["ingest", "aria", str(shared_data / AEA / "recording.vrs"), "--participant", "p1",
                 "--gaze", str(gaze), "--out", str(tmp_path / "rec")])
    err = capsys.readouterr().err
    assert code == 2 and f"error: {gaze}:1: not a complete Gen1 eye gaze header" in err
    assert "missing column(s) pitch_rads_cpf" in err and "Traceback" not in err
    assert not (tmp_path / "rec").exists()


def test_cli_on_the_aea_sample_prints_only_its_summary(shared_data, tmp_path, capfd):
    """stdout is the JSON summary alone (projectaria-tools printed "Loaded #EyeGazes: 4" into it) and
    stderr holds no library INFO lines or gaze-parser complaints on a run that succeeds."""
    assert main(["ingest", "aria", str(shared_data / AEA / "recording.vrs"), "--participant", "p1",
                 "--rate", "0", "--out", str(tmp_path / "rec")]) == 0
    out, err = capfd.readouterr()
    summary = json.loads(out)
    assert summary["frames"] == 8 and summary["gaze_status_counts"]["ok"] == 8
    assert "Failed to parse" not in err and "[VrsDataProvider]" not in err and "\x1b[" not in err


def test_library_output_goes_to_the_debug_log(shared_data, tmp_path, caplog, capfd):
    with caplog.at_level(logging.DEBUG, logger="egohorizon.data.ingest.aria"):
        ingest_aria(shared_data / AEA / "recording.vrs", tmp_path / "rec", participant="p1",
                    gaze_csv=shared_data / GAZE_FILES["general"])
    debug = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]
    assert any("[VrsDataProvider][INFO]: streamId 214-1/camera-rgb activated" in m for m in debug)
    assert any("Loaded #EyeGazes: 4" in m for m in debug)
    assert not any("\x1b[" in m for m in debug)  # colour codes stripped
    assert capfd.readouterr() == ("", "")
