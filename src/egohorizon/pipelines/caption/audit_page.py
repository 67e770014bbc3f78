"""The HTML of the caption audit page (egohorizon.pipelines.caption.audit): one file, no external resources.

The windows are rendered here, in Python, so the page reads without scripts; the script only keeps
the marks (in the page and in localStorage, so a reload keeps them), counts them and exports them.

What the script sees in ``#audit-data``: per caption only its window key. The caption ids and which
captions are planted are in ``secret``, XOR-ed with the page id and base64-encoded:
not a lock (the key is in the page), only so that neither the DOM, a text search of the page nor a
glance at the data shows an auditor which captions are the controls. The export decodes it.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
from datetime import UTC, datetime
from typing import Any

from egohorizon.pipelines.caption.audit_records import AuditCaption, AuditWindow

EXPORT_FORMAT = "egohorizon-caption-audit-marks"
EXPORT_VERSION = 1
EPOCH_2000 = 946684800.0  # earlier times are device or relative clocks: shown as seconds, not dates


def render_page(windows: list[AuditWindow], counts: dict[str, Any], *, title: str, seed: int,
                sources: dict[str, str]) -> str:
    captions = [c for w in windows for c in w.captions]
    answers = [[c.caption_id, int(c.control)] for c in captions]
    page_id = hashlib.sha256(json.dumps([sources, seed, answers, [w.ref.key for w in windows]]).encode()
                             ).hexdigest()[:16]
    data = {"page_id": page_id, "format": EXPORT_FORMAT, "version": EXPORT_VERSION, "seed": seed,
            "sources": sources, "windows": [w.ref.key for w in windows],
            "captions": [c.window_key for c in captions], "secret": _hide(answers, page_id)}
    cards, number = [], 0
    for position, window in enumerate(windows, start=1):
        cards.append(_window_html(window, position, number))
        number += len(window.captions)
    shown = {k: v for k, v in counts.items() if v and not k.startswith("controls")}
    facts = " · ".join(f"{html.escape(k.replace('_', ' '))}: {v}" for k, v in shown.items())
    return PAGE.format(
        title=html.escape(title), css=CSS, script=SCRIPT, cards="\n".join(cards), total=len(captions),
        events=html.escape(sources["events"]), shards=html.escape(sources["shards"]), seed=seed, facts=facts,
        data=_script_json(data))


def _hide(answers: list[list[Any]], page_id: str) -> str:
    raw = json.dumps(answers).encode("utf-8")
    key = page_id.encode("ascii")
    return base64.b64encode(bytes(b ^ key[i % len(key)] for i, b in enumerate(raw))).decode("ascii")


def reveal_answers(page: str) -> list[tuple[str, bool]]:
    """(caption id, planted?) for every caption of a written page, in page order (the inverse of _hide)."""
    start = page.index('<script type="application/json" id="audit-data">')
    data = json.loads(page[page.index(">", start) + 1:page.index("</script>", start)])
    key = data["page_id"].encode("ascii")
    raw = base64.b64decode(data["secret"])
    answers = json.loads(bytes(b ^ key[i % len(key)] for i, b in enumerate(raw)))
    return [(str(caption_id), bool(control)) for caption_id, control in answers]


def _script_json(obj: Any) -> str:
    # "</" would end the <script> element early; "<\/" is the same JSON string.
    return json.dumps(obj, ensure_ascii=False).replace("</", "<\\/")


def _data_url(jpeg: bytes) -> str:
    return "data:image/jpeg;base64," + base64.b64encode(jpeg).decode("ascii")


def _when(start: float, end: float) -> str:
    if start < EPOCH_2000:
        return f"t = {start:.1f}–{end:.1f} s"
    begin = datetime.fromtimestamp(start, tz=UTC)
    return f"{begin:%a %Y-%m-%d %H:%M:%S}–{datetime.fromtimestamp(end, tz=UTC):%H:%M:%S} UTC"


def _frame_html(frame: dict[str, Any], window_start: float, gaze_drawn: bool) -> str:
    meta = frame["meta"]
    offset = f"+{frame['t'] - window_start:.0f} s"
    ring = ""
    if not gaze_drawn and meta.get("gaze") and meta.get("size"):
        (x, y), (w, h) = meta["gaze"], meta["size"]
        # Pixel centres at integer coordinates: x spans [-0.5, w - 0.5) (docs/shards.md).
        ring = (f'<span class="ring" style="left:{100 * (x + 0.5) / w:.2f}%;top:{100 * (y + 0.5) / h:.2f}%;'
                f'width:{5 * max(w, h) / w:.2f}%"></span>')  # 5% of the long side, as draw_gaze
    status = meta.get("gaze_status", "?")
    note = "" if status == "ok" else f'<span class="gaze-note">gaze {html.escape(str(status))}</span>'
    return (f'<figure class="frame"><div class="imgbox"><img alt="frame {offset}" src="{_data_url(frame["jpeg"])}">'
            f'{ring}</div><figcaption>{offset}{note}</figcaption></figure>')


def _crop_html(frame: dict[str, Any], window_start: float) -> str:
    offset = f"+{frame['t'] - window_start:.0f} s"
    if frame["crop"] is None:
        return f'<figure class="crop"><div class="nocrop">no gaze</div><figcaption>{offset}</figcaption></figure>'
    return (f'<figure class="crop"><img alt="gaze crop {offset}" src="{_data_url(frame["crop"])}">'
            f"<figcaption>{offset}</figcaption></figure>")


def _caption_html(caption: AuditCaption, index: int) -> str:
    times = f"{'◂ ' if caption.before else ''}{caption.start:.1f}–{caption.end:.1f} s{' ▸' if caption.after else ''}"
    # The row is a flex box inside the list item (which keeps its number): the buttons are one of its
    # items, so they stay in this caption's row at any width (a float dropped below a full line and
    # was drawn on the next caption's row).
    return (f'<li class="caption" data-i="{index}"><div class="row"><span class="time">{times}</span>'
            f'<span class="txt">{html.escape(caption.text)}</span><span class="buttons">'
            f'<button type="button" class="mark right" data-mark="right" aria-pressed="false" '
            f'title="the caption describes this window">✓ right</button>'
            f'<button type="button" class="mark wrong" data-mark="wrong" aria-pressed="false" '
            f'title="the caption does not describe this window">✗ wrong</button></span></div></li>')


def _window_html(window: AuditWindow, position: int, first_index: int) -> str:
    meta, ref = window.meta, window.ref
    gaze_drawn = bool(meta.get("gaze_drawn"))
    frames = "".join(_frame_html(f, ref.start, gaze_drawn) for f in window.frames)
    crops = "".join(_crop_html(f, ref.start) for f in window.frames)
    transcript = (f'<p class="transcript">{html.escape(meta["transcript"])}</p>' if meta.get("transcript")
                  else '<p class="none">(no speech in this window)</p>')
    captions = "".join(_caption_html(c, first_index + i) for i, c in enumerate(window.captions))
    where = " · ".join(html.escape(str(x)) for x in (ref.participant, meta.get("source") or "", _when(ref.start, ref.end))
                       if x)
    total_frames = len(meta.get("frames", []))
    return f"""<article class="window" id="w{position}" data-key="{html.escape(ref.key)}">
<header><h2>{position}. {html.escape(ref.key)}</h2><span class="where">{where}</span>
<span class="done" data-window-done>0/{len(window.captions)} marked</span></header>
<div class="cols"><div class="visual">
<h3>Frames ({len(window.frames)} of {total_frames}, gaze ring in red)</h3><div class="strip">{frames}</div>
<h3>Gaze crops (native resolution)</h3><div class="crops">{crops}</div>
</div><div class="text"><h3>Transcript</h3>{transcript}
<h3>Captions (seconds from the window's start; ◂ ▸ the action goes on outside it)</h3>
<ol class="captions">{captions}</ol></div></div></article>"""


PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title><style>{css}</style></head>
<body>
<header id="bar"><h1>{title}</h1>
<span id="progress" aria-live="polite">0 / {total} captions marked</span>
<label><input type="checkbox" id="only-open"> hide windows already done</label>
<button type="button" id="export">Export marks (JSON)</button></header>
<section id="about">
<p>Mark every caption <b>✓ right</b> if it describes what the person does in that window, at about
those times, and <b>✗ wrong</b> otherwise (a second click clears a mark). A few captions are planted
errors, as a check of the audit. Marks stay in this browser when the page is reloaded; <b>Export</b>
downloads them as JSON. Click a picture to enlarge it.</p>
<p class="facts">events: {events} · shards: {shards} · seed {seed}<br>{facts}</p></section>
<main>
{cards}
</main>
<div id="lightbox" hidden><img alt="enlarged"></div>
<pre id="export-json" hidden></pre>
<script type="application/json" id="audit-data">{data}</script>
<script>{script}</script>
</body></html>
"""

CSS = """
*{box-sizing:border-box} html{scroll-padding-top:4.5em} /* nothing scrolls in under the sticky bar */
body{margin:0;font:15px/1.45 system-ui,sans-serif;color:#1d1d1f;background:#f3f4f6}
#bar{position:sticky;top:0;z-index:5;display:flex;gap:1.2em;align-items:center;padding:.6em 1.2em;
 background:#1f2937;color:#fff} #bar h1{font-size:1.1em;margin:0;flex:1}
#bar button{font-size:1em;padding:.4em 1em;border:0;border-radius:6px;background:#2563eb;color:#fff;cursor:pointer}
#about{max-width:1400px;margin:1em auto;padding:0 1.2em;color:#374151} .facts{font-size:.85em;color:#6b7280}
main{max-width:1400px;margin:0 auto;padding:0 1.2em 4em}
.window{background:#fff;border-radius:10px;box-shadow:0 1px 3px #0002;margin:1.2em 0;padding:.8em 1.2em}
.window>header{display:flex;gap:1em;align-items:baseline;flex-wrap:wrap;border-bottom:1px solid #e5e7eb}
.window h2{font-size:1.05em;margin:.2em 0;font-family:ui-monospace,monospace} .where{color:#6b7280;flex:1}
.done{font-size:.85em;color:#6b7280} .window.complete .done{color:#15803d;font-weight:600}
.cols{display:grid;grid-template-columns:minmax(0,3fr) minmax(0,2fr);gap:1.4em}
@media (max-width:900px){.cols{grid-template-columns:1fr}}
h3{font-size:.8em;text-transform:uppercase;letter-spacing:.04em;color:#6b7280;margin:.8em 0 .3em}
.strip,.crops{display:grid;grid-template-columns:repeat(4,minmax(0,1fr));gap:.4em}
.crops{grid-template-columns:repeat(8,minmax(0,1fr))}
figure{margin:0} figcaption{font-size:.75em;color:#6b7280;text-align:center}
.imgbox{position:relative;line-height:0} .imgbox img,.crop img{width:100%;border-radius:4px;cursor:zoom-in}
.ring{position:absolute;aspect-ratio:1;transform:translate(-50%,-50%);border:2px solid #ef4444;
 border-radius:50%;box-shadow:0 0 0 1px #fff8;pointer-events:none}
.gaze-note{color:#b45309;margin-left:.4em} .nocrop{aspect-ratio:1;display:grid;place-items:center;
 background:#f3f4f6;color:#9ca3af;font-size:.75em;border-radius:4px}
.transcript{background:#f9fafb;border-left:3px solid #d1d5db;padding:.4em .7em;max-height:9em;overflow:auto;
 margin:0;font-style:italic} .none{color:#9ca3af;margin:0}
.captions{padding-left:1.4em;margin:0} .caption{padding:.35em 0;border-bottom:1px solid #f3f4f6}
/* time, text, buttons side by side; where they do not fit, the buttons wrap to a line of their own,
   right-aligned, still inside the row; a long word breaks instead of pushing them out */
.caption .row{display:flex;flex-wrap:wrap;align-items:baseline;gap:.2em .6em}
.caption .time{flex:none;min-width:10em;font:.85em ui-monospace,monospace;color:#6b7280}
.caption .txt{flex:1 1 8em;min-width:0;overflow-wrap:anywhere}
.buttons{flex:none;margin-left:auto;white-space:nowrap}
.mark{font-size:.85em;padding:.15em .6em;margin-left:.3em;border:1px solid #d1d5db;border-radius:5px;
 background:#fff;cursor:pointer} .mark.right[aria-pressed=true]{background:#16a34a;color:#fff;border-color:#16a34a}
.mark.wrong[aria-pressed=true]{background:#dc2626;color:#fff;border-color:#dc2626}
.caption.is-right .txt{color:#15803d} .caption.is-wrong .txt{color:#b91c1c;text-decoration:line-through}
body.only-open .window.complete{display:none}
#lightbox{position:fixed;inset:0;z-index:10;background:#000c;display:grid;place-items:center;cursor:zoom-out}
#lightbox[hidden]{display:none} #lightbox img{max-width:92vw;max-height:92vh;image-rendering:auto}
"""

SCRIPT = r"""
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("audit-data").textContent);
  const storeKey = "egohorizon-caption-audit-" + data.page_id;
  let marks = {};
  try { marks = JSON.parse(localStorage.getItem(storeKey) || "{}"); } catch (e) { marks = {}; }
  const items = Array.from(document.querySelectorAll(".caption"));

  function reveal() {  // the inverse of caption_audit_page._hide
    const key = new TextEncoder().encode(data.page_id);
    const raw = atob(data.secret);
    const bytes = new Uint8Array(raw.length);
    for (let i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i) ^ key[i % key.length];
    return JSON.parse(new TextDecoder().decode(bytes));
  }
  function show() {
    for (const li of items) {
      const mark = marks[li.dataset.i] || null;
      li.classList.toggle("is-right", mark === "right");
      li.classList.toggle("is-wrong", mark === "wrong");
      for (const b of li.querySelectorAll(".mark")) b.setAttribute("aria-pressed", String(b.dataset.mark === mark));
    }
    for (const card of document.querySelectorAll(".window")) {
      const lis = card.querySelectorAll(".caption");
      const done = Array.from(lis).filter(li => marks[li.dataset.i]).length;
      card.querySelector("[data-window-done]").textContent = done + "/" + lis.length + " marked";
      card.classList.toggle("complete", done === lis.length);
    }
    const n = Object.keys(marks).length;
    document.getElementById("progress").textContent = n + " / " + items.length + " captions marked";
  }
  function save() { try { localStorage.setItem(storeKey, JSON.stringify(marks)); } catch (e) { /* private mode */ } }

  document.addEventListener("click", function (event) {
    const button = event.target.closest(".mark");
    if (button) {
      const i = button.closest(".caption").dataset.i;
      if (marks[i] === button.dataset.mark) delete marks[i]; else marks[i] = button.dataset.mark;
      save(); show(); return;
    }
    const image = event.target.closest(".imgbox img, .crop img");
    const box = document.getElementById("lightbox");
    if (image) { box.querySelector("img").src = image.src; box.hidden = false; return; }
    if (event.target.closest("#lightbox")) box.hidden = true;
  });
  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape") document.getElementById("lightbox").hidden = true;
  });
  document.getElementById("only-open").addEventListener("change", function (event) {
    document.body.classList.toggle("only-open", event.target.checked);
  });

  function exportMarks() {
    const secret = reveal();
    const rows = data.captions.map(function (key, i) {
      return {caption_id: secret[i][0], window_key: key, mark: marks[i] || null, control: secret[i][1] === 1};
    });
    const count = f => rows.filter(f).length;
    const summary = {
      captions: rows.length, marked: count(r => r.mark), unmarked: count(r => !r.mark),
      right: count(r => r.mark === "right"), wrong: count(r => r.mark === "wrong"),
      controls: count(r => r.control), controls_caught: count(r => r.control && r.mark === "wrong"),
      controls_missed: count(r => r.control && r.mark === "right"),
      controls_unmarked: count(r => r.control && !r.mark),
      real_marked: count(r => !r.control && r.mark), real_right: count(r => !r.control && r.mark === "right"),
      real_wrong: count(r => !r.control && r.mark === "wrong")
    };
    const out = {format: data.format, version: data.version, page_id: data.page_id, seed: data.seed,
                 sources: data.sources, exported_at: new Date().toISOString(), summary: summary, marks: rows};
    const text = JSON.stringify(out, null, 1);
    document.getElementById("export-json").textContent = text;
    try { localStorage.setItem(storeKey + "-export", text); } catch (e) { /* private mode */ }
    const link = document.createElement("a");
    link.href = URL.createObjectURL(new Blob([text], {type: "application/json"}));
    link.download = "caption-audit-" + data.page_id + ".json";
    document.body.appendChild(link); link.click(); link.remove();
    setTimeout(function () { URL.revokeObjectURL(link.href); }, 10000);
  }
  document.getElementById("export").addEventListener("click", exportMarks);

  show();
})();
"""
