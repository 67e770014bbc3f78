"""The encoder + projector + causal LM composite (``backbone=effnet_smollm2``) as a transformers model.

LLaVA's recipe with a convolutional encoder: the encoder's last feature grid (EfficientNet-Lite0: 1280
channels, one cell per 32 pixels; 7 x 7 at 224 px), flattened row by row, goes through a 2-layer MLP
(``projector``: Linear, GELU, Linear) into the LM's width and replaces, one cell per token, the
``<|image_pad|>`` tokens the processor wrote (``composite_processor``). Everything else is the LM.

It is a ``PreTrainedModel`` with its own ``model_type`` (``effnet_smollm2``), registered with transformers'
Auto classes (``register``), so the folder that ``EffnetSmolLM2Backbone`` builds loads like any local
checkpoint through ``HFBackbone``, and peft, ``save_pretrained`` and ``generate`` work unchanged: the
training module, eval.py, ``serve`` and the offline jobs take it as one more VLM. It is no architecture that
transformers or vLLM know, so ``export-adapter --merge`` refuses it (``composite_names.not_servable``).

The encoder's BatchNorm layers stay in inference mode when the model trains: their running statistics are
part of the frozen base, which the adapter folder does not hold, and batches of a few frames would
wreck them.
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch
from torch import nn
from transformers import AutoConfig, PretrainedConfig, PreTrainedModel
from transformers.generation import GenerationMixin

from egohorizon.backbones.composite_names import MODEL_TYPE


class EffnetSmolLM2Config(PretrainedConfig):
    """``text_config``: the LM's config; ``vision_config``: the encoder (timm name, image size, feature
    channels, stride, normalisation); ``image_token_id``: the token the image cells replace."""

    model_type = MODEL_TYPE
    sub_configs: ClassVar[dict] = {"text_config": AutoConfig}

    def __init__(self, text_config=None, vision_config: dict | None = None, image_token_id: int = 0, **kwargs):
        if isinstance(text_config, dict):
            from transformers import CONFIG_MAPPING

            text_config = CONFIG_MAPPING[text_config.get("model_type", "llama")](**text_config)
        self.text_config = text_config
        self.vision_config = dict(vision_config or {})
        self.image_token_id = image_token_id
        super().__init__(**kwargs)

    @property
    def grid(self) -> int:
        """Cells per side of the feature grid (7 at 224 px)."""
        return -(-int(self.vision_config["image_size"]) // int(self.vision_config["stride"]))

    @property
    def image_tokens(self) -> int:
        return self.grid**2


class Projector(nn.Module):
    def __init__(self, features: int, width: int):
        super().__init__()
        self.linear_1 = nn.Linear(features, width)
        self.act = nn.GELU()
        self.linear_2 = nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear_2(self.act(self.linear_1(x)))


class EffnetSmolLM2ForConditionalGeneration(PreTrainedModel, GenerationMixin):
    config_class = EffnetSmolLM2Config
    base_model_prefix = ""
    main_input_name = "input_ids"
    _supports_sdpa = True
    supports_gradient_checkpointing = True  # the LM's blocks (model.gradient_checkpointing)

    def __init__(self, config: EffnetSmolLM2Config):
        super().__init__(config)
        import timm
        from transformers import AutoModelForCausalLM

        self.vision_tower = timm.create_model(config.vision_config["architecture"], pretrained=False, num_classes=0)
        self.projector = Projector(int(config.vision_config["features"]), config.text_config.hidden_size)
        self.language_model = AutoModelForCausalLM.from_config(config.text_config)
        self.post_init()

    def _init_weights(self, module):
        # The encoder and the LM come with their weights; only a fresh projector is initialised here.
        if isinstance(module, nn.Linear) and any(module is m for m in self.projector.modules()):
            nn.init.normal_(module.weight, std=0.02)
            nn.init.zeros_(module.bias)

    def train(self, mode: bool = True):
        super().train(mode)
        self.vision_tower.eval()  # BatchNorm statistics are frozen (module docstring)
        return self

    def get_input_embeddings(self):
        return self.language_model.get_input_embeddings()

    def set_input_embeddings(self, value):
        self.language_model.set_input_embeddings(value)

    def get_output_embeddings(self):
        return self.language_model.get_output_embeddings()

    def image_features(self, pixel_values: torch.Tensor) -> torch.Tensor:
        """[N, 3, S, S] normalised images -> [N, grid * grid, LM width]."""
        weight = self.projector.linear_1.weight
        grid = self.vision_tower.forward_features(pixel_values.to(next(self.vision_tower.parameters()).dtype))
        cells = grid.flatten(2).transpose(1, 2)  # row by row, as the tokens are written
        return self.projector(cells.to(weight.dtype))

    def embed(self, input_ids: torch.Tensor, pixel_values: torch.Tensor | None = None) -> torch.Tensor:
        """Token embeddings with each image's cells in place of its ``<|image_pad|>`` tokens."""
        embeds = self.get_input_embeddings()(input_ids)
        slots = input_ids == self.config.image_token_id
        if pixel_values is None:
            if slots.any():
                raise ValueError(f"{int(slots.sum())} image tokens in the text but no pixel_values")
            return embeds
        features = self.image_features(pixel_values)
        if int(slots.sum()) != features.shape[0] * features.shape[1]:
            raise ValueError(f"the text has {int(slots.sum())} image tokens, the {features.shape[0]} images make "
                             f"{features.shape[0] * features.shape[1]} ({features.shape[1]} each)")
        return embeds.masked_scatter(slots.unsqueeze(-1), features.to(embeds.dtype))

    def forward(self, input_ids=None, attention_mask=None, pixel_values=None, image_grid_thw=None,
                mm_token_type_ids=None, labels=None, inputs_embeds=None, **kwargs):
        # image_grid_thw and mm_token_type_ids: what the Qwen-VL-style collator sends; the image tokens
        # are found by their id, and every image has the same grid.
        if inputs_embeds is None:
            inputs_embeds = self.embed(input_ids, pixel_values)
        return self.language_model(inputs_embeds=inputs_embeds, attention_mask=attention_mask, labels=labels,
                                   **kwargs)

    @torch.no_grad()
    def generate(self, input_ids=None, attention_mask=None, pixel_values=None, image_grid_thw=None,
                 mm_token_type_ids=None, **kwargs) -> torch.Tensor:
        """The LM's ``generate`` from the prompt's embeddings (images in place); returns prompt + new
        tokens, as a decoder-only model's ``generate`` does."""
        kwargs.pop("inputs_embeds", None)
        embeds = self.embed(input_ids, pixel_values)
        out = self.language_model.generate(inputs_embeds=embeds, attention_mask=attention_mask, **kwargs)
        copies = out.shape[0] // input_ids.shape[0]
        return torch.cat([input_ids.repeat_interleave(copies, dim=0), out], dim=1)

    def prepare_inputs_for_generation(self, *args: Any, **kwargs: Any):
        return self.language_model.prepare_inputs_for_generation(*args, **kwargs)



_registered = False


def register() -> None:
    """Makes the Auto classes know ``effnet_smollm2`` (config, model, processor); idempotent."""
    global _registered
    if _registered:
        return
    from transformers import AutoModelForImageTextToText, AutoProcessor

    from egohorizon.backbones.composite_processor import CompositeProcessor

    AutoConfig.register(MODEL_TYPE, EffnetSmolLM2Config, exist_ok=True)
    AutoModelForImageTextToText.register(EffnetSmolLM2Config, EffnetSmolLM2ForConditionalGeneration, exist_ok=True)
    AutoProcessor.register(EffnetSmolLM2Config, CompositeProcessor, exist_ok=True)
    _registered = True
