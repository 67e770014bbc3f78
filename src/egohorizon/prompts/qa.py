"""The QA prompt (``qa.txt``): frames with their times, optional memory notes (retrieved event
descriptions with their times), the question time, the question and lettered options; the answer is
one letter. Used by the QA datamodule for training and evaluation and by the text-only in-context
baseline (without frames), so every path renders the same text."""

from __future__ import annotations

import string
from collections.abc import Sequence

# questions, options and notes print times with one clock format (the QA items' options are written with it)
from egohorizon.clock import day_clock

QA_PROMPT_NAME = "qa"
IMAGE_MARK = "<|vision_start|><|image_pad|><|vision_end|>"


def memory_query(item) -> str:
    """What the memory is searched with for a QA item: the question and its options."""
    return " ".join([item.question, *item.options])


def render_qa_prompt(question: str, options: Sequence[str], asked: float | None, frame_times: Sequence[float] = (),
                     notes: Sequence[tuple[float, float, str]] = (), prompt: str | None = None,
                     image_mark: str = IMAGE_MARK) -> str:
    """``frame_times``: Unix s of the frames, in order (one ``image_mark`` each); ``notes``: (start, end,
    text) of retrieved memory entries; ``asked``: the question time (None: unknown, e.g. HD-EPIC items)."""
    from egohorizon.prompts import load_prompt

    frames = "".join(f"[{day_clock(t)}] {image_mark}\n" for t in frame_times)
    lines = "".join(f"- {day_clock(s)} to {day_clock(e)[-5:]}: {text}\n" for s, e, text in notes)
    return load_prompt(prompt or QA_PROMPT_NAME).render(
        n_frames=len(frame_times),
        notes_intro="Notes from the wearer's memory follow the frames." if notes else "",
        frames=frames,
        notes=f"Memory notes:\n{lines}" if notes else "",
        asked=day_clock(asked) if asked is not None else "an unknown date",
        question=question,
        options="\n".join(f"{string.ascii_uppercase[i]}. {o}" for i, o in enumerate(options)),
    )
