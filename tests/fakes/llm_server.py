"""A scripted LLM provider on loopback that speaks the real wire formats, for tests and benchmarks.

It answers OpenAI chat completions (`/v1/chat/completions`, also `/chat/completions`, streaming
included), OpenAI embeddings (`/v1/embeddings`), Gemini REST (`/v1beta/models/{m}:generateContent`,
`:streamGenerateContent`, `:embedContent`, `:batchEmbedContents`) and Gemini on Vertex AI
(`/v1beta1/projects/{p}/locations/{l}/publishers/google/models/{m}:generateContent`, `:predict` for
embeddings), so the real `ChatOpenAI`, `AzureChatOpenAI` and `ChatGoogleGenerativeAI` clients run their
full HTTP path against it. Vertex routes demand `Authorization: Bearer <token>` with a token this server
issued, so Application Default Credentials really run: `/token` is an OAuth 2.0 token endpoint (point a
`service_account` key file's `token_uri` at it: google-auth signs a JWT and exchanges it), and
`/computeMetadata/v1/...` is the metadata server a Cloud Run service gets its token from (point
`GCE_METADATA_HOST` and `GCE_METADATA_IP` at `metadata_host`). No network.

Chat replies come from a queue (`script`), then `responder` (computed from the request), then
`default_reply`. Embeddings are computed, never scripted: deterministic hashed character-trigram
vectors, so similar texts get similar vectors.

Standalone (benchmarks): `python -m tests.fakes.llm_server --port 9999 --delay-ms 500 --reply '{"ok": true}'`.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import itertools
import json
import math
import re
import socket
import struct
import threading
import time
import urllib.parse
from collections import deque
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import uvicorn

from tests.support.thread_server import ThreadServer

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

DEFAULT_EMBEDDING_DIM = 64
TOKEN_PATH = "/token"
METADATA_PREFIX = "/computeMetadata/v1/"
SERVICE_ACCOUNT_EMAIL = "librarian@fake-project.iam.gserviceaccount.com"
JWT_BEARER_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"
_GEMINI_PATH = re.compile(r"^/(?:v1beta|v1|v1alpha)/models/(?P<model>[^:/]+):(?P<method>[A-Za-z]+)$")
_VERTEX_PATH = re.compile(
    r"^/(?:v1beta1|v1)/projects/(?P<project>[^/]+)/locations/(?P<location>[^/]+)"
    r"/publishers/google/models/(?P<model>[^:/]+):(?P<method>[A-Za-z]+)$"
)
_GEMINI_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND"}
_GEMINI_STATUS |= {429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}


@dataclass(frozen=True)
class Reply:
    """One scripted answer.

    Attributes:
        content: The assistant text (OpenAI `message.content`, Gemini `parts[0].text`).
        status: HTTP status; anything but 200 sends the provider's error body instead of a completion.
        delay_s: Wait this long before answering (timeouts, concurrency).
        usage: (prompt, completion) token counts reported with the completion.
        headers: Extra response headers, e.g. `{"Retry-After": "0"}`.
        body: Raw response body sent verbatim instead of the generated one (truncated JSON, an HTML
            error page); `content_type` says what it is.
        content_type: Content type of `body`.
        finish_reason: OpenAI's `finish_reason` (`length` = cut off at the token cap).
    """

    content: str = ""
    status: int = 200
    delay_s: float = 0.0
    usage: tuple[int, int] = (10, 5)
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None
    content_type: str = "application/json"
    finish_reason: str = "stop"


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server saw it (header names lower-cased)."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: Any


Responder = Callable[[dict[str, Any]], Reply]


def request_text(body: dict[str, Any]) -> str:
    """All prompt text of a chat request, OpenAI or Gemini shaped, joined by newlines.

    For responders that compute a reply from the prompt (e.g. echo the ids it mentions).
    """
    texts: list[str] = []
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts.extend(part.get("text", "") for part in content if isinstance(part, dict))
    instruction = body.get("systemInstruction") or body.get("system_instruction") or {}
    contents = [instruction, *body.get("contents", [])]
    texts.extend(part.get("text", "") for item in contents for part in item.get("parts", []) if "text" in part)
    return "\n".join(texts)


def request_turns(body: dict[str, Any]) -> list[tuple[str, str]]:
    """A chat request's turns as (role, text), OpenAI or Gemini shaped, in one vocabulary.

    Roles are OpenAI's (`system`, `user`, `assistant`; Gemini's `model` is `assistant` and its
    `systemInstruction` a leading `system` turn), so one assertion holds for either provider.
    """
    turns: list[tuple[str, str]] = []
    for message in body.get("messages", []):
        content = message.get("content")
        parts = content if isinstance(content, list) else [{"text": content or ""}]
        turns.append((message["role"], "".join(part.get("text", "") for part in parts)))
    instruction = body.get("systemInstruction") or body.get("system_instruction")
    if instruction:
        turns.append(("system", "".join(part.get("text", "") for part in instruction.get("parts", []))))
    roles = {"user": "user", "model": "assistant"}
    turns.extend(
        (roles[item["role"]], "".join(part.get("text", "") for part in item.get("parts", [])))
        for item in body.get("contents", [])
    )
    return turns


def fake_embedding(text: str, dim: int = DEFAULT_EMBEDDING_DIM) -> list[float]:
    """A deterministic unit vector from hashed character trigrams: similar texts, similar vectors."""
    vector = [0.0] * dim
    padded = f"  {text.lower()}  "
    for i in range(len(padded) - 2):
        digest = hashlib.blake2b(padded[i : i + 3].encode(), digest_size=8).digest()
        index = int.from_bytes(digest[:4], "little") % dim
        vector[index] += 1.0 if digest[4] & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]


def provider_env(provider: str, root_url: str) -> dict[str, str]:
    """The service settings that make `provider`'s client ask a fake at `root_url` (`http://host:port`).

    Gemini's client takes the root (it adds `/v1beta/models/...`), an OpenAI-compatible one `/v1`: the same fake
    (or the lean one, OpenAI only) answers both, in-process for the tests and as its own process for benchmarks.
    """
    if provider == "gemini":
        return {"LLM_PROVIDER": "gemini", "GOOGLE_API_KEY": "AIza-fake", "GEMINI_BASE_URL": root_url}
    return {"LLM_PROVIDER": "openai-compatible", "OPENAI_BASE_URL": f"{root_url}/v1", "LLM_MODEL": "fake"}


class FakeLLMServer:
    """The loopback server plus its script; use as a context manager (`with FakeLLMServer() as s:`).

    Thread-safe: requests are served on a background thread while tests script and inspect.
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        default_reply: Reply | None = None,
        responder: Responder | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self.default_reply = default_reply or Reply(content="{}")
        self.responder = responder
        self._lock = threading.Lock()
        self._queue: deque[Reply] = deque()
        self._calls: list[RecordedRequest] = []
        self._ids = itertools.count(1)
        self._tokens: list[str] = []
        self._serving = ThreadServer(self.app, name="fake LLM server")

    # --- scripting and inspection ----------------------------------------------------------------

    def script(self, *replies: Reply | str) -> None:
        """Queue chat replies, answered in order (a bare string is `Reply(content=...)`)."""
        with self._lock:
            self._queue.extend(Reply(content=r) if isinstance(r, str) else r for r in replies)

    def reset(self) -> None:
        """Forget the queue, the recorded requests, the issued tokens, the responder and any changed default reply."""
        with self._lock:
            self._queue.clear()
            self._calls.clear()
            self._tokens.clear()
            self.responder = None
            self.default_reply = Reply(content="{}")

    @property
    def calls(self) -> list[RecordedRequest]:
        """Every request so far, in arrival order (a copy)."""
        with self._lock:
            return list(self._calls)

    def wait_until_idle(self) -> None:
        """Return once no request is being handled, so a request a test gave up on is not recorded in the next."""
        self._serving.wait_until_idle()

    def wait_for_calls(self, count: int, within_s: float = 10.0) -> list[RecordedRequest]:
        """The requests so far, once there are at least `count` (or when `within_s` has passed): a client that gave
        up on a request (its timeout) can return before this server has read the request from its socket."""
        deadline = time.monotonic() + within_s
        while len(calls := self.calls) < count and time.monotonic() < deadline:
            time.sleep(0.01)
        return calls

    @property
    def requests(self) -> list[Any]:
        """The JSON bodies of every request so far, in arrival order (a copy)."""
        return [call.body for call in self.calls]

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        """The bodies of chat requests only (OpenAI or Gemini), leaving embeddings out."""
        return [
            c.body for c in self.calls if c.path.endswith(("/chat/completions", "Content")) and "embed" not in c.path
        ]

    @property
    def issued_tokens(self) -> list[str]:
        """Access tokens handed out by the `/token` endpoint so far, in order (a copy)."""
        with self._lock:
            return list(self._tokens)

    @property
    def token_url(self) -> str:
        """The OAuth 2.0 token endpoint, for a `service_account` key file's `token_uri`."""
        return f"{self.root_url}{TOKEN_PATH}"

    @property
    def metadata_host(self) -> str:
        """`host:port` for `GCE_METADATA_HOST` and `GCE_METADATA_IP` (google-auth's metadata server address)."""
        return f"{self.host}:{self.port}"

    @property
    def url(self) -> str:
        """Base URL for OpenAI clients (`base_url=`), e.g. `http://127.0.0.1:PORT/v1`."""
        return f"{self.root_url}/v1"

    @property
    def gemini_url(self) -> str:
        """Base URL for Gemini clients (`base_url=`); the client adds `/v1beta/models/...`."""
        return self.root_url

    @property
    def azure_endpoint(self) -> str:
        """Endpoint for `AzureChatOpenAI` (it posts to `/openai/deployments/{d}/chat/completions`)."""
        return self.root_url

    @property
    def root_url(self) -> str:
        """`http://host:port` of the running server."""
        return f"http://{self.host}:{self.port}"

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
            responder, default = self.responder, self.default_reply
        return responder(body) if responder else default

    # --- lifecycle -------------------------------------------------------------------------------

    def start(self) -> FakeLLMServer:
        """Bind the port and serve on a daemon thread; returns once the server accepts connections."""
        self.port = self._serving.start(self.host, self.port)
        return self

    def stop(self) -> None:
        """Stop serving and wait for the thread (in-flight delayed replies are cut short)."""
        self._serving.stop()

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # --- the ASGI app ----------------------------------------------------------------------------

    async def app(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Route one HTTP request to the OpenAI or Gemini handler."""
        if scope["type"] != "http":  # pragma: no cover - lifespan is off, websockets disabled
            return
        raw = b""
        while True:
            message = await receive()
            raw += message.get("body", b"")
            if not message.get("more_body"):
                break
        try:
            body: Any = json.loads(raw) if raw else {}
        except ValueError:
            body = raw.decode("utf-8", "replace")
        path: str = scope["path"]
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if path == TOKEN_PATH:  # form-encoded, as OAuth 2.0 token requests are
            body = dict(urllib.parse.parse_qsl(raw.decode("utf-8", "replace")))
        with self._lock:
            self._calls.append(RecordedRequest(scope["method"], path, scope["query_string"].decode(), headers, body))
        if path == TOKEN_PATH:
            await self._token(body, send)
            return
        if path == "/" or path.startswith(METADATA_PREFIX):
            await self._metadata(path.removeprefix(METADATA_PREFIX), headers, send)
            return
        if not isinstance(body, dict):
            await _send_json(send, 400, {"error": {"message": "body is not a JSON object", "code": 400}})
            return
        try:
            await self._route(path, body, headers, receive, send)
        except _ClientGone:
            return

    async def _route(
        self, path: str, body: dict[str, Any], headers: dict[str, str], receive: Receive, send: Send
    ) -> None:
        if path.endswith("/chat/completions"):
            await self._openai_chat(body, receive, send)
        elif path.endswith("/embeddings"):
            await self._openai_embeddings(body, send)
        elif match := _GEMINI_PATH.match(path):
            await self._gemini(match.group("model"), match.group("method"), body, receive, send)
        elif match := _VERTEX_PATH.match(path):
            token = headers.get("authorization", "").removeprefix("Bearer ")
            if token not in self.issued_tokens:
                error = {"code": 401, "message": "no valid OAuth 2.0 access token", "status": "UNAUTHENTICATED"}
                await _send_json(send, 401, {"error": error})
            elif match.group("method") == "predict":
                await self._vertex_predict_embeddings(body, send)
            else:
                await self._gemini(match.group("model"), match.group("method"), body, receive, send)
        else:
            await _send_json(send, 404, {"error": {"message": f"no route {path}", "code": 404}})

    def _issue_token(self) -> dict[str, Any]:
        token = f"ya29.fake-{next(self._ids)}"
        with self._lock:
            self._tokens.append(token)
        return {"access_token": token, "expires_in": 3600, "token_type": "Bearer"}

    async def _token(self, form: dict[str, str], send: Send) -> None:
        """An OAuth 2.0 token endpoint: a JWT-bearer grant (service account key) or a refresh-token grant.

        The JWT's signature is not checked (the fake has no key registry), but it must be a JWT naming its
        issuer (the service account) and the scopes it asks for, as google-auth builds it.
        """
        grant = form.get("grant_type")
        if grant == JWT_BEARER_GRANT:
            claims = _jwt_claims(form.get("assertion", ""))
            if claims is None or not claims.get("iss") or not claims.get("scope"):
                await _send_json(send, 400, {"error": "invalid_grant", "error_description": "bad JWT assertion"})
                return
        elif grant != "refresh_token" or not form.get("refresh_token"):
            await _send_json(send, 400, {"error": "unsupported_grant_type", "error_description": str(grant)})
            return
        await _send_json(send, 200, self._issue_token())

    async def _metadata(self, path: str, headers: dict[str, str], send: Send) -> None:
        """The metadata server's answers google-auth needs: the ping, the service account, its token."""
        if headers.get("metadata-flavor") != "Google":
            await _send(send, 403, b"Missing Metadata-Flavor header", "text/plain")
            return
        flavor = {"Metadata-Flavor": "Google"}
        account = path.removeprefix("instance/service-accounts/").rstrip("/")
        if path in ("/", ""):
            await _send(send, 200, b"computeMetadata/", "text/plain", flavor)
        elif path == "project/project-id":
            await _send(send, 200, b"fake-project", "text/plain", flavor)
        elif path == "universe/universe-domain":
            await _send(send, 200, b"googleapis.com", "text/plain", flavor)
        elif path.startswith("instance/service-accounts/") and account in ("default", SERVICE_ACCOUNT_EMAIL):
            info = {"email": SERVICE_ACCOUNT_EMAIL, "aliases": ["default"], "scopes": [CLOUD_PLATFORM_SCOPE]}
            await _send_json(send, 200, info, flavor)
        elif path.startswith("instance/service-accounts/") and path.endswith("/token"):
            await _send_json(send, 200, self._issue_token(), flavor)
        else:
            await _send(send, 404, b"not found", "text/plain", flavor)

    async def _vertex_predict_embeddings(self, body: dict[str, Any], send: Send) -> None:
        """Vertex AI's embeddings for `gemini-embedding-001` and older models: `instances` in, `predictions` out."""
        dim = int((body.get("parameters") or {}).get("outputDimensionality") or DEFAULT_EMBEDDING_DIM)
        predictions = [
            {"embeddings": {"values": fake_embedding(str(item.get("content", "")), dim)}}
            for item in body.get("instances", [])
        ]
        await _send_json(send, 200, {"predictions": predictions})

    async def _send_reply_error(self, reply: Reply, receive: Receive, send: Send, gemini: bool) -> bool:
        """Send the reply's raw body or its error; True when that was the whole answer."""
        if reply.delay_s:
            await _sleep_unless_disconnected(reply.delay_s, receive)
        if reply.body is not None:
            await _send(send, reply.status, reply.body, reply.content_type, reply.headers)
            return True
        if reply.status == 200:
            return False
        message = reply.content or f"scripted error {reply.status}"
        if gemini:
            status = _GEMINI_STATUS.get(reply.status, "UNKNOWN")
            error = {"error": {"code": reply.status, "message": message, "status": status}}
        else:
            error = {"error": {"message": message, "type": "fake_error", "param": None, "code": str(reply.status)}}
        await _send_json(send, reply.status, error, reply.headers)
        return True

    async def _openai_chat(self, body: dict[str, Any], receive: Receive, send: Send) -> None:
        reply = self._next_reply(body)
        if await self._send_reply_error(reply, receive, send, gemini=False):
            return
        prompt, completion = reply.usage
        usage = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
        common = {"id": f"chatcmpl-fake-{next(self._ids)}", "created": int(time.time())}
        common |= {"model": body.get("model", "fake"), "system_fingerprint": None}
        if not body.get("stream"):
            message = {"role": "assistant", "content": reply.content, "refusal": None}
            choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": reply.finish_reason}
            await _send_json(send, 200, {**common, "object": "chat.completion", "choices": [choice], "usage": usage})
            return
        chunk = {**common, "object": "chat.completion.chunk"}
        delta = {"role": "assistant", "content": reply.content}
        events: list[Any] = [
            {**chunk, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": None}]},
            {**chunk, "choices": [{"index": 0, "delta": {}, "logprobs": None, "finish_reason": "stop"}]},
        ]
        if (body.get("stream_options") or {}).get("include_usage"):
            events.append({**chunk, "choices": [], "usage": usage})
        payload = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
        await _send(send, 200, payload.encode(), "text/event-stream", reply.headers)

    async def _openai_embeddings(self, body: dict[str, Any], send: Send) -> None:
        inputs = body.get("input", [])
        if isinstance(inputs, str) or (inputs and isinstance(inputs[0], int)):
            inputs = [inputs]
        dim = int(body.get("dimensions") or DEFAULT_EMBEDDING_DIM)
        data = []
        for index, item in enumerate(inputs):
            vector = fake_embedding(item if isinstance(item, str) else json.dumps(item), dim)
            if body.get("encoding_format") == "base64":
                encoded: Any = base64.b64encode(struct.pack(f"<{dim}f", *vector)).decode()
            else:
                encoded = vector
            data.append({"object": "embedding", "index": index, "embedding": encoded})
        tokens = sum(len(str(item).split()) for item in inputs)
        usage = {"prompt_tokens": tokens, "total_tokens": tokens}
        await _send_json(
            send, 200, {"object": "list", "data": data, "model": body.get("model", "fake"), "usage": usage}
        )

    async def _gemini(self, model: str, method: str, body: dict[str, Any], receive: Receive, send: Send) -> None:
        if method in ("embedContent", "batchEmbedContents"):
            requests = body.get("requests", [body])
            dim = int(body.get("outputDimensionality") or DEFAULT_EMBEDDING_DIM)
            embeddings = []
            for request in requests:
                text = " ".join(p.get("text", "") for p in (request.get("content") or {}).get("parts", []))
                embeddings.append({"values": fake_embedding(text, int(request.get("outputDimensionality") or dim))})
            answer = {"embeddings": embeddings} if method == "batchEmbedContents" else {"embedding": embeddings[0]}
            await _send_json(send, 200, answer)
            return
        if method not in ("generateContent", "streamGenerateContent"):
            await _send_json(
                send, 404, {"error": {"code": 404, "message": f"no method {method}", "status": "NOT_FOUND"}}
            )
            return
        reply = self._next_reply(body)
        if await self._send_reply_error(reply, receive, send, gemini=True):
            return
        prompt, completion = reply.usage
        candidate = {
            "content": {"parts": [{"text": reply.content}], "role": "model"},
            "finishReason": "STOP",
            "index": 0,
        }
        usage = {"promptTokenCount": prompt, "candidatesTokenCount": completion, "totalTokenCount": prompt + completion}
        reply_body: dict[str, Any] = {
            "candidates": [candidate],
            "usageMetadata": usage,
            "modelVersion": model,
            "responseId": f"fake-{next(self._ids)}",
        }
        if method == "generateContent":
            await _send_json(send, 200, reply_body, reply.headers)
        else:
            await _send(
                send, 200, f"data: {json.dumps(reply_body)}\r\n\r\n".encode(), "text/event-stream", reply.headers
            )


CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"


def _jwt_claims(token: str) -> dict[str, Any] | None:
    """The claims of a compact JWT (`header.claims.signature`), or None when it is not one."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except ValueError:
        return None
    return claims if isinstance(claims, dict) else None


class _ClientGone(Exception):
    """The client hung up (e.g. its timeout fired) while a delayed reply was pending."""


async def _sleep_unless_disconnected(delay_s: float, receive: Receive) -> None:
    """Wait `delay_s`, but give up as soon as the client disconnects, so shutdown never waits on it."""

    async def disconnected() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass

    try:
        async with asyncio.timeout(delay_s):
            await disconnected()
    except TimeoutError:
        return
    raise _ClientGone


async def _send(
    send: Send, status: int, payload: bytes, content_type: str, headers: dict[str, str] | None = None
) -> None:
    raw_headers = [(b"content-type", content_type.encode()), (b"content-length", str(len(payload)).encode())]
    raw_headers += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw_headers})
    await send({"type": "http.response.body", "body": payload})


async def _send_json(send: Send, status: int, body: object, headers: dict[str, str] | None = None) -> None:
    await _send(send, status, json.dumps(body).encode(), "application/json", headers)


def _rule_responder(rules: list[tuple[str, Reply]], default: Reply) -> Responder | None:
    """A responder answering the first rule whose text occurs in the prompt, else `default`.

    Lets a benchmark script a model that behaves like a real one across a session (e.g. it selects
    a candidate id only once the prompt lists that id) without a test's in-process responder.
    """
    if not rules:
        return None

    def respond(body: dict[str, Any]) -> Reply:
        prompt = request_text(body)
        return next((reply for text, reply in rules if text in prompt), default)

    return respond


def script_arguments(prog: str, description: str) -> argparse.ArgumentParser:
    """The command line of a scripted fake server run on its own (this one, `lean_chat_server`): one parser for both."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9999, help="0 picks a free port")
    parser.add_argument("--delay-ms", type=float, default=0.0, help="latency added to every chat reply")
    parser.add_argument("--reply", default="{}", help="assistant text of every chat reply")
    parser.add_argument(
        "--reply-if",
        nargs=2,
        action="append",
        default=[],
        metavar=("TEXT", "REPLY"),
        help="answer REPLY (status 200) instead when the prompt contains TEXT (first match wins; repeatable)",
    )
    return parser


def main(argv: list[str] | None = None) -> None:
    """Serve in the foreground with one fixed reply (for benchmarks and manual poking)."""
    parser = script_arguments("python -m tests.fakes.llm_server", __doc__.split("\n")[0])
    parser.add_argument("--status", type=int, default=200, help="HTTP status of every chat reply")
    args = parser.parse_args(argv)
    delay_s = args.delay_ms / 1000
    default = Reply(content=args.reply, status=args.status, delay_s=delay_s)
    rules = [(text, Reply(content=reply, delay_s=delay_s)) for text, reply in args.reply_if]
    server = FakeLLMServer(
        host=args.host, port=args.port, default_reply=default, responder=_rule_responder(rules, default)
    )
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, args.port))
    server.port = sock.getsockname()[1]
    print(f"fake LLM server: OpenAI base_url={server.url}  Gemini base_url={server.gemini_url}", flush=True)
    uvicorn.Server(uvicorn.Config(server.app, interface="asgi3", log_level="warning", lifespan="off", ws="none")).run(
        sockets=[sock]
    )


if __name__ == "__main__":
    main()
