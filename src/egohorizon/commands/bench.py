"""``egohorizon bench run DIR --model MODEL | --base-url URL --out OUT``: zero-shot evaluation of any
model on imported benchmark items (``data convert egomonth | egoschema``), frames from the items'
own videos, resumable per item (``egohorizon.bench``; docs/benchmarks.md, "Zero-shot runs").

``egohorizon bench forecast POINTS --model MODEL | --base-url URL --out OUT``: NextMe-800's in-context
forecasting protocol for any model, resumable per point (``egohorizon.bench.forecast``; docs/benchmarks.md,
"NextMe in-context forecasting")."""

from __future__ import annotations

import argparse

from egohorizon.commands._args import (
    DTYPE_HELP,
    fraction,
    nonneg_float,
    nonneg_int,
    out_dir,
    positive_float,
    positive_int,
    seed,
)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("bench", help="zero-shot runs of any model on imported benchmark items")
    sub = parser.add_subparsers(dest="bench_command", metavar="SUBCOMMAND", required=True)
    run = sub.add_parser(
        "run", help="answer a converted benchmark's items from their own videos and score them",
        description="For each item of DIR/qa.jsonl (the --out folder of `egohorizon data convert egomonth|"
                    "egoschema`), in file order: frames decoded from the item's videos (PyAV), sampled by the "
                    "protocol's rule; the protocol's prompt; the model's greedy reply; the answer read by the "
                    "chosen extraction mode and by strict extraction. One line per item is appended to "
                    "OUT/items.jsonl, so a rerun skips finished items (a killed run resumes with the same bytes "
                    "in the end); OUT/summary.json and the printed table give accuracy per task type, level and "
                    "difficulty, Avg (macro over task types) and Acc (micro). A text-only model (or --blind) "
                    "gets no frames and the run says BLIND. Exit 1: items left unfinished by model failures "
                    "(rerun to finish); 2: bad input (named by item, field and file) or too many failures.")
    run.add_argument("dataset", metavar="DIR", help="a `data convert egomonth|egoschema` folder, or its qa.jsonl")
    run.add_argument("--model", required=True,
                     help="local: a backbone config name (smollm2_135m, qwen2_5_vl_7b, ...), a model folder or "
                          "a cached hub id; with --base-url the served model's name")
    run.add_argument("--base-url", help="an OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1 (frames go as "
                                        "JPEG data URLs)")
    run.add_argument("--out", required=True, type=out_dir, help="output folder (items.jsonl, summary.json)")
    run.add_argument("--protocol", choices=("paper", "egohorizon"), default="paper",
                     help="paper: EgoMonth's Qwen3-VL-8B script (frames split over the videos by duration, its "
                          "prompt, its extraction); egohorizon: frames spread uniformly, the project's qa prompt, "
                          "strict extraction (default paper)")
    run.add_argument("--extraction", choices=("strict", "egomonth-cs", "egomonth-upper", "egoschema"),
                     help="--protocol paper: how a reply becomes a letter (default: egomonth-cs for EgoMonth items, "
                          "egoschema for EgoSchema's); strict is always reported beside it")
    run.add_argument("--limit", type=positive_int, help="the first N items of the file (default: all)")
    run.add_argument("--max-frames", type=positive_int, default=256,
                     help="frame budget per item: the script's 256 under paper (each video at least min(4, N)); "
                          "at most N at 1 fps under egohorizon; a few for a CPU run")
    run.add_argument("--long-side", type=nonneg_int, default=448,
                     help="frames downscaled to this long side in px before JPEG encoding; 0: as decoded")
    run.add_argument("--blind", action="store_true",
                     help="no frames: the question and options only (a local text-only model is always blind)")
    run.add_argument("--videos", help="the folder evidence videos are relative to (default: each item's "
                                      "meta.videos_root; EgoSchema items carry none)")
    run.add_argument("--max-new-tokens", type=positive_int, default=32, help="most tokens per reply (the script's 32)")
    run.add_argument("--seed", type=seed, default=0, help="passed to the backend (decoding is greedy)")
    run.add_argument("--concurrency", type=positive_int, default=2, help="requests in flight to a --base-url server")
    run.add_argument("--timeout", type=positive_float, default=300.0, help="seconds per server reply")
    run.add_argument("--device", help="local model: torch device (default: cuda when available, else cpu)")
    run.add_argument("--dtype", help=DTYPE_HELP)
    run.add_argument("--max-failures", type=fraction, default=0.05,
                     help="share of items that may fail (bad video, model error) before the run fails, 0-1")
    run.add_argument("--retry-failed", action="store_true",
                     help="answer again the items whose videos failed before (after fixing the files)")
    run.set_defaults(handler=run_bench)
    _register_forecast(sub)


def _register_forecast(sub: argparse._SubParsersAction) -> None:
    forecast = sub.add_parser(
        "forecast", help="NextMe-800's in-context forecasting protocol for any model or server, scored",
        description="For each point of POINTS (forecast points JSONL: `egohorizon points`, a run's "
                    "points/points_test.jsonl), in file order: the protocol's prompt (nextme: the 50 most recent "
                    "context events before t0 and the target windows; egohorizon: the project's forecast prompt "
                    "with the point's context), three candidate trajectories asked for in one reply, parsed as "
                    "eval.py's in-context llm predictor parses them. One line per point is appended to "
                    "OUT/predictions.jsonl (forecast prediction records: `egohorizon score forecast --gold POINTS "
                    "--pred OUT/predictions.jsonl` reads them), so a rerun skips finished points; OUT/summary.json "
                    "and the printed table give S, S_norm and the invalid share per source, level and K next to "
                    "repeat-last-K and random on the same points. An unreadable reply is invalid (scored 0), "
                    "never guessed. Exit 1: points left unfinished by model failures (rerun to finish); 2: bad "
                    "input (named by file, line and field) or too many failures.")
    forecast.add_argument("points", metavar="POINTS", help="forecast points JSONL (schema ForecastPoint)")
    forecast.add_argument("--model", required=True,
                          help="local: a backbone config name (smollm2_135m, qwen3_8b, ...), a model folder, a "
                               "trained adapter or run folder, or a cached hub id; with --base-url the served "
                               "model's name")
    forecast.add_argument("--base-url", help="an OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1")
    forecast.add_argument("--out", required=True, type=out_dir, help="output folder (predictions.jsonl, summary.json)")
    forecast.add_argument("--protocol", choices=("nextme", "egohorizon"), default="nextme",
                          help="nextme: the paper's in-context setting (50 most recent events, prompts/nextme.txt); "
                               "egohorizon: prompts/forecast.txt with all of each point's context (default nextme)")
    forecast.add_argument("--limit", type=positive_int, help="the first N points of the file (default: all)")
    forecast.add_argument("--embedder", default="minilm",
                          help="scoring: minilm (default, offline) | exact (Levenshtein on exact strings) | "
                               "qwen3-embedding-8b (the paper's) | a sentence-transformers folder; a rerun with "
                               "another embedder rescores without asking the model again")
    forecast.add_argument("--draws", type=positive_int, default=5, help="random-baseline draws per point")
    forecast.add_argument("--seed", type=seed, default=0, help="the backend's seed and the random draws' seed")
    forecast.add_argument("--temperature", type=nonneg_float, default=0.0,
                          help="0 = greedy (default; the paper gives no decoding settings)")
    forecast.add_argument("--max-new-tokens", type=positive_int, default=1024,
                          help="most tokens per reply (eval.py's llm.max_new_tokens)")
    forecast.add_argument("--concurrency", type=positive_int, default=2, help="requests in flight to a --base-url server")
    forecast.add_argument("--timeout", type=positive_float, default=300.0, help="seconds per server reply")
    forecast.add_argument("--device", help="local model: torch device (default: cuda when available, else cpu)")
    forecast.add_argument("--dtype", help=DTYPE_HELP)
    forecast.add_argument("--max-failures", type=fraction, default=0.05,
                          help="share of points whose model call may fail before the run fails, 0-1")
    forecast.set_defaults(handler=run_forecast)


def run_bench(args: argparse.Namespace) -> int:
    import sys

    from egohorizon.bench.results import format_summary
    from egohorizon.bench.run import BenchSettings, check_failures
    from egohorizon.bench.run import run_bench as bench

    settings = BenchSettings(protocol=args.protocol, extraction=args.extraction, max_frames=args.max_frames,
                             long_side=args.long_side or None, blind=args.blind, max_new_tokens=args.max_new_tokens,
                             seed=args.seed, videos_root=args.videos, limit=args.limit,
                             max_failures=args.max_failures, retry_failed=args.retry_failed,
                             concurrency=args.concurrency)
    if args.base_url:
        options = {"timeout": args.timeout}
    else:
        options = {k: v for k, v in (("device", args.device), ("dtype", args.dtype)) if v}
    summary, timing = bench(args.dataset, args.out, args.model, base_url=args.base_url, settings=settings,
                            backend_options=options)
    sys.stdout.write(format_summary(summary))
    rate = f", {timing['items_per_s']:.3f} items/s" if timing["items_per_s"] else ""
    print(f"{timing['tried']} items answered in this run in {timing['wall_s']:.1f} s{rate}; {args.out}/summary.json",
          file=sys.stderr)
    check_failures(summary, args.max_failures)
    return 1 if summary["unfinished"] else 0


def run_forecast(args: argparse.Namespace) -> int:
    import os
    import sys

    # Before torch loads: spinning OpenMP threads on a CPU shared with other jobs made the toy's generation
    # 12x slower here (0.14 against 1.7 points/s), as train.py and eval.py found (docs/forecasting.md).
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

    from egohorizon.bench.forecast import ForecastBenchSettings, run_forecast_bench
    from egohorizon.bench.forecast_summary import format_summary

    settings = ForecastBenchSettings(protocol=args.protocol, limit=args.limit, embedder=args.embedder,
                                     draws=args.draws, seed=args.seed, temperature=args.temperature,
                                     max_new_tokens=args.max_new_tokens, concurrency=args.concurrency,
                                     max_failures=args.max_failures)
    if args.base_url:
        options = {"timeout": args.timeout}
    else:
        options = {k: v for k, v in (("device", args.device), ("dtype", args.dtype)) if v}
    summary, timing = run_forecast_bench(args.points, args.out, args.model, base_url=args.base_url,
                                         settings=settings, backend_options=options)
    sys.stdout.write(format_summary(summary))
    rate = f", {timing['points_per_s']:.3f} points/s" if timing["points_per_s"] else ""
    print(f"{timing['tried']} points asked in this run in {timing['wall_s']:.1f} s{rate}; {args.out}/summary.json",
          file=sys.stderr)
    failed = len(summary["unfinished"])
    if summary["n_points"] and failed / summary["n_points"] > args.max_failures:
        from egohorizon.errors import DataError

        raise DataError(f"{failed} of {summary['n_points']} points unfinished ({failed / summary['n_points']:.1%}), "
                        f"above --max-failures {args.max_failures:.1%}; rerun the same command to finish them")
    return 1 if failed else 0
