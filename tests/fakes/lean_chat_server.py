"""A lean fake OpenAI chat-completions server for load benchmarks: the same bytes as `llm_server`, less CPU.

`bench.librarian_concurrency` runs the service, its fake model and its load generator on one machine,
so every millisecond the fake model spends is a millisecond the service does not get. `llm_server`
serves every provider's wire format through uvicorn's ASGI stack and records every call for tests;
at hundreds of calls a second that bookkeeping is a visible share of the cores. This server answers
only what the benchmark sends (`POST .../chat/completions`, not streamed) with the same response:
the same JSON body, field for field and byte for byte apart from the id and the time, the same
status and the same headers uvicorn sends (`date`, `server`, `content-type`, `content-length`),
after the same delay, chosen by the same rule (`--reply-if TEXT REPLY`: the first rule whose text is
in the prompt, as `llm_server.request_text` joins it). The service cannot tell the two apart; the
delay is a timer on the event loop, not a sleeping task per call. Anything else is a 404 or 400.

    python -m tests.fakes.lean_chat_server --port 9999 --delay-ms 500 --reply '{"ok": true}' [--reply-if TEXT REPLY]
"""

from __future__ import annotations

import asyncio
import email.utils
import itertools
import json
import socket
import time
from dataclasses import dataclass
from typing import Any, cast

import httptools

from tests.fakes.llm_server import request_text, script_arguments

USAGE = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
"""What `llm_server` reports for a scripted reply (`Reply.usage` defaults to (10, 5))."""


@dataclass(frozen=True)
class Script:
    """What to answer: `default` unless a rule's text is in the prompt (first match wins), after `delay_s`."""

    default: str
    rules: list[tuple[str, str]]
    delay_s: float

    def reply_for(self, body: dict[str, Any]) -> str:
        prompt = request_text(body)
        return next((reply for text, reply in self.rules if text in prompt), self.default)


_IDS = itertools.count(1)


def completion_body(content: str, model: str) -> bytes:
    """The chat completion `llm_server` sends for a 200 reply with this content (same keys, same order)."""
    message = {"role": "assistant", "content": content, "refusal": None}
    choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": "stop"}
    body = {
        "id": f"chatcmpl-fake-{next(_IDS)}",
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": None,
        "object": "chat.completion",
        "choices": [choice],
        "usage": USAGE,
    }
    return json.dumps(body).encode()


_date: tuple[int, str] = (0, "")


def _http_date() -> str:
    """The `date` header's value, formatted once a second (as uvicorn does)."""
    global _date
    now = int(time.time())
    if _date[0] != now:
        _date = (now, email.utils.formatdate(now, usegmt=True))
    return _date[1]


def http_response(status: int, reason: str, payload: bytes, content_type: str = "application/json") -> bytes:
    """The response as uvicorn's httptools protocol writes it: status line, `date`, `server`, then ours."""
    return (
        f"HTTP/1.1 {status} {reason}\r\n"
        f"date: {_http_date()}\r\n"
        "server: uvicorn\r\n"
        f"content-type: {content_type}\r\n"
        f"content-length: {len(payload)}\r\n\r\n"
    ).encode() + payload


class ChatProtocol(asyncio.Protocol):
    """One client connection: parse requests with httptools, answer each after the delay, keep the connection."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpRequestParser(self)
        self.url = b""
        self.chunks: list[bytes] = []
        self.pending: set[asyncio.TimerHandle] = set()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's transports do not subclass asyncio's

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            self._write(http_response(400, "Bad Request", b'{"error": {"message": "bad request", "code": 400}}'))
            self._close()

    def connection_lost(self, exc: Exception | None) -> None:
        for handle in self.pending:  # the client hung up: nothing is sent, nothing is kept
            handle.cancel()
        self.pending.clear()
        self.transport = None

    # httptools callbacks
    def on_message_begin(self) -> None:
        self.url, self.chunks = b"", []

    def on_url(self, url: bytes) -> None:
        self.url += url

    def on_body(self, body: bytes) -> None:
        self.chunks.append(body)

    def on_message_complete(self) -> None:
        path = self.url.split(b"?", 1)[0]
        if self.parser.get_method() != b"POST" or not path.endswith(b"/chat/completions"):
            self._write(http_response(404, "Not Found", b'{"error": {"message": "no route", "code": 404}}'))
            return
        try:
            body = json.loads(b"".join(self.chunks))
        except ValueError:
            body = None
        if not isinstance(body, dict) or body.get("stream"):
            self._write(http_response(400, "Bad Request", b'{"error": {"message": "not served here", "code": 400}}'))
            return
        response = http_response(200, "OK", completion_body(self.script.reply_for(body), body.get("model", "fake")))
        keep_alive = self.parser.should_keep_alive()
        loop = asyncio.get_running_loop()
        handle: asyncio.TimerHandle | None = None

        def answer() -> None:
            assert handle is not None
            self.pending.discard(handle)
            self._write(response)
            if not keep_alive:
                self._close()

        handle = loop.call_later(self.script.delay_s, answer)
        self.pending.add(handle)

    def _write(self, data: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)

    def _close(self) -> None:
        if self.transport is not None:
            self.transport.close()


async def serve(sock: socket.socket, script: Script) -> None:
    """Serve on `sock` until cancelled."""
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: ChatProtocol(script), sock=sock, backlog=2048)
    async with server:
        await server.serve_forever()


def main(argv: list[str] | None = None) -> None:
    parser = script_arguments("python -m tests.fakes.lean_chat_server", __doc__.split("\n")[0])
    args = parser.parse_args(argv)
    script = Script(
        default=args.reply, rules=[(text, reply) for text, reply in args.reply_if], delay_s=args.delay_ms / 1000
    )
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, args.port))
    print(f"lean fake chat server: OpenAI base_url=http://{args.host}:{sock.getsockname()[1]}/v1", flush=True)
    try:
        import uvloop  # uvicorn's own choice of loop when installed, as the service's is
    except ImportError:  # pragma: no cover - uvloop ships with the runtime dependencies
        asyncio.run(serve(sock, script))
    else:
        uvloop.run(serve(sock, script))


if __name__ == "__main__":
    main()
