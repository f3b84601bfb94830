"""The one request runner every agent endpoint goes through: from raw body to the action it answers.

For each request it does, in this order and the same way for every agent (`graphs/agent_spec.py`):
check the Content-Type (415), decode the body strictly into the operation's request type (400 for
malformed JSON, 422 with every violation and its JSON path; operations that take `text/plain` or no
body get their request from the path and query parameters, with the same strictness), adopt the
request id, start the deadline, open and verify the state token, run the agent's one pre-graph
`check`, run the agent with a context that knows how to seal the next state, and map agent-level
failures to HTTP 200 ERROR bodies (TIMEOUT and MODEL_FAILURE carry the request's own state token, so the caller can
retry the step as it was; so does OTHER for a next state the codec would not issue, `StateNotIssued`). Controllers
only name the operation; the SSE relay lives here too.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal
from urllib.parse import parse_qsl

import msgspec
import structlog
from litestar import Request, Response, get, post, put
from litestar.handlers import HTTPRouteHandler
from litestar.response import ServerSentEvent, ServerSentEventMessage

from contracts.common import ErrorDetail, ErrorResponse
from graphs.agent_spec import AgentSpec
from graphs.context import AgentContext
from graphs.errors import InvalidInput, raise_if_problems
from graphs.llm.errors import ModelFailure, ModelTimeout
from graphs.llm.validation import collect_errors
from librarian_svc import drain
from librarian_svc.json_duplicate_keys import duplicate_key_paths
from librarian_svc.memory_budget import scope_wait_s
from librarian_svc.request_context import adopt_request_id, current_request_id
from librarian_svc.services import Services
from librarian_svc.state.token import StateNotIssued

log = structlog.get_logger(__name__)

SPEC_KEY = "agent_spec"
"""Where `agent_post` keeps the operation's spec on the route handler (`opt`), for the runner and OpenAPI."""


STREAMS_KEY = "agent_streams"
"""Set on routes that answer with Server-Sent Events (the OpenAPI document describes them so)."""


TEXT = "text/plain"
"""The media type of text answers (operations whose `run` returns `str`; Litestar adds `charset=utf-8`)."""


def agent_route(
    path: str,
    spec: AgentSpec[Any, Any],
    *,
    method: Literal["GET", "POST", "PUT"] = "POST",
    streams: bool = False,
    **kwargs: Any,
) -> Callable[[Any], HTTPRouteHandler]:
    """The route decorator for an operation: status 200 and the spec attached, so the handler body is one call."""
    decorator: type[HTTPRouteHandler] = {"GET": get, "POST": post, "PUT": put}[method]
    return decorator(path, status_code=200, opt={SPEC_KEY: spec, STREAMS_KEY: streams}, **kwargs)


def agent_post(
    path: str, spec: AgentSpec[Any, Any], *, streams: bool = False, **kwargs: Any
) -> Callable[[Any], HTTPRouteHandler]:
    """`@post` for an agent operation (`agent_route` with POST)."""
    return agent_route(path, spec, method="POST", streams=streams, **kwargs)


SERVICES_KEY = "services"
"""Where `create_app` keeps the app's `Services` in `app.state`, for the agent routes."""
WORKERS_SERVING_KEY = "workers_serving"
"""Where `create_app` keeps the worker's `instance_readiness.WorkersServing` in `app.state`, for `/ready`."""


def services_of(request: Request[Any, Any, Any]) -> Services:
    """The app's services, read from `app.state`.

    Agent routes read them here rather than take them as a Litestar dependency: resolving even a
    cached dependency cost about 8 µs of every request (measured in-process on an echo route).
    """
    services: Services = request.app.state[SERVICES_KEY]
    return services


def spec_of(request: Request[Any, Any, Any]) -> AgentSpec[Any, Any]:
    """The spec `agent_post` attached to the route this request matched."""
    spec: AgentSpec[Any, Any] = request.route_handler.opt[SPEC_KEY]
    return spec


@dataclass(frozen=True)
class Call:
    """One decoded, checked request, ready to run."""

    spec: AgentSpec[Any, Any]
    data: Any
    prior: Any
    token: str | None
    context: AgentContext
    graph: Any
    budget_ms: int
    """The request's budget from its arrival (`Services.budget_ms`), as a TIMEOUT quotes it, streamed or not."""


_DECODERS: dict[type[Any], msgspec.json.Decoder[Any]] = {}
_UNKNOWN_FIELD = re.compile(r"unknown field `([^`]*)`")


def _decoder(request_type: type[Any]) -> msgspec.json.Decoder[Any]:
    """One strict decoder per request type, built on first use (msgspec decoders are reusable and thread-safe)."""
    decoder = _DECODERS.get(request_type)
    if decoder is None:
        decoder = _DECODERS[request_type] = msgspec.json.Decoder(request_type)
    return decoder


def _refuse(status: int, message: str, details: list[ErrorDetail] | None = None) -> InvalidInput:
    return InvalidInput(message, details or [ErrorDetail(path="$", message=message)], status_code=status)


def single_header(request: Request[Any, Any, Any], name: str) -> str:
    """The header's value ("" when absent); given twice it is 400: which one a proxy or a parser reads differs."""
    values = request.headers.getall(name, [])
    if len(values) > 1:
        raise _refuse(400, f"{name} is given {len(values)} times ({', '.join(map(repr, values))}); send it once")
    return values[0] if values else ""


def check_identity_encoding(request: Request[Any, Any, Any]) -> None:
    """Bodies are taken as sent: a compressed one (`Content-Encoding: gzip`, `br`, …) is 415, not read as JSON.

    So is a transfer coding other than `chunked` (`Transfer-Encoding: gzip, chunked`): the server undoes the
    chunking alone, and the body would be read still compressed.
    """
    encoding = single_header(request, "content-encoding").strip().lower()
    if encoding not in ("", "identity"):
        raise _refuse(415, f"Content-Encoding {encoding!r} is not supported; send the body uncompressed")
    transfer = ",".join(request.headers.getall("transfer-encoding", [])).lower()
    codings = [c.strip() for c in transfer.split(",") if c.strip() not in ("", "chunked", "identity")]
    if codings:
        raise _refuse(415, f"Transfer-Encoding {', '.join(codings)!r} is not supported; send the body uncompressed")


def is_json(content_type: str) -> bool:
    """Whether a `Content-Type` value names JSON: `application/json` or any `application/…+json` type."""
    media_type = content_type.split(";", 1)[0].strip().lower()
    return media_type == "application/json" or (media_type.startswith("application/") and media_type.endswith("+json"))


def declared_charset(content_type: str) -> str | None:
    """The `charset` a `Content-Type` value declares, lower-cased (None when it declares none).

    Raises:
        InvalidInput: 400 when it declares more than one (which one a reader takes differs).
    """
    found = [
        value.strip().strip('"').lower()
        for key, _, value in (p.partition("=") for p in content_type.split(";")[1:])
        if key.strip().lower() == "charset"
    ]
    if len(found) > 1:
        raise _refuse(400, f"Content-Type {content_type!r} declares more than one charset; declare utf-8 once")
    return found[0] if found else None


UTF8_NAMES = ("utf-8", "utf8")
"""The charset a body is read in: UTF-8. A body declared ASCII is refused too: UTF-8 would read bytes past
ASCII where the body declares none, so it would not be what it says."""


def check_content_type(request: Request[Any, Any, Any]) -> None:
    """JSON bodies only: `application/json` or any `+json` type, in UTF-8 (415 otherwise, a missing header included).

    JSON is UTF-8 (RFC 8259 §8.1): a body declared in another charset would be read as UTF-8 all the same, so
    its text would not be what the caller meant; it is refused, as `PUT /playbooks` refuses it.
    """
    check_identity_encoding(request)
    raw = single_header(request, "content-type")
    if is_json(raw):
        charset = declared_charset(raw)
        if charset is None or charset in UTF8_NAMES:
            return
        raise _refuse(
            415, f"JSON bodies are UTF-8 (RFC 8259); got Content-Type {raw!r}: send UTF-8 and say so, or say nothing"
        )
    shown = f"Content-Type {raw!r}" if raw else "no Content-Type"
    raise _refuse(415, f"request body must be JSON (Content-Type: application/json); got {shown}")


def check_no_query(request: Request[Any, Any, Any]) -> None:
    """A JSON operation takes all its input from the body: a query parameter would be ignored, so it is a 422."""
    if not request.scope["query_string"]:
        return
    query = request.scope["query_string"].decode("latin-1")
    names = list(dict.fromkeys(name for name, _ in parse_qsl(query, keep_blank_values=True))) or [query]
    message = "not accepted: this operation takes its input from the JSON body"
    problems = [ErrorDetail(path=f"?{name}", message=message) for name in names]
    raise_if_problems(problems, "query parameters are not accepted", status_code=422)


def check_text_type(request: Request[Any, Any, Any]) -> None:
    """`text/plain` bodies only, in UTF-8 (415 otherwise, a missing header or another charset included)."""
    check_identity_encoding(request)
    raw = single_header(request, "content-type")
    media_type = raw.partition(";")[0]
    if media_type.strip().lower() == "text/plain" and (declared_charset(raw) or "utf-8") in UTF8_NAMES:
        return
    shown = f"Content-Type {raw!r}" if raw else "no Content-Type"
    raise _refuse(415, f"request body must be UTF-8 text (Content-Type: text/plain; charset=utf-8); got {shown}")


def decode_text(body: bytes) -> str:
    """The body as UTF-8 text (400 when it is not)."""
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _refuse(400, f"request body is not valid UTF-8 (byte {exc.start})") from None


def decode_parameters(request: Request[Any, Any, Any], request_type: type[Any], **extra: Any) -> Any:
    """`request_type` from the path and query parameters (plus `extra`): strings converted, nothing unknown.

    Query strings have no types, so `allow_empty=true` (or `1`) becomes a boolean; anything else is as
    strict as a JSON body: an unknown or repeated parameter, or a value of the wrong form, is a 422.
    """
    fields: dict[str, Any] = dict(request.path_params)
    for name, value in request.query_params.multi_items():
        if name in extra:  # e.g. `?text=` on an import: the body is the text, the parameter would be dropped
            message = "not accepted as a query parameter: it is the request body"
            raise _refuse(422, f"$.{name}: {message}", [ErrorDetail(path=f"$.{name}", message=message)])
        if name in fields:
            raise _refuse(
                422, f"$.{name}: given more than once", [ErrorDetail(path=f"$.{name}", message="given more than once")]
            )
        fields[name] = value
    fields |= extra
    try:
        return msgspec.convert(fields, request_type, strict=False)
    except msgspec.ValidationError as exc:
        message, _, where = str(exc).partition(" - at `")
        unknown = _UNKNOWN_FIELD.search(message)
        path = f"$.{unknown.group(1)}" if unknown else (where.rstrip("`") or "$")
        raise _refuse(422, f"{path}: {message}", [ErrorDetail(path=path, message=message)]) from None


async def read_request(request: Request[Any, Any, Any], spec: AgentSpec[Any, Any]) -> Any:
    """The operation's request, from a JSON body, a text body plus parameters, or parameters alone."""
    match spec.body:
        case "json":
            check_content_type(request)
            check_no_query(request)
            body = await request.body()
            if len(body) > OFF_LOOP_DECODE_BYTES:  # megabytes of JSON would hold the event loop for a while
                return await asyncio.to_thread(decode_strict, body, spec.request_type)
            return decode_strict(body, spec.request_type)
        case "text":
            check_text_type(request)
            return decode_parameters(request, spec.request_type, text=decode_text(await request.body()))
        case "none":
            return decode_parameters(request, spec.request_type)


OFF_LOOP_DECODE_BYTES = 256 * 1024
"""Bodies larger than this are decoded on a worker thread, so `/health` and other requests keep being
answered meanwhile (a 5 MB dashboard takes a tenth of a second or more to decode and validate)."""


def decode_strict(body: bytes, request_type: type[Any]) -> Any:
    """The body as `request_type`, with no coercion, no unknown fields and no key given twice.

    Every violation is reported at once.
    """
    if not body.strip():
        raise _refuse(400, "request body is empty; expected a JSON object")
    try:
        value = _decoder(request_type).decode(body)
    except msgspec.ValidationError as exc:
        first = str(exc)
    except msgspec.DecodeError as exc:
        raise _not_json(exc, body) from None
    except UnicodeDecodeError:  # msgspec counts from the start of the string it was decoding, not of the body
        decode_text(body)  # raises, naming the body's own first bad byte
        raise _refuse(400, "request body is not valid UTF-8") from None
    except RecursionError:
        raise _refuse(400, "request body is nested too deeply") from None
    else:
        refuse_repeated_keys(body)
        return value
    try:  # a typed decode stops at the first problem: walk the whole value to report every one
        value = msgspec.json.decode(body)
    except msgspec.DecodeError as exc:  # a schema error came first, but the JSON is broken further on
        raise _not_json(exc, body) from None
    problems = collect_errors(value, request_type) or [f"$: {first}"]
    details = [ErrorDetail(path=path, message=message) for path, _, message in (p.partition(": ") for p in problems)]
    raise _refuse(422, "; ".join(problems), details)


_HIGH_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}")
_LOW_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][c-fC-F][0-9a-fA-F]{2}")


def _lone_high_surrogate(body: bytes) -> int | None:
    r"""The offset of the first `\ud800`…`\udbff` escape with no low-surrogate escape after it, or None.

    An escape counts only behind an even run of backslashes (`\\ud800` is a backslash, then text); each
    candidate looks back over its own run only, so the search stays linear in the body.
    """
    for found in _HIGH_SURROGATE_ESCAPE.finditer(body):
        at = found.start()
        run = 0
        while at - run - 1 >= 0 and body[at - run - 1] == 0x5C:  # the backslashes before this escape's own
            run += 1
        if run % 2 == 0 and not _LOW_SURROGATE_ESCAPE.match(body, found.end()):
            return at
    return None


_UNTYPED_PATH = "- at `$[...]"


def _not_json(exc: msgspec.DecodeError, body: bytes) -> InvalidInput:
    r"""400 for a body msgspec cannot decode, in msgspec's words where they say what is wrong.

    Two of them do not: a `\ud800` escape with no low surrogate after it reads "Input data was truncated",
    and a number beyond a float ("1e400") outside the typed fields names a path of `[...]`s.
    """
    message = str(exc)
    at = _lone_high_surrogate(body) if message == "Input data was truncated" else None
    if at is not None:
        escape = body[at : at + 6].decode()
        message = f"JSON is malformed: {escape} (a high surrogate) without the low surrogate it needs (byte {at})"
    elif message.startswith("Number out of range") and _UNTYPED_PATH in message:
        message = "a number is out of range (larger than a 64-bit float holds)"
    return _refuse(400, f"request body is not valid JSON: {message}")


def refuse_repeated_keys(body: bytes) -> None:
    """422 at the path of every key that a decoded JSON body gives twice in one object (`json_duplicate_keys`)."""
    try:
        repeated = duplicate_key_paths(body.decode("utf-8"))
    except RecursionError:
        raise _refuse(400, "request body is nested too deeply") from None
    except ValueError as exc:  # the scan's parser disagreeing with msgspec's: still not JSON we take
        raise _refuse(400, f"request body is not valid JSON: {exc}") from None
    message = "key given more than once in its object (which value was meant is ambiguous)"
    problems = [ErrorDetail(path=path, message=message) for path in repeated]
    raise_if_problems(problems, "a key is given more than once", status_code=422)  # the first MAX_DETAILS


async def prepare(request: Request[Any, Any, Any], services: Services) -> Call:
    """Everything before the agent runs; raises `InvalidInput` (a 4xx) for anything the caller got wrong."""
    spec = spec_of(request)
    data = await read_request(request, spec)
    request_id = getattr(data, "request_id", None) or current_request_id(request.scope)
    adopt_request_id(request.scope, request_id)
    token: str | None = getattr(data, "state", None) if spec.state is not None else None
    seal = None
    prior = None
    if spec.state is not None:
        state = spec.state
        prior = (
            services.codec.open(token, agent=state.agent, schema_version=state.version, state_type=state.state_type)
            if token is not None
            else None
        )
        seal = partial(services.codec.seal, agent=state.agent, schema_version=state.version)
    timeout_ms = spec.timeout_ms(data)
    context = services.request_context(
        timeout_ms, request_id=request_id, seal_state=seal, waited_s=scope_wait_s(request.scope)
    )
    spec.check(data, prior, context)
    graph = services.graphs[spec.graph] if spec.graph else None
    return Call(
        spec=spec,
        data=data,
        prior=prior,
        token=token,
        context=context,
        graph=graph,
        budget_ms=services.budget_ms(timeout_ms),
    )


def _timeout_message(call: Call, left_s: float | None, *, shutting_down: bool) -> str:
    """Why the step timed out, quoting the request's budget (`call.budget_ms`) rather than what was left of it.

    What was left when the step started differs between a whole step and a stream, whose step starts once its
    headers are sent: the same `timeout_ms: 1000` read "1000 ms" on one and "999 ms" on the other.
    """
    if shutting_down:
        return "the instance is shutting down; retry the step with the same state"
    if left_s == 0.0:
        return (
            "the step's budget ran out before it started (waiting for the worker's memory, or reading its body); "
            "retry with the same state"
        )
    return f"the step did not finish within its {call.budget_ms} ms budget; retry with the same state"


async def guarded(call: Call, step: Awaitable[Any]) -> Any:
    """Await the agent under the request's deadline; TIMEOUT / MODEL_FAILURE become ERROR bodies (HTTP 200)."""
    budget = call.context.remaining_s()
    try:
        if budget == 0.0:  # spent before the step (waiting for memory): a step that never awaits would still run
            if isinstance(step, Coroutine):
                step.close()
            raise TimeoutError("the budget ran out before the step started")
        async with asyncio.timeout(budget) as timer:
            with drain.bounded(timer):  # SIGTERM moves the timeout to the shutdown deadline
                return await step
    except (TimeoutError, ModelTimeout) as exc:
        shutting_down = drain.is_draining()
        log.warning(
            "step timed out",
            agent=call.spec.name,
            budget_s=budget,
            reason="shutdown" if shutting_down else (str(exc) or "deadline"),
        )
        return ErrorResponse(
            request_id=call.context.request_id,
            error_type="TIMEOUT",
            message=_timeout_message(call, budget, shutting_down=shutting_down),
            state=call.token,
            usage=call.context.usage,  # what the step spent on the model before the deadline
        )
    except ModelFailure as exc:
        log.warning("model failure", agent=call.spec.name, reason=str(exc))
        return ErrorResponse(
            request_id=call.context.request_id,
            error_type="MODEL_FAILURE",
            message=f"the language model failed: {exc}",
            state=call.token,
            usage=call.context.usage,
        )
    except StateNotIssued as exc:
        # The service's own limit, not the caller's mistake: said plainly, never a state the next call refuses.
        log.error("state not issued", agent=call.spec.name, reason=str(exc))
        return ErrorResponse(
            request_id=call.context.request_id,
            error_type="OTHER",
            message=f"the step's next state was not issued: {exc}. The state you sent is still good for another "
            "answer; or start the session again",
            state=call.token,
            usage=call.context.usage,
        )


async def run_agent(request: Request[Any, Any, Any]) -> Response[Any]:
    """Serve one agent step: prepare, run under the deadline, answer with the action."""
    call = await prepare(request, services_of(request))
    body = await guarded(call, call.spec.run(call.graph, call.context, call.data, call.prior))
    if isinstance(body, str):
        return Response(body, status_code=200, media_type=TEXT)
    return Response(body, status_code=200)


async def stream_agent(request: Request[Any, Any, Any]) -> ServerSentEvent:
    """The same step as Server-Sent Events: checked now (so bad input is still a 4xx), then relayed live."""
    call = await prepare(request, services_of(request))
    return ServerSentEvent(_relay(call))


def _message(event: str, item: Any, event_id: int | None = None) -> ServerSentEventMessage:
    return ServerSentEventMessage(event=event, id=event_id, data=msgspec.json.encode(item).decode())


async def _next_record(queue: asyncio.Queue[Any], task: asyncio.Task[Any]) -> Any | None:
    """The next progress record as soon as there is one, or None once the step has finished.

    Waiting on both keeps each record live (sent as produced) without polling; records still queued when the
    step finishes are the caller's to drain.
    """
    getter = asyncio.ensure_future(queue.get())
    done, _ = await asyncio.wait({getter, task}, return_when=asyncio.FIRST_COMPLETED)
    if getter in done:
        return getter.result()
    getter.cancel()
    return None


def _outcome(call: Call, task: asyncio.Task[Any]) -> Any:
    """The finished step's body; the headers are sent, so a bug becomes an ERROR event, never a torn stream."""
    try:
        return task.result()
    except Exception as exc:
        log.error("unhandled exception in a streamed step", exc_info=exc)
        return ErrorResponse(request_id=call.context.request_id, error_type="OTHER", message="internal error")


async def _relay(call: Call) -> AsyncIterator[ServerSentEventMessage]:
    """One `progress` event per record as the agent produces it, then one `action` event with the body."""
    stream, progress_type = call.spec.stream, call.spec.progress_type
    assert stream is not None, "stream_agent serves only operations that stream"
    assert progress_type is not None, "a streaming operation names its progress record type"
    queue: asyncio.Queue[Any] = asyncio.Queue()

    async def advance() -> Any:
        async for item in stream(call.graph, call.context, call.data, call.prior):
            if not isinstance(item, progress_type):
                return item
            queue.put_nowait(item)
        raise AssertionError("a stream always ends with the response")

    task = asyncio.create_task(guarded(call, advance()))
    try:
        while (record := await _next_record(queue, task)) is not None:
            yield _message("progress", record, getattr(record, "index", None))
        while not queue.empty():
            record = queue.get_nowait()
            yield _message("progress", record, getattr(record, "index", None))
        yield _message("action", _outcome(call, task))
    finally:
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
