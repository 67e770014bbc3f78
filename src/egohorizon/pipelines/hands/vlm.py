"""A trained hand VLM (``python train.py task=hands``) as a box finder for still images: the
``egohorizon hands detect --model ADAPTER`` path, scored on the same real frames as the detector.

Each image is sent as a still clip of the length the hand VLM is trained on (``hands_demo``: 6 frames,
one per second; an adapter whose data settings give ``still_clip``, e.g. the EgoHands-trained one, says its
own: one frame), the image repeated at every frame time, with the adapter's own prompt and resized by
the adapter's processor; the box line of time 0 (``formats.hands``) goes back to the image's
pixels through ``backbones.boxes.ResizeMapping``. A one-frame prompt is one the model never saw in
training: the demo-trained adapters answer it with segment lines and no box line at all (0 boxes on
the 100 EgoHands frames). The VLM gives no confidence, so ``score`` is None.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


def adapter_finder(adapter: str | Path, max_new_tokens: int = 64, device: str | None = None,
                   clip_frames: int = 6, clip_s: float = 6.0):
    from egohorizon.backbones.boxes import ResizeMapping

    # checkpoints.py is the one torch-free reader of adapters and run folders
    from egohorizon.checkpoints import resolve_adapter
    from egohorizon.formats.hands import parse_hand_text
    from egohorizon.llm.vision_local import LocalVLMBackend
    from egohorizon.prompts.hands import render_hands_prompt

    folder = resolve_adapter(str(adapter))
    backend = LocalVLMBackend(adapter=str(folder), device=device)
    processor = backend.load_processor()
    encode = backend.encoder()
    prompt_name = backend.adapter_meta.get("prompt", {}).get("name", "hands")
    prompt_file = folder / f"{prompt_name}.txt"
    prompt = str(prompt_file) if prompt_file.is_file() else prompt_name
    still = (backend.adapter_meta.get("data") or {}).get("still_clip") or {}
    clip_frames, clip_s = int(still.get("frames", clip_frames)), float(still.get("seconds", clip_s))

    def find(image: np.ndarray) -> list[tuple[str, list[float], float | None]]:
        mapping = ResizeMapping.for_processor(processor, *image.shape[:2])
        times = [round(k * clip_s / clip_frames, 2) for k in range(clip_frames)]
        text = render_hands_prompt(times, clip_s, mapping.resized, prompt=prompt)
        answer = backend.generate_batch(encode([{"text": text, "images": [image] * clip_frames}]),
                                        max_new_tokens=max_new_tokens)[0]
        return [(hand, mapping.to_original(box), None) for t, hand, box in parse_hand_text(answer).boxes if t == 0]

    return find, {"detector": f"hand VLM adapter {folder}", "model_id": backend.model_id,
                  "still_clip": {"frames": clip_frames, "seconds": clip_s}}
