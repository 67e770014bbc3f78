"""Images in chat prompts: a ``(text, images)`` sample as OpenAI-style messages, images as data URLs.

A sample's text marks each image's place with the backbone's image marker
(``egohorizon.backbones.collate.IMAGE_PLACEHOLDER``, the same string as
``egohorizon.prompts.caption.IMAGE_MARK``); ``sample_messages`` cuts the text at the markers and puts
one ``image_url`` part (a ``data:image/jpeg;base64,...`` URL) in each place, so an OpenAI-compatible
server (vLLM, Ollama, SGLang) sees the images where a locally trained model saw them. A text without
markers gets the images in front, as the collator does. Torch-free.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

from egohorizon.backbones.collate import IMAGE_PLACEHOLDER
from egohorizon.backbones.rgb import as_rgb_array
from egohorizon.llm.base import Message

# the marker the collator expands into image tokens: a sent image goes where a trained model saw it
IMAGE_MARK = IMAGE_PLACEHOLDER
DATA_URL_PREFIX = "data:image/jpeg;base64,"


def jpeg_bytes(image: Any, quality: int = 90) -> bytes:
    import simplejpeg  # libjpeg-turbo, the shards' decoder too

    # 4:2:0 chroma, as cameras and most JPEGs have it: 40% less encoding time than 4:4:4 for a 448-px frame
    # (0.5 ms), and what servers' image loaders expect.
    return simplejpeg.encode_jpeg(as_rgb_array(image), quality=quality, colorspace="RGB", colorsubsampling="420")


def jpeg_data_url(image: Any, quality: int = 90) -> str:
    """``data:image/jpeg;base64,...`` of an image (array, tensor, PIL, or JPEG bytes as they are)."""
    data = bytes(image) if isinstance(image, (bytes, bytearray)) else jpeg_bytes(image, quality)
    return DATA_URL_PREFIX + base64.b64encode(data).decode("ascii")


def sample_messages(text: str, images: Sequence[Any], quality: int = 90) -> list[Message]:
    """One user message whose content interleaves the text's pieces and the images (data URLs)."""
    pieces = text.split(IMAGE_MARK)
    marks = len(pieces) - 1
    if marks == 0 and images:
        pieces = [""] * len(images) + [text]
    elif marks != len(images):
        raise ValueError(f"the text marks {marks} images but the sample has {len(images)}: {text[:80]!r}")
    content: list[dict[str, Any]] = []
    for i, piece in enumerate(pieces):
        if piece:
            content.append({"type": "text", "text": piece})
        if i < len(images):
            content.append({"type": "image_url", "image_url": {"url": jpeg_data_url(images[i], quality)}})
    return [{"role": "user", "content": content}]


def message_sample(messages: Sequence[Message]) -> tuple[str, list[Any]]:
    """The reverse, for local models: the messages' text with one marker per image part, and the images
    (data URLs decoded to arrays; PIL images, arrays and paths as they are)."""
    text, images = [], []
    for message in messages:
        content = message["content"]
        for part in [{"type": "text", "text": content}] if isinstance(content, str) else content:
            kind = part.get("type")
            if kind == "text":
                text.append(part.get("text", ""))
            elif kind in ("image_url", "image"):
                text.append(IMAGE_MARK)
                images.append(_image_of(part))
    return "".join(text), images


def _image_of(part: dict[str, Any]) -> Any:
    if part.get("type") == "image":
        image = part["image"]
        if isinstance(image, str):
            from PIL import Image

            return Image.open(image).convert("RGB")
        return image
    url = part["image_url"]["url"] if isinstance(part["image_url"], dict) else part["image_url"]
    if not url.startswith("data:"):
        raise ValueError(f"a local model reads images from data URLs or files, not {url[:60]!r}")
    import io

    from PIL import Image

    return Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).convert("RGB")
