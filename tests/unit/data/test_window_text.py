"""On-screen text of window samples (issue 11): read at shard build from the de-identified frames,
unique lines with their time, sensitive lines never stored, failures counted; shards without it refused;
the caption prompt's "Text on screen:" line and the gold scene."""

from __future__ import annotations

import functools
import shutil
from dataclasses import replace

import numpy as np
import pytest

from egohorizon.data.windows.sample import SourceFrame, WindowConfig, build_window
from egohorizon.schema import Recording

needs_tesseract = pytest.mark.skipif(shutil.which("tesseract") is None,
                                     reason="tesseract not installed (apt-get install tesseract-ocr)")

EMAIL = "jane.doe12@example.com"


def text_frame(lines: list[str], size: tuple[int, int] = (640, 360)) -> np.ndarray:
    """A light screen with dark lines of text (DejaVu Sans, 28 px)."""
    from PIL import Image, ImageDraw, ImageFont

    image = Image.new("RGB", size, (235, 235, 230))
    draw = ImageDraw.Draw(image)
    try:
        font = ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", 28)
    except OSError:
        font = ImageFont.load_default(size=28)
    for row, line in enumerate(lines):
        draw.text((30, 30 + 60 * row), line, fill=(20, 20, 20), font=font)
    return np.asarray(image)


def recording() -> Recording:
    return Recording(id="p9/2025-01-01/s1", participant="p9", day="2025-01-01", session="s1", start=0.0, end=30.0,
                     source="test")


def frames_of(images: dict[float, np.ndarray]) -> list[SourceFrame]:
    return [SourceFrame(t=t, load=functools.partial(lambda im: im, image)) for t, image in sorted(images.items())]


def test_reader_reads_the_first_frame_of_every_stretch_only():
    from egohorizon.data.windows.text import ScreenTextReader

    reader = ScreenTextReader(every_s=10.0)
    assert [reader.slot(t) for t in (0.0, 9.9, 10.0, 19.5, 20.0, 29.0)] == [0, 0, 1, 1, 2, 2]
    with pytest.raises(ValueError, match="every_s"):
        ScreenTextReader(every_s=0)


@needs_tesseract
def test_window_gets_its_screen_text_once_with_times_and_never_sensitive_lines():
    from egohorizon.data.windows.text import ScreenTextReader

    screen = text_frame(["Terminal", "collected 57 items", EMAIL])
    later = text_frame(["Terminal", "Build finished"])
    blank = np.full((360, 640, 3), 200, np.uint8)
    # 1 Hz frames: those at 0, 10 and 20 s are read; the one at 1 s (a different screen) is not
    images = {float(t): blank for t in range(30)}
    images.update({0.0: screen, 1.0: text_frame(["Never read"]), 10.0: later, 20.0: screen})
    sample = build_window(recording(), 0, frames_of(images), [], [], WindowConfig(long_side=224, crop_size=64),
                          screen_text=ScreenTextReader())
    lines = sample.meta()["screen_text"]
    texts = [line["text"] for line in lines]
    assert texts[:2] == ["Terminal", "collected 57 items"] and {line["t"] for line in lines[:2]} == {0.0}
    assert {"t": 10.0, "text": "Build finished"} in lines
    assert texts.count("Terminal") == 1 and "Never read" not in texts  # unique; one frame per 10 s
    assert not any("example" in t or "@" in t for t in texts)  # the e-mail never reaches the sample
    assert sample.screen_text_counts["frames"] == 3 and sample.screen_text_counts["sensitive_dropped"] == 1
    assert sample.meta()["schema_version"] == 2


@needs_tesseract
def test_text_is_read_after_deidentification():
    """The reader sees the frame the de-identifier returned: what it masked cannot be read."""
    from egohorizon.data.windows.text import ScreenTextReader

    seen = []

    def deidentify(image):
        seen.append(image)
        return text_frame(["Masked copy"]), {"text_boxes": 1}

    sample = build_window(recording(), 0, frames_of({0.0: text_frame(["Original secret"])}), [], [],
                          WindowConfig(long_side=224, crop_size=64), deidentify=deidentify,
                          screen_text=ScreenTextReader())
    texts = [line["text"] for line in sample.screen_text]
    assert texts == ["Masked copy"] and len(seen) == 1 and sample.deid == {"text_boxes": 1}


def test_failed_ocr_is_counted_not_fatal():
    from egohorizon.data.windows.text import ScreenTextReader

    reader = ScreenTextReader(command="no-such-tesseract-binary", use_library=False)
    sample = build_window(recording(), 0, frames_of({0.0: text_frame(["x"]), 12.0: text_frame(["y"])}), [], [],
                          WindowConfig(long_side=224, crop_size=64), screen_text=reader)
    assert sample.screen_text == [] and sample.screen_text_counts == {"frames": 2, "failed": 2, "lines": 0}


@needs_tesseract
def test_rendered_demo_window_with_a_screen_gets_its_text(tmp_path):
    """A demo-world window whose action shows a screen: its app's name comes back from the shard."""
    import json
    import tarfile

    from egohorizon.data.demo import ensure_demo_world, load_demo_world
    from egohorizon.data.shards.sources import demo_sources
    from egohorizon.data.shards.writer import build_shards

    world = load_demo_world(ensure_demo_world(None))
    event = next(e for e in world.events if e.level == 1 and e.meta.get("screen", {}).get("device") != "phone"
                 and e.meta.get("screen") and e.end - e.start >= 60)
    recording_ = next(r for r in world.recordings if r.session == event.session)
    index = int((event.start + 15 - recording_.start) // 30)  # a window inside the event
    # the recording cut after that window, every index-th window kept: windows 0 and ``index`` only
    cut = replace(recording_, end=recording_.start + 30.0 * (index + 1))
    source = demo_sources(world, frame_size=448, recordings=[cut])[0]
    stride = max(1, index)
    index_ = build_shards([source], tmp_path, config=WindowConfig(long_side=224, crop_size=64, stride=stride),
                          samples_per_shard=1000)
    assert index_.window_schema_version == 2 and index_.build["screen_text"]["ocr"]
    index_.require_screen_text()
    metas = {}
    for url in index_.urls():
        with tarfile.open(url) as tar:
            for member in tar:
                if member.name.endswith(".json"):
                    meta = json.loads(tar.extractfile(member).read())
                    metas[meta["window"]] = meta
    text = " ".join(line["text"] for line in metas[index]["screen_text"]).casefold()
    app = event.meta["screen"]["app"].casefold()
    words = [w for w in app.replace("-", " ").split() if len(w) >= 4]
    assert any(w[:4] in text for w in words), (app, text)
    assert index_.totals()["screen_text"]["frames"] >= 2
    assert metas[index]["events"][0].get("place")  # the gold scene's source


def test_index_without_screen_text_is_refused_with_a_clear_message(tmp_path):
    from egohorizon.data.shards.index import ShardIndex
    from egohorizon.errors import DataError

    old = ShardIndex(root=tmp_path, build={"deid": "off"}, shards=[], window_schema_version=1)
    with pytest.raises(DataError, match="window_schema_version.*rebuild"):
        old.require_screen_text()
    off = ShardIndex(root=tmp_path, build={"screen_text": "off"}, shards=[], window_schema_version=2)
    with pytest.raises(DataError, match="build.screen_text"):
        off.require_screen_text()


def test_caption_prompt_has_the_screen_text_line():
    from egohorizon.prompts import load_prompt
    from egohorizon.prompts.caption import render_caption_prompt, render_screen_text

    assert load_prompt("caption").version == "3"
    lines = [{"t": 0.0, "text": "Terminal"}, {"t": 0.0, "text": "$ pytest -q"}, {"t": 10.0, "text": "57 passed"}]
    assert render_screen_text(lines) == "t=0s: Terminal / $ pytest -q; t=10s: 57 passed"
    assert render_screen_text([]) == "none"
    assert "Text on screen: t=0s: Terminal" in render_caption_prompt([0.0], "", screen_text=lines)
    assert "Text on screen: none\n" in render_caption_prompt([0.0], "")


def test_gold_scene_is_the_place_and_its_change():
    from egohorizon.formats.caption import gold_scene, parse_caption_output, render_caption_answer

    events = [{"level": 1, "start": 0.0, "end": 12.0, "text": "open the fridge", "place": "kitchen"},
              {"level": 1, "start": 12.0, "end": 20.0, "text": "take the milk", "place": "kitchen"},
              {"level": 1, "start": 20.0, "end": 40.0, "text": "sit down", "place": "living room"},
              {"level": 2, "start": 0.0, "end": 40.0, "text": "breakfast", "place": "home"}]
    assert gold_scene(events, 0.0, 30.0) == "kitchen, then living room"
    assert gold_scene(events, 0.0, 15.0) == "kitchen"
    assert gold_scene([{k: v for k, v in e.items() if k != "place"} for e in events], 0.0, 30.0) is None
    parse = parse_caption_output(render_caption_answer(events, 0.0, 30.0))
    assert parse.scene == "kitchen, then living room" and len(parse.actions) == 3


def test_scene_accuracy_with_the_same_judge_and_baselines():
    from egohorizon.formats.caption import CaptionAction, CaptionParse
    from egohorizon.schema import CaptionWindow
    from egohorizon.tasks import get_task

    def window(i, scene):
        return CaptionWindow(id=f"w{i}", window_s=30.0, actions=[{"start": 0.0, "end": 30.0, "action": "read"}],
                             scene=scene, participant="p", session="s", start=30.0 * i, source="demo")

    items = [window(0, "kitchen"), window(1, "kitchen"), window(2, "office"), window(3, None)]
    predictions = {f"w{i}": CaptionParse(actions=[CaptionAction(0.0, 30.0, "read")], scene=s)
                   for i, s in enumerate(["kitchen", "office", None, "office"])}
    evaluation = get_task("caption").evaluate(items, predictions, "val", judge="exact", embedder="exact",
                                              most_frequent_action="read", most_frequent_scene="kitchen")
    overall = evaluation.report["overall"]
    assert (overall["scene_n"], overall["scene_correct"]) == (3, 1)  # w3 has no gold scene: left out
    assert evaluation.metrics["val/caption_scene_accuracy"] == pytest.approx(1 / 3)
    # repeat previous: w1 <- kitchen (right), w2 <- kitchen (wrong); w0 has no previous window
    assert evaluation.baselines["repeat_previous"]["overall"]["scene_correct"] == 1
    assert evaluation.baselines["most_frequent"]["overall"]["scene_accuracy"] == pytest.approx(2 / 3)


def test_caption_job_refuses_text_less_shards_only_for_a_prompt_that_reads_them(tmp_path):
    from egohorizon.pipelines.caption.job import uses_screen_text

    older = tmp_path / "caption_v2.txt"
    older.write_text("# version: 2\nSpeech heard in the window: {transcript}\n", encoding="utf-8")
    assert uses_screen_text("caption") and not uses_screen_text(str(older))
