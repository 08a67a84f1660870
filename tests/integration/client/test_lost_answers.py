"""A change whose answer never came back: the client sends it again with the same
``Idempotency-Key``, and the API applies it once and replays its answer."""

from __future__ import annotations

import http.client
import http.server
import json
import threading
import urllib.parse
from typing import ClassVar

from tests.integration.client.conftest import Operator


class _LosesTheFirstAnswer(http.server.BaseHTTPRequestHandler):
    """Forwards every request to the API; the first POST's answer is dropped on the way back
    (the change was applied, the client heard nothing)."""

    upstream: ClassVar[str] = ""
    seen: ClassVar[list[tuple[str, str | None, str | None]]] = []  # method, key, replayed

    def _forward(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
        target = urllib.parse.urlsplit(self.upstream)
        connection = http.client.HTTPConnection(target.netloc, timeout=30)
        try:
            connection.request(self.command, self.path, body=body or None, headers=headers)
            response = connection.getresponse()
            answer = response.read()
        finally:
            connection.close()
        key = self.headers.get("Idempotency-Key")
        self.seen.append((self.command, key, response.getheader("Idempotent-Replayed")))
        if self.command == "POST" and [m for m, _, _ in self.seen].count("POST") == 1:
            self.close_connection = True  # no answer at all
            return
        self.send_response(response.status)
        for name, value in response.getheaders():
            if name.lower() not in ("connection", "transfer-encoding", "content-length"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    do_GET = do_POST = do_PATCH = do_DELETE = _forward

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_a_change_whose_answer_was_lost_is_sent_again_and_applied_once(
    operator: Operator,
) -> None:
    _LosesTheFirstAnswer.upstream = operator.api_url
    _LosesTheFirstAnswer.seen = []
    proxy = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _LosesTheFirstAnswer)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    try:
        proxied = f"http://127.0.0.1:{proxy.server_address[1]}"
        operator.ok("login", "--url", proxied, "--key-file", str(operator.key_file))
        created = operator.run("namespaces", "create", "team-a", "-o", "json")
        listed = operator.ok("namespaces", "list", "-o", "json")
    finally:
        proxy.shutdown()
        proxy.server_close()
    assert created.exit_status == 0, created
    assert json.loads(created.stdout)["name"] == "team-a"
    posts = [
        (key, replayed) for method, key, replayed in _LosesTheFirstAnswer.seen if method == "POST"
    ]
    [(first_key, _), (second_key, replayed)] = posts
    assert first_key is not None and first_key == second_key
    assert replayed == "true"  # the API answered the first one's answer: applied once
    assert [item["name"] for item in json.loads(listed.stdout)] == ["team-a"]
