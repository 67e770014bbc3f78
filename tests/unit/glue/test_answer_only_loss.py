"""The training loss applies the vocabulary head only from a batch's first answer token on (a quarter of a
SmolLM2 LoRA step on a CPU went to logits of prompt tokens that the loss never reads): the same number as
transformers' own loss over the full logits, on right-padded batches whose answers start at different places."""

from __future__ import annotations

import functools

import pytest
import torch
from toy_llama import save_toy_llama

from egohorizon.backbones import HFBackbone
from egohorizon.backbones.answer_loss import answer_logits_to_keep, shifted_cross_entropy
from models.forecast import ForecastModule

X = -100
LORA = {"r": 4, "lora_alpha": 8, "lora_dropout": 0.0, "target_modules": ["q_proj", "v_proj"]}


@pytest.fixture(scope="module")
def llama_folder(tmp_path_factory):
    return save_toy_llama(tmp_path_factory.mktemp("llama"))


def test_logits_are_kept_from_the_position_before_the_first_answer_token():
    labels = torch.tensor([[X, X, X, 7, 8, X],
                           [X, X, X, X, 5, 6]])
    assert answer_logits_to_keep(labels) == 4  # positions 2..5: position 2 predicts the label at 3
    assert answer_logits_to_keep(torch.tensor([[4, 5, X]])) == 3  # an answer from the start: everything
    assert answer_logits_to_keep(torch.full((2, 3), X)) == 3  # no answer: everything, as transformers


def test_shifted_cross_entropy_by_hand():
    # Two positions of a 2-word vocabulary; position 0 predicts label 1 (word 1), position 1 is the last.
    logits = torch.tensor([[[0.0, 0.0], [5.0, -5.0]]])
    loss = shifted_cross_entropy(logits, torch.tensor([[X, 1]]))
    assert torch.isclose(loss, torch.log(torch.tensor(2.0)))


def test_the_answer_only_loss_equals_the_full_logits_loss(llama_folder):
    torch.manual_seed(0)
    module = ForecastModule(HFBackbone(str(llama_folder)), functools.partial(torch.optim.SGD, lr=0.1), lora=LORA)
    module.configure_model()
    for name, param in module.model.named_parameters():  # a fresh lora_B is zero: make the adapter count
        if "lora_B" in name:
            param.data.normal_(0.0, 0.5)
    ids = torch.randint(3, 200, (3, 12))
    mask = torch.ones_like(ids)
    mask[1, 9:] = 0  # right padding
    mask[2, 7:] = 0
    labels = torch.full_like(ids, X)
    labels[0, 8:12] = ids[0, 8:12]
    labels[1, 5:9] = ids[1, 5:9]
    labels[2, 4:7] = ids[2, 4:7]
    batch = {"input_ids": ids, "attention_mask": mask, "labels": labels}
    full = module(ids, mask, labels).loss
    assert torch.allclose(module._loss(batch), full, atol=1e-6)
    module._loss(batch).backward()  # and it trains the adapter
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for n, p in module.model.named_parameters()
               if "lora_B" in n)
