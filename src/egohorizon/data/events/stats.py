"""Summary figures of an event set: what ``egohorizon data stats`` prints."""

from __future__ import annotations

from collections.abc import Iterable

from egohorizon.data.events.hierarchy import check_hierarchy
from egohorizon.schema import Event


def summarise_events(events: Iterable[Event]) -> dict:
    """Participants, days, sessions, events, per-level count and mean duration, compression ratios."""
    events = list(events)
    report = check_hierarchy(events)
    participants = sorted({e.participant for e in events})
    days = {(e.participant, e.day) for e in events if e.day}
    sessions = {(e.participant, e.session) for e in events if e.session}
    sources = sorted({e.source for e in events if e.source})
    return {
        "sources": sources,
        "participants": len(participants),
        "participant_ids": participants[:50],
        "days": len(days),
        "sessions": len(sessions),
        "events": len(events),
        "span_s": (max(e.end for e in events) - min(e.start for e in events)) if events else 0.0,
        "hierarchy": report.to_dict() | {"problems": report.problems[:20], "n_problems": len(report.problems)},
    }


def format_summary(summary: dict) -> str:
    lines = [
        f"sources       {', '.join(summary['sources']) or '-'}",
        f"participants  {summary['participants']}",
        f"days          {summary['days']}",
        f"sessions      {summary['sessions']}",
        f"events        {summary['events']}",
        "",
        f"{'level':<6} {'events':>8} {'mean duration':>15} {'compression':>12}",
    ]
    hierarchy = summary["hierarchy"]
    for name, stats in hierarchy["levels"].items():
        level = int(name[1:])
        ratio = hierarchy["compression"].get(f"L{level - 1}/L{level}")
        ratio_text = f"{ratio:.2f}x" if ratio is not None else "-"
        lines.append(f"{name:<6} {stats['count']:>8} {duration_text(stats['mean_duration_s']):>15} {ratio_text:>12}")
    lines.append("")
    if hierarchy["n_problems"]:
        lines.append(f"hierarchy: {hierarchy['n_problems']} problem(s), first ones:")
        lines += [f"  {p}" for p in hierarchy["problems"][:10]]
    else:
        lines.append("hierarchy: OK")
    return "\n".join(lines) + "\n"


def duration_text(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.2f} h"
