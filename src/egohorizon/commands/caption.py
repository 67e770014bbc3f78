"""``egohorizon caption SHARDS --out OUT --model ...``: caption every window of a shard folder into L1
events (``egohorizon.pipelines.caption.job``); ``caption merge OUT``: events from a sliced (Slurm array) run;
``caption audit EVENTS --shards ...``: an HTML page to check sampled captions by eye."""

from __future__ import annotations

import argparse
import sys

from egohorizon.commands import write_result
from egohorizon.commands._args import (
    fraction,
    jpeg_quality,
    nonneg_float,
    nonneg_int,
    out_dir,
    out_file,
    positive_float,
    positive_int,
    seed,
)
from egohorizon.commands._owned import declare_output

SUBCOMMANDS = ("run", "merge", "audit", "answer-set")


class _CaptionParser(argparse.ArgumentParser):
    """``caption SHARDS ...`` means ``caption run SHARDS ...`` (argparse has no default subcommand)."""

    def parse_known_args(self, args=None, namespace=None):
        args = list(sys.argv[1:] if args is None else args)
        if args and args[0] not in SUBCOMMANDS and args[0] not in ("-h", "--help"):
            args = ["run", *args]
        return super().parse_known_args(args, namespace)


def register(subparsers: argparse._SubParsersAction) -> None:
    # The caption parser needs the default-subcommand behaviour above; add_parser builds its parsers
    # with the class the subparsers action holds, so it is swapped for this one parser only.
    previous, subparsers._parser_class = subparsers._parser_class, _CaptionParser
    try:
        parser = subparsers.add_parser(
            "caption", help="caption 30 s windows into L1 events (a trained adapter, a local VLM or a server)",
            description="`egohorizon caption SHARDS --out OUT --model M` (the `run` subcommand may be left out).")
    finally:
        subparsers._parser_class = previous
    sub = parser.add_subparsers(dest="caption_command", metavar="SUBCOMMAND", required=True,
                                parser_class=argparse.ArgumentParser)
    _register_run(sub)
    merge = sub.add_parser("merge", help="events.jsonl + scenes.jsonl from every results file of OUT "
                                         "(after the array tasks of a --shard-slice run)")
    merge.add_argument("out", help="the --out folder of the caption runs")
    merge.set_defaults(handler=run_merge)
    _register_audit(sub)
    answers = sub.add_parser(
        "answer-set", help="write answer_set.json into an adapter trained with model.generation.answer_set=train",
        description="Adapters saved before the answer set travelled with them: rebuild the run's datamodule from "
                    "<run>/config.yaml and write its training windows' answers (versioned, with their count and a "
                    "digest) beside the adapter, so `egohorizon caption --model ADAPTER` decodes as it was scored. "
                    "Nothing is retrained.")
    answers.add_argument("adapter", help="the *.adapter folder (or its .ckpt, or the run folder: its best adapter)")
    answers.add_argument("--run", help="the training run folder (default: the adapter's, <run>/checkpoints/x.adapter)")
    answers.add_argument("--force", action="store_true", help="write the file again when it exists")
    answers.set_defaults(handler=run_answer_set)


def _register_run(sub: argparse._SubParsersAction) -> None:
    run = sub.add_parser(
        "run", help="caption the windows of a shard folder (idempotent, resumable)",
        description="Caption every window of SHARDS (a folder with index.json) with a trained adapter, a local "
                    "VLM or an OpenAI-compatible server. One line per finished window goes to "
                    "OUT/captions.jsonl; a rerun captions only what is missing (a killed run resumes). At the "
                    "end OUT/events.jsonl (L1 events, SPEC §5, with provenance) and OUT/scenes.jsonl are "
                    "regenerated from all results. docs/captioning.md has the details.")
    run.add_argument("shards", help="the shard folder (egohorizon shards build)")
    run.add_argument("--out", required=True, type=out_dir, help="the output folder (results, events, scenes, run report)")
    run.add_argument("--model", required=True,
                     help="a trained adapter (*.adapter folder, .ckpt or run folder), a local VLM (hub id or "
                          "folder), or with --base-url the served model's name")
    run.add_argument("--base-url", help="an OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1 (vLLM, Ollama)")
    run.add_argument("--api-key-env", default="OPENAI_API_KEY", help="environment variable holding the API key")
    run.add_argument("--concurrency", type=positive_int, default=8,
                     help="requests in flight to the server (default 8); a couple more than the server batches "
                          "at once keep it busy (docs/captioning.md)")
    run.add_argument("--timeout", type=positive_float, default=120.0, help="seconds per request (default 120)")
    run.add_argument("--retries", type=nonneg_int, default=3, help="retries of a failed request (default 3)")
    run.add_argument("--base-model", help="the adapter's base model (default: the one it names)")
    run.add_argument("--batch-size", type=positive_int, default=8, help="windows per local generation batch (default 8)")
    run.add_argument("--workers", type=nonneg_int, default=1,
                     help="local model: processes preparing the next batches while it generates (0: none; default 1)")
    run.add_argument("--device", help="local model: cuda, cuda:1, cpu (default: cuda when available)")
    run.add_argument("--dtype", help="local model: bfloat16, float16, float32 (default: bfloat16 on a GPU "
                                     "that supports it, else float32)")
    run.add_argument("--frames-per-window", type=positive_int,
                     help="frames per window, spread evenly (default: the adapter's, else 8)")
    run.add_argument("--no-crop", dest="crop", action="store_false", default=None,
                     help="leave out the gaze close-up")
    run.add_argument("--prompt", help="prompt name or .txt file (default: the adapter's own, else 'caption')")
    run.add_argument("--max-new-tokens", type=positive_int,
                     help="most tokens generated per caption (default: the adapter's, else 256)")
    run.add_argument("--temperature", type=nonneg_float, default=0.0,
                     help="sampling temperature; 0 (default): greedy (or beam search)")
    run.add_argument("--num-beams", type=positive_int,
                     help="local model: beam search width (default: the adapter's when it was scored by beam "
                          "search, else 1)")
    run.add_argument("--no-answer-set", dest="answer_set", action="store_false", default=None,
                     help="decode freely although the adapter was scored within its training answers "
                          "(answer_set.json beside it; default: as it was scored)")
    run.add_argument("--seed", type=seed, default=0, help="sampling seed")
    run.add_argument("--jpeg-quality", type=jpeg_quality, default=90,
                     help="JPEG quality of the images sent to a server, 1-100")
    run.add_argument("--max-failures", type=fraction, default=0.05,
                     help="share of this run's windows that may fail before the job stops (default 0.05)")
    run.add_argument("--retry-failed", action="store_true",
                     help="caption again windows that failed on their input or output (model failures are "
                          "always retried)")
    run.add_argument("--shard-slice", metavar="I/N",
                     help="only slice I of N of the shards (a Slurm array task); results go to "
                          "OUT/captions.part-I-of-N.jsonl and `caption merge OUT` writes the events")
    run.add_argument("--no-progress", dest="progress", action="store_false", default=None,
                     help="log a line every 30 s instead of a progress bar")
    run.set_defaults(handler=run_caption)
    declare_output(run, inputs=("shards", "model"), lock_by="shard_slice")


def _register_audit(sub: argparse._SubParsersAction) -> None:
    audit = sub.add_parser(
        "audit", help="an HTML page of sampled windows and their captions (with planted wrong ones) to mark",
        description="Sampled windows as frame strips with gaze, the close-up, the transcript and the captions, "
                    "with deliberately wrong captions mixed in; mark each right or wrong and export the marks "
                    "as JSON.")
    audit.add_argument("events", help="the captions' events.jsonl")
    audit.add_argument("--shards", required=True, help="the shard folder the events were captioned from")
    audit.add_argument("--n", type=positive_int, default=50, help="windows to sample (default 50)")
    audit.add_argument("--out", required=True, type=out_file, help="the HTML file to write")
    audit.add_argument("--wrong", type=nonneg_int, default=None,
                       help="deliberately wrong captions mixed in as quality control (default: the page's own)")
    audit.add_argument("--seed", type=seed, default=0, help="draws the sampled windows and wrong captions")
    audit.set_defaults(handler=run_audit)
    declare_output(audit, inputs=("events", "shards"), kind="file")


def run_caption(args: argparse.Namespace) -> int:
    import os

    # Before torch loads: idle OpenMP threads wait passively. A local model shares the cores with the
    # worker preparing its next batches (and, on a shared node, with other jobs); spinning threads made
    # the tiny model's generation 4-15x slower on 2 busy cores (docs/captioning.md).
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    from egohorizon.pipelines.caption.job import parse_slice
    from egohorizon.pipelines.caption.setup import make_job

    settings = {"prompt": args.prompt, "frames_per_window": args.frames_per_window, "crop": args.crop,
                "max_new_tokens": args.max_new_tokens, "temperature": args.temperature, "seed": args.seed,
                "jpeg_quality": args.jpeg_quality, "num_beams": args.num_beams, "answer_set": args.answer_set}
    runner = {"api_key_env": args.api_key_env, "concurrency": args.concurrency, "timeout": args.timeout,
              "retries": args.retries, "batch_size": args.batch_size, "workers": args.workers,
              "device": args.device, "dtype": args.dtype, "base_model": args.base_model}
    job = make_job(args.shards, args.out, args.model, base_url=args.base_url,
                   shard_slice=parse_slice(args.shard_slice), max_failures=args.max_failures,
                   retry_failed=args.retry_failed, progress=args.progress, settings=settings, runner=runner)
    report = job.run()
    summary = {k: v for k, v in report.to_dict().items() if k not in ("failures", "shard_problems")}
    summary["failed_windows"] = [f"{f['window']}: {f['kind']}: {f['reason'][:200]}" for f in report.failures]
    summary["shard_problems"] = report.shard_problems
    write_result(summary)
    return 0


def run_merge(args: argparse.Namespace) -> int:
    from egohorizon.errors import ConfigError
    from egohorizon.owned_output import check_written_by
    from egohorizon.pipelines.caption.events import write_events
    from egohorizon.pipelines.caption.results import result_files

    out = check_written_by(args.out, "caption run", option="caption merge OUT")  # issue 36: never a user's folder
    if not result_files(out):
        raise ConfigError(f"{out}: no captions.jsonl or captions.part-*.jsonl to merge")
    write_result(write_events(out), indent=None)
    return 0


def run_answer_set(args: argparse.Namespace) -> int:
    from egohorizon.run.answer_set import add_answer_set

    write_result(add_answer_set(args.adapter, args.run, force=args.force))
    return 0


def run_audit(args: argparse.Namespace) -> int:
    try:
        from egohorizon.pipelines.caption.audit import build_audit_page
    except ImportError as error:
        from egohorizon.errors import ConfigError

        raise ConfigError(f"the caption audit page is not available in this installation ({error})") from None
    counts = build_audit_page(args.events, args.shards, args.n, args.out, seed=args.seed, n_wrong=args.wrong)
    write_result({"out": args.out, **counts})
    return 0
