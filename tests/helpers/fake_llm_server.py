"""A chat-completions server on localhost for the judge's tests: a real HTTP server, no patching.

Modes: "correct" answers with the configured answers, "slow" answers correctly but only after
`delay_s`, "error" answers HTTP 500, "garbage" answers 200 with a message that is not JSON,
"not-json-body" an HTML page, "json-body-not-json" the same labelled JSON, "error-document" a 200
carrying an error document, "busy" 429s with Retry-After before it answers, "gzip" answers correctly
but gzip-compressed whatever was asked, "gzip-bomb" sends a small gzip body that inflates to 64 MiB,
"redirect" a 307 with such a body,
"huge-declared" and "huge-undeclared" stream up to 1 GiB with and without a Content-Length (the
bytes that went out are counted in `bytes_sent`). The QA
and evaluation requests are told apart by the JSON Schema name they send. Every request body received
is kept in `requests`.
"""

from __future__ import annotations

import functools
import gzip
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

QA_SCHEMA_NAME = "callqa_qa_judge"
HUGE_BYTES = 1024 * 1024 * 1024
BOMB_BYTES = 64 * 1024 * 1024
EVALUATION_SCHEMA_NAME = "callqa_evaluation_judge"


def completion(model: str, content: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1_760_000_000,
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


class FakeLlm:
    def __init__(
        self, qa_answer: Any = None, evaluation_answer: Any = None, mode: str = "correct", delay_s: float = 5.0
    ) -> None:
        self.qa_answer = qa_answer
        self.evaluation_answer = evaluation_answer
        self.mode = mode
        self.delay_s = delay_s
        # Mode "busy": this many requests get HTTP 429 with `Retry-After: retry_after_s`, then answers.
        self.busy_left = 1
        self.retry_after_s = 1
        self.requests: list[dict[str, Any]] = []
        self.in_flight = 0
        self.bytes_sent = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> FakeLlm:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeLlm:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def received(self, schema_name: str) -> list[dict[str, Any]]:
        with self._lock:
            return [r for r in self.requests if schema_of(r) == schema_name]

    def answer_for(self, body: dict[str, Any]) -> Any:
        """The configured answer for the request's kind (a callable is given the request body)."""
        answer = self.evaluation_answer if schema_of(body) == EVALUATION_SCHEMA_NAME else self.qa_answer
        return answer(body) if callable(answer) else answer

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                with fake._lock:
                    fake.requests.append(
                        {
                            "path": self.path,
                            "authorization": self.headers.get("Authorization"),
                            "accept_encoding": self.headers.get("Accept-Encoding"),
                            "received_at": time.monotonic(),
                            **body,
                        }
                    )
                    fake.in_flight += 1
                    fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
                try:
                    self._answer(body)
                finally:
                    with fake._lock:
                        fake.in_flight -= 1

            def _answer(self, body: dict[str, Any]) -> None:
                if not self.path.endswith("/chat/completions"):
                    return self._send(404, {"error": {"message": "not found"}})
                if fake.mode == "error":
                    return self._send(500, {"error": {"message": "the model is on fire", "type": "server_error"}})
                if fake.mode == "busy" and fake.busy_left > 0:
                    fake.busy_left -= 1
                    return self._send(
                        429,
                        {"error": {"message": "slow down", "type": "rate_limit"}},
                        {"Retry-After": str(fake.retry_after_s)},
                    )
                if fake.mode == "slow":
                    time.sleep(fake.delay_s)
                if fake.mode == "not-json-body":  # a proxy's error page, say, with a 200
                    return self._send(200, None, raw=b"<html>upstream error</html>")
                if fake.mode == "json-body-not-json":  # an error page, labelled JSON
                    return self._send(200, None, raw=b"<html>upstream error</html>", content_type="application/json")
                if fake.mode == "error-document":  # a 200 carrying an error, as some proxies send
                    return self._send(200, {"error": {"message": "upstream overloaded", "type": "server_error"}})
                if fake.mode == "garbage":
                    return self._send(200, completion(body["model"], "I think the agent did fine!! 10/10"))
                if fake.mode == "redirect":  # elsewhere, with a body that inflates to 64 MiB on the way
                    return self._send(
                        307,
                        None,
                        {"Location": "/v2/chat/completions?key=S3CRET", "Content-Encoding": "gzip"},
                        raw=gzip_bomb(),
                        content_type="application/json",
                    )
                if fake.mode == "gzip-bomb":
                    return self._send(
                        200, None, {"Content-Encoding": "gzip"}, raw=gzip_bomb(), content_type="application/json"
                    )
                if fake.mode.startswith("huge-"):
                    return self._stream_huge(declared=fake.mode == "huge-declared")
                answer = fake.answer_for(body)
                content = answer if isinstance(answer, str) else json.dumps(answer)
                if fake.mode == "gzip":
                    payload = gzip.compress(json.dumps(completion(body["model"], content)).encode())
                    return self._send(
                        200, None, {"Content-Encoding": "gzip"}, raw=payload, content_type="application/json"
                    )
                self._send(200, completion(body["model"], content))

            def _stream_huge(self, declared: bool) -> None:
                """A JSON document that never seems to end: spaces after its opening brace."""
                chunk = b" " * 65_536
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    if declared:
                        self.send_header("Content-Length", str(HUGE_BYTES))
                    self.end_headers()
                    self.wfile.write(b"{")
                    for _ in range(HUGE_BYTES // len(chunk)):
                        self.wfile.write(chunk)
                        with fake._lock:
                            fake.bytes_sent += len(chunk)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client stopped reading

            def _send(
                self,
                status: int,
                document: dict[str, Any] | None,
                headers: dict[str, str] | None = None,
                raw: bytes | None = None,
                content_type: str | None = None,
            ) -> None:
                payload = json.dumps(document).encode() if raw is None else raw
                try:
                    self.send_response(status)
                    for name, value in (headers or {}).items():
                        self.send_header(name, value)
                    self.send_header(
                        "Content-Type", content_type or ("application/json" if raw is None else "text/html")
                    )
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout)

        return Handler


@functools.cache
def gzip_bomb() -> bytes:
    return gzip.compress(b" " * BOMB_BYTES)


def schema_of(body: dict[str, Any]) -> str | None:
    response_format = body.get("response_format") or {}
    return (response_format.get("json_schema") or {}).get("name")
