"""Frame sampling for month-scale QA (issue 13): does choosing and reading a question's frames from a
month of window shards cost more than decoding those frames alone, and does its memory grow with
the month?

For spans of 1, 2, 4 and all weeks of the shard folder (one participant), the frame catalog is built
(a one-off per run, timed apart), then for ``--questions`` question times on the span's last day:
``uniform`` sampling of ``--budget`` frames over everything before the question + reading them (one
seek, one read and one JPEG decode each) is timed against decoding the same frames' JPEG bytes
already in memory, best of ``--repeats`` each. Ratio = sampling time / decode time, from one run. Memory: the peak of Python
allocations (tracemalloc, numpy included) while sampling, and the catalog's size.

    .venv/bin/python scripts/bench_qa_sampling.py --shards data/demo_shards_qa --budget 32
"""

from __future__ import annotations

import argparse
import json
import random
import time
import tracemalloc

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shards", default="data/demo_shards_qa")
    parser.add_argument("--participant", default="p01")
    parser.add_argument("--budget", type=int, default=32)
    parser.add_argument("--questions", type=int, default=20)
    parser.add_argument("--weeks", default="1,2,4,all")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=3, help="best of N timings per question (3)")
    args = parser.parse_args()

    from egohorizon.data.shards.encode import decode_jpeg
    from egohorizon.data.shards.index import ShardIndex
    from egohorizon.memory import FrameCatalog, uniform

    index = ShardIndex.load(args.shards)
    days = sorted({e["day"] for e in index.shards if e["participant"] == args.participant})
    rows = []
    for weeks in args.weeks.split(","):
        span = days if weeks == "all" else days[: 7 * int(weeks)]
        start = time.perf_counter()
        catalog = FrameCatalog.build(args.shards, participants={args.participant}, days=set(span))
        build_s = time.perf_counter() - start
        windows = catalog.windows_before(args.participant, float("inf"))
        last_day = [w for w in windows if w.key.split("_")[1] == span[-1]]
        rng = random.Random(args.seed)
        times = [rng.uniform(last_day[0].start, last_day[-1].end) for _ in range(args.questions)]
        sample_s = decode_s = 0.0
        peak = 0
        for t in times:
            # Best of --repeats for each side, measured back to back: on a machine shared with other jobs
            # the minimum is the cost of the work itself, not of whoever else had the CPU.
            best_sample = best_decode = float("inf")
            for _ in range(args.repeats):
                start = time.perf_counter()
                selection = uniform(catalog, args.participant, t, args.budget)
                images = catalog.read(args.participant, selection.rows)
                best_sample = min(best_sample, time.perf_counter() - start)
                data = catalog.read_bytes(args.participant, selection.rows)
                start = time.perf_counter()
                decoded = [decode_jpeg(d) for d in data]
                best_decode = min(best_decode, time.perf_counter() - start)
            sample_s += best_sample
            decode_s += best_decode
            assert all(np.array_equal(a, b) for a, b in zip(images, decoded))
            tracemalloc.start()  # memory in a pass of its own: tracing slows every allocation
            catalog.read(args.participant, uniform(catalog, args.participant, t, args.budget).rows)
            peak = max(peak, tracemalloc.get_traced_memory()[1])
            tracemalloc.stop()
        rows.append({"weeks": weeks, "days": len(span), "frames": catalog.n_frames_before(args.participant, float("inf")),
                     "catalog_build_s": round(build_s, 3), "catalog_bytes": catalog.nbytes(),
                     "sample_ms_per_question": round(1000 * sample_s / len(times), 2),
                     "decode_ms_per_question": round(1000 * decode_s / len(times), 2),
                     "ratio": round(sample_s / decode_s, 3), "peak_sampling_bytes": peak})
    print(json.dumps({"budget": args.budget, "questions": args.questions, "participant": args.participant,
                      "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
