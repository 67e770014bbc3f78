"""``egohorizon abstract EVENTS --levels 5 --out HIERARCHY``: L1 events -> an L1-L5 hierarchy with an LLM
(``egohorizon.pipelines.abstract.job``)."""

from __future__ import annotations

import argparse

from egohorizon.commands import write_result
from egohorizon.commands._args import (
    bounded_int,
    nonneg_float,
    nonneg_int,
    out_dir,
    positive_float,
    positive_int,
    seed,
)
from egohorizon.commands._owned import declare_output


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "abstract", help="group L1 events into L2-L5 with an LLM (a trained adapter, a local model or a server)",
        description="Per participant and day, level by level, an LLM groups consecutive events that share a goal "
                    "and describes each group; replies are checked and asked again with the error, a day that "
                    "keeps failing is reported and left out. Idempotent and resumable; replies cached on disk. "
                    "docs/abstraction.md has the details.")
    parser.add_argument("events", help="L1 events (JSON Lines, SPEC §5); events above L1 are ignored")
    parser.add_argument("--out", required=True, type=out_dir, help="output folder: events.jsonl, days.jsonl, report.json, cache/")
    parser.add_argument("--levels", type=bounded_int(2, 5), default=5, help="build up to this level, 2-5 (default 5)")
    parser.add_argument("--model", required=True,
                        help="a trained abstractor (*.adapter, .ckpt or run folder), a local model (hub id or "
                             "folder), or with --base-url the served model's name")
    parser.add_argument("--base-url", help="an OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1")
    parser.add_argument("--api-key-env", default="OPENAI_API_KEY", help="environment variable holding the API key")
    parser.add_argument("--concurrency", type=positive_int, default=8, help="days abstracted at once with a server (default 8)")
    parser.add_argument("--timeout", type=positive_float, default=120.0, help="seconds per request (default 120)")
    parser.add_argument("--max-events", type=bounded_int(2), default=40,
                        help="most events per LLM request; a longer day is cut into overlapping chunks (default 40)")
    parser.add_argument("--overlap", type=nonneg_int, default=8,
                        help="events at a chunk's end decided again by the next chunk, < --max-events (default 8)")
    parser.add_argument("--retries", type=nonneg_int, default=2, help="asks again after an invalid reply (default 2)")
    parser.add_argument("--max-new-tokens", type=positive_int, default=512,
                        help="most tokens generated per reply (default 512)")
    parser.add_argument("--temperature", type=nonneg_float, default=0.0,
                        help="sampling temperature of the first ask; 0 (default): greedy")
    parser.add_argument("--retry-temperature", type=nonneg_float, default=0.7,
                        help="sampling temperature of the retries (seeded: seed + attempt; default 0.7)")
    parser.add_argument("--constrained", action="store_true",
                        help="a trained adapter decodes only valid groupings of each run (indices held to the "
                             "run, the reply ends at its last event); the model still picks every boundary")
    parser.add_argument("--seed", type=seed, default=0, help="sampling seed")
    parser.add_argument("--prompt", help="prompt name or .txt file (default: the adapter's own, else 'abstract')")
    parser.add_argument("--device", help="local model: cuda, cpu (default: cuda when available)")
    parser.add_argument("--dtype", help="local model: bfloat16, float16, float32")
    parser.add_argument("--no-cache", dest="cache", action="store_false", help="do not cache replies in OUT/cache")
    parser.add_argument("--retry-failed", action="store_true",
                        help="abstract again days whose replies were all invalid (server failures always are)")
    parser.add_argument("--allow-failed-days", action="store_true",
                        help="exit 0 when some days failed and were left out of the hierarchy (they are still "
                             "listed with their error; default: exit status 1)")
    parser.set_defaults(handler=run_abstract)
    declare_output(parser, inputs=("events", "model"))


def run_abstract(args: argparse.Namespace) -> int:
    from pathlib import Path

    from egohorizon.errors import ConfigError
    from egohorizon.pipelines.abstract.day import AbstractSettings
    from egohorizon.pipelines.abstract.job import AbstractJob, make_backend

    try:
        settings = AbstractSettings(top_level=args.levels, max_events=args.max_events, overlap=args.overlap,
                                    retries=args.retries, max_new_tokens=args.max_new_tokens,
                                    temperature=args.temperature, retry_temperature=args.retry_temperature,
                                    constrained=args.constrained, seed=args.seed)
    except ValueError as error:
        raise ConfigError(f"--levels/--max-events/--overlap: {error}") from None
    out = Path(args.out)
    http = {"api_key_env": args.api_key_env, "timeout": args.timeout, "max_concurrency": args.concurrency}
    setup = make_backend(args.model, base_url=args.base_url, cache=out / "cache" if args.cache else None,
                         prompt=args.prompt, device=args.device, dtype=args.dtype, **http)
    report = AbstractJob(args.events, out, setup, settings, workers=args.concurrency if args.base_url else 1,
                         retry_failed=args.retry_failed).run()
    write_result({k: v for k, v in report.items() if k != "hierarchy_problems"}
                 | {"hierarchy_problems": report["hierarchy_problems"][:20]})
    return _exit_status(report, args.allow_failed_days)


def _exit_status(report: dict, allow_failed_days: bool) -> int:
    """1 when the written hierarchy breaks an invariant, or when days failed (named on stderr with their
    error) unless the user accepts that; a run whose every day failed used to exit 0."""
    import sys

    failed = report["failed_days"]
    if failed:
        shown = "".join(f"\n  {line[:300]}" for line in failed[:10])
        more = f"\n  ... and {len(failed) - 10} more (report.json lists them)" if len(failed) > 10 else ""
        hint = ("accepted (--allow-failed-days)" if allow_failed_days else
                "exit status 1; --allow-failed-days accepts this, --retry-failed asks again for days whose "
                "replies were invalid")
        print(f"warning: {len(failed)} of {report['days']} days failed and are left out of {report['events_file']} "
              f"({hint}):{shown}{more}", file=sys.stderr)
    if not report["hierarchy_valid"] or (failed and not allow_failed_days):
        return 1
    return 0
