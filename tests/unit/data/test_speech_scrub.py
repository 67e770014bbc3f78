"""Sensitive speech: transcripts are scrubbed of the classes screen text hides (issue 9), before a shard
stores them, and the shard index counts what was scrubbed."""

from __future__ import annotations

import functools
import json
import shutil
import tarfile

import numpy as np
import pytest

from egohorizon.data.deid.sensitive import SensitiveText, read_names
from egohorizon.data.deid.speech import scrub_words
from egohorizon.data.ingest.ingested import Word

NAMES = ("Maria Keller",)


def spoken(text: str, start: float = 0.0) -> list[Word]:
    """One word a second, as an ASR engine writes them."""
    return [Word(start=start + i, end=start + i + 0.8, text=t, speaker="A") for i, t in enumerate(text.split())]


@pytest.mark.parametrize("said, kept", [
    ("call me on 415 555 0132 tonight", "call me on [phone] tonight"),
    ("my card is 4111 1111 1111 1111 okay", "my card is [card] okay"),
    ("write to jane.doe@example.com please", "write to [email] please"),
    ("it is jane dot doe at example dot com", "it is [email]"),  # as ASR writes a spoken address
    ("ask Maria Keller about it", "ask [name] about it"),
    ("ask maria keller about it", "ask [name] about it"),  # case does not protect a name
    ("we live at 22 Baker Street now", "we live at [address] now"),
    # Not sensitive: stays word for word.
    ("Maria said the total was 12.99 on 2024-03-05 at 10:30", None),  # only "Maria Keller" is listed
    ("order 1234 5678 9012 3456 failed", "order [phone] failed"),  # not Luhn-valid: no card, still phone-like
    ("the meeting is in room 12 at 3 pm", None),
])
def test_scrubbed_items_hand_checked(said, kept):
    words = spoken(said)
    out, count = scrub_words(words, SensitiveText(NAMES))
    assert " ".join(w.text for w in out) == (kept if kept is not None else said)
    assert count == (kept or "").count("[")


def test_scrubbed_item_keeps_its_time_span_and_speaker():
    words = spoken("call 415 555 0132 now")
    out, count = scrub_words(words, SensitiveText())
    assert count == 1
    assert [(w.text, w.start, w.end, w.speaker) for w in out] == [
        ("call", 0.0, 0.8, "A"), ("[phone]", 1.0, 3.8, "A"), ("now", 4.0, 4.8, "A")]


def test_punctuation_after_an_item_stays_and_the_item_keeps_its_span():
    out, count = scrub_words(spoken("call 415 555 0132, thanks"), SensitiveText())
    assert count == 1
    assert [(w.text, w.start, w.end) for w in out] == [
        ("call", 0.0, 0.8), ("[phone]", 1.0, 3.8), (",", 3.0, 3.8), ("thanks", 4.0, 4.8)]


def test_items_inside_one_utterance_entry():
    # Sources without word times give a whole utterance as one Word.
    words = [Word(0.0, 5.0, "mail jane.doe@example.com or call +44 20 7946 0958 today")]
    out, count = scrub_words(words, SensitiveText())
    assert [w.text for w in out] == ["mail [email] or call [phone] today"] and count == 2


def test_nothing_sensitive_returns_the_words_unchanged():
    words = spoken("we cooked pasta and talked about the weather")
    out, count = scrub_words(words, SensitiveText(NAMES))
    assert out == words and count == 0


def test_names_file(tmp_path):
    path = tmp_path / "names.txt"
    path.write_text("# people to hide\nMaria Keller\n\n  Tobias  Brandt  # colleague\n", encoding="utf-8")
    assert read_names(path) == ["Maria Keller", "Tobias  Brandt"]
    assert SensitiveText(read_names(path)).scrub("with tobias brandt today") == ("with [name] today", 1)
    path.write_bytes(b"Maria\n\xff\n")
    with pytest.raises(Exception, match=r"names.txt:2: not UTF-8"):
        read_names(path)


def _source(words, kind="ingested"):
    from egohorizon.data.shards.sources import RecordingSource
    from egohorizon.data.windows.sample import SourceFrame
    from egohorizon.schema import Recording

    frame = np.full((64, 64, 3), 120, dtype=np.uint8)
    frames = [SourceFrame(t=100.0 + k, load=functools.partial(lambda f: f, frame)) for k in range(60)]
    recording = Recording(id="r", participant="p", day="2024-01-01", session="s", start=100.0, end=160.0)
    return RecordingSource(recording=recording, frames=frames, words=words, kind=kind)


def _stored_transcripts(root) -> list[str]:
    texts = []
    for path in sorted(root.rglob("*.tar")):
        with tarfile.open(path) as tar:
            for member in tar.getmembers():
                if member.name.endswith(".json"):
                    texts.append(json.loads(tar.extractfile(member).read())["transcript"])
    return texts


@pytest.mark.skipif(shutil.which("tesseract") is None, reason="--deid text needs tesseract (apt-get install tesseract-ocr)")
def test_shards_store_scrubbed_speech_and_count_it(tmp_path):
    from egohorizon.data.shards.writer import build_shards
    from egohorizon.data.windows.sample import WindowConfig

    # The phone number is said across the boundary of the first two 30 s windows (t=128..131).
    words = (spoken("hello this is Maria Keller", start=110.0) + spoken("my number is 415 555 0132", start=126.0)
             + spoken("or mail jane.doe@example.com", start=140.0))
    index = build_shards([_source(words)], tmp_path / "shards", config=WindowConfig(long_side=32, crop_size=16),
                         deid="text", deid_names=NAMES)
    stored = " ".join(_stored_transcripts(tmp_path / "shards"))
    for secret in ("Maria", "Keller", "415", "555", "0132", "jane.doe", "example.com"):
        assert secret not in stored
    assert stored.count("[name]") == 1 and stored.count("[phone]") == 1 and stored.count("[email]") == 1
    assert "hello this is" in stored and "my number is" in stored  # the rest is kept
    assert index.totals()["deid"]["speech_items"] == 3
    assert index.build["speech"].startswith("scrubbed")
    # which detectors ran is part of the build settings: shards de-identified by another are not reused
    assert index.build["detectors"] == "faces: off; text: region-first tesseract v1"


def test_speech_is_kept_when_deid_is_off(tmp_path):
    from egohorizon.data.shards.writer import build_shards
    from egohorizon.data.windows.sample import WindowConfig

    words = spoken("call 415 555 0132", start=110.0)
    index = build_shards([_source(words)], tmp_path / "shards", config=WindowConfig(long_side=32, crop_size=16),
                         deid="off")
    assert "415 555 0132" in " ".join(_stored_transcripts(tmp_path / "shards"))
    assert "speech_items" not in index.totals()["deid"] and "speech" not in index.build
