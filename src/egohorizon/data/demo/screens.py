"""What is on the phone or laptop screen during an action: an app name and a few legible lines.

The lines are drawn into the rendered frames (``render.py``), so a captioner that reads the screen
learns what the person is doing on it, as NextMe-800's on-screen text does for the digital half of
daily life.
"""

from __future__ import annotations

import random
from collections.abc import Mapping

# kind -> (app title, line templates; 2-4 of them are shown, in order)
SCREENS: dict[str, tuple[str, tuple[str, ...]]] = {
    "phone:notify": ("Notifications", ("{contact}: see you later?", "Calendar: {event_hint}", "Battery 20%",
                                       "News: {headline}", "{contact} liked your photo")),
    "phone:chat": ("Chat - {contact}", ("{contact}: {message}", "me: {reply}", "{contact}: {message2}",
                                        "me: sounds good!")),
    "phone:feed": ("Feed", ("{friend} posted 3 photos", "#weekend #{tag}", "{likes} likes", "Suggested for you")),
    "phone:video": ("Clips", ("{clip_title}", "{likes} views", "Up next: {clip_title2}")),
    "phone:news": ("News", ("{headline}", "{headline2}", "5 min read")),
    "phone:call": ("Call", ("{family}", "00:{seconds:02d}", "mute  speaker  end")),
    "phone:clock": ("Alarm", ("07:00  Mon-Fri", "08:30  Sat-Sun", "Alarm set")),
    "phone:recipe": ("Recipe", ("{dish}", "1. chop the {veg}", "2. heat the {pan}", "3. add the {veg2}")),
    "phone:run": ("Run", ("{km}.{tenth} km", "pace 5:{pace:02d} /km", "heart rate {hr}")),
    "phone:transit": ("Transit", ("Tram 4 to {destination}", "next: 3 min", "then: 11 min")),
    "phone:music": ("Music", ("Now playing", "{podcast}", "episode {episode}")),
    "phone:list": ("Shopping list", ("{produce}", "{item}", "bread", "coffee")),
    "phone:photos": ("Photos", ("Album: {chat_topic}", "42 photos", "shared by {friend}")),
    "phone:pay": ("Pay", ("Total {price}", "Card ending 4821", "Approved")),
    "phone:ticket": ("Ticket", ("{ticket}", "Seat {seat}", "Gate / Entry {gate_hint}")),
    "phone:camera": ("Camera", ("PHOTO", "1x", "{city}")),
    "phone:map": ("Maps", ("{city} old town", "Walk 12 min", "Restaurants nearby")),
    "laptop:login": ("Login", ("Welcome back, {name}", "Password: ********", "Sign in")),
    "laptop:mail": ("Inbox", ("From: {colleague}", "Re: {project}", "{mail_line}", "Reply  Forward")),
    "laptop:calendar": ("Calendar", ("09:00 focus time", "{meeting_hint}", "12:30 lunch", "16:00 {project}")),
    "laptop:code": ("Editor - {module}", ("def {func}(batch):", "    x = normalise(batch)", "    return model(x)",
                                          "# {feature}")),
    "laptop:docs": ("Docs - {library}", ("{library} documentation", "{api_hint}", "Parameters:", "Returns:")),
    "laptop:tests": ("Terminal", ("$ pytest -q tests/", "collected {tests} items", "{passed} passed, {failed} failed")),
    "laptop:git": ("Terminal", ("$ git commit -m 'update {module}'", "1 file changed", "$ git push")),
    "laptop:cluster": ("Terminal", ("$ sbatch train.sh", "Submitted batch job {job}", "$ squeue --me")),
    "laptop:browser": ("Browser", ("{search_line}", "{page_line}", "github.com / arxiv.org")),
    "laptop:plots": ("Dashboard", ("val/accuracy {acc}", "train/loss {loss}", "run {run_id}")),
    "laptop:doc": ("Document - {project}", ("{section_title}", "{doc_line}", "{doc_line2}")),
    "laptop:paper": ("PDF - {topic}", ("Abstract", "We propose a method for {topic}.", "1 Introduction")),
    "laptop:slides": ("Slides", ("{project}: progress", "Results so far", "Next steps")),
    "laptop:design": ("Figma - {project}", ("Frame: {screen_name}", "Button / Primary", "Text / Heading 24")),
    "laptop:call": ("Video call", ("{client}", "Mute  Camera  Share", "Recording off")),
    "laptop:video": ("Player", ("{show}", "Episode {episode}", "{minutes}:{seconds:02d} / 45:00")),
    "laptop:tabs": ("Tabs - {song}", ("{song} - chords", "Intro: G  D  Em  C", "Capo 2")),
}

FILLERS: dict[str, tuple[str, ...]] = {
    "message": ("are we still on for tonight?", "running 5 min late", "did you see the photos?", "call me later?",
                "happy friday!", "can you bring the charger?"),
    "message2": ("ok see you there", "thanks!!", "haha yes", "let me know"),
    "reply": ("yes, see you at 7", "on my way", "sure!", "not sure yet, will tell you"),
    "headline": ("City opens new bike lanes", "Storm expected this weekend", "Tram strike called off",
                 "Local team wins the cup", "Museum extends opening hours"),
    "headline2": ("Markets rise after rate decision", "New study on sleep and screens", "Train fares go up"),
    "event_hint": ("meeting at 10:00", "dentist tomorrow", "climbing 18:30", "call with Mum"),
    "tag": ("sunset", "food", "climbing", "music", "travel"),
    "clip_title": ("cat vs. cucumber", "5-minute pasta", "guitar solo cover", "funny dog compilation"),
    "clip_title2": ("street food tour", "how to fold a shirt", "top 10 goals"),
    "podcast": ("The Daily Science", "History Hour", "Design Matters", "Tech Weekly"),
    "price": ("4.50", "12.80", "23.40", "38.10"),
    "ticket": ("Flight LX 2084", "Concert ticket", "Museum entry", "Tram day pass"),
    "seat": ("14C", "22A", "standing", "free"),
    "gate_hint": ("B7", "North", "2", "A12"),
    "mail_line": ("Could you send me the numbers by Friday?", "Thanks for the update!",
                  "Meeting moved to 2 pm", "Here are my comments on the draft"),
    "meeting_hint": ("10:00 group meeting", "11:00 1:1", "14:00 call", "15:00 review"),
    "func": ("load_batch", "train_step", "evaluate", "filter_signal", "make_figure"),
    "api_hint": ("torch.utils.data.DataLoader", "nn.TransformerEncoder", "Auto layout", "optim.AdamW"),
    "search_line": ("search: {topic}", "search: {library} {feature}", "search: how to {feature}"),
    "page_line": ("Stack Overflow: {feature}", "arXiv: a survey of {topic}", "Blog: notes on {topic}"),
    "section_title": ("1 Introduction", "2 Related work", "3 Method", "4 Results", "5 Discussion"),
    "doc_line": ("Our results show a clear improvement.", "We evaluate on 120 nights of data.",
                 "In this section we describe", "Figure 2 shows the accuracy per stage."),
    "doc_line2": ("This suggests that", "see Table 1.", "as discussed above.", "[citation needed]"),
    "run_id": ("ab12", "cd34", "ef56", "gh78"),
    "show": ("{series}",),
}


class _Fill(Mapping):
    """Slot values for a screen: the act's slots, else fillers, else a few numbers."""

    def __init__(self, slots: Mapping, rng: random.Random):
        self.slots, self.rng = slots, rng

    def __getitem__(self, name: str):
        numbers = {"seconds": (0, 59), "minutes": (1, 44), "km": (1, 9), "tenth": (0, 9), "pace": (0, 59),
                   "hr": (120, 175), "episode": (1, 10), "likes": (3, 480), "tests": (40, 60), "passed": (38, 60),
                   "failed": (0, 2), "job": (81000, 89999)}
        if name in numbers:
            return self.rng.randint(*numbers[name])
        if name in ("acc", "loss"):
            return f"{self.rng.uniform(0.3, 0.9):.3f}"
        try:
            return self.slots[name]
        except KeyError:
            if name not in FILLERS:
                raise
        return self.rng.choice(FILLERS[name]).format_map(self)

    def __iter__(self):
        return iter(FILLERS)

    def __len__(self):
        return len(FILLERS)


def screen_content(kind: str, slots: Mapping, rng: random.Random) -> dict:
    """{"device": "phone" | "laptop", "app": title, "lines": [...]} for a screen ``kind``."""
    title, templates = SCREENS[kind]
    fill = _Fill(slots, rng)
    count = min(len(templates), rng.randint(2, 4))
    return {"device": kind.split(":")[0], "app": title.format_map(fill),
            "lines": [t.format_map(fill) for t in templates[:count]]}
