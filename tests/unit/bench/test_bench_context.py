"""``bench run`` caps the frames of a model with a fixed number of tokens per image and a short context
(egohorizon.bench.context, issue 40): the effnet_smollm2 composite's config, built in memory."""

from __future__ import annotations

import logging

from transformers import LlamaConfig, Qwen2VLConfig

from egohorizon.backbones.composite import EffnetSmolLM2Config
from egohorizon.bench.context import capped, frame_cap
from egohorizon.bench.run import BenchSettings


def _composite(image_size: int, context: int = 8192) -> EffnetSmolLM2Config:
    vision = {"architecture": "tf_efficientnet_lite0", "image_size": image_size, "stride": 32, "features": 1280,
              "mean": [0.5] * 3, "std": [0.5] * 3}
    return EffnetSmolLM2Config(text_config=LlamaConfig(max_position_embeddings=context), vision_config=vision)


def test_the_frames_that_fit_by_hand():
    # 224 px: 49 image tokens + 16 of label and marker a frame; 8192 - 32 answer - 512 prompt = 7648 -> 117
    assert frame_cap(_composite(224), max_new_tokens=32) == (117, 8192)
    # 448 px: 14 x 14 = 196 tokens a frame -> 7648 // 212 = 36
    assert frame_cap(_composite(448), max_new_tokens=32) == (36, 8192)
    assert frame_cap(Qwen2VLConfig(), max_new_tokens=32) is None  # no fixed count: left alone
    assert frame_cap(None, max_new_tokens=32) is None


def test_the_cap_is_applied_and_said(caplog):
    settings = BenchSettings(max_frames=256)
    with caplog.at_level(logging.WARNING):
        out = capped(settings, _composite(224), "effnet")
    assert out.max_frames == 117 and settings.max_frames == 256
    assert "117 frames of 49 tokens each fill its 8192-token context; max_frames capped from 256 to 117" in caplog.text
    assert capped(BenchSettings(max_frames=16), _composite(224), "effnet").max_frames == 16  # fits: untouched
    assert capped(settings, Qwen2VLConfig(), "qwen") is settings
