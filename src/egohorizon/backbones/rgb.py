"""Any image as the HWC uint8 RGB array that processors and JPEG encoders take: one conversion for the
composite backbone's processor (``composite_processor``) and the chat images of ``llm.images``.
Torch-free (numpy is imported when it is called)."""

from __future__ import annotations

from typing import Any


def as_rgb_array(image: Any):
    """An HWC uint8 RGB array from an HWC/CHW array, a torch tensor or a PIL image."""
    import numpy as np

    if hasattr(image, "mode") and hasattr(image, "size"):  # PIL
        return np.asarray(image.convert("RGB"))
    if hasattr(image, "detach"):  # torch tensor, CHW
        image = image.detach().cpu().numpy()
        if image.ndim == 3 and image.shape[0] in (1, 3) and image.shape[-1] not in (1, 3):
            image = image.transpose(1, 2, 0)
    array = np.asarray(image)
    if array.ndim == 2:
        array = np.repeat(array[:, :, None], 3, axis=2)
    if array.ndim != 3 or array.shape[2] != 3 or array.dtype != np.uint8:
        raise ValueError(f"expected an HWC uint8 RGB image, got shape {array.shape} and dtype {array.dtype}")
    return np.ascontiguousarray(array)
