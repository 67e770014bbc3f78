"""A small byte-level BPE tokenizer trained in code, for the tiny random-initialised backbone.

Byte-level BPE (the GPT-2/Qwen scheme) round-trips any text exactly, so what a tiny model generates
decodes back into the JSON its answer format asks for; a word-level vocabulary would lose spacing and
punctuation inside action texts. Trained on the training text only (prompts and answers of the training
points), so a few thousand merges cover whole words and clock times of the prompt.
"""

from __future__ import annotations

from collections.abc import Iterable

PAD_TOKEN = "<|pad|>"
EOS_TOKEN = "<|endoftext|>"
# Qwen-VL's vision markers, as single special tokens: the processor expands each <|image_pad|> into
# one token per merged image patch, and the model's config names their ids (backbones/tiny_config.py).
VISION_TOKENS = ("<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>")
SPECIAL_TOKENS = (PAD_TOKEN, EOS_TOKEN, *VISION_TOKENS)


def train_bpe_tokenizer(corpus: Iterable[str], vocab_size: int = 2048, min_frequency: int = 2):
    """Trains a byte-level BPE on ``corpus``; returns a transformers ``PreTrainedTokenizerFast``.

    Special tokens take ids 0-5 in the order of ``SPECIAL_TOKENS``. Deterministic for a given corpus
    (the tokenizers trainer breaks frequency ties by byte order).
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(corpus, trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        pad_token=PAD_TOKEN,
        eos_token=EOS_TOKEN,
        additional_special_tokens=list(VISION_TOKENS),
        model_max_length=1 << 20,
    )
