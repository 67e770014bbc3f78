"""A local transformers model (causal LM or VLM) by hub id or local path, loaded on first use.

Text-only checkpoints load with ``AutoModelForCausalLM`` and their tokenizer's chat template (plain
concatenation of the messages when there is none). Checkpoints whose config has a ``vision_config``
load with ``AutoModelForImageTextToText`` and their processor, which reads image parts of the
messages: ``image_url`` parts with ``data:`` URLs (what the OpenAI client sends, so a loopback server and
this backend see the same pixels) or ``image`` parts holding a path or PIL image, each put where the
model's image marker goes; transformers 5 Qwen-VL models then also receive the processor's
``mm_token_type_ids``. A VLM without a chat template (the toy ``tiny``) reads the messages' text with the
marker in each image's place, as it was trained. A text-only model refuses a prompt with images.

``adapter``: a LoRA folder saved by train.py (``*.adapter``), loaded on the model with peft (and merged
into it when the weights are in bfloat16). ``dtype``: the weights' dtype; unset, bfloat16 where the device
computes it natively, else float32 (``egohorizon.llm.local_dtype``).
``chat_template``: None uses the tokenizer's template when it has one; False feeds the messages' text
as it is (an adapter trained on raw prompts: the turns joined by blank lines, nothing appended); True
requires the template. ``local_model`` sets it for an adapter from what its training recorded.

Greedy decoding at ``temperature == 0``; otherwise sampling seeded with ``seed``. torch and
transformers are imported only when the model is loaded.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from egohorizon.errors import ConfigError
from egohorizon.llm.base import LLMBackend, LLMError, Prompt, as_messages, message_text
from egohorizon.llm.local_dtype import generation_record, local_generation_dtype, merge_adapter

log = logging.getLogger(__name__)


class TransformersBackend(LLMBackend):
    def __init__(
        self,
        model: str,
        *,
        device: str | None = None,
        dtype: str | None = None,
        trust_remote_code: bool = False,
        adapter: str | None = None,
        chat_template: bool | None = None,
    ) -> None:
        self.model_id = str(model)  # what predictions name; callers may set a friendlier one
        self.path = str(model)  # what is loaded
        self.adapter = adapter
        self.chat_template = chat_template
        self.device = device
        self.dtype = dtype
        self.trust_remote_code = trust_remote_code
        self._model = None
        self._processor = None  # tokenizer for text models, processor for VLMs
        self._is_vlm = False

    def _load(self) -> None:
        if self._model is not None:
            return
        try:
            import torch
            from transformers import (
                AutoConfig,
                AutoModelForCausalLM,
                AutoModelForImageTextToText,
                AutoProcessor,
                AutoTokenizer,
            )
        except ImportError as error:
            raise ConfigError(
                "the local LLM backend needs torch and transformers (pip install 'egohorizon[train]')"
            ) from error
        kwargs: dict[str, Any] = {"trust_remote_code": self.trust_remote_code}
        try:
            config = AutoConfig.from_pretrained(self.path, **kwargs)
            self._is_vlm = getattr(config, "vision_config", None) is not None
            dtype = self.generation_dtype()
            kwargs["dtype"] = getattr(torch, dtype) if dtype != "auto" else "auto"
            if self._is_vlm:
                self._processor = AutoProcessor.from_pretrained(
                    self.path, trust_remote_code=self.trust_remote_code
                )
                self._model = AutoModelForImageTextToText.from_pretrained(self.path, **kwargs)
            else:
                self._processor = AutoTokenizer.from_pretrained(
                    self.path, trust_remote_code=self.trust_remote_code
                )
                self._model = AutoModelForCausalLM.from_pretrained(self.path, **kwargs)
        except OSError as error:
            raise ConfigError(
                f"cannot load model {self.path!r}: {error}. Offline, a hub id works only when "
                "the model is in the local Hugging Face cache; otherwise pass a local folder."
            ) from error
        if self.adapter:
            from peft import PeftModel

            self._model = merge_adapter(PeftModel.from_pretrained(self._model, self.adapter), self.generation_dtype())
        device = self.device or ("cuda" if torch.cuda.is_available() else "cpu")
        self._model.to(device).eval()
        log.info("loaded %s (%s) on %s", self.path, "VLM" if self._is_vlm else "causal LM", device)

    def _inputs(self, messages: list[dict[str, Any]]):
        processor = self._processor
        has_template = bool(getattr(processor, "chat_template", None))
        if self.chat_template and not has_template:
            raise ConfigError(f"{self.path}: chat_template=True but the tokenizer has no chat template")
        templated = has_template if self.chat_template is None else self.chat_template
        # A base model without a template reads one turn a paragraph; an adapter exactly its training text.
        tail = "" if self.chat_template is False else "\n"
        if not self._is_vlm:
            images = sum(1 for m in messages for part in _parts(m) if part.get("type") in ("image", "image_url"))
            if images:
                raise LLMError(f"model {self.model_id!r} is a text-only model; the prompt has {images} image "
                               "part(s): serve or load a vision-language model for image requests")
            if templated:
                text = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
            else:
                text = "\n\n".join(message_text(m) for m in messages) + tail
            return processor(text, return_tensors="pt")
        from egohorizon.llm.images import message_sample

        # Images decoded here (data URLs included) and the text carries the model's marker in their places,
        # so the processor expands each marker into that image's tokens.
        turns = [message_sample([m]) for m in messages]
        images = [image for _, turn_images in turns for image in turn_images]
        if templated:
            marked = [{"role": m["role"], "content": [{"type": "image"} if p.get("type") in ("image", "image_url")
                                                      else p for p in _parts(m)]} for m in messages]
            text = processor.apply_chat_template(marked, add_generation_prompt=True, tokenize=False)
        else:
            text = "\n\n".join(turn_text for turn_text, _ in turns) + tail
        return processor(text=[text], images=images or None, return_tensors="pt")

    def generate(
        self,
        prompt: Prompt,
        *,
        max_new_tokens: int = 256,
        temperature: float = 0.0,
        seed: int = 0,
        n: int = 1,
    ) -> list[str]:
        import torch

        self._load()
        inputs = self._inputs(as_messages(prompt)).to(self._model.device)
        tokenizer = getattr(self._processor, "tokenizer", self._processor)
        options: dict[str, Any] = {
            "max_new_tokens": max_new_tokens,
            "num_return_sequences": n,
            "pad_token_id": tokenizer.pad_token_id
            if tokenizer.pad_token_id is not None
            else tokenizer.eos_token_id,
        }
        if temperature > 0:
            options.update(do_sample=True, temperature=temperature)
        else:
            options.update(do_sample=False)
            if n > 1:  # greedy decoding has one answer; beams give n distinct ones
                options.update(num_beams=n)
        torch.manual_seed(seed)
        with torch.inference_mode():
            output = self._model.generate(**inputs, **options)
        new_tokens = output[:, inputs["input_ids"].shape[1] :]
        return [text.strip() for text in tokenizer.batch_decode(new_tokens, skip_special_tokens=True)]

    def generate_many(self, prompts: Sequence[Prompt], **params: Any) -> list[list[str]]:
        # One prompt at a time: no padding effects on the answers, and memory stays flat.
        return [self.generate(p, **params) for p in prompts]

    def generation_dtype(self) -> str:
        """``dtype``, or bfloat16 where the device computes it natively (egohorizon.llm.local_dtype)."""
        return local_generation_dtype(self.dtype, self.device, self.path)

    def generation_record(self) -> dict[str, Any]:
        return generation_record(self.generation_dtype())

    def describe(self) -> dict[str, Any]:
        extra = {"path": self.path} if self.path != self.model_id else {}
        return {"backend": "transformers", "model": self.model_id, "vlm": self._is_vlm, **extra,
                **({"adapter": self.adapter} if self.adapter else {})}


def _parts(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message["content"]
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
