"""Is the demo world learnable? A transition (n-gram) predictor against repeating the last event.

For each participant and level, the events in time order form one sequence (across sessions and
days). The predictor is trained on the first ``train_fraction`` of the participant's recorded days
and predicts, for every event of the held-out days, the next act (``meta["key"]``, the act without
its slot values) from the one or two before it (back-off: the most frequent follower of the last
two, else of the last one, else the most frequent act), worded like that act's latest occurrence in
the history. History may reach back into training days; targets never do (SPEC §2). Scores:

- ``exact``: the predicted event's canonical wording (``meta["canonical"]``: the act with its slot
  values, one string per meaning whatever paraphrase was used) equals the target's;
- ``token_f1``: word-overlap F1 between the predicted text and the target's actual text (repeat-last
  predicts the previous text, most-frequent the usual wording of the most frequent act), which pays
  for paraphrases the way a text metric would.

A model that sees the context should beat repeat-last clearly, yet stay far from perfect: the world
is a stochastic process, so it cannot be memorised. Hand-written: a back-off bigram/trigram over
strings is a few lines; a language-model library would add nothing.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable

from egohorizon.schema import Event

_WORD = re.compile(r"[a-z0-9']+")


def token_f1(a: str, b: str) -> float:
    ta, tb = Counter(_WORD.findall(a.lower())), Counter(_WORD.findall(b.lower()))
    if not ta or not tb:
        return float(ta == tb)
    overlap = sum((ta & tb).values())
    return 2 * overlap / (sum(ta.values()) + sum(tb.values()))


class BackoffPredictor:
    """Predicts the next act from the last two acts (or the last one, or nothing) by transition
    counts, then words it as the most recent event of that act in the history (the context knows
    which project, song or friend is current), else as its most frequent wording in training."""

    def __init__(self) -> None:
        self.after2: dict[tuple[str, str], Counter] = defaultdict(Counter)
        self.after1: dict[str, Counter] = defaultdict(Counter)
        self.overall: Counter = Counter()
        self.usual: dict[str, Counter] = defaultdict(Counter)  # act -> (canonical, text) counts

    def fit(self, sequence: list[Event]) -> BackoffPredictor:
        keys = [e.meta["key"] for e in sequence]
        for i, event in enumerate(sequence):
            self.overall[keys[i]] += 1
            self.usual[keys[i]][(event.meta["canonical"], event.text)] += 1
            if i >= 1:
                self.after1[keys[i - 1]][keys[i]] += 1
            if i >= 2:
                self.after2[(keys[i - 2], keys[i - 1])][keys[i]] += 1
        return self

    def next_act(self, history: list[str]) -> str:
        if len(history) >= 2 and self.after2.get((history[-2], history[-1])):
            return self.after2[(history[-2], history[-1])].most_common(1)[0][0]
        if history and self.after1.get(history[-1]):
            return self.after1[history[-1]].most_common(1)[0][0]
        return self.overall.most_common(1)[0][0]

    def wording(self, act: str, recent: dict[str, Event]) -> tuple[str, str]:
        """(canonical, text) for ``act``: from its latest occurrence in the history if any."""
        if act in recent:
            return recent[act].meta["canonical"], recent[act].text
        return self.usual[act].most_common(1)[0][0]


def _split_days(events: list[Event], train_fraction: float) -> set[str]:
    days = sorted({e.day for e in events})
    return set(days[:max(1, round(train_fraction * len(days)))])


def evaluate_level(events: Iterable[Event], level: int, train_fraction: float = 0.7) -> dict[str, float]:
    """Scores of the back-off predictor, repeat-last and most-frequent at one level, pooled over
    participants (each trained on its own days)."""
    by_participant: dict[str, list[Event]] = defaultdict(list)
    for event in events:
        if event.level == level:
            by_participant[event.participant].append(event)
    totals = Counter()
    for sequence in by_participant.values():
        sequence.sort(key=lambda e: (e.start, e.end))
        train_days = _split_days(sequence, train_fraction)
        model = BackoffPredictor().fit([e for e in sequence if e.day in train_days])
        keys = [e.meta["key"] for e in sequence]
        frequent_canonical, frequent_text = model.wording(model.overall.most_common(1)[0][0], {})
        recent: dict[str, Event] = {}  # act -> its latest event before the target
        for i, target in enumerate(sequence):
            if i and target.day not in train_days:
                canonical, text = model.wording(model.next_act(keys[max(0, i - 2):i]), recent)
                previous = sequence[i - 1]
                totals["n"] += 1
                totals["ngram_exact"] += canonical == target.meta["canonical"]
                totals["repeat_exact"] += previous.meta["canonical"] == target.meta["canonical"]
                totals["frequent_exact"] += frequent_canonical == target.meta["canonical"]
                totals["ngram_f1"] += token_f1(text, target.text)
                totals["repeat_f1"] += token_f1(previous.text, target.text)
                totals["frequent_f1"] += token_f1(frequent_text, target.text)
            recent[keys[i]] = target
    n = totals.pop("n", 0)
    return {"n": n, **{k: (v / n if n else 0.0) for k, v in sorted(totals.items())}}


def learnability_report(events: Iterable[Event], train_fraction: float = 0.7) -> dict[str, dict[str, float]]:
    events = list(events)
    return {f"L{level}": evaluate_level(events, level, train_fraction) for level in range(1, 6)}


def format_report(report: dict[str, dict[str, float]]) -> str:
    lines = ["next-event prediction on held-out days (exact = same event, f1 = word overlap with the text)",
             f"{'level':<6} {'n':>7} {'n-gram':>14} {'repeat-last':>14} {'most-frequent':>14}",
             f"{'':<6} {'':>7} {'exact   f1':>14} {'exact   f1':>14} {'exact   f1':>14}"]
    for level, r in report.items():
        lines.append(f"{level:<6} {r['n']:>7} {r['ngram_exact']:>7.3f} {r['ngram_f1']:.3f} "
                     f"{r['repeat_exact']:>7.3f} {r['repeat_f1']:.3f} {r['frequent_exact']:>7.3f} {r['frequent_f1']:.3f}")
    return "\n".join(lines) + "\n"
