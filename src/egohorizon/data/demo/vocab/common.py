"""Acts used everywhere: the phone, short interruptions, drinks, conversations on the phone.

The interruptions are what makes real L1 streams noisy (NextMe-800: "scratching one's nose,
glancing at a phone"): ``INTERRUPTIONS`` lists, per level, the acts that may cut into any
interruptible act's parts, and how often.
"""

from egohorizon.data.demo.grammar import a, opt, pick, rep, step, task

# --- level 1: short interruptions -----------------------------------------------------------
GLANCE = a("glance at my phone|check my phone for a second|look at a notification on my phone",
           "phone", 3, 12, screen="phone:notify", interruptible=False)
SIP = a("take a sip of water|drink some water from my bottle|have a sip from my water bottle",
        "water_bottle", 3, 8, interruptible=False)
STRETCH = a("stretch my arms|stretch my back for a moment|roll my shoulders", "", 4, 10,
            interruptible=False)
SCRATCH = a("rub my eyes|scratch my nose|push my hair out of my face", "", 2, 5, interruptible=False)

# --- level 2: a message ---------------------------------------------------------------------
READ_MSG = a("read a message from {contact}|open the chat with {contact}|read what {contact} wrote",
             "phone", 6, 20, screen="phone:chat")
TYPE_REPLY = a("type a reply to {contact}|write back to {contact}|type an answer to {contact}",
               "phone", 10, 40, screen="phone:chat")
SEND = a("send the message|hit send", "phone", 2, 4, screen="phone:chat")
step("reply_to_message", "reply to a message from {contact}|answer {contact}'s message|"
     "text {contact} back", [READ_MSG, TYPE_REPLY, opt(TYPE_REPLY, 0.3), SEND],
     slots={"contact": "@contact"}, interruptible=False)

SCROLL_FEED = a("scroll through my social media feed|scroll through posts on my phone|"
                "flick through my feed", "phone", 15, 60, screen="phone:feed")
LIKE_POST = a("like a photo {friend} posted|look at {friend}'s new photos", "phone", 4, 12,
              screen="phone:feed")
WATCH_SHORT = a("watch a short video on my phone|watch a funny clip on my phone", "phone", 15, 50,
                screen="phone:video")
step("browse_feed", "scroll through social media|browse my social media feed|catch up on my feed",
     [SCROLL_FEED, opt(LIKE_POST, 0.5), opt(WATCH_SHORT, 0.5), opt(SCROLL_FEED, 0.5)],
     interruptible=False)

READ_NEWS = a("read a news article on my phone|read the headlines on my phone|"
              "read an article in the news app", "phone", 20, 70, screen="phone:news")
step("read_news", "read the news on my phone|catch up on the news|skim the news",
     [READ_NEWS, opt(READ_NEWS, 0.5), opt(SCROLL_FEED, 0.2)], interruptible=False)

# --- level 3: a phone break, the interruption one level up ------------------------------------
task("phone_break", "check my messages on my phone|take a quick break on my phone|"
     "catch up on messages", [pick("reply_to_message", "browse_feed", weights=(2, 1)),
                              opt("reply_to_message", 0.3)], interruptible=False)

DIAL = a("call {family} on my phone|phone {family}|dial {family}'s number", "phone", 5, 12,
         screen="phone:call")
TALK_FAMILY = a("talk with {family} on the phone|chat with {family} on the phone|"
                "catch up with {family} on the phone", "phone", 40, 110, speech="call_family",
                screen="phone:call")
HANG_UP = a("say goodbye and hang up|end the call with {family}", "phone", 3, 8, screen="phone:call")
step("call_family_talk", "have a phone conversation with {family}|talk things over with {family}|"
     "catch up with {family} over the phone", [DIAL, rep(TALK_FAMILY, 2, 5), HANG_UP],
     interruptible=False)
task("call_family", "call {family}|have a phone call with {family}|phone {family} to catch up",
     ["call_family_talk", opt("reply_to_message", 0.3)], slots={"family": "@family"},
     interruptible=False)

# Acts that may interrupt an act's parts (at the given level), with the chance per gap.
INTERRUPTIONS = {
    1: (0.05, (GLANCE, SIP, STRETCH, SCRATCH), (5, 1, 1, 1)),
    2: (0.03, ("reply_to_message",), (1,)),
    3: (0.04, ("phone_break",), (1,)),
}
