"""The text a zero-shot run sends with an item's frames, under each protocol.

- ``paper`` (``prompts/egomonth_paper.txt``): EgoMonth's Qwen3-VL-8B script, ``clean_q + "\\nOptions:\\n"
  + "\\n".join(options) + "\\nAnswer with the option letter (A, B, C, or D) only."``, where ``clean_q``
  is the question with ``<...>`` tags removed and the options are the file's own "A. ..." lines.
  ``data convert egomonth`` strips those prefixes, so they are written back as ``"A. " + text``. The
  letters in the last line are the item's: "(A, B, C, or D)" for EgoMonth's four options, "(A, B, C, D,
  or E)" for EgoSchema's five. The frames come before the text (the script puts its videos first).
- ``egohorizon`` (``prompts/qa.txt``, the project's QA prompt, as the QA datamodule and ``qa answer``
  render it): each frame after its label, the video's name and the time in it (``[day01_a 0:01:05]``;
  the imported benchmarks have no clock times), no memory notes, "an unknown date" as the question time.

``render(...)`` returns the text with one ``IMAGE_MARK`` per frame where the frame goes;
``llm.images.sample_messages`` turns it into chat content with the frames as JPEG data URLs.
"""

from __future__ import annotations

import re
import string
from collections.abc import Sequence
from pathlib import PurePosixPath

from egohorizon.llm.images import IMAGE_MARK

PROTOCOLS = ("paper", "egohorizon")
PROMPT_NAMES = {"paper": "egomonth_paper", "egohorizon": "qa"}
_TAG = re.compile(r"<.*?>")  # the script's re.sub(r'<.*?>', '', q_text)


def letters_text(n_options: int) -> str:
    """"A, B, C, or D" for four options (the script's words), "A, B, C, D, or E" for five."""
    letters = list(string.ascii_uppercase[:n_options])
    return letters[0] if len(letters) == 1 else ", ".join(letters[:-1]) + ", or " + letters[-1]


def option_lines(options: Sequence[str]) -> str:
    return "\n".join(f"{string.ascii_uppercase[i]}. {o}" for i, o in enumerate(options))


def paper_prompt(question: str, options: Sequence[str], n_frames: int = 0) -> str:
    from egohorizon.prompts import load_prompt

    text = load_prompt(PROMPT_NAMES["paper"]).render(
        question=_TAG.sub("", question.strip()).strip(), options=option_lines(options),
        letters=letters_text(len(options)))
    return IMAGE_MARK * n_frames + text.rstrip("\n")  # the file ends with a newline, the script's text does not


def frame_label(video: str, seconds: float) -> str:
    whole = int(seconds)
    return f"{PurePosixPath(video).stem} {whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}"


def egohorizon_prompt(question: str, options: Sequence[str], labels: Sequence[str] = ()) -> str:
    """``labels``: one per frame, in the order the frames are shown."""
    from egohorizon.prompts import load_prompt

    return load_prompt(PROMPT_NAMES["egohorizon"]).render(
        n_frames=len(labels), notes_intro="", frames="".join(f"[{label}] {IMAGE_MARK}\n" for label in labels),
        notes="", asked="an unknown date", question=question, options=option_lines(options))


def render(protocol: str, question: str, options: Sequence[str], labels: Sequence[str] = ()) -> str:
    if protocol == "paper":
        return paper_prompt(question, options, len(labels))
    if protocol == "egohorizon":
        return egohorizon_prompt(question, options, labels)
    raise ValueError(f"unknown protocol {protocol!r}; expected one of {', '.join(PROTOCOLS)}")
