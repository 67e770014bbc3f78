#!/usr/bin/env python
"""Benchmark the window-shard loader against a naive per-file loader and bare JPEG decoding.

One run prepares one set of images and measures, on exactly the same JPEG bytes:
- floor:  bare JPEG decoding of the bytes held in memory, one thread, with the decoder our loader uses
          (simplejpeg, libjpeg-turbo); ``floor_cv2``: the same with cv2.imdecode, for reference;
- ours:   the streaming loader (WindowStream + MonitoredLoader, ``--workers`` DataLoader workers,
          decode + CaptionInputs + collate_windows, i.e. batches ready for the model);
- naive:  a map-style Dataset reading every frame and crop as its own JPEG file from per-window
          folders with PIL, default DataLoader (no workers), same CaptionInputs + collate_windows;
          and the same naive loader with ``--workers`` workers, for reference;
- memory: peak resident memory (main process + workers) of our loader streaming N samples and 10 N
          samples (resampled shards, fixed epoch length).

Targets (issue 5): ours >= 3x naive, ours >= 70% of the floor, peak memory within 10% at 10x samples.
Images: the real Aria RGB frames of ../shared/data (derived_frames), cycled; synthetic if absent.

    python scripts/bench_stream.py                 # 64 windows of 30 frames (+ crops)
    python scripts/bench_stream.py --samples 128 --json bench.json
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
DERIVED = REPO.parent / "shared" / "data" / "projectaria-tools-testdata" / "derived_frames"


# ------------------------------------------------------------------------------------------------
# Preparing the data: shards with our writer, then the same bytes as per-file folders
# ------------------------------------------------------------------------------------------------


def source_images(folder: Path) -> list[np.ndarray]:
    from PIL import Image

    images = [np.asarray(Image.open(p).convert("RGB")) for p in sorted(folder.glob("*camera-rgb*.jpg"))]
    if images:
        return images
    rng = np.random.default_rng(0)  # no real frames here: smooth random images of the same size
    return [np.clip(rng.normal(128, 40, (1408, 1408, 3)), 0, 255).astype(np.uint8) for _ in range(8)]


def prepare(out: Path, samples: int, frames: int, long_side: int, crop_size: int) -> Path:
    import functools

    from egohorizon.data.shards.sources import RecordingSource
    from egohorizon.data.shards.writer import build_shards
    from egohorizon.data.windows.sample import SourceFrame, WindowConfig
    from egohorizon.schema import Recording

    images = source_images(DERIVED)
    count = samples * frames
    start = 1_700_000_000.0
    pick = functools.partial(_image, images)
    source_frames = [SourceFrame(t=start + k, load=functools.partial(pick, k),
                                 gaze=(images[k % len(images)].shape[1] * (0.3 + 0.4 * ((k * 37) % 100) / 100),
                                       images[k % len(images)].shape[0] * 0.5),
                                 gaze_status="ok", gaze_confidence=0.9, gaze_dt=0.0) for k in range(count)]
    recording = Recording(id="bench", participant="bench", day="2023-11-14", session="s1", start=start,
                          end=start + count)
    source = RecordingSource(recording=recording, frames=source_frames, words=[], kind="demo")
    build_shards([source], out / "shards", config=WindowConfig(window_s=frames, long_side=long_side,
                                                               crop_size=crop_size),
                 samples_per_shard=8, deid="off")
    explode_to_folders(out / "shards", out / "files")
    return out


def _image(images: list[np.ndarray], k: int) -> np.ndarray:
    return images[k % len(images)]


def explode_to_folders(shard_dir: Path, out: Path) -> None:
    """Every sample's members as files: files/<key>/<field> (the same bytes as in the shards)."""
    import tarfile

    from egohorizon.data.shards.index import ShardIndex

    index = ShardIndex.load(shard_dir)
    for entry in index.shards:
        with tarfile.open(index.path_of(entry)) as tar:
            for member in tar.getmembers():
                key, field = member.name.split(".", 1)
                (out / key).mkdir(parents=True, exist_ok=True)
                (out / key / field).write_bytes(tar.extractfile(member).read())


# ------------------------------------------------------------------------------------------------
# Measurements (each in its own process, for clean memory figures)
# ------------------------------------------------------------------------------------------------


class PeakMemory:
    """Samples the memory of this process and its children every 20 ms and keeps the peak of their
    sum. PSS (proportional set size) where the system reports it: shared pages (torch's libraries,
    the shared-memory batches) count once across processes, not once per process as RSS would."""

    def __init__(self):
        import psutil

        self.process, self.peak, self._stop = psutil.Process(), 0, threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        import psutil

        while not self._stop.is_set():
            total = 0
            for proc in [self.process] + self.process.children(recursive=True):
                try:
                    info = proc.memory_full_info()
                    total += getattr(info, "pss", info.rss)
                except psutil.Error:
                    pass
            self.peak = max(self.peak, total)
            time.sleep(0.02)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self.thread.join()


class NaiveWindows:
    """Map-style dataset: one folder per window, one JPEG file per frame and crop, read with PIL."""

    def __init__(self, root: Path, inputs):
        self.folders, self.inputs = sorted(p for p in root.iterdir() if p.is_dir()), inputs

    def __len__(self):
        return len(self.folders)

    def __getitem__(self, i):
        from PIL import Image

        from egohorizon.data.shards.encode import DecodedWindow, crop_field, frame_field

        folder = self.folders[i]
        meta = json.loads((folder / "json").read_text())
        frames, crops = [], []
        for k, frame in enumerate(meta["frames"]):
            frames.append(np.asarray(Image.open(folder / frame_field(k)).convert("RGB")))
            crops.append(np.asarray(Image.open(folder / crop_field(k)).convert("RGB")) if frame["crop_box"] else None)
        return self.inputs(DecodedWindow(key=folder.name, url=str(folder), meta=meta, frames=frames, crops=crops))


def measure(kind: str, root: Path, batch_size: int, workers: int, multiplier: int, epochs: int) -> dict:
    """``epochs`` passes over the prepared windows (loader made once, as in training); with
    ``multiplier`` > 0, one resampled epoch of multiplier x N samples instead (the memory check)."""
    import torch

    import datamodules.caption  # noqa: F401  (imports lightning: its seconds of CPU are not the loader's)

    torch.set_num_threads(1)
    if kind.startswith("floor"):
        return measure_floor(root, epochs, decoder=kind.removeprefix("floor").lstrip("_") or "ours")
    cpu_before = cpu_seconds()
    if kind.startswith("naive"):
        loader = naive_loader(root, batch_size, workers)
    else:
        loader = our_loader(root, batch_size, workers, multiplier)
        epochs = 1 if multiplier > 0 else epochs
    # Memory is sampled only in the memory runs: reading /proc/*/smaps costs CPU that the timed
    # loaders would otherwise get.
    memory = PeakMemory() if multiplier > 0 else contextlib.nullcontext()
    count = 0
    with memory:
        begin = time.perf_counter()
        for _ in range(epochs):
            for batch in loader:
                count += consume(batch)
        seconds = time.perf_counter() - begin
    del loader, batch  # stops the workers, so that their CPU time is counted
    gc.collect()
    return {"samples": count, "seconds": seconds, "samples_per_s": count / seconds,
            "peak_mem_mb": memory.peak / 2**20 if multiplier > 0 else None,
            "cpu_ms_per_sample": 1000 * (cpu_seconds() - cpu_before) / count}


def measure_floor(root: Path, epochs: int, decoder: str) -> dict:
    """Bare decoding of every JPEG's bytes, held in memory, in one thread: with the decoder our loader
    uses (egohorizon.data.shards.encode.decode_jpeg), or with cv2.imdecode for reference."""
    import cv2

    from egohorizon.data.shards.encode import decode_jpeg

    cv2.setNumThreads(1)
    blobs = [p.read_bytes() for p in sorted((root / "files").rglob("*.jpg"))]
    windows = len([p for p in (root / "files").iterdir() if p.is_dir()])
    flag = getattr(cv2, "IMREAD_COLOR_RGB", cv2.IMREAD_COLOR)
    decode = decode_jpeg if decoder == "ours" else (lambda b: cv2.imdecode(np.frombuffer(b, np.uint8), flag))
    cpu_before, begin = cpu_seconds(), time.perf_counter()
    for _ in range(epochs):
        for blob in blobs:
            decode(blob)
    seconds = time.perf_counter() - begin
    return {"samples": windows * epochs, "seconds": seconds, "samples_per_s": windows * epochs / seconds,
            "peak_mem_mb": None, "cpu_ms_per_sample": 1000 * (cpu_seconds() - cpu_before) / (windows * epochs)}


def naive_loader(root: Path, batch_size: int, workers: int):
    """A plain DataLoader over NaiveWindows with the same inputs and collate as ours, but without our
    reusable batch buffers (with workers, each batch goes into fresh shared memory, as default_collate)."""
    import functools

    import torch

    from egohorizon.repo_conf import glue_importable

    glue_importable()  # datamodules/ is a folder of the checkout
    from datamodules.caption import CaptionInputs, collate_windows

    return torch.utils.data.DataLoader(NaiveWindows(root / "files", CaptionInputs()), batch_size=batch_size,
                                       num_workers=workers,
                                       collate_fn=functools.partial(collate_windows, reuse_buffers=False))


def our_loader(root: Path, batch_size: int, workers: int, multiplier: int):
    from egohorizon.repo_conf import glue_importable

    glue_importable()  # datamodules/ is a folder of the checkout
    from datamodules.caption import CaptionInputs, collate_windows
    from egohorizon.data.shards.index import ShardIndex
    from egohorizon.data.shards.stream import WindowStream, make_loader

    index = ShardIndex.load(root / "shards")
    resampled = multiplier > 0
    stream = WindowStream(index.urls(), expected_samples=index.expected_samples(), batch_size=batch_size,
                          model_inputs=CaptionInputs(), collate=collate_windows, shuffle=True, shuffle_buffer=8,
                          resampled=resampled, decode_into_batch=True)
    total = index.totals()["samples"] * multiplier
    return make_loader(stream, num_workers=workers, epoch_batches=total // batch_size if resampled else None)


def consume(batch: dict) -> int:
    """Reads one byte of every 4 kB page of the batch's images, as a copy to the GPU would read them
    all: a batch in shared memory is mapped into the main process only then, at a cost that belongs to
    the loader. Returns the number of windows."""
    import torch

    for key in ("frames", "crops"):
        if key in batch:
            memory = torch.empty(0, dtype=torch.uint8).set_(batch[key].untyped_storage())
            memory[::4096].sum()
    return batch["frames"].shape[0]


def cpu_seconds() -> float:
    """User + system CPU time of this process and of its finished children (the loader workers):
    unlike wall-clock time, it does not depend on what else the machine is running."""
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def run_measure(kind: str, args, workers: int, multiplier: int = 0) -> dict:
    """Runs one measurement in a fresh interpreter and returns its JSON."""
    command = [sys.executable, __file__, "--measure", kind, "--root", str(args.root), "--batch-size",
               str(args.batch_size), "--workers", str(workers), "--multiplier", str(multiplier),
               "--epochs", str(args.epochs)]
    result = subprocess.run(command, capture_output=True, text=True, check=False, cwd=REPO,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    if result.returncode != 0:
        raise SystemExit(f"measurement {kind} failed:\n{result.stderr[-2000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=64, help="windows to prepare (default 64)")
    parser.add_argument("--frames", type=int, default=30, help="frames per window (default 30)")
    parser.add_argument("--long-side", type=int, default=448)
    parser.add_argument("--crop-size", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3, help="rounds of all loaders; medians reported")
    parser.add_argument("--root", type=Path, help="reuse (or keep) the prepared data here")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    parser.add_argument("--epochs", type=int, default=3, help="passes over the windows per measurement")
    parser.add_argument("--multiplier", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.root, args.batch_size, args.workers, args.multiplier,
                                 args.epochs)))
        return 0

    sys.path.insert(0, str(REPO))
    with tempfile.TemporaryDirectory() as scratch:
        args.root = args.root or Path(scratch)
        if not (args.root / "shards" / "index.json").exists():
            print(f"preparing {args.samples} windows x {args.frames} frames in {args.root} ...", flush=True)
            prepare(args.root, args.samples, args.frames, args.long_side, args.crop_size)
        for path in (args.root / "files").rglob("*"):  # warm the page cache for every loader alike
            if path.is_file():
                path.read_bytes()
        repeats = run_repeats(args)
        # Memory: the same resampled loader streaming N and 10 N samples, median peak of the repeats
        # (how many batch buffers a worker needs at once depends on timing: 2 or 3 on this machine).
        memory = {f"ours_resampled_{m}x": median_memory([run_measure("ours", args, args.workers, multiplier=m)
                                                         for _ in range(args.repeats)]) for m in (1, 10)}
    report(repeats, memory, args)
    return 0


def run_repeats(args) -> list[dict[str, dict]]:
    """``--repeats`` rounds, each measuring every loader once, back to back: on a shared machine the
    load from other processes comes and goes, and loaders compared within one round saw about the same."""
    runs = {"floor": ("floor", 0), "floor_cv2": ("floor_cv2", 0), "ours": ("ours", args.workers),
            "naive": ("naive", 0), f"naive_{args.workers}_workers": ("naive", args.workers)}
    rounds = []
    for _ in range(args.repeats):
        load = os.getloadavg()[0]
        rounds.append({name: {**run_measure(kind, args, workers), "load_before": load}
                       for name, (kind, workers) in runs.items()})
    return rounds


def median_memory(figures: list[dict]) -> dict:
    return {**sorted(figures, key=lambda fig: fig["peak_mem_mb"])[len(figures) // 2],
            "peak_mem_mb_runs": [fig["peak_mem_mb"] for fig in figures]}


def median_run(figures: list[dict]) -> dict:
    """The run with the median samples/s (a real run, so that its columns belong together)."""
    return sorted(figures, key=lambda fig: fig["samples_per_s"])[len(figures) // 2]


def report(rounds: list[dict[str, dict]], memory: dict[str, dict], args) -> None:
    figures = {name: median_run([r[name] for r in rounds]) for name in rounds[0]} | memory
    print(f"\n{'loader':<22}{'samples':>9}{'seconds':>10}{'samples/s':>11}{'CPU ms/sample':>15}{'peak PSS MB':>13}")
    for name, fig in figures.items():
        rss = f"{fig['peak_mem_mb']:.0f}" if fig["peak_mem_mb"] else "-"
        print(f"{name:<22}{fig['samples']:>9}{fig['seconds']:>10.2f}{fig['samples_per_s']:>11.1f}"
              f"{fig['cpu_ms_per_sample']:>15.1f}{rss:>13}")
    per_round = {
        "ours / naive >= 3": [r["ours"]["samples_per_s"] / r["naive"]["samples_per_s"] for r in rounds],
        "ours / floor >= 0.70": [r["ours"]["samples_per_s"] / r["floor"]["samples_per_s"] for r in rounds],
    }
    checks = {name: float(np.median(values)) for name, values in per_round.items()}
    checks["peak memory 10x / 1x <= 1.10"] = (memory["ours_resampled_10x"]["peak_mem_mb"]
                                              / memory["ours_resampled_1x"]["peak_mem_mb"])
    limits = {"ours / naive >= 3": (3.0, True), "ours / floor >= 0.70": (0.70, True),
              "peak memory 10x / 1x <= 1.10": (1.10, False)}
    loads = [r["ours"]["load_before"] for r in rounds]
    print(f"\n(throughput over {args.epochs} passes; one window = {args.frames} frames at long side "
          f"{args.long_side} + {args.frames} crops of {args.crop_size}; batch {args.batch_size}; median of "
          f"{args.repeats} rounds; {os.cpu_count()} CPUs, load average {min(loads):.1f}-{max(loads):.1f})")
    for name, value in checks.items():
        limit, at_least = limits[name]
        met = value >= limit if at_least else value <= limit
        spread = per_round.get(name)
        rounds_text = f"   (rounds: {', '.join(f'{v:.2f}' for v in spread)})" if spread else ""
        print(f"{name:<28}{value:>7.2f}   {'met' if met else 'NOT met'}{rounds_text}")
    print("peak PSS MB per run: " + "; ".join(
        f"{name.removeprefix('ours_resampled_')}: {', '.join(f'{v:.0f}' for v in fig['peak_mem_mb_runs'])}"
        for name, fig in memory.items()))
    if args.json:
        args.json.write_text(json.dumps({"rounds": rounds, "memory": memory, "figures": figures, "checks": checks},
                                        indent=1))


if __name__ == "__main__":
    sys.exit(main())
