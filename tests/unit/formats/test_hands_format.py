"""The hands text format (formats.hands) and the box convention between an original frame and
the image a Qwen-VL processor makes of it (backbones.boxes), round-tripped against the real
processors of the tiny Qwen2-VL, Qwen2.5-VL and Qwen3-VL at several aspect ratios (issue 14)."""

from __future__ import annotations

import numpy as np
import pytest

from egohorizon.backbones import TinyBackbone
from egohorizon.backbones.boxes import ResizeMapping
from egohorizon.errors import ConfigError
from egohorizon.formats.hands import parse_hand_text, render_hand_text

CORPUS = ["0.5s left [10,20,30,40] right [50,20,70,40]", "subtask 0-2.5 wipe the table",
          "action left 0-1 take the cloth", "caption right 0-1 the right hand wipes"] * 20
TOY = {"hidden_size": 32, "intermediate_size": 64, "num_layers": 1, "num_heads": 2, "num_kv_heads": 1,
       "vocab_size": 300, "min_pixels": 32 * 32, "max_pixels": 160 * 160}
# (height, width): 16:9 landscape, 9:16 portrait, square, 4:3, a thin strip, and one below min_pixels
SHAPES = [(720, 1280), (1280, 720), (1408, 1408), (480, 640), (200, 1000), (20, 30)]


@pytest.fixture(scope="module", params=["qwen2_vl", "qwen2_5_vl", "qwen3_vl"])
def processor(request, tmp_path_factory):
    backbone = TinyBackbone(architecture=request.param, cache_dir=str(tmp_path_factory.mktemp("tiny")), **TOY)
    backbone.prepare(corpus=lambda: CORPUS)
    return backbone.load_processor()


@pytest.mark.parametrize("height, width", SHAPES)
def test_mapping_matches_what_the_processor_makes_and_round_trips(processor, height, width):
    mapping = ResizeMapping.for_processor(processor, height, width)
    image = np.zeros((height, width, 3), np.uint8)
    grid = processor.image_processor(images=[image], return_tensors="pt")["image_grid_thw"][0].tolist()
    patch = processor.image_processor.patch_size
    # the size the mapping assumes is the size the model really sees
    assert mapping.resized == (grid[1] * patch, grid[2] * patch)
    sx, sy = mapping.scale
    for box in ([0, 0, width, height], [0.1 * width, 0.2 * height, 0.45 * width, 0.9 * height],
                [width - 7, height - 5, width, height]):
        model_box = mapping.to_model(box)
        assert all(isinstance(v, int) for v in model_box)
        assert 0 <= model_box[0] <= model_box[2] <= mapping.resized[1]
        assert 0 <= model_box[1] <= model_box[3] <= mapping.resized[0]
        back = mapping.to_original(model_box)
        # back within half a model pixel (plus the 0.1 px rounding) of where it started, per axis
        for i, value in enumerate(box):
            assert abs(back[i] - value) <= 0.5 / (sx if i % 2 == 0 else sy) + 0.05


def test_axes_scale_separately():
    # Qwen2.5-VL's defaults (factor 28, 56*56 .. 28*28*1280 pixels) make 1280 x 720 into 1288 x 728
    mapping = ResizeMapping((720, 1280), (728, 1288))
    assert mapping.scale == pytest.approx((1288 / 1280, 728 / 720))
    assert mapping.to_model([640, 360, 1280, 720]) == [644, 364, 1288, 728]
    assert mapping.to_original([644, 364, 1288, 728]) == [640.0, 360.0, 1280.0, 720.0]
    assert mapping.to_model([-5, -5, 2000, 2000]) == [0, 0, 1288, 728]


def test_unknown_processor_is_an_error():
    with pytest.raises(ConfigError, match="does not say how it resizes"):
        ResizeMapping.for_processor(object(), 10, 10)


def test_render_and_parse_round_trip():
    boxes = [(0.5, "right", [300, 305, 372, 398]), (0.5, "left", [102, 310, 180, 402]), (1.0, "right", [1, 2, 3, 4])]
    segments = [{"kind": "hand_caption", "hand": "left", "start": 0, "end": 1, "label": "the left  hand picks"},
                {"kind": "subtask", "hand": None, "start": 0, "end": 2.5, "label": "wipe the table"},
                {"kind": "hand_action", "hand": "right", "start": 0.4, "end": 2.5, "label": "wipe the table"}]
    text = render_hand_text(boxes, segments)
    assert text.splitlines() == [
        "0.5s left [102,310,180,402] right [300,305,372,398]",
        "1s right [1,2,3,4]",
        "subtask 0-2.5 wipe the table",
        "action right 0.4-2.5 wipe the table",
        "caption left 0-1 the left hand picks",
    ]
    parse = parse_hand_text(text)
    assert parse.invalid == 0
    assert sorted(parse.boxes) == sorted(boxes)
    assert parse.segments[0] == {"kind": "subtask", "hand": None, "start": 0.0, "end": 2.5, "label": "wipe the table"}
    assert [s["kind"] for s in parse.segments] == ["subtask", "hand_action", "hand_caption"]


def test_parser_counts_what_it_cannot_read_and_keeps_the_rest():
    lines = [
        "0.5s left [1,2,3,4] middle [1,2,3,4]",  # unknown hand: that item dropped, left kept
        "1s left [5,5,3,9]",  # corners swapped
        "1.5s right [1,2,3,4] and more",  # trailing words: the line counted, the box kept
        "2s",  # nothing after the time
        "subtask left 0-1 wipe",  # a subtask with a hand
        "action 0-1 take cup",  # an action without one
        "caption right 2-1 backwards",  # end before start
        "the hands are busy",  # no format at all
        "action right 0-1.5 take cup",
        "",
    ]
    parse = parse_hand_text("\n".join(lines))
    assert parse.boxes == [(0.5, "left", [1, 2, 3, 4]), (1.5, "right", [1, 2, 3, 4])]
    assert parse.segments == [{"kind": "hand_action", "hand": "right", "start": 0.0, "end": 1.5, "label": "take cup"}]
    assert parse.invalid == 8
    assert parse_hand_text(None).invalid == 0 and parse_hand_text("").boxes == []
