"""Issue 22 items 19 and 20: qa generate -> qa answer -> score qa, each on the previous command's output.
`score qa --split test` on `qa answer`'s predictions reproduces the figures `qa answer` reported; without
--split the other splits' items are counted on stderr as missing predictions, not silently scored."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from egohorizon.cli import main
from egohorizon.data.demo import ensure_demo_world


@pytest.fixture(scope="module")
def answering_server():
    """A loopback OpenAI-compatible server that answers every question with the letter of its prompt's
    length, so that some answers are right and some wrong."""
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            letter = "ABCD"[len(json.dumps(body["messages"])) % 4]
            data = json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": letter}}]})
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data.encode())

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()


def test_generate_answer_score(tmp_path_factory, answering_server, capsys):
    tmp = tmp_path_factory.mktemp("qa_chain")
    world = ensure_demo_world(tmp / "world", seed=0, participants=1, weeks=2)
    items = tmp / "qa.jsonl"
    assert main(["qa", "generate", "--world", str(world), "--out", str(items)]) == 0
    assert main(["qa", "answer", str(items), "--out", str(tmp / "answers"), "--model", "loop", "--base-url",
                 answering_server, "--world", str(world), "--notes", "5", "--concurrency", "1"]) == 0
    answered = json.loads((tmp / "answers" / "report.json").read_text())
    capsys.readouterr()
    gold, pred = str(items), str(tmp / "answers" / "predictions.jsonl")
    assert main(["score", "qa", "--gold", gold, "--pred", pred, "--split", "test", "--out", str(tmp / "s.json")]) == 0
    scored = json.loads((tmp / "s.json").read_text())
    assert capsys.readouterr().err == ""
    assert scored["n"] == answered["n"] > 0 and scored["inputs"]["missing"] == 0
    assert scored["Avg"] == pytest.approx(answered["Avg"]) and scored["Acc"] == pytest.approx(answered["Acc"])
    n_items = len(items.read_text().splitlines())
    assert main(["score", "qa", "--gold", gold, "--pred", pred]) == 0
    assert f"warning: {n_items - answered['n']} of {n_items} gold item(s) have no prediction" in capsys.readouterr().err
