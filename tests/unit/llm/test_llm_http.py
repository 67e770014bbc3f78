"""The OpenAI-compatible client, the completion cache and the LLM judge, against a scripted
chat server on 127.0.0.1 that these tests start (retries on 500s/429s, timeouts, concurrency)."""

from __future__ import annotations

import time

import pytest
from chat_server import ScriptedChatServer

from egohorizon.llm import make_backend
from egohorizon.llm.base import LLMError
from egohorizon.llm.cache import CachedBackend
from egohorizon.llm.openai_http import OpenAIChatBackend
from egohorizon.metrics.judges import VerdictsJudge
from egohorizon.metrics.llm_judge import LLMJudge, parse_verdict
from egohorizon.metrics.segments import score_segments
from egohorizon.schema import Segment


@pytest.fixture
def server():
    with ScriptedChatServer() as s:
        yield s


def client(server, **options) -> OpenAIChatBackend:
    options = {"backoff_s": 0.01, "max_backoff_s": 0.05, "timeout": 2.0, **options}
    return OpenAIChatBackend(server.url, "scripted-model", **options)


def test_generate_sends_an_openai_request(server):
    backend = client(server, api_key="sk-test")
    assert backend.generate("hello", max_new_tokens=7, temperature=0.5, seed=3) == ["echo 3: hello"]
    request = server.requests[0]
    assert request["path"] == "/v1/chat/completions" and request["auth"] == "Bearer sk-test"
    assert request["body"] == {
        "model": "scripted-model",
        "messages": [{"role": "user", "content": "hello"}],
        "max_tokens": 7,
        "temperature": 0.5,
        "seed": 3,
        "n": 1,
    }
    assert backend.generate(
        [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}], n=2
    ) == ["echo 0: hi", "echo 1: hi"]


def test_servers_that_ignore_n_are_asked_again(server):
    server.ignore_n = True
    assert client(server).generate("x", n=3, seed=10) == ["echo 10: x", "echo 11: x", "echo 12: x"]
    assert len(server.requests) == 3


def test_retries_on_500_and_429_then_succeeds(server):
    server.script = ["500", "429", "500"]
    backend = client(server)
    assert backend.generate("again") == ["echo 0: again"]
    assert backend.requests_sent == 4 and len(server.requests) == 4


def test_gives_up_after_max_retries_with_a_clear_error(server):
    server.script = ["500"] * 10
    with pytest.raises(LLMError, match=r"no answer after 3 attempts; last: HTTP 500"):
        client(server, max_retries=2).generate("x")
    assert len(server.requests) == 3


def test_client_errors_are_not_retried(server):
    server.script = ["400"]
    with pytest.raises(LLMError, match="HTTP 400 for model 'scripted-model'"):
        client(server).generate("x")
    assert len(server.requests) == 1


def test_timeouts_are_retried(server):
    server.script = ["sleep:1.0"]
    backend = client(server, timeout=0.3)
    started = time.monotonic()
    assert backend.generate("slow") == ["echo 0: slow"]
    assert backend.requests_sent == 2 and time.monotonic() - started < 1.0


def test_bad_reply_and_unreachable_server():
    with ScriptedChatServer() as s:
        s.script = ["not-json"]
        with pytest.raises(LLMError, match="reply is not JSON"):
            client(s).generate("x")
        url = s.url
    with pytest.raises(LLMError, match="no answer after 2 attempts"):
        OpenAIChatBackend(url, "m", max_retries=1, backoff_s=0.01, timeout=0.5).generate("x")


def test_concurrency_is_bounded(server):
    """The server holds the first 3 requests until all 3 are in flight: a client that sends 3 at once
    reaches exactly 3, one that sent more would show more, one that sent fewer would leave the hold to
    its 60 s safety net and fail by name, whatever the machine's speed. The client's read timeout outlasts
    that net and it has no retries, so a slow machine can neither time a held request out nor add a
    retried request to the count (12 prompts, 12 requests)."""
    server.overlap = 3
    backend = client(server, max_concurrency=3, timeout=server.hold_timeout_s * 2, max_retries=0)
    answers = backend.generate_many([f"q{i}" for i in range(12)])
    assert not server.hold_expired, (
        f"the server held the first 3 requests {server.hold_timeout_s:.0f} s and never saw 3 in flight at once"
    )
    assert answers == [[f"echo 0: q{i}"] for i in range(12)]
    assert len(server.requests) == 12 and server.max_in_flight == 3


def test_cache_answers_a_rerun_without_requests(server, tmp_path):
    first = CachedBackend(client(server), tmp_path / "cache")
    prompts = ["a", "b", [{"role": "user", "content": "c"}]]
    answers = first.generate_many(prompts)
    assert len(server.requests) == 3 and first.misses == 3
    second = CachedBackend(client(server), tmp_path / "cache")  # a new process, same folder
    assert second.generate_many(prompts) == answers
    assert len(server.requests) == 3 and second.hits == 3 and second.misses == 0
    second.generate("a", seed=1)  # other parameters are another key
    assert len(server.requests) == 4


def test_make_backend_picks_http_and_wraps_the_cache(server, tmp_path):
    backend = make_backend("scripted-model", base_url=server.url, cache_dir=tmp_path)
    assert isinstance(backend, CachedBackend) and backend.model_id == "scripted-model"
    assert backend.generate("z") == ["echo 0: z"]


# ------------------------------------------------------------------------ the LLM judge over HTTP


def test_parse_verdict():
    assert parse_verdict('{"match": true, "rationale": "same"}') is True
    assert parse_verdict('Sure.\n```json\n{"match": false}\n```') is False
    assert parse_verdict('"match": true, and so on') is True
    assert parse_verdict("yes they match") is None
    assert parse_verdict('{"match": "yes"}') is None


def seg(start, end, label, clip="stairs"):
    return Segment(clip=clip, kind="subtask", hand=None, start=float(start), end=float(end), label=label)


def test_llm_judge_caches_every_verdict_and_a_rerun_makes_no_call(server, tmp_path):
    server.verdicts = {
        ("sweeping the stairs", "sweeping the top stair"): True,
        ("sweeping the stairs", "sweeping the bottom stair"): True,
    }
    gold = [seg(0, 5, "sweeping the stairs")]
    pred = [
        seg(0, 2, "sweeping the top stair"),
        seg(2, 4, "sweeping the bottom stair"),
        seg(4, 5, "carrying the broom"),
        seg(0, 5, "doing chores"),
    ]
    judge = LLMJudge(client(server), "judge_subtask", cache_dir=tmp_path / "judge")
    block = score_segments(gold, pred, judge)["kinds"]["subtask"]
    # covered: preds 2 + 2 + 0 + 0, gold 4 of 5 -> 8 / (2 + 2 + 1 + 5 + 5)
    assert block["psj"] == pytest.approx(8 / 15)
    assert len(server.requests) == 3 and judge.stats["backend_calls"] == 3  # "doing chores": the generic rule
    assert judge.stats["generic_rule"] == 1
    sent = server.requests[0]["body"]["messages"][0]["content"]
    assert sent.startswith(
        "You are grading a human annotator against a gold reference for egocentric video "
        "subtask descriptions."
    )
    assert 'Return only JSON: {"match": true|false, "rationale": "short reason"}' in sent

    rerun = LLMJudge(client(server), "judge_subtask", cache_dir=tmp_path / "judge")
    assert score_segments(gold, pred, rerun)["kinds"]["subtask"]["psj"] == pytest.approx(8 / 15)
    assert len(server.requests) == 3 and rerun.stats["backend_calls"] == 0 and rerun.stats["cached"] == 3

    # the cache file replays as a fixed verdicts table
    replay = VerdictsJudge(judge.cache_path)
    assert score_segments(gold, pred, replay)["kinds"]["subtask"]["psj"] == pytest.approx(8 / 15)

    # another prompt version is another key: asked again
    other = LLMJudge(client(server), "judge_hand_caption", cache_dir=tmp_path / "judge")
    other.judge_pairs([("sweeping the stairs", "sweeping the top stair")])
    assert len(server.requests) == 4
