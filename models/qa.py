"""QAModule: the LoRA vision-language model (models.lora_lm) that answers a month-scale multiple-choice
question from frames of the wearer's past (and, with retrieval, memory notes) with one option.

Two ways to answer (``generation.strategy``, chosen on the validation days):

- ``beam`` (with ``num_beams: 1``, greedy): the model writes the option letter (trained with
  ``data.target: letter``);
- ``options``: the model scores each option's own text (+ EOS) after the prompt and answers with the
  letter of the most likely one (trained with ``data.target: option``: the right option's text). This is
  the usual way to ask a language model a multiple-choice question (log-likelihood of each choice); the
  answer is still one of the item's options, never a guess. ``option_score``: ``sum`` of the option's
  token log-probabilities, or their ``mean`` (length-normalised), or ``calibrated``: the sum minus the
  option's summed log-probability after a content-free prompt (the same template with the question
  "N/A", no options, frames or notes), i.e. how much the item's inputs raise the option over what the
  model would say of it anyway (the usual correction of a multiple-choice scorer for the options' own
  prior: Zhao et al. 2021, "Calibrate before use"; Holtzman et al. 2021, domain-conditional PMI).

Extracting the letter (``egohorizon.metrics.qa.extract_answer``) and scoring belong to the qa task.
"""

from __future__ import annotations

import string
from typing import Any, ClassVar

import torch

from egohorizon.backbones.collate import IGNORE_INDEX, pixel_rows_per_image
from egohorizon.errors import ConfigError
from egohorizon.prompts.qa import QA_PROMPT_NAME
from models.lora_lm import LoRALanguageModule

OPTION_SCORES = ("sum", "mean", "calibrated")
CONTENT_FREE_QUESTION = "N/A"


class QAModule(LoRALanguageModule):
    generation_defaults: ClassVar[dict[str, Any]] = {
        **LoRALanguageModule.generation_defaults,
        "num_candidates": 1,  # one answer per item
        "temperature": 0.0,
        "strategy": "beam",  # with num_beams = 1: greedy decoding; "options": score every option's text
        "num_beams": 1,
        "max_new_tokens": 4,  # a letter and EOS; a longer answer is cut and, if unclear, invalid
        "option_score": "sum",  # strategy options: sum | mean | calibrated (module doc)
    }
    default_prompt: ClassVar[str] = QA_PROMPT_NAME

    def generate_texts(self, batch: dict[str, Any], batch_idx: int = 0) -> list[list[str]]:
        if self.generation["strategy"] != "options":
            return super().generate_texts(batch, batch_idx)
        if self.generation["option_score"] not in OPTION_SCORES:
            raise ConfigError(f"model.generation.option_score: expected one of {OPTION_SCORES}, "
                              f"got {self.generation['option_score']!r}")
        if "options" not in batch:
            raise ConfigError("generation.strategy 'options' needs batches with each item's options (the qa datamodule)")
        scores = self.option_log_likelihoods(batch)
        letters = string.ascii_uppercase
        return [[f"{letters[int(row.argmax())]}. {options[int(row.argmax())]}"]
                for row, options in zip(scores, batch["options"], strict=True)]

    @torch.no_grad()
    def option_log_likelihoods(self, batch: dict[str, Any]) -> list[torch.Tensor]:
        """Per item, one score per option (``option_score``): the log-probability of the option's text +
        EOS after the item's prompt and images, summed or averaged over its tokens, or, ``calibrated``,
        the sum minus the same sum after the content-free prompt (module doc). All options of all items in
        one forward pass (two with calibration). The prompts are the batch's left-padded ``prompt_ids``."""
        totals, counts, sizes = self._option_sums(batch)
        if self.generation["option_score"] == "mean":
            totals = totals / counts
        elif self.generation["option_score"] == "calibrated":
            free = self._content_free_ids()
            texts = [option for options in batch["options"] for option in options]
            prior, _ = self._sums_after([free] * len(texts), [[0] * len(free)] * len(texts), texts, {},
                                        batch["prompt_ids"].device)
            totals = totals - prior
        return list(totals.split(sizes))

    def _content_free_ids(self) -> list[int]:
        """The prompt template with nothing in it: question "N/A", no options, frames or notes."""
        from egohorizon.prompts.qa import render_qa_prompt

        text = render_qa_prompt(CONTENT_FREE_QUESTION, [], None, prompt=self.prompt_name or self.default_prompt)
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def _option_sums(self, batch: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor, list[int]]:
        """Summed option log-probabilities after each item's own prompt (and images), their token counts,
        and the number of options per item."""
        per_image = pixel_rows_per_image(batch)  # patch rows (Qwen-VL) or one row an image (composite)
        vision_start = self.tokenizer.convert_tokens_to_ids("<|vision_start|>")
        prompts, prompt_types, texts, pixels, grids, sizes = [], [], [], [], [], []
        image, row = 0, 0
        for i, options in enumerate(batch["options"]):
            keep = batch["prompt_mask"][i].bool()
            prompt = batch["prompt_ids"][i][keep].tolist()
            types = (batch["prompt_mm_token_type_ids"][i][keep].tolist()
                     if "prompt_mm_token_type_ids" in batch else [0] * len(prompt))
            n_images = prompt.count(vision_start) if per_image else 0  # a text-only batch has no images
            n_rows = sum(per_image[image:image + n_images])
            for option in options:
                prompts.append(prompt)
                prompt_types.append(types)
                texts.append(option)
                if n_images:
                    pixels.append(batch["pixel_values"][row:row + n_rows])
                    grids.append(batch["image_grid_thw"][image:image + n_images])
            image, row = image + n_images, row + n_rows
            sizes.append(len(options))
        if image == 0 and len(per_image) == 1:
            # A text-only batch carries the collator's one masked dummy image (issue 26 item 5: every rank
            # runs the vision tower in training); no prompt marks it, so the option rows score text only.
            per_image = []
        if image != len(per_image):
            raise ValueError(f"the prompts mark {image} images but the batch has {len(per_image)}")
        vision = {"pixel_values": torch.cat(pixels), "image_grid_thw": torch.cat(grids)} if pixels else {}
        totals, counts = self._sums_after(prompts, prompt_types, texts, vision, batch["prompt_ids"].device)
        return totals, counts, sizes

    def _sums_after(self, prompts: list[list[int]], prompt_types: list[list[int]], texts: list[str],
                    vision: dict[str, torch.Tensor], device) -> tuple[torch.Tensor, torch.Tensor]:
        """For each (prompt, text) row: the summed log-probability of the text's tokens + EOS after the
        prompt, and the number of those tokens; one forward pass, right-padded."""
        eos, pad = self.tokenizer.eos_token_id, self.tokenizer.pad_token_id
        rows, labels, types = [], [], []
        for prompt, kinds, text in zip(prompts, prompt_types, texts, strict=True):
            ids = self.tokenizer(text, add_special_tokens=False)["input_ids"] + [eos]
            rows.append(prompt + ids)
            labels.append([IGNORE_INDEX] * len(prompt) + ids)
            types.append(kinds + [0] * len(ids))
        width = max(len(r) for r in rows)

        def padded(values, fill):
            return torch.tensor([v + [fill] * (width - len(v)) for v in values], dtype=torch.long, device=device)

        input_ids, label_ids = padded(rows, pad), padded(labels, IGNORE_INDEX)
        mask = padded([[1] * len(r) for r in rows], 0)
        logits = self(input_ids, mask, mm_token_type_ids=padded(types, 0), **vision).logits[:, :-1].float()
        target = label_ids[:, 1:]
        known = target != IGNORE_INDEX
        token_lp = torch.log_softmax(logits, -1).gather(-1, target.clamp(min=0).unsqueeze(-1)).squeeze(-1) * known
        return token_lp.sum(1), known.sum(1)
