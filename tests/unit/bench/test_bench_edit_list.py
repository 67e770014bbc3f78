"""Issue 36, item 9: `bench run` on an item whose MP4 has an edit list (its index lists 164 frames, a
decoder presents 109) samples the presented frames, answers the item, and records both counts and
``edit_list: true`` in the item's line and the count of such items in summary.json."""

from __future__ import annotations

import json

from edit_list_video import write_head_cut_mp4
from test_bench_run import FixedReplies

from egohorizon import cli

OPTIONS = ["A. In the car", "B. In the kitchen", "C. At the office", "D. In the garden"]


def _item(question, video):
    return {"video_path": [video], "question": question, "options": OPTIONS, "correct_options": "B",
            "task_type": "Self-localization", "difficulty": "easy", "video_id": video.split("/")[-1]}


def test_an_edit_list_item_is_answered_on_the_presented_frames_and_counted(tmp_path, capsys):
    videos = tmp_path / "videos"
    write_head_cut_mp4(videos / "021/cut.mp4", frames=164, hidden=55, fps=10)
    write_head_cut_mp4(videos / "021/whole.mp4", frames=40, hidden=0, fps=10)
    qa = tmp_path / "021" / "QA.json"
    qa.parent.mkdir()
    qa.write_text(json.dumps([_item("Where was I?", "021/cut.mp4"), _item("Where am I?", "021/whole.mp4")]))
    assert cli.main(["data", "convert", "egomonth", str(qa), "--videos", str(videos), "--out", str(tmp_path / "d")]) == 0
    out = tmp_path / "out"
    server = FixedReplies({"Where was I?": "B", "Where am I?": "A"})
    try:
        assert cli.main(["bench", "run", str(tmp_path / "d"), "--model", "stand-in", "--base-url", server.url,
                         "--out", str(out)]) == 0
    finally:
        server.close()
    printed = capsys.readouterr().out
    cut, whole = [json.loads(line) for line in (out / "items.jsonl").read_text().splitlines()]
    assert cut["status"] == "ok" and cut["edit_list"] is True
    # 10.9 s presented at 1 fps under the paper rule: 10 frames, linspace(0, 108, 10) rounded.
    assert cut["frames"] == [{"video": "021/cut.mp4", "indices": [0, 12, 24, 36, 48, 60, 72, 84, 96, 108],
                              "t": [0.0, 1.2, 2.4, 3.6, 4.8, 6.0, 7.2, 8.4, 9.6, 10.8], "edit_list": True,
                              "frames_presented": 109, "frames_container": 164}]
    assert whole["status"] == "ok" and whole["edit_list"] is False and "edit_list" not in whole["frames"][0]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["edit_list_items"] == 1 and summary["input_failures"] == []
    assert "items with an MP4 edit list (sampled on the presented frames): 1" in printed
