"""Backbones: transformers causal LMs / VLMs by hub id or path, a GGUF file carried by an installed package
(SmolLM2-135M-Instruct, converted once to a cached folder), the EfficientNet-Lite0 + SmolLM2 composite
(``effnet_smollm2``), and the offline ``tiny`` one.

No Lightning here. Heavy imports (torch, transformers, tokenizers) happen inside the methods.
"""

from egohorizon.backbones.base import Backbone, default_cache_dir, needs_mm_token_type_ids
from egohorizon.backbones.effnet_smollm2 import EffnetSmolLM2Backbone
from egohorizon.backbones.gguf import GGUFBackbone
from egohorizon.backbones.hf import HFBackbone, load_pretrained_model
from egohorizon.backbones.tiny import TinyBackbone

__all__ = [
    "Backbone",
    "EffnetSmolLM2Backbone",
    "GGUFBackbone",
    "HFBackbone",
    "TinyBackbone",
    "default_cache_dir",
    "load_pretrained_model",
    "needs_mm_token_type_ids",
]
