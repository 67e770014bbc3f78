"""A loopback OpenAI-compatible chat server for testing and benchmarking `egohorizon caption`.

    python scripts/loopback_vlm_server.py [--latency 0.2] [--concurrency 8] [--lifetime 120]
        [--max-requests N] [--fail-pattern REGEX] [--garbage-pattern REGEX]

It binds 127.0.0.1 on a free port, prints ``PORT <n>`` on stdout, and answers
``POST /v1/chat/completions`` like a vision-language model whose answers are canned but valid captions
(egohorizon.formats.caption) after checking the request: at least one ``image_url`` part, each a
``data:image/jpeg;base64,`` URL holding a whole JPEG (a bad request gets HTTP 400 naming the problem).
At most ``--concurrency`` requests are served at once (the rest wait, as a batching server queues
them), each takes ``--latency`` seconds: the server's maximum throughput is concurrency / latency
requests per second. ``GET /stats`` returns what it saw. It exits after ``--lifetime`` seconds or
``--max-requests`` requests, whichever comes first.

Failure injection: a request whose text matches ``--fail-pattern`` gets HTTP 400; one matching
``--garbage-pattern`` gets a prose answer that the caption parser cannot read.
"""

from __future__ import annotations

import argparse
import base64
import json
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DATA_URL = "data:image/jpeg;base64,"


def check_request(body: dict) -> tuple[str, int]:
    """The request's text and image count; ValueError naming what is wrong."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ValueError("no messages")
    texts, images = [], 0
    for message in messages:
        content = message.get("content")
        for part in [{"type": "text", "text": content}] if isinstance(content, str) else content:
            if part.get("type") == "text":
                texts.append(part["text"])
            elif part.get("type") == "image_url":
                url = part["image_url"]["url"]
                if not url.startswith(DATA_URL):
                    raise ValueError(f"image {images}: not a JPEG data URL: {url[:40]!r}")
                data = base64.b64decode(url[len(DATA_URL):], validate=True)
                if not (data.startswith(b"\xff\xd8") and data.rstrip(b"\0").endswith(b"\xff\xd9")):
                    raise ValueError(f"image {images}: not a whole JPEG ({len(data)} bytes)")
                images += 1
            else:
                raise ValueError(f"unknown content part {part.get('type')!r}")
    if images == 0:
        raise ValueError("no image_url part: a captioning request must carry the window's frames")
    return "".join(texts), images


def canned_caption(text: str, images: int) -> str:
    match = re.search(r"(\d+(?:\.\d+)?)-second window", text)
    window = float(match.group(1)) if match else 30.0
    half = round(window / 2, 1)
    lines = [{"start": 0, "end": half, "action": "I look around the room"},
             {"start": half, "end": window, "action": f"I look at {images} things in turn"},
             {"scene": "a room seen through the wearer's glasses"}]
    return "\n".join(json.dumps(line) for line in lines)


class State:
    def __init__(self, args):
        self.args = args
        self.slots = threading.BoundedSemaphore(args.concurrency)
        self.lock = threading.Lock()
        self.stats = {"requests": 0, "ok": 0, "bad_requests": 0, "injected_failures": 0, "garbage": 0,
                      "images": 0, "in_flight": 0, "max_in_flight": 0, "first_s": None, "last_s": None,
                      # seconds requests actually held a slot: above latency x ok when this machine is too
                      # busy to wake the server's threads on time (its own shortfall, not the client's)
                      "slot_s": 0.0}
        self.done = threading.Event()

    def count(self, **changes) -> None:
        with self.lock:
            for key, value in changes.items():
                self.stats[key] += value
            self.stats["max_in_flight"] = max(self.stats["max_in_flight"], self.stats["in_flight"])
            if self.args.max_requests and self.stats["requests"] >= self.args.max_requests:
                self.done.set()


def make_handler(state: State):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # quiet
            pass

        def reply(self, status: int, obj: dict) -> None:
            data = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path.rstrip("/").endswith("/stats"):
                with state.lock:
                    self.reply(200, dict(state.stats))
            else:
                self.reply(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if not self.path.rstrip("/").endswith("/chat/completions"):
                return self.reply(404, {"error": {"message": f"no route {self.path}"}})
            state.count(requests=1)
            try:
                request = json.loads(body)
                text, images = check_request(request)
            except (ValueError, KeyError, TypeError, AttributeError) as error:
                state.count(bad_requests=1)
                return self.reply(400, {"error": {"message": f"bad request: {error}"}})
            args = state.args
            with state.slots:
                state.count(in_flight=1)
                now = time.time()
                with state.lock:
                    state.stats["first_s"] = state.stats["first_s"] or now
                time.sleep(args.latency)
                state.count(in_flight=-1, slot_s=time.time() - now)
            with state.lock:
                state.stats["last_s"] = time.time()
            if args.fail_pattern and re.search(args.fail_pattern, text):
                state.count(injected_failures=1)
                return self.reply(400, {"error": {"message": "injected failure"}})
            if args.garbage_pattern and re.search(args.garbage_pattern, text):
                state.count(garbage=1)
                answer = "Sorry, I cannot describe these pictures."
            else:
                answer = canned_caption(text, images)
            state.count(ok=1, images=images)
            self.reply(200, {"id": "loopback", "object": "chat.completion", "model": request.get("model"),
                             "choices": [{"index": 0, "message": {"role": "assistant", "content": answer},
                                          "finish_reason": "stop"}]})

    return Handler


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per request (default 0.2)")
    parser.add_argument("--concurrency", type=int, default=8, help="requests served at once (default 8)")
    parser.add_argument("--lifetime", type=float, default=120.0, help="exit after this many seconds")
    parser.add_argument("--max-requests", type=int, default=0, help="exit after this many requests (0: no limit)")
    parser.add_argument("--fail-pattern", help="HTTP 400 for requests whose text matches this regex")
    parser.add_argument("--garbage-pattern", help="an unparseable answer for requests whose text matches")
    args = parser.parse_args(argv)
    state = State(args)
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(state))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"PORT {server.server_address[1]}", flush=True)
    state.done.wait(args.lifetime)
    time.sleep(0.2)  # let the last reply go out
    server.shutdown()
    print(json.dumps(state.stats), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
