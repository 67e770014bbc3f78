"""The processor of the ``effnet_smollm2`` composite: the Qwen-VL processors' interface, one more
implementation of it.

- Text: the image marker that the collator and the chat template write
  (``<|vision_start|><|image_pad|><|vision_end|>``, added to SmolLM2's vocabulary as special tokens) has
  its ``<|image_pad|>`` expanded to one token per cell of the encoder's grid (49 at 224 px); the ids come
  with ``mm_token_type_ids`` (1 on image tokens) as a Qwen-VL processor gives them.
- Images (HWC uint8 arrays, CHW tensors or PIL images): letterboxed to the square ``image_size`` (scaled
  so the longer side fits, centred, the rest mid-grey, which the [-1, 1] normalisation makes 0) and
  normalised: ``pixel_values`` [N, 3, S, S]; ``image_grid_thw`` [N, 3] = (1, grid, grid) per image.
  The image processor says ``letterbox = True``: ``backbones.boxes.ResizeMapping.for_processor`` then maps
  boxes through the letterbox (scale and offset) instead of a resize.
- Chat: SmolLM2's own template; an image part becomes the marker, where the message put it.

Picklable (it runs in DataLoader workers). Saved as the tokenizer files; the image settings are read from
the folder's config.json on load.
"""

from __future__ import annotations

from typing import Any

from egohorizon.backbones.collate import IMAGE_PLACEHOLDER

VISION_START, IMAGE_TOKEN, VISION_END = "<|vision_start|>", "<|image_pad|>", "<|vision_end|>"
GREY = 128


class LetterboxImageProcessor:
    """Images -> [N, 3, S, S] float tensors, letterboxed to ``image_size`` and normalised."""

    letterbox = True
    merge_size = 1  # the collator's dummy image is 2 * patch_size * merge_size pixels a side

    def __init__(self, image_size: int, stride: int, mean, std):
        self.image_size, self.patch_size = int(image_size), int(stride)
        self.mean, self.std = tuple(mean), tuple(std)

    @property
    def size(self) -> dict[str, int]:
        return {"height": self.image_size, "width": self.image_size}

    def letterboxed(self, image):
        """One image as a PIL image of ``image_size`` a side: where it lands is what the boxes' mapping
        says (``ResizeMapping.content`` and ``offset``), so frames and boxes cannot disagree."""
        from PIL import Image

        from egohorizon.backbones.boxes import ResizeMapping
        from egohorizon.backbones.rgb import as_rgb_array

        rgb = Image.fromarray(as_rgb_array(image))
        mapping = ResizeMapping((rgb.height, rgb.width), (self.image_size, self.image_size), letterbox=True)
        (height, width), (left, top) = mapping.content, mapping.offset
        canvas = Image.new("RGB", (self.image_size, self.image_size), (GREY, GREY, GREY))
        canvas.paste(rgb.resize((width, height), Image.Resampling.BICUBIC), (left, top))
        return canvas

    def __call__(self, images) -> Any:
        import numpy as np
        import torch

        arrays = np.stack([np.asarray(self.letterboxed(image), dtype=np.float32) for image in images])
        pixels = torch.from_numpy(arrays).permute(0, 3, 1, 2) / 255.0
        mean = torch.tensor(self.mean).view(1, 3, 1, 1)
        std = torch.tensor(self.std).view(1, 3, 1, 1)
        return (pixels - mean) / std


class CompositeProcessor:
    """``processor(text=[...], images=[...], return_tensors="pt")`` as a Qwen-VL processor answers it."""

    def __init__(self, tokenizer, image_processor: LetterboxImageProcessor, image_tokens: int):
        self.tokenizer, self.image_processor, self.image_tokens = tokenizer, image_processor, int(image_tokens)

    @classmethod
    def from_pretrained(cls, path, **kwargs):
        from transformers import AutoConfig, AutoTokenizer

        kwargs.pop("trust_remote_code", None)
        config = AutoConfig.from_pretrained(path, **kwargs)
        vision = config.vision_config
        images = LetterboxImageProcessor(vision["image_size"], vision["stride"], vision["mean"], vision["std"])
        return cls(AutoTokenizer.from_pretrained(path, **kwargs), images, config.image_tokens)

    def save_pretrained(self, folder, **kwargs):
        return self.tokenizer.save_pretrained(folder, **kwargs)

    @property
    def chat_template(self):
        return getattr(self.tokenizer, "chat_template", None)

    def apply_chat_template(self, messages, **options):
        """SmolLM2's template over messages whose image parts become the image marker."""
        flat = []
        for message in messages:
            content = message["content"]
            if not isinstance(content, str):
                content = "".join(IMAGE_PLACEHOLDER if part.get("type") in ("image", "image_url")
                                  else part.get("text", "") for part in content)
            flat.append({**message, "content": content})
        return self.tokenizer.apply_chat_template(flat, **options)

    def expand(self, text: str, n_images: int) -> str:
        """``text`` with each marker's ``<|image_pad|>`` repeated once per grid cell."""
        written = text.count(IMAGE_TOKEN)
        if written != n_images:
            raise ValueError(f"the text marks {written} images but {n_images} were given: {text[:80]!r}")
        return text.replace(IMAGE_TOKEN, IMAGE_TOKEN * self.image_tokens)

    def __call__(self, text=None, images=None, return_tensors=None, **kwargs):
        import torch
        from transformers import BatchFeature

        texts = [text] if isinstance(text, str) else list(text or [])
        images = list(images or [])
        if images and len(texts) != 1:
            raise ValueError("images are taken with one text at a time")
        expanded = [self.expand(t, len(images) if images else 0) for t in texts]
        encoded = self.tokenizer(expanded, add_special_tokens=False, padding=len(expanded) > 1,
                                 return_tensors=return_tensors)
        data = dict(encoded)
        image_id = self.tokenizer.convert_tokens_to_ids(IMAGE_TOKEN)
        if return_tensors == "pt":
            data["mm_token_type_ids"] = (encoded["input_ids"] == image_id).to(torch.long)
        if images:
            data["pixel_values"] = self.image_processor(images)
            grid = round(self.image_tokens ** 0.5)
            data["image_grid_thw"] = torch.tensor([[1, grid, grid]] * len(images))
        return BatchFeature(data=data, tensor_type=return_tensors if return_tensors == "pt" else None)

    def batch_decode(self, *args, **kwargs):
        return self.tokenizer.batch_decode(*args, **kwargs)

    def decode(self, *args, **kwargs):
        return self.tokenizer.decode(*args, **kwargs)
