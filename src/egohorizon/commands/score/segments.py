"""``score segments`` and ``score judges``, and the segment judges they (and ``score captions``) build from
``--judge``: exact, verb, embedding, llm, verdicts:FILE.
"""

from __future__ import annotations

import argparse

from egohorizon.commands.score.common import check_out, finish, load, load_gold, reconcile, write_report


def run_segments(args: argparse.Namespace) -> int:
    from egohorizon.metrics.report import format_segments
    from egohorizon.metrics.segments import score_segments
    from egohorizon.schema import Segment

    gold = load_gold(args, Segment)
    predictions = load(args.pred, Segment)
    judges = _segment_judges(args, sorted({s.kind for s in gold}))
    report = score_segments(gold, predictions, judges, iou_threshold=args.iou)
    if args.baselines:
        from egohorizon.metrics.segment_baselines import score_baselines

        report["baselines"] = score_baselines(gold, judges)
    report["judge_stats"] = {kind: judge.stats for kind, judge in judges.items()}
    gold_clips = sorted({s.clip for s in gold})
    report["inputs"] = reconcile(gold_clips, sorted({s.clip for s in predictions}), args)
    report["inputs"].update(n_gold=len(gold), n_pred=len(predictions))
    return finish(report, format_segments(report), args)


def _segment_judges(args: argparse.Namespace, kinds: list[str]) -> dict:
    """kind -> judge. With --judge llm, hand actions use the verb judge (as in EgoHome)."""
    action_spec = args.action_judge or ("verb" if args.judge == "llm" else args.judge)
    built: dict[tuple[str, str], object] = {}
    judges = {}
    for kind in kinds:
        spec = action_spec if kind == "hand_action" else args.judge
        prompt = "judge_hand_caption" if kind == "hand_caption" else "judge_subtask"
        key = (spec, prompt if spec == "llm" else "")
        if key not in built:
            built[key] = make_judge(spec, prompt, args)
        judges[kind] = built[key]
    return judges


def make_judge(spec: str, prompt: str, args: argparse.Namespace):
    import os
    from pathlib import Path

    from egohorizon.errors import ConfigError
    from egohorizon.metrics import judges

    if spec == "exact":
        return judges.ExactJudge()
    if spec == "verb":
        return judges.VerbJudge()
    if spec == "embedding":
        from egohorizon.backbones.embedders import get_embedder

        return judges.EmbeddingJudge(get_embedder(args.embedder), threshold=args.threshold)
    if spec.startswith("verdicts:"):
        return judges.VerdictsJudge(spec.split(":", 1)[1])
    if spec == "llm":
        from egohorizon.llm import make_backend
        from egohorizon.metrics.llm_judge import LLMJudge

        if not args.judge_model:
            raise ConfigError(
                "--judge llm needs --judge-model (a server's model id with --judge-url, "
                "or a hub id / local path to run locally)"
            )
        options = (
            {"api_key_env": args.judge_api_key_env, "max_concurrency": args.judge_concurrency}
            if args.judge_url
            else {}
        )
        backend = make_backend(args.judge_model, base_url=args.judge_url, **options)
        root = Path(os.environ.get("EGOHORIZON_CACHE") or Path.home() / ".cache" / "egohorizon")
        return LLMJudge(backend, prompt, cache_dir=args.cache_dir or root / "judge")
    raise ConfigError(f"--judge {spec!r}: expected exact, verb, embedding, llm or verdicts:FILE")


def run_judges(args: argparse.Namespace) -> int:
    """``score judges``: one judge against another on pairs of gold labels (metrics.judge_agreement)."""
    import sys

    from egohorizon.errors import ConfigError
    from egohorizon.metrics.judge_agreement import agreement, gold_pairs
    from egohorizon.metrics.report import table
    from egohorizon.schema import Segment

    check_out(args.out)
    segments = load_gold(args, Segment)
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    report: dict = {"gold": args.gold, "against": args.against, "kinds": {}}
    rows = []
    for kind in kinds:
        pairs = gold_pairs(segments, kind, args.max_pairs, args.seed)
        if not pairs:
            raise ConfigError(f"{args.gold}: fewer than two clips with {kind!r} segments; nothing to pair "
                              f"(--kinds {args.kinds})")
        prompt = "judge_hand_caption" if kind == "hand_caption" else "judge_subtask"
        judge, reference = make_judge(args.judge, prompt, args), make_judge(args.against, prompt, args)
        result = agreement(pairs, judge, reference)
        report["kinds"][kind] = {"judge": judge.describe(), "reference": reference.describe(), **result}
        rows.append([kind, result["n"], result["agreement"], result["kappa"], result["judge_match_rate"],
                     result["reference_match_rate"], result["judge_only"], result["reference_only"]])
    # The command's result goes to stdout, as every score command writes its table (sys.stdout.write).
    described = report["kinds"][kinds[0]]["judge"]
    model = f" ({described['model']})" if described.get("model") else ""
    lines = [f"{described['judge']}{model} against {args.against} on gold label pairs of {args.gold}",
             table(["kind", "pairs", "agreement", "kappa", "judge matches", "reference matches", "judge only",
                    "reference only"], rows)]
    lines += [f"  {kind}: {d['gold']!r} vs {d['pred']!r}: judge {d['judge']}, {args.against} {d['reference']}"
              for kind, block in report["kinds"].items() for d in block["disagreements"][:3]]
    sys.stdout.write("\n".join(lines) + "\n")
    write_report(report, args.out)
    return 0
