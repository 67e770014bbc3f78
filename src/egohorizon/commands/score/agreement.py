"""``score agreement``: a forecast metric checked against human rankings (pairwise accuracy, the
annotators' own agreement, H10, a histogram PNG).
"""

from __future__ import annotations

import argparse

from egohorizon.commands.score.common import check_out, load_gold, write_report


def run_agreement(args: argparse.Namespace) -> int:
    """Scores every candidate against its reference with the chosen embedder (the soft edit score of
    SPEC §1) and checks the scores against the human rankings."""
    import sys

    from egohorizon.backbones.embedders import get_embedder
    from egohorizon.metrics.diagnostics import (
        annotator_agreement,
        h10,
        histogram10,
        pairwise_accuracy,
        score_candidates,
    )
    from egohorizon.schema import RankedCandidates

    check_out(args.plot)
    items = load_gold(args, RankedCandidates)
    embedder = get_embedder(args.embedder, prompt=args.embed_prompt, model=args.embed_model)
    scores = score_candidates([i.reference for i in items], [i.candidates for i in items], embedder)
    rankings = [i.rankings for i in items]
    flat = [score for item_scores in scores for score in item_scores]
    report = {
        "gold": args.gold,
        "embedder": embedder.name,
        "n_items": len(items),
        "n_candidates": len(flat),
        "n_annotators": max(len(r) for r in rankings),
        "pairwise_accuracy": pairwise_accuracy(scores, rankings),
        "annotator_agreement": annotator_agreement(rankings),
        "h10": h10(flat),
        "histogram": histogram10(flat),
        "endpoint_share": sum(s <= 0.0 or s >= 1.0 for s in flat) / len(flat),
        "per_item": [{"id": i.id, "scores": s} for i, s in zip(items, scores)],
    }
    sys.stdout.write(_format_agreement(report))
    if args.plot:
        _plot_histogram(report, args.plot)
        sys.stdout.write(f"histogram written to {args.plot}\n")
    write_report(report, args.out)
    return 0


def _format_agreement(report: dict) -> str:
    def fmt(value):
        return "n/a" if value is None else f"{value:.4f}"

    pairwise, people = report["pairwise_accuracy"], report["annotator_agreement"]
    return (
        f"gold: {report['gold']} ({report['n_items']} items, {report['n_candidates']} candidates, "
        f"up to {report['n_annotators']} annotators)\n"
        f"metric: soft edit score with embedder {report['embedder']}\n"
        f"  pairwise accuracy   {fmt(pairwise['accuracy'])}  ({pairwise['right']} of {pairwise['pairs']} "
        "strictly ordered pairs)\n"
        f"  annotators (LOO)    {fmt(people['accuracy'])}  ({people['right']} of {people['pairs']} pairs, "
        f"{people['items']} items with 2+ annotators)\n"
        f"  H10                 {fmt(report['h10'])}  (1 = scores spread evenly over [0, 1])\n"
        f"  scores at 0 or 1    {report['endpoint_share']:.1%}\n"
        f"  histogram (10 bins) {report['histogram']}\n"
    )


def _plot_histogram(report: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    figure, axis = plt.subplots(figsize=(6, 3.5))
    axis.bar([i / 10 + 0.05 for i in range(10)], report["histogram"], width=0.095, color="#4c72b0")
    axis.set_xlim(0, 1)
    axis.set_xlabel("soft edit score S (0 = nothing in common, 1 = the same actions)")
    axis.set_ylabel("candidates")
    axis.yaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))  # counts, not fractions
    h = report["h10"]
    axis.set_title(
        f"{report['embedder']}: H10 = {'n/a' if h is None else f'{h:.3f}'}, "
        f"pairwise accuracy = {report['pairwise_accuracy']['accuracy'] or 0:.3f}"
    )
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
