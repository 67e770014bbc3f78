"""The training loss over the answer tokens only, with the vocabulary head applied only where the loss
reads it: from the position before a batch's first answer token to the end (``logits_to_keep``). The same
number as transformers' ``ForCausalLMLoss`` over the full logits (tested); a SmolLM2 LoRA step on EPIC
forecast batches takes 0.93x the time of the full-logits step on 2 CPU cores (scripts/bench_lora_step.py)."""

from __future__ import annotations

import torch

from egohorizon.backbones.collate import IGNORE_INDEX


def answer_logits_to_keep(labels: torch.Tensor) -> int:
    """How many trailing positions of a right-padded batch need logits: from the one before the
    batch's first answer token (its logit predicts that token) to the end. The whole length when no
    row has an answer (the loss is then undefined, as transformers' own)."""
    answer = (labels != IGNORE_INDEX).any(dim=0).nonzero()
    if answer.numel() == 0:
        return labels.shape[1]
    return labels.shape[1] - max(int(answer[0]) - 1, 0)


def shifted_cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Next-token cross-entropy of ``logits`` over ``labels`` aligned with them (position i's logit
    predicts label i + 1), averaged over the labels that are not -100, in float32: transformers'
    ``ForCausalLMLoss`` for a batch without ``num_items_in_batch``."""
    import torch.nn.functional as F

    predicted = logits[:, :-1, :].float()
    return F.cross_entropy(predicted.reshape(-1, predicted.shape[-1]), labels[:, 1:].reshape(-1),
                           ignore_index=IGNORE_INDEX)
