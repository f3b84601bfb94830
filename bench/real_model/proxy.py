"""A recording reverse proxy on loopback, between the service and a model or embeddings server.

The report counts model calls, re-asks, tokens and truncations from what actually went over the wire, not
from what the service says about itself, so "usage counted" can be checked against an independent record.
A re-ask is a chat request that carries an earlier assistant reply (the service shows the model its
rejected answer and the problems found); an embeddings request records its `input_type` (e5's role).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import httpx

from tests.support.thread_server import ThreadServer

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

_HOP_HEADERS = {"host", "content-length", "connection", "keep-alive", "transfer-encoding", "accept-encoding"}


@dataclass(frozen=True)
class Exchange:
    """One proxied request and its answer."""

    path: str
    started: float
    seconds: float
    status: int
    request: dict[str, Any]
    response: dict[str, Any]

    @property
    def is_chat(self) -> bool:
        """A chat completion (a model call), as opposed to an embeddings request."""
        return self.path.endswith("/chat/completions")

    @property
    def is_reask(self) -> bool:
        """The request shows the model an earlier reply of its own: a re-ask after unusable output."""
        return any(m.get("role") == "assistant" for m in self.request.get("messages", []) if isinstance(m, dict))

    @property
    def prompt_tokens(self) -> int:
        """Prompt tokens the server reported (0 when it reported none)."""
        return int((self.response.get("usage") or {}).get("prompt_tokens") or 0)

    @property
    def completion_tokens(self) -> int:
        """Generated tokens the server reported."""
        return int((self.response.get("usage") or {}).get("completion_tokens") or 0)

    @property
    def finish_reason(self) -> str:
        """`stop`, `length` (cut off by the token cap), `-` for an error, `abandoned` when the client hung up."""
        if self.status == 499:
            return "abandoned"
        choices = self.response.get("choices") or [{}]
        return str(choices[0].get("finish_reason") or "-")

    @property
    def reply_text(self) -> str:
        """The assistant's text."""
        choices = self.response.get("choices") or [{}]
        return str((choices[0].get("message") or {}).get("content") or "")

    @property
    def response_format(self) -> str:
        """What the request asked for: `json_schema`, `json_object` or `-`."""
        return str((self.request.get("response_format") or {}).get("type") or "-")

    @property
    def inputs(self) -> list[str]:
        """The texts of an embeddings request."""
        value = self.request.get("input", [])
        return [value] if isinstance(value, str) else [str(v) for v in value]


class RecordingProxy:
    """Forwards every request to `upstream` and records it; use as a context manager."""

    def __init__(self, upstream: str, *, host: str = "127.0.0.1", timeout_s: float = 900.0) -> None:
        self.upstream = upstream.rstrip("/")
        self.host = host
        self.port = 0
        self.timeout_s = timeout_s
        self._lock = threading.Lock()
        self._exchanges: list[Exchange] = []
        self._client: httpx.AsyncClient | None = None
        self._serving = ThreadServer(self.app, name="recording proxy", lifespan="on")

    @property
    def root_url(self) -> str:
        """`http://host:port` of the proxy."""
        return f"http://{self.host}:{self.port}"

    @property
    def exchanges(self) -> list[Exchange]:
        """Everything proxied so far, in arrival order (a copy)."""
        with self._lock:
            return list(self._exchanges)

    def since(self, index: int) -> list[Exchange]:
        """The exchanges recorded after the first `index`."""
        with self._lock:
            return list(self._exchanges[index:])

    def __len__(self) -> int:
        with self._lock:
            return len(self._exchanges)

    def start(self) -> RecordingProxy:
        """Serve on a free loopback port, on a daemon thread."""
        self.port = self._serving.start(self.host)
        return self

    def stop(self) -> None:
        """Stop serving."""
        self._serving.stop()

    def __enter__(self) -> RecordingProxy:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    async def app(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Forward one request and record it (bodies are JSON both ways for these APIs)."""
        if scope["type"] == "lifespan":  # the upstream client lives and dies on the server's own loop
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    self._client = httpx.AsyncClient(base_url=self.upstream, timeout=self.timeout_s)
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    if self._client is not None:
                        await self._client.aclose()
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":  # pragma: no cover - websockets are off
            return
        raw = b""
        while True:
            message = await receive()
            raw += message.get("body", b"")
            if not message.get("more_body"):
                break
        assert self._client is not None, "lifespan startup creates the client"
        headers = {
            k.decode("latin-1"): v.decode("latin-1")
            for k, v in scope["headers"]
            if k.decode("latin-1").lower() not in _HOP_HEADERS
        }
        query = scope.get("query_string", b"").decode()
        url = scope["path"] + (f"?{query}" if query else "")
        started = time.monotonic()
        forward = asyncio.ensure_future(self._client.request(scope["method"], url, content=raw, headers=headers))
        hangup = asyncio.ensure_future(_disconnected(receive))
        await asyncio.wait({forward, hangup}, return_when=asyncio.FIRST_COMPLETED)
        if not forward.done():
            # The service gave up (its timeout): drop the upstream request too, so the model server stops
            # generating for nobody instead of holding its only slot for the next step.
            forward.cancel()
            with contextlib.suppress(asyncio.CancelledError, httpx.HTTPError):
                await forward
            status, payload, content_type = 499, b"{}", "application/json"
        else:
            hangup.cancel()
            try:
                upstream = forward.result()
                status, payload = upstream.status_code, upstream.content
                content_type = upstream.headers.get("content-type", "application/json")
            except httpx.HTTPError as exc:
                status, content_type = 502, "application/json"
                payload = json.dumps({"error": {"message": f"proxy: {type(exc).__name__}: {exc}"}}).encode()
        seconds = time.monotonic() - started
        exchange = Exchange(
            path=scope["path"],
            started=started,
            seconds=seconds,
            status=status,
            request=_json_object(raw),
            response=_json_object(payload),
        )
        with self._lock:
            self._exchanges.append(exchange)
        if status == 499:
            return
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", content_type.encode()), (b"content-length", str(len(payload)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": payload})


async def _disconnected(receive: Receive) -> None:
    """Return once the client has hung up."""
    while (await receive())["type"] != "http.disconnect":
        pass


def _json_object(raw: bytes) -> dict[str, Any]:
    try:
        value = json.loads(raw) if raw else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
