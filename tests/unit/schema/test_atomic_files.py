"""The one atomic writer (egohorizon.atomic_files): the target holds the old bytes or all the new ones."""

from __future__ import annotations

import json

import pytest

from egohorizon.atomic_files import atomic_open, temp_path, write_json_atomic, write_text_atomic


def test_json_is_written_whole_with_a_final_newline(tmp_path):
    path = tmp_path / "a" / "b.json"  # the folder is created
    write_json_atomic(path, {"name": "café", "n": 1})
    assert path.read_text(encoding="utf-8") == '{\n "name": "café",\n "n": 1\n}\n'
    write_json_atomic(path, {"when": tmp_path}, indent=2, default=str)
    assert json.loads(path.read_text()) == {"when": str(tmp_path)}


def test_a_failure_mid_write_keeps_the_old_file_and_leaves_no_temp(tmp_path):
    path = tmp_path / "out.jsonl"
    write_text_atomic(path, "old\n")
    with pytest.raises(RuntimeError), atomic_open(path) as handle:
        handle.write("half of the new")
        raise RuntimeError("killed")
    assert path.read_text() == "old\n"
    assert not temp_path(path).exists() and sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]
    with pytest.raises(TypeError):  # not serialisable: nothing replaced either
        write_json_atomic(path, {"x": object()})
    assert path.read_text() == "old\n"


def test_binary_mode(tmp_path):
    with atomic_open(tmp_path / "x.bin", "wb") as handle:
        handle.write(b"\x00\xff")
    assert (tmp_path / "x.bin").read_bytes() == b"\x00\xff"
