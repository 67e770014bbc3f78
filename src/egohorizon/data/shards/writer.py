"""The shard writer: window samples of many recordings -> WebDataset tar shards + index.json.

- Shards are grouped by participant and calendar day (``<participant>/<day>/<participant>_<day>_00000.tar``)
  so a held-out-day split selects whole shards; inside a group, windows are in time order and cut
  into shards of ``samples_per_shard``. Folder and file names are ``windows.safe_name`` of the ids:
  safe ids as they are, any other with a hash of the original, so two ids never share a shard and
  none (``../p1``, ``/abs``) leaves ``out_dir``; the entry keeps the original ids.
- Idempotent and resumable: the plan (which window goes to which shard) depends only on the inputs
  and settings, so a re-run finds finished shards by their sidecar ``.json`` and skips them without
  rendering anything. A shard is trusted only when its sidecar's fingerprint (the settings, the
  ordered keys and the fingerprint of every session it draws on, ``sources.source_fingerprint``)
  equals the plan's and its byte size agrees; anything else is rebuilt, and shards the plan no longer
  has are removed, so a rebuild after adding, changing or removing a session equals a fresh build
  (issue 9). A shard is written under a temporary name and renamed when complete, then its sidecar
  is written: a crash or Ctrl-C leaves no half shard that looks finished. index.json is removed
  before the first shard is (re)written and written last, so a half-updated folder has no index a
  reader could trust; the rerun equals a fresh build (issue 22).
- Nothing here imports torch (nor webdataset, which does): torch's OpenMP would make tesseract's
  OCR use every core for no gain.
- Every frame passes the de-identifier (if any) before it is downscaled, cropped, OCR'd or stored;
  the counts of what it masked go into the shard's entry.
- On-screen text (``screen_text=True``, the default) is read from a few de-identified frames of each
  window (``egohorizon.data.windows.text``); the reader's settings are part of the build settings and
  its counts (frames read, failed reads, lines, sensitive lines dropped) go into the shard's entry.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Self

from egohorizon.atomic_files import write_json_atomic
from egohorizon.data.ingest.ingested import GAZE_STATUSES, Word
from egohorizon.data.shards.encode import encode_window
from egohorizon.data.shards.index import INDEX_FILE, ShardIndex
from egohorizon.data.shards.sources import RecordingSource, source_fingerprint
from egohorizon.data.windows.sample import (
    WINDOW_SCHEMA_VERSION,
    SourceFrame,
    WindowConfig,
    build_window,
    group_windows,
    safe_name,
    window_key,
)
from egohorizon.errors import ConfigError

log = logging.getLogger(__name__)


@dataclass
class WindowPlan:
    source: RecordingSource
    index: int
    start: float
    frames: list[SourceFrame]
    words: list[Word]


@dataclass
class ShardPlan:
    participant: str
    day: str
    number: int
    windows: list[WindowPlan] = field(default_factory=list)

    @property
    def relpath(self) -> str:
        p, d = safe_name(self.participant), safe_name(self.day)
        return f"{p}/{d}/{p}_{d}_{self.number:05d}.tar"


def plan_shards(sources: Sequence[RecordingSource], config: WindowConfig,
                samples_per_shard: int) -> tuple[list[ShardPlan], int]:
    """The deterministic shard plan and the number of windows left out (fewer than min_frames)."""
    if samples_per_shard < 1:
        raise ConfigError(f"samples_per_shard: expected >= 1, got {samples_per_shard}")
    groups: dict[tuple[str, str], list[WindowPlan]] = defaultdict(list)
    skipped = 0
    seen_ids: set[str] = set()
    for source in sources:
        rec = source.recording
        if rec.id in seen_ids:
            raise ConfigError(f"recording {rec.id!r} is given twice; each recording must be sharded once")
        seen_ids.add(rec.id)
        for index, frames, words in group_windows(rec, source.frames, source.words, config.window_s):
            if index % config.stride:
                continue
            if len(frames) < config.min_frames:
                skipped += 1
                continue
            start = rec.start + index * config.window_s
            groups[(rec.participant, rec.day)].append(WindowPlan(source, index, start, frames, words))
    _check_unique_names(groups)
    plans = []
    for (participant, day), windows in sorted(groups.items()):
        windows.sort(key=lambda w: (w.start, w.source.recording.session, w.index))
        for number, begin in enumerate(range(0, len(windows), samples_per_shard)):
            plans.append(ShardPlan(participant, day, number, windows[begin:begin + samples_per_shard]))
    return plans, skipped


def _check_unique_names(groups: dict[tuple[str, str], list[WindowPlan]]) -> None:
    """Two participants (or days) whose names are one folder, or two windows with one key, would
    overwrite each other's samples without a word; ``safe_name`` hashes every id it changes, so this
    only guards against a hash collision (or an id spelled like another's hashed name)."""
    folders: dict[tuple[str, str], tuple[str, str]] = {}
    keys: dict[str, str] = {}
    for participant, day in sorted(groups):
        folder = (safe_name(participant), safe_name(day))
        if folders.setdefault(folder, (participant, day)) != (participant, day):
            other = folders[folder]
            raise ConfigError(f"participant/day {participant!r}/{day!r} and {other[0]!r}/{other[1]!r} both map to "
                              f"the shard folder {folder[0]}/{folder[1]}; rename one of them")
        for window in groups[(participant, day)]:
            key = window_key(window.source.recording, window.index)
            rid = window.source.recording.id
            if keys.setdefault(key, rid) != rid:
                raise ConfigError(f"recordings {keys[key]!r} and {rid!r} both give the window key {key}; "
                                  "rename one participant, day or session")


def shard_fingerprint(plan: ShardPlan, build: dict[str, Any], sessions: dict[str, str]) -> str:
    """A hash of what the shard's bytes depend on: settings, ordered keys, the sessions' fingerprints."""
    windows = [[window_key(w.source.recording, w.index), sessions[w.source.recording.id]] for w in plan.windows]
    blob = json.dumps({"build": build, "windows": windows}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _finished_entry(sidecar: Path, tar_path: Path, build: dict[str, Any], fingerprint: str) -> dict[str, Any] | None:
    """The shard's entry if it was completely written from the same inputs and settings, else None."""
    if not (sidecar.is_file() and tar_path.is_file()):
        return None
    try:
        obj = json.loads(sidecar.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    if obj.get("build") != build:
        changed = sorted(k for k in set(build) | set(obj.get("build", {}))
                         if build.get(k) != obj.get("build", {}).get(k))
        raise ConfigError(f"{tar_path} was built with other settings ({', '.join(changed)} differ); "
                          "write to a new folder, or delete the old shards first")
    entry = obj.get("entry", {})
    if entry.get("fingerprint") != fingerprint:
        return None  # other windows or changed inputs (sidecars older than fingerprints have none)
    return entry if entry.get("bytes") == tar_path.stat().st_size else None


def write_shard(plan: ShardPlan, out_dir: Path, config: WindowConfig, *, deidentify: Callable | None,
                jpeg_quality: int, crop_quality: int, fingerprint: str,
                session_fingerprints: dict[str, str], screen_text=None) -> tuple[dict[str, Any], list[str]]:
    """Renders and writes one shard (temp name, then rename); returns its index entry and keys."""
    from egohorizon.data.deid.sensitive import count_redactions

    tar_path = out_dir / plan.relpath
    tar_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = tar_path.with_name(f".{tar_path.name}.tmp-{os.getpid()}")
    gaze, deid, text = Counter(), Counter(), Counter()
    keys, sessions, frames, words = [], [], 0, 0
    try:
        with TarSink(tmp) as sink:
            for window in plan.windows:
                sample = build_window(window.source.recording, window.index, window.frames, window.words,
                                      window.source.events, config, deidentify, screen_text=screen_text)
                if hasattr(deidentify, "scrub_words"):  # the words were scrubbed per recording (build_shards)
                    sample.deid["speech_items"] = count_redactions(w.text for w in sample.words)
                sink.write(encode_window(sample, jpeg_quality=jpeg_quality, crop_quality=crop_quality))
                keys.append(sample.key)
                frames += len(sample.frames)
                words += len(sample.words)
                gaze.update(f.gaze_status for f in sample.frames)
                deid.update(sample.deid)
                text.update(sample.screen_text_counts)
                if deidentify is not None:
                    deid["frames"] += len(sample.frames)
                if sample.recording.session not in sessions:
                    sessions.append(sample.recording.session)
        os.replace(tmp, tar_path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    entry = {"path": plan.relpath, "participant": plan.participant, "day": plan.day, "sessions": sessions,
             "samples": len(keys), "frames": frames, "words": words, "bytes": tar_path.stat().st_size,
             "start": plan.windows[0].start, "end": plan.windows[-1].start + config.window_s,
             "gaze_status_counts": {s: gaze.get(s, 0) for s in GAZE_STATUSES}, "deid": dict(deid),
             "screen_text": dict(text),
             "fingerprint": fingerprint, "inputs": _shard_inputs(plan, session_fingerprints)}
    return entry, keys


class TarSink:
    """Writes samples (``{"__key__": key, ext: bytes}``) as a tar, member for member as
    ``webdataset.TarWriter(encoder=False, mtime=0)`` does (byte-identical shards), without importing
    webdataset: that imports torch, whose bundled OpenMP then makes tesseract's OCR run on every
    core (issue 22 item 17: half the build's time went to the kernel)."""

    def __init__(self, path: Path):
        import tarfile

        self._tarfile = tarfile
        # the sink owns its stream for the whole shard; close() (or the with block) ends it
        self._stream = tarfile.open(str(path), mode="w|", format=tarfile.USTAR_FORMAT)  # noqa: SIM115

    def write(self, sample: dict[str, Any]) -> None:
        import io

        key = sample["__key__"]
        for ext in sorted(sample):
            if ext == "__key__" or ext.startswith("_"):
                continue
            data = sample[ext]
            data = data.encode("utf-8") if isinstance(data, str) else data
            if not isinstance(data, (bytes, bytearray, memoryview)):
                # ValueError as the shard writer's other bad-sample errors, which its callers catch and count
                raise ValueError(f"sample {key}: {ext} is {type(data).__name__}, not bytes")  # noqa: TRY004
            info = self._tarfile.TarInfo(f"{key}.{ext}")
            # mtime fixed: the same inputs give byte-identical shards. An int, not 0.0: tarfile writes a
            # float mtime as an extra PAX header per member, which doubles the header parsing on every read.
            info.size, info.mtime, info.mode = len(data), 0, 0o444
            info.uname = info.gname = "bigdata"
            self._stream.addfile(info, io.BytesIO(data))

    def close(self) -> None:
        self._stream.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _shard_inputs(plan: ShardPlan, sessions: dict[str, str]) -> dict[str, str]:
    """Recording id -> fingerprint of each session the shard draws on, so verify can name the one that
    changed."""
    ids = dict.fromkeys(w.source.recording.id for w in plan.windows)
    return {rid: sessions[rid] for rid in ids}


def build_settings(config: WindowConfig, *, samples_per_shard: int, jpeg_quality: int, crop_quality: int,
                   deid: str) -> dict[str, Any]:
    return {**asdict(config), "samples_per_shard": samples_per_shard, "jpeg_quality": jpeg_quality,
            "crop_quality": crop_quality, "deid": deid, "window_schema_version": WINDOW_SCHEMA_VERSION}


def build_shards(sources: Sequence[RecordingSource], out_dir: str | os.PathLike, *,
                 config: WindowConfig | None = None, samples_per_shard: int = 32, deid: str = "auto",
                 jpeg_quality: int = 90, crop_quality: int = 95,
                 deidentifier: Callable | None = None, inputs: dict[str, Any] | None = None,
                 deid_names: Sequence[str] = (), screen_text: bool = True) -> ShardIndex:
    """Writes (or completes, or brings up to date) the shards of ``sources`` in ``out_dir`` and its index.json.

    ``deid``: auto | on | off | faces | text (egohorizon.data.deid.deid.make_deidentifier); ``auto``
    is off when every source is the demo world and on otherwise. ``deidentifier`` overrides it.
    ``deid_names``: names to hide in screen text and speech (egohorizon.data.deid.sensitive).
    ``screen_text``: read each window's on-screen text (egohorizon.data.windows.text) from its
    de-identified frames; a failed read is counted in the shard's entry, never fatal.
    ``inputs``: where the sources were read from (``{"ingested": [folders], "events": [files]}``),
    kept in the index so ``shards verify`` can compare the shards with them."""
    from egohorizon.data.deid.deid import make_deidentifier

    config = config or WindowConfig()
    out_dir = Path(out_dir)
    kinds = {s.kind for s in sources}
    kind = "demo" if kinds == {"demo"} else "real"
    if deidentifier is not None:
        resolved = "custom"
    else:
        deidentifier = make_deidentifier(deid, kind, names=deid_names)
        resolved = "off" if deidentifier is None else ("on" if deid == "auto" else deid)
    build = build_settings(config, samples_per_shard=samples_per_shard, jpeg_quality=jpeg_quality,
                           crop_quality=crop_quality, deid=resolved)
    reader = None
    if screen_text:
        from egohorizon.data.windows.text import ScreenTextReader

        reader = ScreenTextReader(names=deid_names)
    build["screen_text"] = reader.setting if reader is not None else "off"
    if getattr(deidentifier, "detector_setting", None):
        build["detectors"] = deidentifier.detector_setting
    if getattr(deidentifier, "speech_setting", None):
        # Shards written before speech was scrubbed, or with other names, are not reused (issue 9).
        build["speech"] = deidentifier.speech_setting
    plans, skipped = plan_shards(_scrub_speech(sources, deidentifier), config, samples_per_shard)
    sessions = {s.recording.id: source_fingerprint(s, config.window_s) for s in sources}
    log.info("%s: %d windows of %d recordings in %d shards (de-identification: %s)", out_dir,
             sum(len(p.windows) for p in plans), len(sources), len(plans), resolved)
    # Every finished shard is looked up before anything is written: a folder of other settings is
    # refused while it is still untouched, not after a few shards were added to it.
    fingerprints = [shard_fingerprint(plan, build, sessions) for plan in plans]
    finished = [_finished_entry(shard_sidecar(out_dir, plan), out_dir / plan.relpath, build, fingerprint)
                for plan, fingerprint in zip(plans, fingerprints)]
    _remove_leftovers(out_dir, plans, rewrite=any(entry is None for entry in finished))
    entries, reused = [], 0
    for number, (plan, fingerprint, entry) in enumerate(zip(plans, fingerprints, finished), start=1):
        sidecar = shard_sidecar(out_dir, plan)
        if entry is not None:
            reused += 1
        else:
            entry, keys = write_shard(plan, out_dir, config, deidentify=deidentifier, jpeg_quality=jpeg_quality,
                                      crop_quality=crop_quality, fingerprint=fingerprint,
                                      session_fingerprints=sessions, screen_text=reader)
            write_json_atomic(sidecar, {"build": build, "entry": entry, "keys": keys})
            log.info("shard %d/%d %s: %d samples, %.1f MB", number, len(plans), plan.relpath,
                     entry["samples"], entry["bytes"] / 1e6)
        entries.append(entry)
    index = ShardIndex(root=out_dir, build={**build, "skipped_windows": skipped}, shards=entries,
                       window_schema_version=WINDOW_SCHEMA_VERSION,
                       inputs={**(inputs or {}), "sessions": dict(sorted(sessions.items()))})
    index.save()
    removed = remove_stale_shards(out_dir, {p.relpath for p in plans})
    log.info("%s: %d shards (%d reused, %d stale removed), %d samples, %d windows with fewer than %d frames "
             "left out", out_dir, len(entries), reused, removed, sum(e["samples"] for e in entries), skipped,
             config.min_frames)
    return index


def shard_sidecar(out_dir: Path, plan: ShardPlan) -> Path:
    return (out_dir / plan.relpath).with_suffix(".json")


def _remove_leftovers(out_dir: Path, plans: Sequence[ShardPlan], *, rewrite: bool) -> None:
    """Before a build that writes shards: removes temp files of a killed writer (``.NAME.tmp-PID``, which
    a rerun would never reuse) and index.json, which would otherwise describe a folder half of whose
    shards are being replaced; it is written again when every shard is done. A build interrupted here
    or later leaves sidecars only beside complete shards, and the rerun trusts nothing else."""
    from egohorizon.schema import remove_stale_temps

    for plan in plans:
        remove_stale_temps(out_dir / plan.relpath)
        remove_stale_temps(shard_sidecar(out_dir, plan))
    remove_stale_temps(out_dir / INDEX_FILE)
    if rewrite:
        (out_dir / INDEX_FILE).unlink(missing_ok=True)


def _scrub_speech(sources: Sequence[RecordingSource], deidentifier) -> list[RecordingSource]:
    """The sources with sensitive speech scrubbed, a whole recording at once: an item said across two
    windows is still one item. Sources stay as they are without a de-identifier that scrubs words."""
    scrub = getattr(deidentifier, "scrub_words", None)
    return [replace(s, words=scrub(s.words)[0]) for s in sources] if scrub else list(sources)


# <participant>/<day>/<participant>_<day>_NNNNN.tar: only files of this layout are ever removed.
_SHARD_NAME = re.compile(r"(?P<p>[^/]+)/(?P<d>[^/]+)/(?P=p)_(?P=d)_\d{5}\.tar")


def remove_stale_shards(out_dir: Path, planned: set[str]) -> int:
    """Deletes the shards (tar and sidecar) in ``out_dir`` that the plan no longer has, e.g. those of a
    removed session or of a day that now has fewer shards; returns how many."""
    removed = 0
    # A sidecar whose tar is gone counts too: it would otherwise outlive its shard.
    candidates = set(out_dir.glob("*/*/*.tar")) | {p.with_suffix(".tar") for p in out_dir.glob("*/*/*.json")}
    for tar_path in sorted(candidates):
        relpath = tar_path.relative_to(out_dir).as_posix()
        if relpath in planned or not _SHARD_NAME.fullmatch(relpath):
            continue
        tar_path.unlink(missing_ok=True)
        tar_path.with_suffix(".json").unlink(missing_ok=True)
        removed += 1
        log.info("removed stale shard %s", relpath)
        for folder in (tar_path.parent, tar_path.parent.parent):
            if folder != out_dir and not any(folder.iterdir()):
                folder.rmdir()
    return removed
