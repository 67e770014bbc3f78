"""The caption audit page (issue 11, item 6): built from demo-world shards, then used in headless Chromium."""

from __future__ import annotations

import html
import io
import itertools
import json
import re
import shutil
import tarfile
import tempfile
import time
from pathlib import Path

import pytest

from egohorizon.errors import DataError
from egohorizon.pipelines.caption.audit import build_audit_page
from egohorizon.pipelines.caption.audit_page import reveal_answers
from egohorizon.schema import Event, load_jsonl


@pytest.fixture(scope="module")
def demo_inputs(tmp_path_factory):
    """Shards of one recording on each of two demo days (every 12th window, small frames) and the
    events of those days, every level (the page keeps level 1 and counts the rest)."""
    from egohorizon.data.demo import ensure_demo_world, load_demo_world
    from egohorizon.data.shards.sources import demo_sources
    from egohorizon.data.shards.writer import build_shards
    from egohorizon.data.windows.sample import WindowConfig

    world = load_demo_world(ensure_demo_world())
    participant = world.recordings[0].participant
    days = sorted({r.day for r in world.recordings if r.participant == participant})[:2]
    recordings = [min((r for r in world.recordings if r.participant == participant and r.day == day),
                      key=lambda r: r.end - r.start) for day in days]
    root = tmp_path_factory.mktemp("audit")
    build_shards(demo_sources(world, frame_size=128, recordings=recordings), root / "shards",
                 config=WindowConfig(long_side=128, crop_size=32, stride=12), samples_per_shard=6)
    events = root / "events.jsonl"
    events.write_text("".join(json.dumps(e.to_dict()) + "\n" for e in world.events if e.day in days),
                      encoding="utf-8")
    return events, root / "shards"


def _page_data(page: str) -> dict:
    match = re.search(r'<script type="application/json" id="audit-data">(.*?)</script>', page, re.DOTALL)
    return json.loads(match.group(1))


def test_page_holds_sampled_windows_their_captions_and_hidden_controls(demo_inputs, tmp_path):
    events_path, shards = demo_inputs
    counts = build_audit_page(events_path, shards, 5, tmp_path / "a.html", seed=3, n_wrong=2)
    page = (tmp_path / "a.html").read_text(encoding="utf-8")
    assert counts["windows_shown"] == 5 and counts["controls"] == 2
    assert counts["events_not_level1"] > 0 and counts["events_outside_windows"] > 0
    # Self-contained: every image is an embedded JPEG, nothing is fetched.
    assert not re.search(r'(src|href)="(?!data:image/jpeg;base64,)', page)
    assert "<link" not in page and "http://" not in page and "https://" not in page
    assert page.count('<figure class="frame">') == 5 * 8

    data = _page_data(page)
    answers = reveal_answers(page)
    assert len(answers) == len(data["captions"]) == counts["captions_shown"] + 2
    # The controls are not in the page as text: neither their ids nor a flag.
    planted = [cid for cid, control in answers if control]
    assert len(planted) == 2 and all(cid not in page for cid in planted)

    level1 = {e.id: e for e in load_jsonl(events_path, Event) if e.level == 1}
    for key in data["windows"]:
        assert f'data-key="{key}"' in page
        shown = [cid for (cid, control), k in zip(answers, data["captions"]) if k == key and not control]
        start, end = _window_span(shards, key)
        expected = sorted(e.id for e in level1.values() if e.participant == key.split("_")[0]
                          and e.start < end and e.end > start)
        assert shown and sorted(shown) == expected  # the L1 events overlapping [start, end)
        for cid in shown:
            assert html.escape(level1[cid].text) in page

    again = build_audit_page(events_path, shards, 5, tmp_path / "b.html", seed=3, n_wrong=2)
    assert (tmp_path / "b.html").read_text(encoding="utf-8") == page and again == counts
    build_audit_page(events_path, shards, 5, tmp_path / "c.html", seed=4, n_wrong=2)
    assert _page_data((tmp_path / "c.html").read_text(encoding="utf-8"))["windows"] != data["windows"]


def _window_span(shards: Path, key: str) -> tuple[float, float]:
    for tar_path in shards.glob("*/*/*.tar"):
        with tarfile.open(tar_path) as tar:
            try:
                meta = json.loads(tar.extractfile(f"{key}.json").read())
            except KeyError:
                continue
            return meta["start"], meta["end"]
    raise AssertionError(f"window {key} is in no shard")


def test_planted_captions_come_from_distant_windows_of_other_activities(demo_inputs, tmp_path):
    events_path, shards = demo_inputs
    counts = build_audit_page(events_path, shards, 100, tmp_path / "a.html", seed=0)
    page = (tmp_path / "a.html").read_text(encoding="utf-8")
    assert counts["windows_shown"] == counts["windows_with_captions"]  # n above the windows: all of them
    assert counts["controls"] == max(1, round(0.1 * counts["captions_shown"]))  # the default share
    data, answers = _page_data(page), reveal_answers(page)
    texts = re.findall(r'<li class="caption" data-i="(\d+)">.*?<span class="txt">(.*?)</span>', page)
    text_of = {int(i): t for i, t in texts}
    assert sorted(text_of) == list(range(len(answers)))
    level1 = [e for e in load_jsonl(events_path, Event) if e.level == 1]
    for i, (_, control) in enumerate(answers):
        if not control:
            continue
        key = data["captions"][i]
        same_window = [text_of[j].lower() for j, k in enumerate(data["captions"])
                       if k == key and not answers[j][1]]
        assert text_of[i].lower() not in same_window
        # It was said of another time: an L1 event with this text an hour or more away (or another day).
        start, _ = _window_span(shards, key)
        assert any(html.escape(e.text) == text_of[i] and (abs(e.start - start) >= 3600 or e.day != key.split("_")[1])
                   for e in level1)


def test_bad_inputs_are_named_or_skipped_and_counted(demo_inputs, tmp_path):
    events_path, shards = demo_inputs
    with pytest.raises(DataError, match="missing.jsonl"):
        build_audit_page(tmp_path / "missing.jsonl", shards, 3, tmp_path / "a.html")
    with pytest.raises(DataError, match="no-shards: shard index not found"):
        build_audit_page(events_path, tmp_path / "no-shards", 3, tmp_path / "a.html")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x", "participant": "p01"}\nnot json\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"bad.jsonl:2"):
        build_audit_page(bad, shards, 3, tmp_path / "a.html")
    elsewhere = tmp_path / "elsewhere.jsonl"
    elsewhere.write_text(json.dumps({"id": "e1", "participant": "nobody", "day": "2030-01-01", "session": "s",
                                     "level": 1, "start": 1893456000, "end": 1893456005, "text": "I wave"}) + "\n")
    with pytest.raises(DataError, match="none of its 1 level-1 events overlaps"):
        build_audit_page(elsewhere, shards, 3, tmp_path / "a.html")

    # A copy of the shards with one frame of one window corrupted and one shard deleted.
    copy = tmp_path / "shards"
    shutil.copytree(shards, copy)
    tars = sorted(copy.glob("*/*/*.tar"))
    broken_key = _corrupt_first_frame(tars[0])
    tars[-1].unlink()
    counts = build_audit_page(events_path, copy, 100, tmp_path / "a.html")
    assert counts["shards_missing"] == 1 and counts["windows_corrupt_image"] == 1
    assert counts["windows_shown"] == counts["windows_with_captions"] - 1
    assert f'data-key="{broken_key}"' not in (tmp_path / "a.html").read_text(encoding="utf-8")


def _corrupt_first_frame(tar_path: Path) -> str:
    with tarfile.open(tar_path) as tar:
        members = [(m, tar.extractfile(m).read()) for m in tar.getmembers()]
    key = members[0][0].name.split(".", 1)[0]
    with tarfile.open(tar_path, "w") as tar:
        for member, payload in members:
            if member.name == f"{key}.f000.jpg":
                payload = payload[:40]  # the header survives, the image does not
                member.size = len(payload)
            tar.addfile(member, io.BytesIO(payload))
    return key


# ----------------------------------------------------------------------------------------------
# In a real browser
# ----------------------------------------------------------------------------------------------


@pytest.fixture
def browser(tmp_path):
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is in the dev extra")
    chromium, driver_path = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chromium and driver_path):
        pytest.skip("Chromium is not installed: `apt-get install -y chromium chromium-driver` (Debian; .ci/run "
                    "installs them)")
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    profile = tempfile.mkdtemp(prefix="chromium-profile-")
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
                 f"--user-data-dir={profile}", "--window-size=1400,1600"):
        options.add_argument(flag)
    options.add_experimental_option("prefs", {"download.default_directory": str(downloads),
                                              "download.prompt_for_download": False})
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=driver_path))
    driver.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)})
    try:
        yield driver, downloads
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def test_marks_and_export_in_headless_chromium(demo_inputs, browser, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    driver, downloads = browser
    events_path, shards = demo_inputs
    out = tmp_path / "audit.html"
    counts = build_audit_page(events_path, shards, 6, out, seed=1, n_wrong=2)
    answers = reveal_answers(out.read_text(encoding="utf-8"))
    driver.get(out.as_uri())
    items = driver.find_elements(By.CSS_SELECTOR, ".caption")
    total = len(answers)
    assert len(items) == total == counts["captions_shown"] + 2
    assert driver.find_element(By.ID, "progress").text == f"0 / {total} captions marked"
    images = driver.find_elements(By.CSS_SELECTOR, "main img")  # every frame and crop decoded
    assert images and all(driver.execute_script("return arguments[0].naturalWidth", im) > 0 for im in images)

    controls = [i for i, (_, control) in enumerate(answers) if control]
    real = [i for i, (_, control) in enumerate(answers) if not control]
    wanted = {controls[0]: "wrong", controls[1]: "right", real[0]: "right", real[1]: "right", real[2]: "wrong"}
    for i, mark in wanted.items():
        _click(driver, items[i].find_element(By.CSS_SELECTOR, f".mark.{mark}"))
    for _ in range(2):  # a second click clears a mark
        _click(driver, items[real[3]].find_element(By.CSS_SELECTOR, ".mark.right"))
    assert driver.find_element(By.ID, "progress").text == f"{len(wanted)} / {total} captions marked"
    pressed = items[real[2]].find_element(By.CSS_SELECTOR, ".mark.wrong").get_attribute("aria-pressed")
    assert pressed == "true"

    _click(driver, driver.find_element(By.ID, "export"))
    exported = json.loads(driver.find_element(By.ID, "export-json").get_attribute("textContent"))
    keys = _page_data(out.read_text(encoding="utf-8"))["captions"]
    assert [(m["caption_id"], m["window_key"], m["mark"], m["control"]) for m in exported["marks"]] == [
        (cid, keys[i], wanted.get(i), control) for i, (cid, control) in enumerate(answers)]
    assert exported["summary"] == {
        "captions": total, "marked": 5, "unmarked": total - 5, "right": 3, "wrong": 2, "controls": 2,
        "controls_caught": 1, "controls_missed": 1, "controls_unmarked": 0, "real_marked": 3, "real_right": 2,
        "real_wrong": 1}
    assert exported["format"] == "egohorizon-caption-audit-marks" and exported["seed"] == 1
    downloaded = _wait_for_file(downloads, "*.json")
    assert json.loads(downloaded.read_text(encoding="utf-8")) == exported

    # "hide windows already done" hides a window once all its captions are marked.
    first = driver.find_element(By.CSS_SELECTOR, ".window")
    for item in first.find_elements(By.CSS_SELECTOR, ".caption"):
        if item.get_attribute("class") == "caption":  # not marked yet
            _click(driver, item.find_element(By.CSS_SELECTOR, ".mark.right"))
    assert "complete" in first.get_attribute("class")
    _click(driver, driver.find_element(By.ID, "only-open"))
    assert not first.is_displayed()
    _click(driver, driver.find_element(By.ID, "only-open"))
    marked = len(driver.execute_script("return Object.keys(JSON.parse(localStorage.getItem("
                                       "'egohorizon-caption-audit-' + arguments[0])))", exported["page_id"]))

    # Marks survive a reload; a picture opens enlarged and Escape closes it.
    driver.refresh()
    assert driver.find_element(By.ID, "progress").text == f"{marked} / {total} captions marked"
    assert marked >= len(wanted)
    _click(driver, driver.find_element(By.CSS_SELECTOR, ".imgbox img"))
    assert driver.find_element(By.ID, "lightbox").is_displayed()
    driver.find_element(By.TAG_NAME, "body").send_keys(Keys.ESCAPE)
    assert not driver.find_element(By.ID, "lightbox").is_displayed()
    driver.save_screenshot(str(tmp_path / "audit.png"))
    assert (tmp_path / "audit.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    errors = [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
    assert not errors, errors


def _click(driver, element) -> None:
    # WebDriver scrolls only elements outside the viewport; one just under the sticky bar would be
    # covered by it, so the element is brought to the middle first, as a person would scroll.
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)
    element.click()


def _wait_for_file(folder: Path, pattern: str, timeout: float = 15.0) -> Path:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done = [p for p in folder.glob(pattern) if not p.name.endswith(".crdownload")]
        if done:
            return done[0]
        time.sleep(0.1)
    raise AssertionError(f"no {pattern} downloaded into {folder} within {timeout} s")


LAYOUT_WIDTHS = (800, 1280, 1920)  # a laptop split screen, the width of the bug report, a desktop


def _with_long_captions(events_path: Path, out: Path) -> Path:
    """The events with every level-1 text made long: every other one two lines or more in the caption
    column, the others ending in a 70-character word (a path or URL cannot wrap at spaces)."""
    lines = []
    for i, line in enumerate(events_path.read_text(encoding="utf-8").splitlines()):
        event = json.loads(line)
        if event["level"] == 1:
            event["text"] += (" while I keep talking about the plans for the rest of the afternoon" * 2
                              if i % 2 else " " + "x" * 70)
        lines.append(json.dumps(event))
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


_BOXES = """
return Array.from(document.querySelectorAll('.caption')).map(function (li) {
  const box = r => { const b = r.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; };
  return {i: li.dataset.i, row: box(li), buttons: Array.from(li.querySelectorAll('.mark')).map(box),
          text: box(li.querySelector('.txt'))};
});"""


@pytest.mark.parametrize("long_captions", [False, True], ids=["demo-captions", "long-captions"])
def test_buttons_stay_in_their_own_caption_row_at_every_width(demo_inputs, browser, tmp_path, long_captions):
    """Issue 22, item 25: at 1280 px caption 1's buttons were drawn on caption 2's row (a float that
    its row did not contain). Every button's box must lie inside its own row's box, rows must not
    overlap, and the text must not run under the buttons, at each width."""
    driver, _ = browser
    events_path, shards = demo_inputs
    if long_captions:
        events_path = _with_long_captions(events_path, tmp_path / "long.jsonl")
    out = tmp_path / "audit.html"
    build_audit_page(events_path, shards, 4, out, seed=2, n_wrong=1)
    if long_captions:  # both kinds of long text are on the page
        page = out.read_text(encoding="utf-8")
        assert "x" * 70 in page and "the rest of the afternoon while I keep" in page
    driver.get(out.as_uri())
    for width in LAYOUT_WIDTHS:
        driver.set_window_size(width, 1000)
        assert abs(driver.execute_script("return window.innerWidth") - width) <= 20
        rows = driver.execute_script(_BOXES)
        assert len(rows) >= 4
        for row in rows:
            left, top, right, bottom = row["row"]
            assert len(row["buttons"]) == 2
            for b_left, b_top, b_right, b_bottom in row["buttons"]:
                assert (left - 0.5 <= b_left and b_right <= right + 0.5 and top - 0.5 <= b_top
                        and b_bottom <= bottom + 0.5), (width, row)
            assert row["text"][2] <= right + 0.5, (width, row)  # a long word wraps inside the row
            text_left, text_top, text_right, text_bottom = row["text"]
            for b_left, b_top, b_right, b_bottom in row["buttons"]:  # the text is not drawn under a button
                assert (b_left >= text_right - 0.5 or b_right <= text_left + 0.5 or b_top >= text_bottom - 0.5
                        or b_bottom <= text_top + 0.5), (width, row)
        for above, below in itertools.pairwise(rows):  # document order: each row below the one before
            assert below["row"][1] >= above["row"][3] - 0.5, (width, above, below)
        shot = tmp_path / f"audit-{width}.png"
        driver.execute_script("arguments[0].scrollIntoView({block: 'start'})",
                              driver.find_element("css selector", ".captions"))
        driver.save_screenshot(str(shot))
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
