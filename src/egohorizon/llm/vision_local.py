"""A local vision-language model (transformers), optionally with a trained LoRA adapter, generating for
batches of ``(text, images)`` samples.

Two halves, so a job can overlap them: ``encode(samples)`` is CPU work (the processor resizes the images
and expands the image markers; egohorizon.backbones.collate.VisionTextCollator, left-padded prompts)
and may run in a DataLoader worker; ``generate_batch(batch)`` runs the model.

- With an ``adapter`` (a ``*.adapter`` folder saved by train.py: PEFT weights + ``egohorizon_adapter.json``
  naming the base model), the base comes from the adapter's ``base_path`` unless ``model`` is given,
  and prompts are fed as raw text, exactly as the adapter was trained (no chat template).
- Without one (any hub VLM or local folder), prompts go through the processor's chat template when it
  has one (instruction-tuned checkpoints expect it); the template writes the same image markers.

Greedy decoding at ``temperature == 0`` (beam search with ``num_beams > 1``); sampling seeded with ``seed``
otherwise. ``set_answer_set`` restricts decoding to a closed answer set (``egohorizon.llm.answer_set``: the
trie that ``models.caption.CaptionModule`` decodes along at validation and test). Batched outputs can
differ from one-at-a-time outputs in the last bits (padding); each window is generated once.
torch, transformers and peft are imported when the model loads.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# checkpoints.py is the one torch-free reader of adapters and run folders
from egohorizon.checkpoints import read_adapter_meta
from egohorizon.errors import ConfigError
from egohorizon.llm.base import LLMBackend, Prompt, as_messages
from egohorizon.llm.local_dtype import generation_record, local_generation_dtype, merge_adapter

log = logging.getLogger(__name__)



class TokenizerAsProcessor:
    """A text-only model's tokenizer in a processor's place, so a text-only adapter (the abstractor trained
    on SmolLM2) is prompted through the same encoder as a vision-language one: prompts tokenised as the
    text datamodules tokenise them (no special tokens added), no image processor, and a sample with
    images refused by name. Picklable, as the encoder is."""

    image_processor = None

    def __init__(self, tokenizer, name: str):
        self.tokenizer, self.name = tokenizer, name

    @property
    def chat_template(self):
        return getattr(self.tokenizer, "chat_template", None)

    def apply_chat_template(self, messages, **options):
        # a text model's template wants string contents, not the list of parts a VLM's takes
        flat = [{**m, "content": m["content"] if isinstance(m["content"], str)
                 else "".join(part.get("text", "") for part in m["content"])} for m in messages]
        return self.tokenizer.apply_chat_template(flat, **options)

    def __call__(self, text, images=None, return_tensors=None):
        if images:
            raise ConfigError(f"{self.name}: a text-only model; images need a vision-language model")
        return self.tokenizer(text, add_special_tokens=False, return_tensors=return_tensors)


class PromptEncoder:
    """Samples -> a generation batch (picklable: it runs in DataLoader workers)."""

    def __init__(self, processor, chat_template: bool):
        from egohorizon.backbones.collate import VisionTextCollator

        # a text-only model gets no dummy image: it has no vision tower to keep busy
        self.collate = VisionTextCollator(processor, with_prompts=True,
                                          dummy_image=processor.image_processor is not None)
        self.processor, self.chat_template = processor, chat_template

    def text(self, text: str, n_images: int) -> str:
        if not self.chat_template:
            return text
        from egohorizon.llm.images import IMAGE_MARK

        pieces, content = text.split(IMAGE_MARK), []
        if len(pieces) == 1:  # no marks: images in front, as the collator does
            pieces = [""] * n_images + pieces
        for i, piece in enumerate(pieces):
            content += [{"type": "text", "text": piece}] if piece else []
            content += [{"type": "image"}] if i < len(pieces) - 1 else []
        return self.processor.apply_chat_template([{"role": "user", "content": content}], tokenize=False,
                                                  add_generation_prompt=True)

    def image_size(self, height: int, width: int) -> tuple[int, int] | None:
        """The (height, width) the processor resizes a ``height`` x ``width`` image to, for Qwen-VL
        processors (``smart_resize``: multiples of patch x merge within the pixel budget); None when
        the processor does not say. The job decodes images no larger than needed for it."""
        from transformers.models.qwen2_vl.image_processing_qwen2_vl import smart_resize

        images = self.processor.image_processor
        if images is None:
            return None
        size, patch, merge = (getattr(images, k, None) for k in ("size", "patch_size", "merge_size"))
        low, high = (getattr(size, "shortest_edge", None), getattr(size, "longest_edge", None)) if size else (None, None)
        if not (patch and merge and low and high):
            return None
        return smart_resize(height, width, factor=patch * merge, min_pixels=low, max_pixels=high)

    def __call__(self, samples: Sequence[dict[str, Any]]) -> dict[str, Any]:
        images = [list(s.get("images") or []) for s in samples]
        return self.collate([{"text": self.text(s["text"], len(ims)), "images": ims, "target": None}
                             for s, ims in zip(samples, images)])


class LocalVLMBackend(LLMBackend):
    def __init__(
        self,
        model: str | None = None,
        *,
        adapter: str | None = None,
        device: str | None = None,
        dtype: str | None = None,
        batch_size: int = 8,
        chat_template: bool | None = None,
    ) -> None:
        self.adapter = str(Path(adapter).resolve()) if adapter else None
        self.adapter_meta = read_adapter_meta(adapter) if adapter else {}
        base = model or self.adapter_meta.get("base_path") or self.adapter_meta.get("model_id")
        if not base:
            raise ConfigError("a local model needs a hub id or folder (or an adapter that names its base)")
        self.base = str(base)
        self.model_id = str(self.adapter_meta.get("model_id") or base) if adapter and not model else self.base
        self.device, self.dtype, self.batch_size = device, dtype, batch_size
        self.chat_template = chat_template
        self._model = self._processor = None
        self._mm = False
        self._trie = None  # AnswerTrie: decoding restricted to an answer set (set_answer_set)

    def set_answer_set(self, answers: Sequence[str] | None) -> None:
        """Decode only these answers (None: free text), tokenised as training tokenised its targets."""
        from egohorizon.llm.answer_set import AnswerTrie

        self._trie = AnswerTrie.of_answers(self.load_processor().tokenizer, answers) if answers else None

    def device_type(self) -> str:
        """``cuda`` or ``cpu``: where the model runs (or will)."""
        if self._model is not None:
            return self._model.device.type
        import torch

        return str(self.device or ("cuda" if torch.cuda.is_available() else "cpu")).split(":")[0]

    def _backbone(self):
        from egohorizon.backbones import HFBackbone

        # auto: a vision-language model when the config has a vision tower, else a causal LM (text only)
        return HFBackbone(path=self.base, kind="auto", dtype=self.dtype)

    def load_processor(self):
        """The processor (cheap: no weights); enough to encode prompts. A text-only model's is its
        tokenizer (``TokenizerAsProcessor``)."""
        if self._processor is None:
            backbone = self._backbone()
            processor = backbone.load_processor()
            if processor is None:
                processor = TokenizerAsProcessor(backbone.load_tokenizer(), self.base)
            elif not hasattr(processor, "image_processor"):
                raise ConfigError(f"{self.base}: no image processor; captioning needs a vision-language model")
            if processor.tokenizer.pad_token_id is None:
                processor.tokenizer.pad_token = processor.tokenizer.eos_token
            if self.chat_template is None:  # an adapter saw raw prompts; an instruct model wants its template
                self.chat_template = not self.adapter and bool(getattr(processor, "chat_template", None))
            self._processor = processor
        return self._processor

    def load(self) -> None:
        """The weights (base + adapter), on the device."""
        if self._model is not None:
            return
        try:
            import torch

            from egohorizon.backbones import needs_mm_token_type_ids
        except ImportError as error:
            raise ConfigError("a local model needs torch and transformers (pip install 'egohorizon[train]')") from error
        self.load_processor()
        dtype = self.generation_dtype()
        model = self._backbone().load_model(dtype)
        if self.adapter:
            from peft import PeftModel

            model = merge_adapter(PeftModel.from_pretrained(model, self.adapter), dtype)
        device = self.device or ("cuda" if torch.cuda.is_available() else "cpu")
        self._model = model.to(device).eval()
        self._mm = needs_mm_token_type_ids(model)
        log.info("loaded %s%s on %s (chat template: %s)", self.base,
                 f" + adapter {self.adapter}" if self.adapter else "", device, self.chat_template)

    def encoder(self) -> PromptEncoder:
        return PromptEncoder(self.load_processor(), bool(self.chat_template))

    def generate_batch(self, batch: dict[str, Any], *, max_new_tokens: int = 256, temperature: float = 0.0,
                       seed: int = 0, logits_processor: Any = None, num_beams: int = 1) -> list[str]:
        """One text per sample of an encoded batch (``logits_processor``: a transformers
        ``LogitsProcessorList`` applied while decoding, e.g. constrained decoding; ``num_beams > 1``: beam
        search, as CaptionModule's ``generation.strategy: beam``)."""
        import torch

        self.load()
        device = self._model.device
        inputs = {"input_ids": batch["prompt_ids"].to(device), "attention_mask": batch["prompt_mask"].to(device)}
        if "pixel_values" in batch:
            inputs["pixel_values"] = batch["pixel_values"].to(device, dtype=self._model.dtype)
            inputs["image_grid_thw"] = batch["image_grid_thw"].to(device)
        if self._mm:
            inputs["mm_token_type_ids"] = batch["prompt_mm_token_type_ids"].to(device)
        tokenizer = self._processor.tokenizer
        options: dict[str, Any] = {"max_new_tokens": max_new_tokens, "pad_token_id": tokenizer.pad_token_id,
                                   "eos_token_id": tokenizer.eos_token_id}
        options.update({"do_sample": True, "temperature": temperature} if temperature > 0 else {"do_sample": False})
        if num_beams > 1:
            options["num_beams"] = num_beams
        if logits_processor is not None:
            options["logits_processor"] = logits_processor
        if self._trie is not None:  # the same constraint as CaptionModule.generation_constraints
            options["prefix_allowed_tokens_fn"] = self._trie.prefix_allowed_tokens_fn(inputs["input_ids"].shape[1],
                                                                                      tokenizer.eos_token_id)
        torch.manual_seed(seed)
        with torch.inference_mode():
            out = self._model.generate(**inputs, **options)
        texts = tokenizer.batch_decode(out[:, inputs["input_ids"].shape[1]:], skip_special_tokens=True)
        return [t.strip() for t in texts]

    # -- the LLMBackend interface (chat messages with image parts) -----------------------------------

    def generate(self, prompt: Prompt, *, max_new_tokens: int = 256, temperature: float = 0.0, seed: int = 0,
                 n: int = 1, grouping_events: int | None = None) -> list[str]:
        return self.generate_many([prompt], max_new_tokens=max_new_tokens, temperature=temperature, seed=seed,
                                  n=n, grouping_events=grouping_events)[0]

    def generate_many(self, prompts: Sequence[Prompt], *, max_new_tokens: int = 256, temperature: float = 0.0,
                      seed: int = 0, n: int = 1, grouping_events: int | None = None) -> list[list[str]]:
        """``grouping_events``: the abstractor's constrained decoding, every prompt a run of that many events
        (only valid groupings of it can be written: ``llm.constraints``)."""
        from egohorizon.llm.images import message_sample

        if n != 1 and temperature == 0:
            raise ConfigError("greedy decoding gives one answer per prompt; use temperature > 0 for n > 1")
        samples = [dict(zip(("text", "images"), message_sample(as_messages(p)))) for p in prompts]
        encode, out = self.encoder(), []
        for start in range(0, len(samples), self.batch_size):
            chunk = samples[start:start + self.batch_size]
            batch = encode(chunk)
            processor = self._grouping(grouping_events, len(chunk), batch["prompt_ids"].shape[1])
            texts = [self.generate_batch(batch, max_new_tokens=max_new_tokens, temperature=temperature,
                                         seed=seed + k, logits_processor=processor) for k in range(n)]
            out += [[texts[k][i] for k in range(n)] for i in range(len(chunk))]
        return out

    def _grouping(self, n_events: int | None, rows: int, prompt_length: int) -> Any:
        if n_events is None:
            return None
        from transformers import LogitsProcessorList

        from egohorizon.llm.constraints import grouping_processor

        return LogitsProcessorList([grouping_processor(self.load_processor().tokenizer, [n_events] * rows,
                                                       prompt_length)])

    def generation_dtype(self) -> str:
        """``dtype``, or bfloat16 where the device computes it natively (a GPU with bf16, a CPU with
        avx512_bf16 or AMX); float32 elsewhere and for the tiny backbone (egohorizon.llm.local_dtype)."""
        return local_generation_dtype(self.dtype, self.device, self.base)

    def generation_record(self) -> dict[str, Any]:
        return generation_record(self.generation_dtype())

    def describe(self) -> dict[str, Any]:
        return {"backend": "local_vlm", "model": self.model_id, "base": self.base, "adapter": self.adapter}
