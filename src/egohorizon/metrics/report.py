"""Readable tables of the score reports; every figure is shown with the count it rests on."""

from __future__ import annotations

from collections.abc import Sequence


def fmt(value, digits: int = 4) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def table(headers: Sequence[str], rows: Sequence[Sequence]) -> str:
    """A plain fixed-width table: first column left-aligned, the others right-aligned."""
    cells = [[str(h) for h in headers]] + [[fmt(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = []
    for index, row in enumerate(cells):
        parts = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:], widths[1:])]
        lines.append("  ".join(parts).rstrip())
        if index == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines) + "\n"


def format_inputs(inputs: dict) -> str:
    lines = [
        (
            f"gold: {inputs['gold']} ({inputs['n_gold']} records); pred: {inputs['pred']} "
            f"({inputs['n_pred']} records)"
        )
    ]
    if inputs.get("missing"):
        lines.append(
            f"  {inputs['missing']} gold item(s) without a prediction (scored as invalid), e.g. "
            + ", ".join(map(str, inputs["missing_examples"]))
        )
    if inputs.get("unknown"):
        lines.append(
            f"  {inputs['unknown']} prediction(s) for ids not in gold (ignored), e.g. "
            + ", ".join(map(str, inputs["unknown_examples"]))
        )
    return "\n".join(lines) + "\n"


def format_forecast(report: dict) -> str:
    rows = [
        [g["source"], g["level"], g["k"], g["S"], g["S_rand"], g["S_norm"], g["n"], g["invalid"]]
        for g in report["groups"]
    ]
    o = report["overall"]
    rows.append(["overall", "", "", o["S"], o["S_rand"], o["S_norm"], o["n"], o["invalid"]])
    text = table(["source", "level", "K", "S", "S_rand", "S_norm", "n", "invalid"], rows)
    s = report["settings"]
    text += (
        f"S_norm macro over groups: {fmt(o['S_norm_macro'])} ({len(report['groups'])} groups); "
        f"embedder {s['embedder']}, best of {s['max_candidates']}, {s['n_random_draws']} random draws, "
        f"seed {s['seed']}\n"
    )
    if o.get("truncated"):
        text += f"{o['truncated']} point(s) had more than {s['max_candidates']} candidates; extras ignored\n"
    for name, baseline in report.get("baselines", {}).items():
        b = baseline["overall"]
        text += (
            f"baseline {name}: S {fmt(b['S'])}, S_norm {fmt(b['S_norm'])} "
            f"(n {b['n']}, invalid {b['invalid']})\n"
        )
    return text


def format_ego4d(block: dict) -> str:
    """The Ego4D LTA edit-distance rows (``metrics.ego4d.ego4d_report``), lower is better."""
    def cell(row, head, key):
        return "-" if row[head] is None or row[head][key] is None else row[head][key]

    rows = [[g["Z"], g["n"], g["missing"], *(cell(g, h, "ED") for h in ("verb", "noun", "action")),
             *(cell(g, h, "AUED") for h in ("verb", "noun", "action"))] for g in block["groups"]]
    headers = ["Z", "n", "no pred", "verb ED@Z", "noun ED@Z", "action ED@Z", "verb AUED", "noun AUED",
               "action AUED"]
    return (f"\nEgo4D LTA edit distance ({block['edit_distance']}; min over the first {block['K']} "
            "candidates; lower is better; verb/noun '-' when the points carry no meta.target_verbs/nouns)\n"
            + table(headers, rows))


def format_qa(report: dict) -> str:
    rows = [
        [task, r["level"], r["acc"], r["correct"], r["n"], r["invalid"]]
        for task, r in report["per_task"].items()
    ]
    text = table(["task", "level", "acc", "correct", "n", "invalid"], rows)
    if report["per_level"]:
        text += "\n" + table(
            ["level", "avg", "acc", "n", "tasks"],
            [[f"L{lv}", r["avg"], r["acc"], r["n"], r["n_tasks"]] for lv, r in report["per_level"].items()],
        )
    if report.get("per_category"):  # HD-EPIC VQA's categories
        text += "\n" + table(
            ["category", "avg", "acc", "n", "tasks"],
            [[name, r["avg"], r["acc"], r["n"], r["n_tasks"]] for name, r in report["per_category"].items()],
        )
    text += (
        f"\nAvg {fmt(report['Avg'])} ({len(report['per_task'])} tasks)   Acc {fmt(report['Acc'])} "
        f"(n {report['n']})   invalid {report['invalid']}   chance {fmt(report['chance'])}\n"
    )
    return text


def format_segments(report: dict) -> str:
    text = ""
    for kind, block in report["kinds"].items():
        text += f"[{kind}] judge {block['judge']['judge']}" + (
            f" ({block['judge']['model']})" if block["judge"].get("model") else ""
        )
        text += f", {block['judged_pairs']} distinct overlapping label pairs judged\n"
        rows = [["all", block["psj"], block["n_clips"], block["semantic_f1"], block["n_clips"]]]
        rows += [[name, b["psj"], b["n_clips"], "", ""] for name, b in block["by_length"].items()]
        text += table(["gold length", "PSJ", "clips", "semantic F1", "clips"], rows)
        text += (
            f"pooled: precision {fmt(block['precision'])} recall {fmt(block['recall'])} "
            f"F1 {fmt(block['semantic_f1_micro'])} "
            f"({block['n_pred']} predicted, {block['n_gold']} gold segments)\n"
        )
        if block["unknown_clips"]:
            text += _unknown_clips(block["unknown_clips"])
        text += "\n"
    for name, kinds in report.get("baselines", {}).items():
        parts = [f"{kind} PSJ {fmt(v['psj'])} ({v['n_clips']} clips)" for kind, v in kinds.items()]
        text += f"baseline {name}: " + "; ".join(parts) + "\n"
    return text


def format_boxes(report: dict) -> str:
    rows = [
        [c["clip"], c["chf"], c["hits"], c["annotated"], c["false_positive_frames"]]
        for c in report["per_clip"]
    ]
    rows.append(
        ["overall", report["chf"], report["hits"], report["annotated"], report["false_positive_frames"]]
    )
    text = table(["clip", "CHF", "hits", "annotated", "false+ frames"], rows)
    text += f"mean over {report['n_clips']} clips: {fmt(report['chf_clip_mean'])}\n"
    sparse = [c for c in report["per_clip"] if c.get("grid", 1) > 1]
    if sparse:
        text += f"{len(sparse)} clip(s) annotated on a coarser grid: only their grid frames are scored\n"
    if report.get("out_of_range"):
        text += (
            f"{report['out_of_range']} predicted box(es) at t < 0 or over 1 s past the clip's last gold frame "
            "(one false-positive frame each, not interpolated)\n"
        )
    if report["duplicate_pred_frames"]:
        text += (
            f"{report['duplicate_pred_frames']} predicted box(es) shared a frame with another (averaged)\n"
        )
    if report["unknown_clips"]:
        text += _unknown_clips(report["unknown_clips"])
    return text


def _unknown_clips(clips: Sequence[str]) -> str:
    return f"{len(clips)} predicted clip(s) not in gold (ignored): {', '.join(clips[:5])}\n"
