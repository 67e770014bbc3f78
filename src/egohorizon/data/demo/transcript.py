"""What is said during an action: utterances with speakers and word timings.

Conversations are built from small turn templates per kind of talk (a chat with a friend, a phone
call, a meeting, ordering at a counter...). Timing follows a speaking rate of about 2.5 words per
second with pauses between turns, all inside the action's time span.
"""

from __future__ import annotations

import random
from collections.abc import Mapping

SECONDS_PER_WORD = 0.4

# kind -> (the other speaker, turns: (speaker, template)); "me" is the wearer; the turns are used in
# order, wrapping around, for as many as fit into the action.
CONVERSATIONS: dict[str, tuple[str, tuple[tuple[str, str], ...]]] = {
    "chat": ("{friend}", (
        ("me", "So how have you been?"), ("other", "Good, busy. I wanted to tell you about {chat_topic}."),
        ("me", "Oh really, tell me more about {chat_topic}."), ("other", "Well, it started last week, it's a long story."),
        ("me", "Ha, that sounds just like you."), ("other", "What about you, how is everything?"),
        ("me", "Pretty good, a lot going on with {project}."), ("other", "We should do this more often."))),
    "call_family": ("{family}", (
        ("me", "Hi, it's me, do you have a minute?"), ("other", "Of course, how are you?"),
        ("me", "I'm fine, just a long week."), ("other", "Are you eating properly?"),
        ("me", "Yes, I cooked {dish_hint} yesterday."), ("other", "When are you coming to visit?"),
        ("me", "Maybe in a few weeks, I'll let you know."), ("other", "Take care, talk soon."))),
    "meeting": ("{colleague}", (
        ("me", "Here are the latest results on {project}."), ("other", "Can you go back to the previous slide?"),
        ("me", "Sure, this is the comparison with the baseline."), ("other", "What happens if you change the setup?"),
        ("me", "I haven't tried that yet, but it's a good idea."), ("other", "Let's look at it again next week."),
        ("me", "Okay, I'll add it to my list."))),
    "colleague": ("{colleague}", (
        ("other", "Morning! How's {project} going?"), ("me", "Slowly, I'm stuck on a bug."),
        ("other", "Been there. Did you try asking Tom?"), ("me", "Not yet, good idea."),
        ("other", "Are you coming to the seminar on Friday?"), ("me", "Probably, if I finish my draft."))),
    "order": ("staff", (
        ("other", "Hi, what can I get you?"), ("me", "Could I have {order_hint}, please?"),
        ("other", "Anything else?"), ("me", "No, that's all, thanks."), ("other", "Coming right up."))),
    "checkout": ("cashier", (
        ("other", "Hello, do you need a bag?"), ("me", "No thanks, I have one."),
        ("other", "That's {price_hint}, please."), ("me", "Card, please."), ("other", "Thank you, have a nice day."))),
    "airport": ("agent", (
        ("other", "Passport, please. Where are you flying today?"), ("me", "To {city}."),
        ("other", "Any bags to check in?"), ("me", "Just this suitcase."), ("other", "Boarding is at gate {gate}."))),
    "climb": ("{friend}", (
        ("me", "Knot checked, you're good."), ("other", "Climbing!"), ("me", "Climb on."),
        ("other", "Take! I need a rest."), ("me", "Got you."), ("other", "Okay, lower me down."))),
    "dog": ("{dog}", (("me", "Come here, {dog}!"), ("me", "Good dog!"), ("me", "Sit. Good."), ("me", "Go get it!"))),
    "talk": ("speaker", (
        ("other", "Thank you all for coming this morning."), ("other", "Today I'll talk about {topic}."),
        ("other", "Let me start with the main challenge."), ("other", "Here you can see our results."),
        ("other", "Any questions?"))),
}
HINTS = {
    "dish_hint": ("a curry", "pasta", "a soup", "risotto"),
    "order_hint": ("a flat white", "two cappuccinos", "the vegetarian option", "a pizza and a salad"),
    "price_hint": ("twelve eighty", "twenty-three forty", "eight fifty"),
}


class _Hints(Mapping):
    def __init__(self, slots: Mapping, rng: random.Random):
        self.slots, self.rng = slots, rng

    def __getitem__(self, name: str):
        if name in HINTS:
            return self.rng.choice(HINTS[name])
        return self.slots[name]

    def __iter__(self):
        return iter(HINTS)

    def __len__(self):
        return len(HINTS)


def conversation(kind: str, slots: Mapping, start: int, end: int, rng: random.Random) -> list[dict]:
    """Utterances spoken between ``start`` and ``end`` (Unix seconds): dicts with start, end, speaker,
    text, and words as [word, start, end] triples in seconds from the utterance's start."""
    other, turns = CONVERSATIONS[kind]
    fill = _Hints(slots, rng)
    other_name = other.format_map(fill)
    out: list[dict] = []
    t = start + rng.uniform(0.5, 2.5)
    index = rng.randrange(len(turns))
    while True:
        speaker, template = turns[index % len(turns)]
        words = template.format_map(fill).split()
        duration = len(words) * SECONDS_PER_WORD * rng.uniform(0.85, 1.2)
        if t + duration > end - 0.5:
            break
        step = duration / len(words)
        out.append({
            "start": round(t, 2), "end": round(t + duration, 2),
            "speaker": "me" if speaker == "me" else other_name,
            "text": " ".join(words),
            # Word times are seconds from the utterance's start (keeps the file small).
            "words": [[w, round(i * step, 2), round((i + 1) * step, 2)] for i, w in enumerate(words)],
        })
        t += duration + rng.uniform(0.4, 3.0)
        index += 1
    return out
