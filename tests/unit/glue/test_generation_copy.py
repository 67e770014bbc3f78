"""Generation in bfloat16 (issue 37): an evaluation pass generates on one merged low-precision copy of the LoRA
model, made on its first batch and dropped at its end; the training model and its adapter are untouched, so
training after a validation pass goes on from the same weights; the toy backbone and float32-only CPUs
keep float32; every prediction record says the dtype and the stop rule."""

from __future__ import annotations

import copy
import functools

import lightning as L
import pytest
import torch
from toy_llama import ANSWER, save_toy_llama

from egohorizon import precision
from egohorizon.backbones import HFBackbone
from egohorizon.backbones.base import TOY_MARKER
from models.forecast import ForecastModule

LORA = {"r": 4, "lora_alpha": 8, "lora_dropout": 0.0, "target_modules": ["q_proj", "v_proj"]}


@pytest.fixture(scope="module")
def llama_folder(tmp_path_factory):
    """A toy-size Llama (one block) with a BPE tokenizer, saved as any local checkpoint is."""
    return save_toy_llama(tmp_path_factory.mktemp("llama"))


def forecaster(folder, dtype: str = "bfloat16", seed: int = 0) -> ForecastModule:
    L.seed_everything(seed)
    module = ForecastModule(HFBackbone(str(folder)), functools.partial(torch.optim.SGD, lr=0.5), lora=LORA,
                            generation={"dtype": dtype, "num_candidates": 2, "max_new_tokens": 6,
                                        "max_new_tokens_per_action": 0})
    module.configure_model()
    for name, param in module.model.named_parameters():  # a fresh lora_B is zero: make the merge count
        if "lora_B" in name:
            param.data.normal_(0.0, 0.5)
    return module


def batches(tokenizer, n: int = 2) -> list[dict]:
    prompt = tokenizer("history 1: ", add_special_tokens=False)["input_ids"]
    answer = tokenizer(ANSWER, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    ids = torch.tensor([prompt + answer] * 2)
    labels = torch.tensor([[-100] * len(prompt) + answer] * 2)
    return [{"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": labels,
             "prompt_ids": torch.tensor([prompt] * 2), "prompt_mask": torch.ones(2, len(prompt), dtype=torch.long),
             "k": [2, 2]} for _ in range(n)]


def lora_weights(module) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in module.model.named_parameters() if "lora_" in n}


def test_a_pass_generates_on_one_merged_bf16_copy_and_leaves_the_model_alone(llama_folder):
    module = forecaster(llama_folder).eval()
    before = lora_weights(module)
    work = batches(module.tokenizer)
    module.on_validation_epoch_start()
    texts = [module.generate_texts(b, i) for i, b in enumerate(work)]
    copy_ = module.generation_model()
    assert copy_ is module.generation_model()  # one copy for the whole pass
    assert next(copy_.parameters()).dtype == torch.bfloat16 and not hasattr(copy_, "peft_config")
    # the bare recipe: the same LoRA model merged once, in bfloat16, sampled with the pass's seeds
    bare = copy.deepcopy(module.model).merge_and_unload().to(torch.bfloat16).eval()
    for i, b in enumerate(work):
        with torch.random.fork_rng():
            torch.manual_seed(i)
            out = bare.generate(input_ids=b["prompt_ids"], attention_mask=b["prompt_mask"], max_new_tokens=6,
                                num_return_sequences=2, do_sample=True, temperature=0.7, top_p=1.0, top_k=0,
                                pad_token_id=module.tokenizer.pad_token_id, eos_token_id=module.tokenizer.eos_token_id)
        decoded = module.tokenizer.batch_decode(out[:, b["prompt_ids"].shape[1]:], skip_special_tokens=True)
        assert [t for row in texts[i] for t in row] == decoded
    module.on_validation_epoch_end()
    assert module._generation_copy == {}  # released with the pass
    after = lora_weights(module)
    assert before and after.keys() == before.keys()  # the adapter is still there (not merged away)
    assert all(torch.equal(before[n], after[n]) for n in before)
    assert next(module.model.parameters()).dtype == torch.float32
    assert all(p.requires_grad for n, p in module.model.named_parameters() if "lora_" in n)
    assert module.generation_record() == {"dtype": "bfloat16", "stop": "max_new_tokens"}


class GeneratesOnValidation(L.Callback):
    """What GenerationEvalCallback does on each validation batch, keeping the generated texts."""

    def __init__(self):
        self.texts, self.dtypes = [], []

    def on_validation_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0):
        self.texts.append(pl_module.generate_texts(batch, batch_idx))
        self.dtypes.append(next(pl_module.generation_model().parameters()).dtype)


def fit(module, work, validate: bool) -> GeneratesOnValidation:
    generating = GeneratesOnValidation()
    trainer = L.Trainer(accelerator="cpu", max_steps=4, val_check_interval=2, limit_val_batches=1 if validate else 0,
                        num_sanity_val_steps=0, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False, callbacks=[generating])
    loader = torch.utils.data.DataLoader(work, batch_size=None)
    trainer.fit(module, train_dataloaders=loader, val_dataloaders=loader)
    return generating


def test_training_after_a_validation_pass_continues_from_the_same_weights(llama_folder):
    work = batches(forecaster(llama_folder).tokenizer, n=4)
    validated, plain = forecaster(llama_folder), forecaster(llama_folder)
    generating = fit(validated, work, validate=True)
    fit(plain, work, validate=False)
    assert generating.dtypes == [torch.bfloat16, torch.bfloat16]  # two passes, each on its bf16 copy
    trained, reference = lora_weights(validated), lora_weights(plain)
    assert trained and trained.keys() == reference.keys()
    assert any(not torch.equal(trained[n], forecaster(llama_folder).model.state_dict()[n]) for n in trained)
    assert all(torch.equal(trained[n], reference[n]) for n in trained)
    assert next(validated.model.parameters()).dtype == torch.float32


def test_the_toy_backbone_and_float32_cpus_keep_float32(llama_folder, tmp_path, monkeypatch):
    toy = tmp_path / "toy"
    toy.mkdir()
    for path in llama_folder.iterdir():
        (toy / path.name).write_bytes(path.read_bytes())
    (toy / TOY_MARKER).write_text("{}")
    module = forecaster(toy, dtype="auto")
    assert module.generation_dtype() == "float32" and module.generation_model() is module.model
    monkeypatch.setattr(precision, "native_bf16_cpu", lambda: False)
    assert forecaster(llama_folder, dtype="auto").generation_dtype() == "float32"
    monkeypatch.setattr(precision, "native_bf16_cpu", lambda: True)
    assert forecaster(llama_folder, dtype="auto").generation_dtype() == "bfloat16"


@pytest.mark.parametrize(("setting", "device", "toy", "native", "expected"), [
    ("auto", "cpu", False, True, "bfloat16"), ("auto", "cpu", False, False, "float32"),
    ("auto", "cpu", True, True, "float32"), ("float32", "cpu", False, True, "float32"),
    ("bfloat16", "cpu", True, False, "bfloat16"), (None, "cpu", False, True, "bfloat16"),
])
def test_generation_dtype_rule(monkeypatch, setting, device, toy, native, expected):
    monkeypatch.setattr(precision, "native_bf16_cpu", lambda: native)
    assert precision.generation_dtype(setting, device, toy=toy) == expected


def test_an_unknown_dtype_is_named_with_the_choices(llama_folder):
    from egohorizon.errors import ConfigError

    with pytest.raises(ConfigError, match="model.generation.dtype.*bfloat16"):
        ForecastModule(HFBackbone(str(llama_folder)), torch.optim.SGD, generation={"dtype": "fp8"})
