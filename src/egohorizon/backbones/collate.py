"""Collation for vision-language samples: ``(text, images, target)`` -> what a Qwen-VL model takes.

A sample is a dict with ``text`` (the prompt), ``images`` (a list of HWC uint8 numpy arrays, CHW
uint8 tensors or PIL images; may be empty) and ``target`` (the answer to learn; ``None`` for
generation only). The text marks where each image goes with ``IMAGE_PLACEHOLDER``; a text without
markers gets one per image in front (where Qwen's chat template puts images of a user turn). The
backbone's processor (``Backbone.load_processor``) expands each marker into one ``<|image_pad|>`` per
merged patch and turns the images into flattened patches. A batch holds:

    input_ids, attention_mask  [B, L]   prompt + target + EOS, right-padded
    labels                     [B, L]   the target + EOS; -100 on prompt, image and padding tokens
    mm_token_type_ids          [B, L]   0 text, 1 image (transformers 5 Qwen-VL builds its 3D
                                        rotary positions from it)
    pixel_values               [P, C*T*p*p]  every image's patches, sample after sample (a processor of
                                        whole images, the effnet_smollm2 composite's: [N, C, S, S])
    image_grid_thw             [N, 3]   (t, h, w) patches per image, sample after sample
    prompt_ids, prompt_mask, prompt_mm_token_type_ids   [B, Lp]  left-padded prompts, for
                                        generation (``with_prompts=True``); the images are the same

A batch without any image gets one small black image (``dummy_image=True``, the default), whose
tokens are appended after the first sample's last token (label -100; causal attention: no earlier token
sees them, so the loss is unchanged) and put in front of its left-padded prompt with mask 0 (the
generation does not see them). Every batch then runs the vision tower: with images on some ranks only,
ZeRO-3 ranks would all-gather different modules and hang, and DDP with LoRA on the vision tower would
find parameters unused on some ranks. With ``dummy_image=False``, ``pixel_values``/``image_grid_thw``
are left out when no sample has an image.

A ``None`` sample (a dataset's answer for an item whose image file is unreadable) is left out of the
batch, and the batch says how many were: ``skipped`` (an int, only when some were); a batch of nothing
but such samples is ``{"skipped": n, "ids": []}`` with no tensors, which ``LoRALanguageModule`` counts and
steps over.
"""

from __future__ import annotations

from typing import Any

IMAGE_PLACEHOLDER = "<|vision_start|><|image_pad|><|vision_end|>"
IGNORE_INDEX = -100


def with_placeholders(text: str, n_images: int) -> str:
    """``text`` with one ``IMAGE_PLACEHOLDER`` per image: as written, or all of them in front."""
    written = text.count(IMAGE_PLACEHOLDER)
    if written == 0:
        return IMAGE_PLACEHOLDER * n_images + text
    if written != n_images:
        raise ValueError(f"the text marks {written} images but the sample has {n_images}: {text[:80]!r}")
    return text


def pixel_rows_per_image(batch: dict[str, Any]) -> list[int]:
    """How many rows of the batch's ``pixel_values`` each image holds, image after image: a Qwen-VL
    processor gives flattened patches (2-D, t * h * w rows an image), a processor of whole images
    (4-D ``[N, C, S, S]``, the composite's letterbox) one row an image. Code that slices a batch's images
    per sample asks this instead of assuming either layout."""
    if "image_grid_thw" not in batch:
        return []
    grids = batch["image_grid_thw"]
    if batch["pixel_values"].dim() == 2:
        return grids.prod(-1).tolist()
    return [1] * len(grids)


class VisionTextCollator:
    """Picklable (it runs in DataLoader workers); one processor call per sample."""

    def __init__(self, processor, with_prompts: bool = False, dummy_image: bool = True):
        self.processor = processor
        self.tokenizer = processor.tokenizer
        self.with_prompts = with_prompts
        self.dummy_image = dummy_image

    def __call__(self, samples: list[dict[str, Any] | None]) -> dict[str, Any]:
        kept = [s for s in samples if s is not None]
        if not kept:
            return {"skipped": len(samples), "ids": []}
        batch = self.collate(kept)
        if len(kept) < len(samples):
            batch["skipped"] = len(samples) - len(kept)
        return batch

    def collate(self, samples: list[dict[str, Any]]) -> dict[str, Any]:
        import torch

        encoded = [self.encode(s) for s in samples]
        dummy = None
        if self.dummy_image and not any("pixel_values" in e for e in encoded):
            encoded[0], dummy = self.with_dummy_image(encoded[0])
        pad = self.tokenizer.pad_token_id
        full = [e["prompt_ids"] + e["target_ids"] for e in encoded]
        batch = {
            "input_ids": _pad(full, pad),
            "attention_mask": _pad([[1] * len(ids) for ids in full], 0),
            "labels": _pad(
                [[IGNORE_INDEX] * len(e["prompt_ids"]) + _labels(e) for e in encoded], IGNORE_INDEX
            ),
            "mm_token_type_ids": _pad([e["types"] + e.get("target_types", [0] * len(e["target_ids"]))
                                       for e in encoded], 0),
        }
        if self.with_prompts:
            prompts = [e.get("prompt_with_dummy", e["prompt_ids"]) for e in encoded]
            batch["prompt_ids"] = _pad(prompts, pad, left=True)
            masks = [e.get("prompt_mask", [1] * len(p)) for e, p in zip(encoded, prompts, strict=True)]
            batch["prompt_mask"] = _pad(masks, 0, left=True)
            batch["prompt_mm_token_type_ids"] = _pad([e.get("prompt_types", e["types"]) for e in encoded], 0,
                                                     left=True)
        if dummy is not None:
            batch["pixel_values"], batch["image_grid_thw"] = dummy["pixel_values"], dummy["image_grid_thw"]
        with_images = [e for e in encoded if "pixel_values" in e]
        if with_images:
            batch["pixel_values"] = torch.cat([e["pixel_values"] for e in with_images])
            batch["image_grid_thw"] = torch.cat([e["image_grid_thw"] for e in with_images])
        return batch

    def with_dummy_image(self, encoded: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """``encoded`` with a black image's tokens after its target (ignored by the loss) and, masked,
        before its prompt; and that image's patches."""
        import numpy as np

        side = 2 * getattr(self.processor.image_processor, "patch_size", 14) * getattr(
            self.processor.image_processor, "merge_size", 2)
        dummy = self.encode({"text": IMAGE_PLACEHOLDER, "images": [np.zeros((side, side, 3), np.uint8)]})
        ids, types = dummy["prompt_ids"], dummy["types"]
        out = dict(encoded)
        out["target_ids"] = encoded["target_ids"] + ids  # labels -100 on these: see __call__
        out["target_types"] = [0] * len(encoded["target_ids"]) + types
        out["n_dummy"] = len(ids)
        out["prompt_with_dummy"] = ids + encoded["prompt_ids"]
        out["prompt_mask"] = [0] * len(ids) + [1] * len(encoded["prompt_ids"])
        out["prompt_types"] = types + encoded["types"]
        return out, dummy

    def encode(self, sample: dict[str, Any]) -> dict[str, Any]:
        """One sample's prompt ids and token types, target ids (+EOS), and image patches."""
        images = list(sample.get("images") or [])
        text = with_placeholders(sample["text"], len(images))
        out = self.processor(text=[text], images=images or None, return_tensors="pt")
        prompt_ids = out["input_ids"][0].tolist()
        types = out["mm_token_type_ids"][0].tolist() if "mm_token_type_ids" in out else [0] * len(prompt_ids)
        target = sample.get("target")
        target_ids = [] if target is None else self.tokenizer(target, add_special_tokens=False)["input_ids"]
        encoded = {
            "prompt_ids": prompt_ids,
            "types": types,
            "target_ids": target_ids + ([self.tokenizer.eos_token_id] if target is not None else []),
        }
        if images:
            encoded["pixel_values"] = out["pixel_values"]
            encoded["image_grid_thw"] = out["image_grid_thw"]
        return encoded


class KeyedVisionTextCollator(VisionTextCollator):
    """``VisionTextCollator`` plus each sample's ``key`` as the batch's ``ids`` and the named per-sample
    ``fields`` as lists (e.g. QA's ``frame_times``), which the evaluation matches predictions by."""

    def __init__(self, processor, with_prompts: bool = False, fields: tuple[str, ...] = ()):
        super().__init__(processor, with_prompts=with_prompts)
        self.fields = tuple(fields)

    def __call__(self, samples: list[dict[str, Any] | None]) -> dict[str, Any]:
        batch = super().__call__(samples)
        kept = [s for s in samples if s is not None]
        batch["ids"] = [s["key"] for s in kept]
        for name in self.fields:
            batch[name] = [s[name] for s in kept]
        return batch


def _labels(encoded: dict[str, Any]) -> list[int]:
    """The target's ids, and -100 on a dummy image's tokens after them."""
    n = encoded.get("n_dummy", 0)
    target = encoded["target_ids"]
    return target[: len(target) - n] + [IGNORE_INDEX] * n


def _pad(rows: list[list[int]], value: int, left: bool = False):
    import torch

    width = max(len(r) for r in rows)
    padded = [([value] * (width - len(r)) + r) if left else (r + [value] * (width - len(r))) for r in rows]
    return torch.tensor(padded, dtype=torch.long)
