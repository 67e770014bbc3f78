"""The degenerate EgoHome baselines (SPEC §4), built without video.

Predictors (they ignore the clip's content: a constant label over the whole clip or in fixed windows):

1. ``generic_whole``: one segment over the whole clip with a generic label;
2. ``generic_windows``: the generic label in fixed 2.5 s windows;
3. ``train_prior_whole``: the training days' most common label (per kind and hand) over the whole clip;
4. ``train_prior_windows``: that training-prior label in fixed 2.5 s windows.

The last two need the training split's segments (``prior``); without them they are left out.

Oracle reference (not a predictor):

5. ``most_common_whole``: the scored clip's own most common *true* label over the whole clip (SPEC
   §4's third baseline). It reads the gold labels of the very clip it is scored on, so it knows which
   subtask, action and caption the clip holds; only their timing is degenerate. It is an upper
   reference for "right labels, no timing", listed in ``ORACLES``; a model that does not read the gold
   cannot be expected to match it from the labels alone.

A clip's extent is taken as [earliest start, latest end] over all its gold segments of every kind
(the gold file carries no clip duration). For hand kinds there is one timeline per hand that the gold
has. "Most common" is the label covering the most time (in that clip, or over the training clips) and
hand; ties go to the label with more segments, then alphabetical order. Generic labels per kind:
``doing chores`` (subtask), ``using the hands`` (hand caption) and ``hold`` (hand action: the EgoHome
paper's constant "hold"). A metric whose judge gives the generic labels credit on subtasks or captions
is broken.
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


def prior_labels(training: Sequence[Segment]) -> dict[tuple[str, str | None], str]:
    """(kind, hand) -> the most common label over all training segments of that kind and hand (hand
    None for subtasks), plus (kind, None) over both hands as the fallback for a hand the training
    data never has."""
    groups: dict[tuple[str, str | None], list[Segment]] = defaultdict(list)
    for s in training:
        hand = None if s.kind == "subtask" else s.hand
        groups[(s.kind, hand)].append(s)
        if hand is not None:
            groups[(s.kind, None)].append(s)
    return {key: most_common_label(segments) for key, segments in groups.items()}


def _windows(clip: str, kind: str, hand: str | None, start: float, end: float, label: str,
             window_s: float) -> list[Segment]:
    out, t = [], start
    while t < end - 1e-9:
        out.append(_segment(clip, kind, hand, t, min(end, t + window_s), label))
        t += window_s
    return out


def build_baseline(
    gold: Sequence[Segment],
    name: str,
    generic_labels: Mapping[str, str] = GENERIC_BY_KIND,
    window_s: float = WINDOW_S,
    prior: Sequence[Segment] | None = None,
) -> list[Segment]:
    """Predicted segments of baseline ``name`` for every clip, kind and hand of ``gold``; the
    ``train_prior_*`` baselines take their labels from the training segments ``prior``."""
    if name in PRIOR_BASELINES and not prior:
        raise ValueError(f"baseline {name!r} needs the training split's segments (prior)")
    labels = prior_labels(prior) if prior else {}
    extents = _extents(gold)
    out = []
    for (clip, kind, hand), segments in sorted(_timelines(gold).items(), key=lambda kv: str(kv[0])):
        start, end = extents[clip]
        if name == "generic_whole":
            out.append(_segment(clip, kind, hand, start, end, generic_labels[kind]))
        elif name == "generic_windows":
            out += _windows(clip, kind, hand, start, end, generic_labels[kind], window_s)
        elif name in PRIOR_BASELINES:
            label = labels.get((kind, hand)) or labels.get((kind, None))
            if label is None:  # the training split has no segment of this kind at all: nothing to predict
                continue
            if name == "train_prior_whole":
                out.append(_segment(clip, kind, hand, start, end, label))
            else:
                out += _windows(clip, kind, hand, start, end, label, window_s)
        elif name == "most_common_whole":
            out.append(_segment(clip, kind, hand, start, end, most_common_label(segments)))
        else:
            raise ValueError(f"unknown baseline {name!r}; expected one of {BASELINES}")
    return out


PRIOR_BASELINES = ("train_prior_whole", "train_prior_windows")
ORACLES = ("most_common_whole",)  # reads the scored clip's gold labels: a reference, not a predictor
BASELINES = ("generic_whole", "generic_windows", *PRIOR_BASELINES, *ORACLES)


def score_baselines(gold: Sequence[Segment], judges: Judge | Mapping[str, Judge],
                    prior: Sequence[Segment] | None = None) -> dict:
    """{baseline: {kind: {"psj", "semantic_f1", "n_clips"}}} with the same judges as the model; the
    training-prior baselines only when the training segments ``prior`` are given."""
    out = {}
    for name in BASELINES:
        if name in PRIOR_BASELINES and not prior:
            continue
        report = score_segments(gold, build_baseline(gold, name, prior=prior), judges)
        out[name] = {
            kind: {"psj": block["psj"], "semantic_f1": block["semantic_f1"], "n_clips": block["n_clips"]}
            for kind, block in report["kinds"].items()
        }
    return out
