"""Toy-size transformers configs and processors for the tiny Qwen2-VL / Qwen2.5-VL / Qwen3-VL.

Every architecture is the real transformers one with small sizes, including its vision tower: images
are cut into ``patch_size`` patches, run through ``vision_depth`` vision blocks and merged 2x2 into
language tokens, exactly as in the 7-8B checkpoints. The processor's patch and merge sizes must match
the vision config (a mismatch gives the wrong number of image tokens), so both are built here from the
same numbers.
"""

from __future__ import annotations

from typing import Any

VISION_TOKENS = ("<|image_pad|>", "<|video_pad|>", "<|vision_start|>", "<|vision_end|>")
MERGE_SIZE = 2  # 2x2 patches become one language token in every Qwen-VL
TEMPORAL_PATCH_SIZE = 2  # a still image is repeated to fill the temporal patch


def model_config(architecture: str, sizes: dict[str, Any], tokenizer):
    """The top-level VLM config (text + vision) for ``architecture`` at the given toy sizes."""
    ids = {name: tokenizer.convert_tokens_to_ids(name) for name in VISION_TOKENS}
    common = {
        "image_token_id": ids["<|image_pad|>"],
        "video_token_id": ids["<|video_pad|>"],
        "vision_start_token_id": ids["<|vision_start|>"],
        "vision_end_token_id": ids["<|vision_end|>"],
    }
    text = _text_config(architecture, sizes, tokenizer)
    vision = _vision_config(architecture, sizes)
    if architecture == "qwen3_vl":
        from transformers import Qwen3VLConfig as Config
    elif architecture == "qwen2_5_vl":
        from transformers import Qwen2_5_VLConfig as Config
    else:
        from transformers import Qwen2VLConfig as Config
    config = Config(text_config=text, vision_config=vision, **common)
    # generate() reads these from the top-level config of a VLM.
    config.pad_token_id = tokenizer.pad_token_id
    config.eos_token_id = tokenizer.eos_token_id
    return config


def _text_config(architecture: str, sizes: dict[str, Any], tokenizer) -> dict[str, Any]:
    head_dim = sizes["hidden_size"] // sizes["num_heads"]
    # mrope splits each head's rotary half-dimension into temporal/height/width sections; any split
    # summing to head_dim/2 is a valid config.
    half = head_dim // 2
    mrope = [half - 2 * (half // 3), half // 3, half // 3]
    rope = {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": mrope}
    text = {
        "vocab_size": len(tokenizer),
        "hidden_size": sizes["hidden_size"],
        "intermediate_size": sizes["intermediate_size"],
        "num_hidden_layers": sizes["num_layers"],
        "num_attention_heads": sizes["num_heads"],
        "num_key_value_heads": sizes["num_kv_heads"],
        "max_position_embeddings": sizes["max_position_embeddings"],
        "rope_parameters": rope,
        "bos_token_id": tokenizer.eos_token_id,
        "eos_token_id": tokenizer.eos_token_id,
        "pad_token_id": tokenizer.pad_token_id,
    }
    if architecture == "qwen3_vl":
        text["head_dim"] = head_dim  # Qwen3 does not derive it from hidden_size / heads
        rope["mrope_interleaved"] = True
    return text


def _vision_config(architecture: str, sizes: dict[str, Any]) -> dict[str, Any]:
    depth, width, patch = sizes["vision_depth"], sizes["vision_hidden_size"], sizes["patch_size"]
    common = {
        "depth": depth,
        "num_heads": 2,
        "patch_size": patch,
        "spatial_merge_size": MERGE_SIZE,
        "temporal_patch_size": TEMPORAL_PATCH_SIZE,
    }
    if architecture == "qwen2_vl":  # Qwen2-VL names its vision width embed_dim, its output hidden_size
        return {**common, "embed_dim": width, "mlp_ratio": 2, "hidden_size": sizes["hidden_size"]}
    vision = {
        **common,
        "hidden_size": width,
        "intermediate_size": 2 * width,
        "out_hidden_size": sizes["hidden_size"],
    }
    if architecture == "qwen2_5_vl":
        # Windows of 2x2 merged tokens (window_size is in pixels), the last block with full attention:
        # both of Qwen2.5-VL's attention paths run at toy size.
        return {**vision, "window_size": 2 * MERGE_SIZE * patch, "fullatt_block_indexes": [depth - 1]}
    # Qwen3-VL: learned position embeddings on a grid (interpolated to each image's grid) and
    # "deepstack" features from the first block added to the first language layers.
    side = max(1, int(sizes["max_pixels"] ** 0.5) // patch)
    return {**vision, "num_position_embeddings": side * side, "deepstack_visual_indexes": [0]}


def build_processor(architecture: str, sizes: dict[str, Any], tokenizer):
    """The transformers processor (image + video processors + tokenizer) matching ``model_config``.

    ``min_pixels``/``max_pixels`` bound the resized image area, so an image becomes at most
    ``max_pixels / (patch_size * 2) ** 2`` language tokens.
    """
    from transformers import Qwen2VLImageProcessor

    patches = {
        "patch_size": sizes["patch_size"],
        "merge_size": MERGE_SIZE,
        "temporal_patch_size": TEMPORAL_PATCH_SIZE,
    }
    pixels = {"min_pixels": sizes["min_pixels"], "max_pixels": sizes["max_pixels"]}
    image_processor = Qwen2VLImageProcessor(**patches, **pixels)
    if architecture == "qwen3_vl":
        from transformers import Qwen3VLProcessor as Processor
        from transformers import Qwen3VLVideoProcessor as VideoProcessor
    else:
        from transformers import Qwen2VLVideoProcessor as VideoProcessor

        if architecture == "qwen2_5_vl":
            from transformers import Qwen2_5_VLProcessor as Processor
        else:
            from transformers import Qwen2VLProcessor as Processor
    # The processors insist on a video processor even when only images are used.
    video_processor = VideoProcessor(
        **patches, size={"shortest_edge": pixels["min_pixels"], "longest_edge": pixels["max_pixels"]}
    )
    return Processor(image_processor=image_processor, tokenizer=tokenizer, video_processor=video_processor)
