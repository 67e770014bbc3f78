"""Sensitive speech: transcripts scrubbed of the classes screen text hides, before a shard stores them.

A recording's words are joined into one text (so a phone number said as "415", "555", "0132" is one
number, and one that spans two 30 s windows is still caught), matched by
``egohorizon.data.deid.sensitive.SensitiveText``, and each item is replaced by ``[kind]``: the first
word of the item carries the placeholder and keeps the item's whole time span, the other words of the
item are dropped. Words outside any item are kept as they are, times and speaker included. The shard
index counts the placeholders (``deid.speech_items``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from egohorizon.data.deid.sensitive import SensitiveText
from egohorizon.data.ingest.ingested import Word


def scrub_words(words: Sequence[Word], classifier: SensitiveText) -> tuple[list[Word], int]:
    """The words with every sensitive item replaced (module docstring), and the number of items."""
    offsets, text = [], ""
    for word in words:
        offsets.append((len(text), len(text) + len(word.text)))
        text += word.text + " "
    spans = []
    for start, end, kind in classifier.merged_spans(text):
        while text[start].isspace():  # an item begins inside a word, never in the space between two
            start += 1
        spans.append((start, end, kind))
    if not spans:
        return list(words), 0
    out: list[Word] = []
    span_index = 0
    for word, (a, b) in zip(words, offsets):
        pieces, cursor, continues_item = [], a, False
        while span_index < len(spans) and spans[span_index][0] < b:
            start, end, kind = spans[span_index]
            if start >= cursor:
                pieces.append(text[cursor:start])
                pieces.append(f"[{kind}]")
            else:
                continues_item = True
            cursor = max(cursor, min(end, b))
            if end > b:
                break  # the item goes on into the next word
            span_index += 1
        pieces.append(text[cursor:b])
        new_text = "".join(pieces).strip()
        if continues_item and out:  # the word carrying the placeholder lasts until the item's end
            out[-1] = replace(out[-1], end=max(out[-1].end, word.end))
        if new_text:
            out.append(replace(word, text=new_text))
    return out, len(spans)
