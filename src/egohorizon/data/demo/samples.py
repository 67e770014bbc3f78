"""Write a short sample of rendered frames as JPEGs, for a person to look at the demo world."""

from __future__ import annotations

import json
from pathlib import Path

from egohorizon.data.demo.render import draw_gaze
from egohorizon.data.demo.world import DemoWorld

SHEET_COLUMNS = 8


def pick_frames(world: DemoWorld, count: int) -> list[tuple[str, float]]:
    """``count`` (session, t) pairs: short runs of frames 15 s apart from sessions spread over the
    world (every participant, early and late days)."""
    sessions = sorted(world.recordings, key=lambda r: (r.participant, r.start))
    per_run = 4
    runs = max(1, count // per_run)
    chosen = [sessions[round(i * (len(sessions) - 1) / max(1, runs - 1))] for i in range(runs)] if sessions else []
    frames = []
    for recording in chosen:
        middle = (recording.start + recording.end) / 2
        for k in range(per_run):
            t = float(int(middle) + 15 * k)
            if t <= recording.end and len(frames) < count:
                frames.append((recording.session, t))
    return frames


def write_frame_samples(world: DemoWorld, folder: str | Path, count: int = 32, size: int = 224) -> Path:
    """Writes ``folder/<session>_<t>.jpg`` (the frames as rendered), ``contact_sheet.jpg`` (all of
    them with the gaze drawn as a red ring) and ``index.jsonl`` (session, t, file, gaze, confidence,
    the action going on). Returns the folder."""
    from PIL import Image

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    frames = pick_frames(world, count)
    rows = max(1, -(-len(frames) // SHEET_COLUMNS))
    sheet = Image.new("RGB", (size * min(SHEET_COLUMNS, max(1, len(frames))), size * rows), (255, 255, 255))
    index = []
    for i, (session, t) in enumerate(frames):
        image, gaze, confidence = world.render_frame(session, t, size)
        name = f"{session}_{int(t)}.jpg"
        image.save(folder / name, quality=92)
        sheet.paste(draw_gaze(image, gaze, confidence), ((i % SHEET_COLUMNS) * size, (i // SHEET_COLUMNS) * size))
        index.append({"session": session, "t": t, "file": name, "gaze": gaze, "confidence": confidence,
                      "action": world.action_at(session, t).text})
    sheet.save(folder / "contact_sheet.jpg", quality=90)
    (folder / "index.jsonl").write_text("".join(json.dumps(row) + "\n" for row in index), encoding="utf-8")
    return folder
