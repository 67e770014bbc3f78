"""The one reader of the jobs' append-only JSON-lines files: whole lines only, every ignored line named."""

from egohorizon.pipelines.append_log import read_keyed_lines


def test_keeps_keyed_lines_in_order_and_names_every_ignored_one(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b'{"id": "a", "v": 1}\n'
                     b"\n"                              # blank: skipped silently
                     b"not json\n"                      # line 3
                     b'{"v": 2}\n'                      # line 4: no id
                     b'{"id": "", "v": 3}\n'            # line 5: empty id
                     b'["id"]\n'                        # line 6: not an object
                     b'{"id": "a", "v": 4}\n'
                     b'{"id": "b", "v": 5')             # line 8: torn, no newline
    kept, problems = read_keyed_lines(path, "id", "an item id", "its item is answered again")
    assert kept == [("a", {"id": "a", "v": 1}), ("a", {"id": "a", "v": 4})]
    assert problems[0] == f"{path}:8: partial last line (18 bytes, a run was killed while writing it); " \
                          "its item is answered again"
    assert [p.split(": ", 1)[0] for p in problems[1:]] == [f"{path}:{n}" for n in (3, 4, 5, 6)]
    assert problems[2] == f"{path}:4: field 'id': expected an item id; ignored"


def test_a_missing_file_reads_as_empty(tmp_path):
    assert read_keyed_lines(tmp_path / "none.jsonl", "id", "an item id", "again") == ([], [])
