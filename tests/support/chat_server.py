"""A scripted OpenAI-compatible chat server on 127.0.0.1 for the LLM client, judge and score CLI tests:
scripted failures (500s, 429s, timeouts, bad replies), judge verdicts from a table, echoes otherwise."""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_JUDGE = re.compile(r'Gold label: "(.*)"\nAnnotator label: "(.*)"\n')


class ScriptedChatServer:
    """Answers /v1/chat/completions. ``script`` holds what the next requests get ("500", "429",
    "sleep:<s>", "not-json"); once it is empty, requests succeed. A judge prompt is answered from
    ``verdicts`` (gold, pred) -> bool; anything else is echoed."""

    def __init__(self):
        self.script: list[str] = []
        self.verdicts: dict[tuple[str, str], bool] = {}
        self.requests: list[dict] = []
        # Requests received and not yet answered: counted up on arrival, down just before the reply is
        # written (after it, the client may already send its next request). ``overlap``: the first that many
        # requests wait until all of them are in flight, so a concurrency test need not hope that requests
        # overlap by chance. The wait ends on the count, never on a clock a slow machine could outrun;
        # ``hold_timeout_s`` is only a safety net for a client that never sends that many at once, and
        # ``hold_expired`` tells the test it fired (a client waiting on its own reads must allow longer).
        self.in_flight = 0
        self.max_in_flight = 0
        self.overlap: int | None = None
        self.hold_timeout_s = 60.0
        self.hold_expired = False
        self.lock = threading.Condition()
        self.ignore_n = False
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    server.requests.append(
                        {"path": self.path, "body": body, "auth": self.headers.get("Authorization")}
                    )
                    action = server.script.pop(0) if server.script else "ok"
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                    server.lock.notify_all()
                    if server.overlap and len(server.requests) <= server.overlap:  # the first ones only
                        reached = server.lock.wait_for(
                            lambda: server.in_flight >= server.overlap, timeout=server.hold_timeout_s
                        )
                        server.hold_expired |= not reached
                self._answered = False
                try:
                    self._answer(action, body)
                finally:
                    self._leave()

            def _leave(self):
                """This request is no longer in flight (once): called just before its reply is written."""
                if not self._answered:
                    self._answered = True
                    with server.lock:
                        server.in_flight -= 1

            def _answer(self, action, body):
                if action.startswith("sleep:"):
                    time.sleep(float(action.split(":")[1]))
                    action = "ok"
                if action in ("500", "429", "400"):
                    self._leave()
                    self.send_response(int(action))
                    if action == "429":
                        self.send_header("Retry-After", "0")
                    self.end_headers()
                    self.wfile.write(b'{"error": "scripted failure"}')
                    return
                if action == "not-json":
                    self._send(b"<html>oops</html>")
                    return
                time.sleep(0.02)  # long enough for concurrent requests to overlap
                text = body["messages"][-1]["content"]
                judge = _JUDGE.search(text)
                n = 1 if server.ignore_n else body.get("n", 1)
                if judge:
                    match = server.verdicts.get((judge.group(1), judge.group(2)), False)
                    contents = [
                        f'```json\n{{"match": {json.dumps(match)}, "rationale": "scripted"}}\n```'
                    ] * n
                else:
                    contents = [f"echo {i + body.get('seed', 0)}: {text}" for i in range(n)]
                reply = {
                    "choices": [
                        {"index": i, "message": {"role": "assistant", "content": c}}
                        for i, c in enumerate(contents)
                    ]
                }
                self._send(json.dumps(reply).encode())

            def _send(self, payload: bytes):
                self._leave()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
