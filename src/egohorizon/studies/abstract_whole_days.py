"""Score a hierarchy built by ``egohorizon abstract`` against the gold one on whole days.

    python -m egohorizon.studies.abstract_whole_days --built OUT/events.jsonl --gold gold.jsonl --train-gold train.jsonl

For every level k = 2..5, a level-k boundary is an L1 event whose level-k ancestor differs from the
previous L1 event's in the same session (session starts are boundaries in every hierarchy and are not
counted). Built and gold boundaries are matched one to one within ``--tolerance`` L1 events; precision,
recall and F1 of the counts summed over all sessions of the days both hierarchies hold. Baselines on the
same sessions: fixed chunks of the training days' gold L1 events per level-k event (rounded), and, at
L2, verb change (``metrics.abstraction``). Also per level: events per parent (built vs gold) and the
adjacent-level compression. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict

from egohorizon.metrics import abstraction as M
from egohorizon.schema import Event, load_jsonl


def ancestors(events: list[Event]) -> dict[str, dict[int, str]]:
    """L1 id -> {level: ancestor id} (the L1 event itself at level 1)."""
    by_id = {e.id: e for e in events}
    out = {}
    for e in events:
        if e.level != 1:
            continue
        chain, node = {1: e.id}, e
        while node.parent and node.parent in by_id:
            node = by_id[node.parent]
            chain[node.level] = node.id
        out[e.id] = chain
    return out


def sessions(events: list[Event]) -> dict[tuple[str, str, str], list[Event]]:
    runs = defaultdict(list)
    for e in events:
        if e.level == 1:
            runs[(e.participant, e.day, e.session)].append(e)
    return {k: sorted(v, key=lambda e: (e.start, e.end)) for k, v in runs.items()}


def level_boundaries(run: list[Event], chain: dict[str, dict[int, str]], level: int) -> list[int]:
    labels = [chain[e.id].get(level) for e in run]
    return [i for i in range(1, len(labels)) if labels[i] != labels[i - 1]]


def spans_boundaries(spans: list[tuple[int, int]]) -> list[int]:
    return M.boundaries(spans)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--built", required=True)
    parser.add_argument("--gold", required=True, help="the gold L1-L5 of (at least) the built days")
    parser.add_argument("--train-gold", required=True, help="the gold L1-L5 of the training days (chunk sizes)")
    parser.add_argument("--tolerance", type=int, default=1)
    args = parser.parse_args()

    built, gold = load_jsonl(args.built, Event), load_jsonl(args.gold, Event)
    days = {(e.participant, e.day) for e in built}
    gold = [e for e in gold if (e.participant, e.day) in days]
    train = load_jsonl(args.train_gold, Event)
    train_counts = defaultdict(int)
    for e in train:
        train_counts[e.level] += 1
    built_chain, gold_chain = ancestors(built), ancestors(gold)
    runs = sessions(gold)
    built_runs = sessions(built)
    if {k: [e.id for e in v] for k, v in runs.items()} != {k: [e.id for e in v] for k, v in built_runs.items()}:
        raise SystemExit("the built and gold hierarchies do not hold the same L1 events per session")
    counts_b, counts_g = defaultdict(int), defaultdict(int)
    for e in built:
        counts_b[e.level] += 1
    for e in gold:
        counts_g[e.level] += 1
    # The table is the study's output (stdout, written once at the end), not a log.
    lines = [(f"{len(days)} days, {len(runs)} sessions, {counts_g[1]} L1 events; boundaries within "
              f"{args.tolerance} L1 event, session starts not counted\n"),
             ("| level | built F1 | fixed chunks F1 (size) | verb change F1 | built L1/Lk | gold L1/Lk | "
              "built compression | gold compression |"),
             "|---|---|---|---|---|---|---|---|"]
    for level in range(2, 6):
        size = train_counts[1] / train_counts[level]
        sums = {name: [0, 0, 0] for name in ("built", "fixed", "verb")}
        for run in runs.values():
            gold_b = level_boundaries(run, gold_chain, level)
            candidates = {"built": level_boundaries(run, built_chain, level),
                          "fixed": spans_boundaries(M.fixed_chunks(len(run), size))}
            if level == 2:
                candidates["verb"] = spans_boundaries(M.verb_change([e.text for e in run]))
            for name, predicted in candidates.items():
                matched = M.matched_boundaries(predicted, gold_b, args.tolerance)
                row = sums[name]
                row[0], row[1], row[2] = row[0] + matched, row[1] + len(predicted), row[2] + len(gold_b)
        f1 = {name: M.prf(*row)["f1"] for name, row in sums.items()}
        verb = f"{f1['verb']:.3f}" if level == 2 else "-"
        lines.append(f"| L{level} | {f1['built']:.3f} | {f1['fixed']:.3f} ({round(size)}) | {verb} | "
                     f"{counts_b[1] / counts_b[level]:.2f} | {counts_g[1] / counts_g[level]:.2f} | "
                     f"{counts_b[level - 1] / counts_b[level]:.2f} | {counts_g[level - 1] / counts_g[level]:.2f} |")
    sys.stdout.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
