#!/usr/bin/env python
"""Throughput of `egohorizon caption` (issue 11, item 5): is the client ever the bottleneck?

One run measures, on demo-world window shards (30 frames per window, 448 px, gaze crops):

1. server: the job against scripts/loopback_vlm_server.py, which serves at most ``--concurrency``
   requests at once with a fixed ``--latency`` each, so its maximum throughput is concurrency / latency
   windows per second. The job prepares every window as it would for vLLM (the shard's JPEG bytes where
   nothing is drawn, decode + gaze ring + JPEG for the frames, data URLs) and holds ``--concurrency`` +
   ``--lead`` requests in flight (a couple queued at the server keep it busy while a reply and the next
   upload pass); for contrast, a second run holds exactly ``--concurrency``. Printed: achieved / maximum
   of each (target >= 0.90), and the load average before and after.
2. local: the tiny offline Qwen2.5-VL (egohorizon.backbones.TinyBackbone, random weights) on the
   windows of the first ``--local-shards`` shards. First the model's own generation time: the same batches, prepared
   beforehand, timed in ``generate_batch`` only. Then the job's wall time on those windows (reading,
   decoding at the size the processor needs, prompts and the processor in a DataLoader worker while
   the model generates). Also printed: the job's wall over the generation time inside the job (the
   overlap alone, without the slow-down the worker's CPU causes on shared cores).
   Printed: job wall / generation time (target <= 1.20).

    python scripts/bench_caption.py                         # builds 1 demo day of shards (~40 s) first
    python scripts/bench_caption.py --shards data/bench_shards --json bench.json
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

# As `egohorizon caption` does (commands/caption.py): idle OpenMP threads must not spin on shared cores.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
REPO = Path(__file__).resolve().parents[1]
SERVER = REPO / "scripts" / "loopback_vlm_server.py"


def build_shards(out: Path, demo_dir: str | None, days: int, stride: int) -> Path:
    from egohorizon.cli import main

    args = ["shards", "build", "--demo", "--demo-days", str(days), "--stride", str(stride), "--out", str(out)]
    if demo_dir:
        args += ["--demo-dir", demo_dir]
    if main(args) != 0:
        raise SystemExit("building the demo shards failed")
    return out


def http_ratio(shards: Path, out: Path, args, lead: int) -> dict:
    """The job against the loopback server, ``lead`` requests more in flight than the server serves at
    once: achieved windows/s over the server's maximum."""
    from egohorizon.pipelines.caption.job import CaptionJob
    from egohorizon.pipelines.caption.setup import ModelChoice, caption_settings, make_runner, provenance

    server = subprocess.Popen([sys.executable, str(SERVER), "--latency", str(args.latency), "--concurrency",
                               str(args.concurrency), "--lifetime", "600"], stdout=subprocess.PIPE, text=True)
    try:
        port = server.stdout.readline().split()[1]
        choice = ModelChoice(model="loopback-vlm", base_url=f"http://127.0.0.1:{port}/v1")
        settings = caption_settings(choice, frames_per_window=args.frames_per_window)
        runner = make_runner(choice, concurrency=args.concurrency + lead)
        job = CaptionJob(shards, out, runner, settings, provenance(choice, runner, settings), progress=False)
        report = job.run()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/stats", timeout=10) as reply:
            stats = json.loads(reply.read())
    finally:
        server.terminate()
        server.wait(timeout=30)
    maximum = args.concurrency / args.latency
    achieved = report.attempted / report.wall_s
    return {"client_in_flight": args.concurrency + lead,
            "windows": report.attempted, "wall_s": round(report.wall_s, 3), "achieved_per_s": round(achieved, 3),
            "maximum_per_s": round(maximum, 3), "ratio": round(achieved / maximum, 4),
            "server_max_in_flight": stats["max_in_flight"], "images_sent": stats["images"],
            # The server's own pace: its slots were held this long per request (latency + oversleeping
            # on a busy machine), so concurrency / this is the most it could serve in this run.
            "server_slot_s_per_request": round(stats["slot_s"] / max(1, stats["ok"]), 4),
            "failed": report.counts.get("failed", 0)}


def tiny_model(cache: Path, corpus: list[str]) -> str:
    from egohorizon.backbones import TinyBackbone

    backbone = TinyBackbone(cache_dir=str(cache))
    backbone.prepare(corpus=lambda: corpus)
    return backbone.base_path


def local_ratio(shards: Path, out: Path, args) -> dict:
    """The job with the local tiny model over one shard, against the model's own generation time."""
    from egohorizon.data.shards.index import ShardIndex
    from egohorizon.llm.vision_local import LocalVLMBackend
    from egohorizon.pipelines.caption.job import CaptionJob
    from egohorizon.pipelines.caption.runners import LocalRunner, _EncodedBatches
    from egohorizon.pipelines.caption.setup import ModelChoice, caption_settings, provenance
    from egohorizon.pipelines.caption.windows import ShardReader

    index = ShardIndex.load(shards)
    count = len(index.shards)
    if count % args.local_shards:
        raise SystemExit(f"--local-shards {args.local_shards} must divide the {count} shards (the job takes a slice)")
    entries = sorted(index.shards, key=lambda e: e["path"])[:args.local_shards]
    settings = caption_settings(ModelChoice(model="tiny"), frames_per_window=args.frames_per_window,
                                max_new_tokens=args.max_new_tokens)
    # The tokenizer of the tiny model learns from the prompts it will see (as train.py's corpus does).
    corpus = []
    for item in _EncodedBatches(ShardReader(index, entries, set()), settings, lambda s: s, 10**9):
        corpus += [s["text"] for s in item.get("batch", [])]
    model = tiny_model(out / "tiny", corpus)

    backend = LocalVLMBackend(model, batch_size=args.batch_size)
    runner = LocalRunner(backend, batch_size=args.batch_size, workers=args.local_workers)
    runner.share_cores()  # the job's thread setting, for both measurements
    backend.load()
    batches = [item for item in _EncodedBatches(ShardReader(index, entries, set()), settings, backend.encoder(),
                                                args.batch_size) if "batch" in item]
    # Warm-up: one whole batch, so first-call allocations (the KV cache's growth) count in neither figure.
    backend.generate_batch(batches[0]["batch"], max_new_tokens=settings.max_new_tokens, seed=settings.seed)
    start = time.perf_counter()
    for item in batches:
        backend.generate_batch(item["batch"], max_new_tokens=settings.max_new_tokens, seed=settings.seed)
    generation_s = time.perf_counter() - start

    job = CaptionJob(shards, out / "local", runner, settings, provenance(ModelChoice(model=model), runner, settings),
                     shard_slice=(0, count // args.local_shards), progress=False, max_failures=1.0)
    report = job.run()
    windows = sum(len(item["infos"]) for item in batches)
    import torch

    return {"windows": windows, "batches": len(batches), "torch_threads": torch.get_num_threads(),
            "generation_s": round(generation_s, 3),
            "job_wall_s": round(report.wall_s, 3), "job_generation_s": round(runner.generation_s, 3),
            "ratio": round(report.wall_s / generation_s, 4), "attempted": report.attempted,
            # The overlap alone: the job's wall over its own generation time (what the worker's CPU
            # slows the model by on busy cores is in "ratio", not here).
            "overlap_ratio": round(report.wall_s / runner.generation_s, 4) if runner.generation_s else None}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shards", help="a shard folder to use (default: build one demo day into a temp folder)")
    parser.add_argument("--demo-dir", help="the demo world folder (default: data/demo)")
    parser.add_argument("--demo-days", type=int, default=1)
    parser.add_argument("--stride", type=int, default=8, help="keep every N-th demo window (default 8)")
    parser.add_argument("--latency", type=float, default=0.5, help="server seconds per request (default 0.5)")
    parser.add_argument("--concurrency", type=int, default=8, help="requests the server serves at once (default 8)")
    parser.add_argument("--lead", type=int, default=2,
                        help="the client holds --concurrency + this many requests in flight (default 2)")
    parser.add_argument("--frames-per-window", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=8, help="local model batch (default 8)")
    parser.add_argument("--max-new-tokens", type=int, default=160,
                        help="local model tokens per window (default 160, CaptionModule's budget)")
    parser.add_argument("--local-workers", type=int, default=1,
                        help="prefetch worker processes of the local job (default 1; 0: no overlap, for contrast)")
    parser.add_argument("--local-shards", type=int, default=2, help="shards the local model captions (default 2)")
    parser.add_argument("--only", choices=("server", "local"), help="run one of the two measurements")
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    with tempfile.TemporaryDirectory(prefix="bench_caption_") as tmp:
        tmp = Path(tmp)
        shards = Path(args.shards) if args.shards else build_shards(tmp / "shards", args.demo_dir, args.demo_days,
                                                                    args.stride)
        load_before = os.getloadavg()
        server = http_ratio(shards, tmp / "http", args, args.lead) if args.only != "local" else None
        server_no_lead = http_ratio(shards, tmp / "http0", args, 0) if args.only != "local" and args.lead else None
        local = local_ratio(shards, tmp, args) if args.only != "server" else None
        load_after = os.getloadavg()
    print(f"load average (1, 5, 15 min): before {', '.join(f'{x:.2f}' for x in load_before)}; "
          f"after {', '.join(f'{x:.2f}' for x in load_after)}; {os.cpu_count()} CPUs")
    for run in (server, server_no_lead):
        if run:
            print(f"server: {run['windows']} windows in {run['wall_s']:.2f} s = {run['achieved_per_s']:.2f}/s; "
                  f"maximum {args.concurrency}/{args.latency:g} s = {run['maximum_per_s']:.2f}/s; client in flight "
                  f"{run['client_in_flight']}; achieved/maximum = {run['ratio']:.3f} (target >= 0.90); the server "
                  f"held each request {run['server_slot_s_per_request']:.3f} s")
    if local:
        print(f"local:  {local['windows']} windows in {local['batches']} batches; model generation "
              f"{local['generation_s']:.2f} s, job wall {local['job_wall_s']:.2f} s; job/generation = "
              f"{local['ratio']:.3f} (target <= 1.20); generation inside the job {local['job_generation_s']:.2f} s, "
              f"job wall / its own generation = {local['overlap_ratio']:.3f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"server": server, "server_no_lead": server_no_lead, "local": local,
                                               "load_average": {"before": load_before, "after": load_after},
                                               "settings": vars(args)}, indent=1))
    ok = (server is None or server["ratio"] >= 0.9) and (local is None or local["ratio"] <= 1.2)
    return 0 if ok else 1


if __name__ == "__main__":
    from egohorizon.errors import DataError

    try:
        sys.exit(main())
    except DataError as error:  # a bad or missing shard folder: the message names it, no traceback
        sys.exit(f"bench_caption: {error}")
