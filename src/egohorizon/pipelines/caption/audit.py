"""The caption audit page (issue 11, item 6): sampled windows beside their L1 captions, for a person to mark.

``build_audit_page(events, shards, n, out)`` writes one self-contained HTML file (images embedded as
JPEG data URLs, plain JS, nothing fetched) showing ``n`` windows drawn with a seeded sample from the
windows that have captions. Each window shows a strip of frames (with the gaze ring: drawn into the
frame when the shards were built with ``--draw-gaze``, overlaid by the page otherwise), the
native-resolution gaze crops of those frames, the transcript, and the window's captions: the level-1
events of EVENTS (SPEC Event records, absolute times) of the window's participant that overlap its
``[start, end)``.

Quality control, as in the paper's audit of 613 segments: ``n_wrong`` captions (default about one in
ten, at least one) are planted, each the caption of another window of the same participant (another
one if none qualifies) at least an hour away or on another day, whose text and parent activity appear
nowhere in the window it is planted in. Which captions are planted is kept out of the DOM and the
page's readable data (egohorizon.pipelines.caption.audit_page), so the export can count how many the
auditor caught without the page telling them.

Reading: a first pass reads only the ``.json`` members of every shard (tar headers are skipped over,
not decoded), so choosing windows costs little even for months of shards; only the sampled windows'
images are read. A shard that is missing or unreadable, a window whose metadata or images are
corrupt, and events that overlap no window of the shards are skipped and counted (the counts come
back and are shown on the page); a missing index or events file is an error naming it.
"""

from __future__ import annotations

import bisect
import json
import logging
import os
import random
import tarfile
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from egohorizon.atomic_files import write_text_atomic
from egohorizon.errors import ConfigError, DataError
from egohorizon.pipelines.caption.audit_records import AuditCaption, AuditWindow, WindowRef
from egohorizon.schema import Event, RecordError, load_jsonl

log = logging.getLogger(__name__)

DISTANT_S = 3600.0  # a planted caption comes from a window at least this far away (or another day)
CONTROL_SHARE = 0.1  # default number of planted captions: this share of the real ones, at least one
STRIP_FRAMES = 8  # frames shown per window, evenly spaced


def build_audit_page(events_path: str | os.PathLike, shards_dir: str | os.PathLike, n: int,
                     out_path: str | os.PathLike, seed: int = 0, n_wrong: int | None = None, *,
                     strip_frames: int = STRIP_FRAMES) -> dict[str, Any]:
    """Writes the audit page to ``out_path``; returns its counts (windows, captions, controls, skips)."""
    from egohorizon.data.shards.index import ShardIndex
    from egohorizon.pipelines.caption.audit_page import render_page

    if n < 1:
        raise ConfigError(f"n: expected at least 1 window to audit, got {n}")
    if n_wrong is not None and n_wrong < 0:
        raise ConfigError(f"n_wrong: expected >= 0 planted captions, got {n_wrong}")
    if strip_frames < 1:
        raise ConfigError(f"strip_frames: expected >= 1, got {strip_frames}")
    counts: Counter = Counter()
    events = read_level1_events(events_path, counts)
    index = ShardIndex.load(shards_dir)
    windows = scan_windows(index, counts)
    attach_captions(windows, events, counts)
    captioned = sorted((w for w in windows if w.captions), key=lambda w: (w.participant, w.start, w.key))
    counts["windows_with_captions"] = len(captioned)
    if not captioned:
        raise DataError(f"{events_path}: none of its {len(events)} level-1 events overlaps a window of the "
                        f"{counts['windows']} windows in {index.root}; are these the shards it was made from?")
    rng = random.Random(seed)
    chosen = load_sample(index, rng.sample(captioned, len(captioned)), n, strip_frames, counts)
    if not chosen:
        raise DataError(f"{index.root}: none of the sampled windows could be read (see the log)")
    chosen.sort(key=lambda w: (w.ref.participant, w.ref.start, w.ref.key))
    real = sum(len(w.captions) for w in chosen)
    wanted = max(1, round(CONTROL_SHARE * real)) if n_wrong is None else n_wrong
    plant_controls(chosen, captioned, min(wanted, len(chosen)), rng, counts)
    counts["windows_shown"] = len(chosen)
    counts["captions_shown"] = real
    summary = dict(sorted(counts.items()))
    page = render_page(chosen, summary, title=f"Caption audit: {Path(events_path).name}", seed=seed,
                       sources={"events": str(events_path), "shards": str(index.root)})
    out_path = Path(out_path)
    write_text_atomic(out_path, page)
    summary["bytes"] = out_path.stat().st_size
    log.info("%s: %d windows, %d captions + %d planted, %.1f MB", out_path, len(chosen), real,
             summary.get("controls", 0), summary["bytes"] / 1e6)
    return summary


def read_level1_events(path: str | os.PathLike, counts: Counter) -> list[Event]:
    if not Path(path).is_file():
        raise DataError(f"{path}: events file not found (expected the JSONL of `egohorizon caption`)")
    try:
        events = load_jsonl(path, Event)
    except RecordError as error:
        raise DataError(f"{path}: {error}") from None
    counts["events_read"] = len(events)
    level1 = [e for e in events if e.level == 1]
    counts["events_not_level1"] = len(events) - len(level1)  # ignored: the page audits L1 captions
    if not level1:
        raise DataError(f"{path}: no level-1 events among its {len(events)} records")
    return level1


# ----------------------------------------------------------------------------------------------
# Reading shards
# ----------------------------------------------------------------------------------------------


def _member_key(name: str) -> tuple[str, str]:
    """(key, field) of a tar member, split as WebDataset does: at the first dot of the basename."""
    base = name.rsplit("/", 1)[-1]
    key, _, suffix = base.partition(".")
    return key, suffix


def _open_shard(path: Path, counts: Counter) -> tarfile.TarFile | None:
    if not path.is_file():
        counts["shards_missing"] += 1
        log.warning("%s: shard listed in index.json is missing; skipped", path)
        return None
    try:
        return tarfile.open(path, "r:")
    except (tarfile.TarError, OSError) as error:
        counts["shards_unreadable"] += 1
        log.warning("%s: not a readable tar (%s); skipped", path, error)
        return None


def scan_windows(index, counts: Counter) -> list[WindowRef]:
    """Every window of every shard, from the ``.json`` members only."""
    windows = []
    for entry in index.shards:
        path = index.path_of(entry)
        shard = _open_shard(path, counts)
        if shard is None:
            continue
        counts["shards"] += 1
        try:
            for member in shard:
                key, suffix = _member_key(member.name)
                if suffix != "json" or not member.isfile():
                    continue
                ref = _window_ref(shard, member, key, str(path))
                if ref is None:
                    counts["windows_bad_metadata"] += 1
                    log.warning("%s: window %s has unusable metadata; skipped", path, key)
                else:
                    windows.append(ref)
        except (tarfile.TarError, OSError) as error:  # a truncated tar: what came before the cut is kept
            counts["shards_truncated"] += 1
            log.warning("%s: stopped reading (%s); %d windows read so far", path, error, len(windows))
        finally:
            shard.close()
    counts["windows"] = len(windows)
    if not windows:
        raise DataError(f"{index.root}: no readable window in its {len(index.shards)} shard(s)")
    return windows


def _window_ref(shard: tarfile.TarFile, member: tarfile.TarInfo, key: str, path: str) -> WindowRef | None:
    try:
        meta = json.loads(shard.extractfile(member).read())
        return WindowRef(key=key, shard=path, participant=str(meta["participant"]), day=str(meta["day"]),
                         start=float(meta["start"]), end=float(meta["end"]))
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError, ValueError):
        return None


def attach_captions(windows: list[WindowRef], events: list[Event], counts: Counter) -> None:
    """Each window gets the events of its participant overlapping [start, end), in time order."""
    by_participant: dict[str, list[Event]] = defaultdict(list)
    for event in events:
        by_participant[event.participant].append(event)
    used: set[str] = set()
    for participant_events in by_participant.values():
        participant_events.sort(key=lambda e: (e.start, e.id))
    starts = {p: [e.start for e in evs] for p, evs in by_participant.items()}
    longest = {p: max(e.duration for e in evs) for p, evs in by_participant.items()}
    for window in windows:
        evs = by_participant.get(window.participant)
        if not evs:
            continue
        first = bisect.bisect_left(starts[window.participant], window.start - longest[window.participant])
        last = bisect.bisect_left(starts[window.participant], window.end)
        window.captions = [e for e in evs[first:last] if e.end > window.start]
        used.update(e.id for e in window.captions)
    counts["events_outside_windows"] = sum(e.id not in used for e in events)
    if counts["events_outside_windows"]:
        log.warning("%d level-1 events overlap no window of the shards; not shown",
                    counts["events_outside_windows"])


def load_sample(index, order: list[WindowRef], n: int, strip_frames: int, counts: Counter) -> list[AuditWindow]:
    """The first ``n`` windows of ``order`` that decode; a corrupt one is counted and the next one taken."""
    chosen: list[AuditWindow] = []
    position = 0
    while len(chosen) < n and position < len(order):
        batch = order[position:position + n - len(chosen)]
        position += len(batch)
        samples = _read_samples(batch, counts)
        for ref in batch:
            window = _audit_window(ref, samples.get(ref.key), strip_frames, counts)
            if window is not None:
                chosen.append(window)
    return chosen


def _read_samples(refs: list[WindowRef], counts: Counter) -> dict[str, dict[str, Any]]:
    """key -> raw sample (WebDataset-style dict of bytes) for the windows of ``refs``."""
    wanted: dict[str, set[str]] = defaultdict(set)
    for ref in refs:
        wanted[ref.shard].add(ref.key)
    samples: dict[str, dict[str, Any]] = {}
    for shard_path, keys in wanted.items():
        shard = _open_shard(Path(shard_path), counts)
        if shard is None:
            continue
        try:
            for member in shard:
                key, suffix = _member_key(member.name)
                if key in keys and member.isfile():
                    sample = samples.setdefault(key, {"__key__": key, "__url__": shard_path})
                    sample[suffix] = shard.extractfile(member).read()
        except (tarfile.TarError, OSError) as error:
            log.warning("%s: stopped reading (%s)", shard_path, error)
        finally:
            shard.close()
    return samples


def _audit_window(ref: WindowRef, sample: dict[str, Any] | None, strip_frames: int,
                  counts: Counter) -> AuditWindow | None:
    from egohorizon.data.shards.encode import SampleError, crop_field, decode_window, frame_field

    if sample is None:
        counts["windows_unreadable"] += 1
        log.warning("%s: window %s could not be read; another one is taken", ref.shard, ref.key)
        return None
    try:
        decoded = decode_window(sample)  # checks every frame and crop the metadata promises
    except SampleError as error:
        counts[f"windows_{error.reason}"] += 1
        log.warning("%s: %s; another window is taken", ref.shard, error)
        return None
    meta = decoded.meta
    total = len(meta["frames"])
    picks = sorted({round(i * (total - 1) / max(1, strip_frames - 1)) for i in range(min(strip_frames, total))})
    frames = [{"t": meta["frames"][i]["t"], "meta": meta["frames"][i], "jpeg": sample[frame_field(i)],
               "crop": sample.get(crop_field(i)) if meta["frames"][i].get("crop_box") else None}
              for i in picks]
    captions = [_caption(e, ref) for e in ref.captions]
    return AuditWindow(ref=ref, meta=meta, frames=frames, captions=captions)


def _caption(event: Event, window: WindowRef, *, caption_id: str | None = None,
             shown_in: WindowRef | None = None) -> AuditCaption:
    length = window.end - window.start
    return AuditCaption(caption_id=caption_id or event.id, window_key=(shown_in or window).key, text=event.text,
                        start=max(0.0, event.start - window.start), end=min(length, event.end - window.start),
                        before=event.start < window.start, after=event.end > window.end)


# ----------------------------------------------------------------------------------------------
# Planted captions
# ----------------------------------------------------------------------------------------------


def _normalise(text: str) -> str:
    return " ".join(text.lower().split())


def _foreign(donor: WindowRef, caption: Event, target: WindowRef) -> bool:
    """A caption of ``donor`` that cannot be right in ``target``: distant, another text and activity."""
    if donor.key == target.key:
        return False
    if donor.participant == target.participant and donor.day == target.day \
            and abs(donor.start - target.start) < DISTANT_S:
        return False
    if _normalise(caption.text) in {_normalise(e.text) for e in target.captions}:
        return False
    parents = {e.parent for e in target.captions if e.parent}
    return not (caption.parent and caption.parent in parents)


def plant_controls(chosen: list[AuditWindow], pool: list[WindowRef], wanted: int, rng: random.Random,
                   counts: Counter) -> None:
    """Adds ``wanted`` wrong captions, one per window, to windows drawn from ``chosen``."""
    counts["controls"] = 0
    counts["controls_requested"] = wanted
    if wanted <= 0:
        return
    donors = rng.sample(pool, len(pool))
    for window in rng.sample(chosen, wanted):
        target = window.ref
        found = _find_donor(donors, target, same_participant=True) or _find_donor(donors, target,
                                                                                 same_participant=False)
        if found is None:
            counts["controls_unplaced"] += 1
            log.warning("no distant caption of another activity found for %s; one control fewer", target.key)
            continue
        donor, event = found
        counts["controls"] += 1
        planted = _caption(event, donor, caption_id=f"qc-{rng.getrandbits(40):010x}", shown_in=target)
        planted.control = True
        window.captions.append(planted)
        window.captions.sort(key=lambda c: (c.start, c.end, c.caption_id))


def _find_donor(donors: list[WindowRef], target: WindowRef, same_participant: bool
                ) -> tuple[WindowRef, Event] | None:
    for donor in donors:
        if (donor.participant == target.participant) != same_participant:
            continue
        for event in donor.captions:
            if _foreign(donor, event, target):
                return donor, event
    return None
