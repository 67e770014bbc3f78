"""The figures ``egohorizon demo`` prints: recording structure (days, sessions, hours) next to the
event figures of ``egohorizon data stats`` (per-level counts, durations, compression ratios)."""

from __future__ import annotations

from collections import defaultdict
from itertools import pairwise
from statistics import mean

from egohorizon.data.demo.world import DemoWorld
from egohorizon.data.events.stats import format_summary, summarise_events


def recording_figures(world: DemoWorld) -> dict:
    sessions_by_day: dict[tuple[str, str], list] = defaultdict(list)
    for recording in world.recordings:
        sessions_by_day[(recording.participant, recording.day)].append(recording)
    participants = len(world.meta.get("participants", [])) or len({r.participant for r in world.recordings})
    calendar_days = int(world.meta.get("calendar_days", 0)) * participants
    recorded_days = len(sessions_by_day)
    gaps = [b.start - a.end for day in sessions_by_day.values()
            for a, b in pairwise(sorted(day, key=lambda r: r.start))]
    hours = sum(r.end - r.start for r in world.recordings) / 3600
    actions = [e for e in world.events if e.level == 1]
    return {
        "participants": participants,
        "calendar_days": calendar_days,
        "recorded_days": recorded_days,
        "days_without_recording": calendar_days - recorded_days,
        "sessions": len(world.recordings),
        "sessions_per_recorded_day": len(world.recordings) / recorded_days if recorded_days else 0.0,
        "recorded_hours": hours,
        "hours_per_recorded_day": hours / recorded_days if recorded_days else 0.0,
        "mean_session_min": mean(r.end - r.start for r in world.recordings) / 60 if world.recordings else 0.0,
        "mean_gap_between_sessions_min": mean(gaps) / 60 if gaps else 0.0,
        "utterances": len(world.transcript),
        "actions_with_screen_text": sum(1 for e in actions if "screen" in e.meta) / len(actions) if actions else 0.0,
        "actions_with_speech": sum(1 for e in actions if e.meta.get("speech")) / len(actions) if actions else 0.0,
        "distinct_l1_texts": len({e.text for e in actions}),
    }


def world_summary(world: DemoWorld) -> dict:
    return {"world": {k: world.meta.get(k) for k in ("seed", "version", "weeks", "start_date", "end_date",
                                                        "time_base", "generation_s")},
            "recording": recording_figures(world), "events": summarise_events(world.events)}


def format_world_summary(summary: dict) -> str:
    w, r = summary["world"], summary["recording"]
    lines = [
        (f"demo world    seed {w['seed']}, generator v{w['version']}, {w['weeks']} weeks "
         f"({w['start_date']} to {w['end_date']}), times in {w['time_base']}"),
        (f"recording     {r['recorded_days']} of {r['calendar_days']} participant-days recorded "
         f"({r['days_without_recording']} without recording), {r['sessions']} sessions, "
         f"{r['sessions_per_recorded_day']:.2f} per recorded day"),
        (f"              {r['hours_per_recorded_day']:.2f} h per recorded day, sessions {r['mean_session_min']:.0f} "
         f"min on average, gaps between them {r['mean_gap_between_sessions_min']:.0f} min"),
        (f"transcript    {r['utterances']} utterances; {100 * r['actions_with_speech']:.1f}% of L1 actions with "
         f"speech, {100 * r['actions_with_screen_text']:.1f}% with screen text; {r['distinct_l1_texts']} distinct "
         "L1 texts"),
        "",
    ]
    return "\n".join(lines) + format_summary(summary["events"])
