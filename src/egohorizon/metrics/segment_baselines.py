"""The three degenerate EgoHome baselines (SPEC §4), built from the gold file alone (no video).

1. ``generic_whole``: one segment over the whole clip with a generic label;
2. ``generic_windows``: the generic label in fixed 2.5 s windows;
3. ``most_common_whole``: the clip's own most common true label over the whole clip.

A clip's extent is taken as [earliest start, latest end] over all its gold segments of every kind
(the gold file carries no clip duration). For hand kinds there is one timeline per hand that the gold
has. "Most common" is the label covering the most time in that clip (and hand); ties go to the label
with more segments, then alphabetical order. Generic labels per kind: ``doing chores`` (subtask),
``using the hands`` (hand caption) and ``hold`` (hand action: the EgoHome paper's constant "hold").
A metric whose judge gives the generic labels credit on subtasks or captions is broken.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence

from egohorizon.metrics.judges import Judge
from egohorizon.metrics.segments import score_segments
from egohorizon.schema import Segment

GENERIC_BY_KIND = {"subtask": "doing chores", "hand_caption": "using the hands", "hand_action": "hold"}
WINDOW_S = 2.5


def _extents(gold: Sequence[Segment]) -> dict[str, tuple[float, float]]:
    extents: dict[str, tuple[float, float]] = {}
    for s in gold:
        start, end = extents.get(s.clip, (s.start, s.end))
        extents[s.clip] = (min(start, s.start), max(end, s.end))
    return extents


def _timelines(gold: Sequence[Segment]) -> dict[tuple[str, str, str | None], list[Segment]]:
    """(clip, kind, hand) -> that timeline's gold segments."""
    out: dict[tuple[str, str, str | None], list[Segment]] = defaultdict(list)
    for s in gold:
        out[(s.clip, s.kind, None if s.kind == "subtask" else s.hand)].append(s)
    return out


def _segment(clip: str, kind: str, hand: str | None, start: float, end: float, label: str) -> Segment:
    return Segment(clip=clip, kind=kind, hand=hand, start=start, end=end, label=label)


def most_common_label(segments: Sequence[Segment]) -> str:
    time: dict[str, float] = defaultdict(float)
    for s in segments:
        time[s.label] += s.end - s.start
    counts = Counter(s.label for s in segments)
    return min(time, key=lambda label: (-time[label], -counts[label], label))


def build_baseline(
    gold: Sequence[Segment],
    name: str,
    generic_labels: Mapping[str, str] = GENERIC_BY_KIND,
    window_s: float = WINDOW_S,
) -> list[Segment]:
    """Predicted segments of baseline ``name`` for every clip, kind and hand of ``gold``."""
    extents = _extents(gold)
    out = []
    for (clip, kind, hand), segments in sorted(_timelines(gold).items(), key=lambda kv: str(kv[0])):
        start, end = extents[clip]
        if name == "generic_whole":
            out.append(_segment(clip, kind, hand, start, end, generic_labels[kind]))
        elif name == "generic_windows":
            t = start
            while t < end - 1e-9:
                out.append(_segment(clip, kind, hand, t, min(end, t + window_s), generic_labels[kind]))
                t += window_s
        elif name == "most_common_whole":
            out.append(_segment(clip, kind, hand, start, end, most_common_label(segments)))
        else:
            raise ValueError(f"unknown baseline {name!r}; expected one of {BASELINES}")
    return out


BASELINES = ("generic_whole", "generic_windows", "most_common_whole")


def score_baselines(gold: Sequence[Segment], judges: Judge | Mapping[str, Judge]) -> dict:
    """{baseline: {kind: {"psj", "semantic_f1", "n_clips"}}} with the same judges as the model."""
    out = {}
    for name in BASELINES:
        report = score_segments(gold, build_baseline(gold, name), judges)
        out[name] = {
            kind: {"psj": block["psj"], "semantic_f1": block["semantic_f1"], "n_clips": block["n_clips"]}
            for kind, block in report["kinds"].items()
        }
    return out
