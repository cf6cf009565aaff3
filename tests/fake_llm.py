"""A local stand-in for an OpenAI-compatible chat-completions endpoint: a real HTTP server on
127.0.0.1 that answers with queued replies and records each request."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.test import override_settings


class FakeChatEndpoint:
    """Answers POST /v1/chat/completions with queued (status, body) pairs, recording each request."""

    def __init__(self):
        self.requests: list[dict] = []
        self.answers: list[tuple[int, bytes]] = []
        self.delay = 0.0

    def answer_content(self, content: str, status: int = 200) -> None:
        message = {"role": "assistant", "content": content}
        body = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        }
        self.answer_raw(json.dumps(body).encode(), status)

    def answer_facts(self, facts: list) -> None:
        self.answer_content(json.dumps({"facts": facts}))

    def answer_raw(self, body: bytes, status: int = 200) -> None:
        self.answers.append((status, body))


@pytest.fixture
def endpoint():
    fake = FakeChatEndpoint()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            fake.requests.append({"path": self.path, "headers": dict(self.headers), "json": json.loads(body)})
            time.sleep(fake.delay)
            status, answer = fake.answers.pop(0) if fake.answers else (500, b"no answer queued")
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up waiting: what the timeout test wants

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    settings = {
        "MEMORY_LLM_BASE_URL": f"http://127.0.0.1:{server.server_port}/v1",
        "MEMORY_LLM_MODEL": "test-model",
        "MEMORY_LLM_API_KEY": "test-key",
        "MEMORY_LLM_TIMEOUT": 15.0,
    }
    with override_settings(**settings):
        yield fake
    server.shutdown()
    server.server_close()
