"""backbone=effnet_smollm2: EfficientNet-Lite0 + projector + SmolLM2-135M-Instruct assembled once into a
cached folder that loads like any local VLM. With the real weights on real EgoHands frames: the letterbox
puts each frame where the boxes' mapping says; the composite trains (LoRA + the whole projector, the
encoder's statistics frozen), saves one adapter folder, reloads from it with the same logits, and is served
by ``egohorizon serve`` with the replies it gives in process; ``export-adapter --merge`` refuses it by name."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from PIL import Image

from egohorizon.backbones import EffnetSmolLM2Backbone, HFBackbone
from egohorizon.backbones.boxes import ResizeMapping
from egohorizon.backbones.collate import KeyedVisionTextCollator
from egohorizon.backbones.composite_processor import LetterboxImageProcessor
from egohorizon.backbones.effnet_encoder import MEAN, STD
from egohorizon.errors import ConfigError

CONF = Path(__file__).resolve().parents[3] / "conf"
FINETUNE = yaml.safe_load((CONF / "finetune" / "effnet_smollm2.yaml").read_text())
FRAMES = {"CARDS_LIVINGROOM_B_T_frame_0032.jpg": [[806, 335, 1003, 479], [425, 349, 652, 479]],
          "CARDS_LIVINGROOM_B_T_frame_0504.jpg": [[626, 313, 872, 449], [429, 339, 616, 472]]}


def test_the_letterbox_mapping_by_hand():
    landscape = ResizeMapping((720, 1280), (224, 224), letterbox=True)
    # 1280 -> 224: scale 0.175; 720 * 0.175 = 126 rows, centred: (224 - 126) // 2 = 49 grey rows above
    assert landscape.content == (126, 224) and landscape.offset == (0, 49)
    assert landscape.to_model([640, 360, 1280, 720]) == [112, 112, 224, 175]
    assert landscape.to_original([112, 112, 224, 175]) == [640.0, 360.0, 1280.0, 720.0]
    portrait = ResizeMapping((1280, 720), (224, 224), letterbox=True)
    assert portrait.offset == (49, 0) and portrait.to_model([0, 0, 720, 640]) == [49, 0, 175, 112]
    # a grey-band box maps to the frame's edge, never outside it
    assert landscape.to_original([0, 0, 10, 10]) == [0.0, 0.0, 57.1, 0.0]


@pytest.mark.parametrize("size", [(720, 1280), (1280, 720), (480, 640), (300, 300)])
def test_the_processor_puts_the_frame_where_the_mapping_says(size):
    height, width = size
    box = [width // 4, height // 3, width // 2, 2 * height // 3]
    image = np.zeros((height, width, 3), np.uint8)  # black frame, a white box
    image[box[1]:box[3], box[0]:box[2]] = 255
    processor = LetterboxImageProcessor(224, 32, MEAN, STD)
    pixels = processor([image])[0, 0].numpy()  # [-1, 1]; the grey band is 0
    rows, cols = np.nonzero(pixels > 0.5)
    found = [cols.min(), rows.min(), cols.max() + 1, rows.max() + 1]
    expected = ResizeMapping(size, (224, 224), letterbox=True).to_model(box)
    assert max(abs(a - b) for a, b in zip(found, expected)) <= 1, (found, expected)
    mapping = ResizeMapping(size, (224, 224), letterbox=True)
    (content_h, _), (left, top) = mapping.content, mapping.offset
    assert abs(pixels[top + content_h // 2, left + 1] + 1) < 0.05  # the frame (black) starts at the offset
    if top:
        assert abs(pixels[top // 2, 112]) < 0.01  # mid-grey band above a landscape frame


def test_a_missing_encoder_file_names_the_install_command(tmp_path):
    backbone = EffnetSmolLM2Backbone(encoder_file=str(tmp_path / "gone.pth"), cache_dir=str(tmp_path))
    with pytest.raises(ConfigError, match="gone.pth is missing.*pip install --force-reinstall"):
        backbone.prepare()
    with pytest.raises(ConfigError, match="multiple of 32"):
        EffnetSmolLM2Backbone(image_size=200)


def test_the_vllm_plan_refuses_an_adapter_on_the_composite_by_name(tmp_path):
    from egohorizon.llm.serving import plan

    base, adapter = tmp_path / "effnet_smollm2-0123", tmp_path / "last.adapter"
    base.mkdir()
    (base / "config.json").write_text(json.dumps({"model_type": "effnet_smollm2"}))
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text(json.dumps({"target_modules": ["q_proj"],
                                                             "modules_to_save": ["projector"]}))
    (adapter / "egohorizon_adapter.json").write_text(json.dumps({"base_path": str(base), "model_id": "effnet"}))
    # not "merge it": merging is refused too; the message names what does serve it
    with pytest.raises(ConfigError, match=r"effnet_smollm2 composite.*cannot be served by vLLM.*egohorizon serve"):
        plan(str(adapter), tmp_path / "work")


@pytest.mark.slow  # ~15 s alone: Hydra, Lightning and the task's modules are imported
def test_the_command_composes_and_instantiates_without_touching_weights(tmp_path):
    from hydra.utils import instantiate
    from run_configs import compose_config

    from egohorizon.run.setup import build_model

    cfg = compose_config("train", ["task=hands", "backbone=effnet_smollm2", f"paths.run_dir={tmp_path}",
                                   f"paths.cache_dir={tmp_path / 'cache'}"])
    backbone = instantiate(cfg.backbone, _convert_="all")
    model = build_model(cfg, backbone)
    assert isinstance(backbone, EffnetSmolLM2Backbone) and backbone.image_size == 224
    assert backbone.cache_dir == (tmp_path / "cache" / "backbones").resolve() and backbone._folder is None
    assert model.lora["modules_to_save"] == ["projector"] and model.lora_vision is False  # the finetune file's
    assert not (tmp_path / "cache").exists()  # nothing built before prepare()


@pytest.fixture(scope="module")
def composite(effnet_composite) -> EffnetSmolLM2Backbone:
    return effnet_composite  # the session's (tests/conftest.py)


@pytest.fixture(scope="module")
def batch(composite, shared_data):
    """Two real frames with their hand boxes as targets, in letterboxed model pixels."""
    processor = composite.load_processor()
    samples = []
    for name, boxes in FRAMES.items():
        image = np.asarray(Image.open(shared_data / "egohands-frames" / "images" / name).convert("RGB"))
        mapping = ResizeMapping.for_processor(processor, *image.shape[:2])
        target = " ".join(f"hand {mapping.to_model(b)}".replace(" ", "") for b in boxes)
        samples.append({"text": "Hands: ", "images": [image], "target": target, "key": name})
    return KeyedVisionTextCollator(processor, with_prompts=True)(samples)


@pytest.mark.slow  # the composite's weights: ~20 s to load and train once per module
def test_the_folder_loads_as_any_local_vlm(composite, batch):
    folder = Path(composite.path)
    config = json.loads((folder / "config.json").read_text())
    assert config["model_type"] == "effnet_smollm2" and config["vision_config"]["image_size"] == 224
    assert composite.describe()["kind"] == "effnet_smollm2" and composite.model_id.endswith(folder.name)
    plain = HFBackbone(path=str(folder))  # what eval.py and serve do with an adapter's base_path
    processor = plain.load_processor()
    assert ResizeMapping.for_processor(processor, 720, 1280).letterbox
    image_id = processor.tokenizer.convert_tokens_to_ids("<|image_pad|>")
    assert batch["pixel_values"].shape == (2, 3, 224, 224) and batch["image_grid_thw"].tolist() == [[1, 7, 7]] * 2
    assert (batch["input_ids"] == image_id).sum(1).tolist() == [49, 49]  # one token per grid cell
    assert (batch["mm_token_type_ids"] == (batch["input_ids"] == image_id)).all()


def _inputs(batch) -> dict:
    return {k: batch[k] for k in ("input_ids", "attention_mask", "pixel_values", "image_grid_thw",
                                  "mm_token_type_ids")}


@pytest.fixture(scope="module")
def trained(composite, batch, tmp_path_factory):
    """A HandModule on the composite after 4 optimizer steps on the two frames, and its saved adapter."""
    from models.hands import HandModule

    torch.manual_seed(0)
    module = HandModule(composite, functools.partial(torch.optim.AdamW, lr=1e-3), lora=FINETUNE["lora"],
                        lora_vision=FINETUNE["lora_vision"])
    module.configure_model()
    stats = {k: v.clone() for k, v in module.model.base_model.model.vision_tower.state_dict().items()}
    optimizer = torch.optim.AdamW([p for p in module.model.parameters() if p.requires_grad], lr=1e-3)
    losses = []
    for _ in range(4):
        loss = module._loss(batch)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(float(loss.detach()))
    folder = module.save_adapter(tmp_path_factory.mktemp("run") / "last.adapter")
    return module, folder, losses, stats


@pytest.mark.slow  # the composite's weights: ~20 s to load and train once per module
def test_it_trains_the_projector_and_lora_and_keeps_the_encoder(trained):
    module, folder, losses, stats = trained
    assert losses[-1] < losses[0]
    names = [n for n, p in module.model.named_parameters() if p.requires_grad]
    assert any("projector" in n and "modules_to_save" in n for n in names) and any("lora_A" in n for n in names)
    assert not any("vision_tower" in n for n in names)
    after = module.model.base_model.model.vision_tower.state_dict()
    assert all(torch.equal(stats[k], after[k]) for k in stats)  # BatchNorm statistics untouched
    from safetensors import safe_open

    with safe_open(str(folder / "adapter_model.safetensors"), "pt") as saved:
        keys = list(saved.keys())
    assert any("projector" in k for k in keys) and any("lora_A" in k for k in keys)


@pytest.mark.slow  # the composite's weights: ~20 s to load and train once per module
def test_the_saved_adapter_reloads_with_the_same_logits(trained, batch):
    from egohorizon.llm.vision_local import LocalVLMBackend

    module, folder, _, _ = trained
    module.model.eval()
    backend = LocalVLMBackend(adapter=str(folder), dtype="float32")
    backend.load()
    with torch.no_grad():
        before = module.model(**_inputs(batch)).logits
        after = backend._model(**_inputs(batch)).logits
    assert torch.allclose(before, after, atol=1e-5, rtol=0)
    module.model.train()


@pytest.mark.slow  # the composite's weights: ~20 s to load and train once per module
def test_it_is_served_as_it_answers_in_process(trained, shared_data):
    from egohorizon.llm import make_backend
    from egohorizon.llm.images import sample_messages
    from egohorizon.llm.server import ChatServer

    _, folder, _, _ = trained
    image = np.asarray(Image.open(shared_data / "egohands-frames" / "images" / next(iter(FRAMES))).convert("RGB"))
    prompts = [sample_messages("Hands: ", [image]), "Say hello."]
    server = ChatServer(make_backend(str(folder))).start()
    try:
        local, remote = make_backend(str(folder)), make_backend("run", base_url=server.url)
        assert local.generate_many(prompts, max_new_tokens=8) == remote.generate_many(prompts, max_new_tokens=8)
    finally:
        server.close()


@pytest.mark.slow  # the composite's weights: ~20 s to load and train once per module
def test_merging_is_refused_by_name(trained, tmp_path):
    from egohorizon.run.export import merge_adapter

    _, folder, _, _ = trained
    with pytest.raises(ConfigError, match="effnet_smollm2.*cannot be merged"):
        merge_adapter(folder, tmp_path / "merged")
    assert not (tmp_path / "merged").exists()


@pytest.mark.slow  # the composite's weights
def test_the_encoders_last_block_trains_when_asked_and_is_saved(composite, batch, tmp_path):
    from models.hands import HandModule

    torch.manual_seed(0)
    lora = {**FINETUNE["lora"], "modules_to_save": ["projector", "vision_tower.blocks.6"]}
    module = HandModule(composite, functools.partial(torch.optim.AdamW, lr=1e-3), lora=lora, lora_vision=False)
    module.configure_model()
    block = module.model.base_model.model.vision_tower.blocks[6]
    before = {k: v.clone() for k, v in block.state_dict().items()}
    trained = [p for p in module.model.parameters() if p.requires_grad]
    assert any("vision_tower.blocks.6" in n for n, p in module.model.named_parameters() if p.requires_grad)
    module._loss(batch).backward()
    torch.optim.AdamW(trained, lr=1e-3).step()
    after = block.state_dict()
    changed = {k for k in before if not torch.equal(before[k], after[k])}
    assert any(k.endswith("conv_pwl.weight") for k in changed)  # the block's weights moved
    assert not any("running_" in k for k in changed)  # its BatchNorm statistics did not
    folder = module.save_adapter(tmp_path / "last.adapter")
    from safetensors import safe_open

    with safe_open(str(folder / "adapter_model.safetensors"), "pt") as saved:
        keys = list(saved.keys())
    assert any("vision_tower.blocks.6" in k for k in keys)
