"""Gemini calls sent by `graphs.llm.gemini_request`: the library's own requests, replies and errors, at less cost.

Each case runs langchain-google-genai's own `_agenerate` (google-genai's `generate_content`) and the lean one on
the same model instance (the same configuration and client) against the loopback fake's Gemini REST API, and
compares what reached the server (method, path, query, every header, the body) and what came back (the
`ChatResult`, or the error's type, message and retry classification). The body the lean path builds is also
compared with the SDK's own conversion on generated configs and contents (`hypothesis`), byte for byte.
"""

from __future__ import annotations

import asyncio
import json
import socket
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from decimal import Decimal
from functools import cache, partial
from pathlib import Path
from typing import Any
from unittest import mock

import aiohttp
import pytest
from google import genai
from google.genai import _common, types
from google.genai._api_client import BaseApiClient
from google.genai.models import _GenerateContentParameters_to_mldev
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatResult
from langchain_google_genai import ChatGoogleGenerativeAI, HarmBlockThreshold, HarmCategory

from graphs.llm import gemini_request
from graphs.llm.config import LLMConfig
from graphs.llm.gemini_chat import LeanChatGoogleGenerativeAI
from graphs.llm.gemini_request import CONFIGS_KEPT, GeminiTransport, environment_adds_nothing, request_body, takes
from graphs.llm.providers import aclose_chat_model, make_chat_model
from graphs.llm.retry import classify
from tests.fakes.fixtures import fake_gemini_config
from tests.fakes.llm_server import FakeLLMServer, RecordedRequest, Reply

pytestmark = pytest.mark.usefixtures("plain_environment")
"""No proxy and no netrc file: the lean path's setting (the tests of a proxy or a netrc file set theirs on top)."""

Call = tuple[list[BaseMessage], dict[str, Any]]
Outcome = object
"""What a call came to: the result's messages and output, or the exception's type, message and retryability."""

QUESTION: list[BaseMessage] = [HumanMessage("東京タワーの高さは何メートルですか")]
WITH_SYSTEM: list[BaseMessage] = [SystemMessage("Answer in JSON."), HumanMessage("hi")]
TURNS: list[BaseMessage] = [SystemMessage("Be brief."), HumanMessage("a"), AIMessage("b"), HumanMessage("c")]
SCHEMA = {
    "type": "object",
    "properties": {"sufficient": {"type": "boolean"}, "queries": {"type": "array", "items": {"type": "string"}}},
    "required": ["sufficient"],
}
STRUCTURED: dict[str, Any] = {"response_mime_type": "application/json", "response_json_schema": SCHEMA}
"""What `graphs.llm.structured_output` asks Gemini for."""


def _body(text: str = '{"sufficient": true}', **extra: Any) -> bytes:
    """A `generateContent` reply with one candidate saying `text`, fields of `extra` added or replaced."""
    reply = {
        "candidates": [{"content": {"parts": [{"text": text}], "role": "model"}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 12, "candidatesTokenCount": 4, "totalTokenCount": 16},
        "modelVersion": "gemini-fake",
        "responseId": "r-1",
    }
    return json.dumps(reply | extra).encode()


OK = Reply(body=_body())


def _result(result: ChatResult) -> object:
    """A result as data, less the message id langchain makes up for each call."""
    messages = [{**g.message.model_dump(), "id": "?"} for g in result.generations]
    return messages, [g.generation_info for g in result.generations], result.llm_output


async def _outcome(call: Callable[[], Awaitable[ChatResult]]) -> Outcome:
    try:
        return _result(await call())
    except Exception as error:
        return type(error), str(error), classify(error).retryable


def _seen(calls: list[RecordedRequest]) -> list[tuple[str, str, str, dict[str, str], Any]]:
    return [(c.method, c.path, c.query, c.headers, c.body) for c in calls]


async def _both_ways(
    server: FakeLLMServer,
    model: ChatGoogleGenerativeAI,
    replies: list[Reply],
    calls: list[Call],
    sends: int | None = None,
    reach: int = 0,
) -> tuple[tuple[list[Outcome], list[Any]], tuple[list[Outcome], list[Any]]]:
    """`calls` made through the library's `_agenerate`, then through the lean one, each with `replies` scripted:
    each run's outcomes and the requests the server saw. The lean run must send every request itself (`sends`
    of them when they do not reach the server). A run whose client gives up on its requests (a timeout) can end
    before the server has read them: `reach` says how many to wait for."""
    runs = []
    for lean in (False, True):
        server.reset()
        server.script(*replies)
        agenerate = model._agenerate if lean else partial(ChatGoogleGenerativeAI._agenerate, model)
        with mock.patch.object(gemini_request, "_generate_once", wraps=gemini_request._generate_once) as sent:
            outcomes = [await _outcome(partial(agenerate, messages, **kwargs)) for messages, kwargs in calls]
        seen = server.wait_for_calls(reach)
        assert sent.call_count == ((len(seen) if sends is None else sends) if lean else 0)
        runs.append((outcomes, _seen(seen)))
    return runs[0], runs[1]


def _service_model(config: LLMConfig) -> LeanChatGoogleGenerativeAI:
    """The Gemini model the service builds for `config`."""
    model = make_chat_model(config)
    assert isinstance(model, LeanChatGoogleGenerativeAI)
    return model


@pytest.fixture(name="gemini_model")
async def gemini_model_fixture(llm_server: FakeLLMServer) -> AsyncIterator[LeanChatGoogleGenerativeAI]:
    model = _service_model(fake_gemini_config(llm_server))
    yield model
    await aclose_chat_model(model)


CALLS: dict[str, list[Call]] = {
    "a question": [(QUESTION, {})],
    "structured output, twice (the converted config kept)": [(QUESTION, STRUCTURED), (WITH_SYSTEM, STRUCTURED)],
    "a system instruction, then another": [(WITH_SYSTEM, {}), (TURNS, {})],
    "a conversation": [(TURNS, STRUCTURED)],
    "stop sequences": [(QUESTION, {"stop": ["END", "STOP"]})],
    "safety settings": [
        (QUESTION, {"safety_settings": {HarmCategory.HARM_CATEGORY_HARASSMENT: HarmBlockThreshold.BLOCK_NONE}})
    ],
    "a generation config": [(QUESTION, {"generation_config": {"top_k": 3, "seed": 7}})],
    "cached content": [(QUESTION, {"cached_content": "cachedContents/abc"})],
    "labels": [(QUESTION, {"labels": {"team": "search"}})],
    "extra headers and body": [
        (QUESTION, {"http_options": {"headers": {"x-trace": "t-1"}, "extra_body": {"generationConfig": {"seed": 9}}}}),
        (QUESTION, {}),
    ],
    "two schemas, one after the other": [
        (QUESTION, STRUCTURED),
        (QUESTION, {**STRUCTURED, "response_json_schema": {"type": "array", "items": {"type": "string"}}}),
        (QUESTION, STRUCTURED),
    ],
    "an infinite value, then none (one key each)": [
        (QUESTION, {"generation_config": {"presence_penalty": float("inf")}}),
        (QUESTION, {}),
    ],
    "configs changing call by call": [(QUESTION, {}), (QUESTION, STRUCTURED), (QUESTION, {}), (QUESTION, STRUCTURED)],
}


@pytest.mark.parametrize("calls", list(CALLS.values()), ids=list(CALLS))
async def test_requests_are_the_librarys(
    llm_server: FakeLLMServer, gemini_model: LeanChatGoogleGenerativeAI, calls: list[Call]
) -> None:
    """The same requests on the wire, byte for byte in the body, and the same results."""
    (library, library_seen), (lean, lean_seen) = await _both_ways(llm_server, gemini_model, [OK] * len(calls), calls)
    assert lean == library
    assert lean_seen == library_seen


REPLIES: dict[str, Reply] = {
    "structured text": OK,
    "thoughts, usage details, safety ratings, cut off": Reply(
        body=_body(
            candidates=[
                {
                    "content": {"parts": [{"text": "plan", "thought": True}, {"text": "{}"}], "role": "model"},
                    "finishReason": "MAX_TOKENS",
                    "safetyRatings": [{"category": "HARM_CATEGORY_HARASSMENT", "probability": "NEGLIGIBLE"}],
                    "index": 0,
                }
            ],
            usageMetadata={
                "promptTokenCount": 30,
                "candidatesTokenCount": 2,
                "thoughtsTokenCount": 40,
                "cachedContentTokenCount": 8,
                "totalTokenCount": 72,
            },
        )
    ),
    "blocked prompt": Reply(body=_body(candidates=[], promptFeedback={"blockReason": "SAFETY"})),
    "a field the SDK does not know": Reply(body=_body(somethingNew={"x": 1})),
    "an empty body": Reply(body=b""),
    "not JSON": Reply(body=b"<html>oops</html>", content_type="text/html"),
    "400": Reply(status=400, content="bad schema"),
    "400 over the token limit": Reply(status=400, content="input exceeds the maximum number of tokens allowed"),
    "403": Reply(status=403),
    "429": Reply(status=429, headers={"Retry-After": "3"}),
    "500": Reply(status=500),
    "503": Reply(status=503),
    "502 as an HTML page": Reply(status=502, body=b"<html>bad gateway</html>", content_type="text/html"),
    "201": Reply(status=201, body=_body()),
}


@pytest.mark.parametrize("reply", list(REPLIES.values()), ids=list(REPLIES))
async def test_replies_and_errors_are_the_librarys(
    llm_server: FakeLLMServer, gemini_model: LeanChatGoogleGenerativeAI, reply: Reply
) -> None:
    (library, library_seen), (lean, lean_seen) = await _both_ways(
        llm_server, gemini_model, [reply], [(QUESTION, STRUCTURED)]
    )
    assert lean == library
    assert lean_seen == library_seen


def _response(response: types.GenerateContentResponse) -> object:
    """A response as data, less the date the server stamps on it (however the header's name is spelt: two calls
    a second apart carry two dates)."""
    dumped = response.model_dump()
    headers = dumped["sdk_http_response"]["headers"]
    dumped["sdk_http_response"]["headers"] = {name: value for name, value in headers.items() if name.lower() != "date"}
    return dumped


@pytest.mark.parametrize(
    "reply", [r for r in REPLIES.values() if r.status == 200], ids=[k for k, r in REPLIES.items() if r.status == 200]
)
async def test_responses_are_the_sdks(
    llm_server: FakeLLMServer, gemini_model: LeanChatGoogleGenerativeAI, reply: Reply
) -> None:
    """Field for field, the automatic-function-calling history and the HTTP headers included."""
    request = gemini_model._prepare_request(QUESTION, **STRUCTURED)
    models = gemini_model.async_client.models
    outcomes = []
    for send in (models.generate_content, partial(gemini_request.generate_content, gemini_model._transport, models)):
        llm_server.script(reply)
        try:
            outcomes.append(_response(await send(**request)))
        except Exception as error:
            outcomes.append((type(error), str(error)))
    assert outcomes[0] == outcomes[1]


async def test_a_reply_that_asks_to_continue_is_continued_as_the_sdk_continues_it(
    llm_server: FakeLLMServer, gemini_model: LeanChatGoogleGenerativeAI
) -> None:
    """The second request carries the continuation token; the two replies are merged into one."""
    first = _body(
        candidates=[
            {
                "content": {"parts": [{"text": '{"sufficient": '}], "role": "model"},
                "finishReason": "CONTINUATION",
                "continuationToken": "Y29udGludWU=",
                "index": 0,
            }
        ]
    )
    replies = [Reply(body=first), Reply(body=_body("true}"))]
    (library, library_seen), (lean, lean_seen) = await _both_ways(
        llm_server, gemini_model, replies, [(QUESTION, STRUCTURED)]
    )
    assert len(lean_seen) == 2
    assert len(gemini_model._transport._configs) == 1  # the hop's config (a new token each time) is not kept
    assert lean == library
    assert lean_seen == library_seen


async def test_the_callers_config_is_left_as_it_was(
    llm_server: FakeLLMServer, gemini_model: LeanChatGoogleGenerativeAI
) -> None:
    """The SDK's converter rewrites a schema given as a dict in place: it converts a copy, as the SDK does."""
    schema = {"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}, {"type": "null"}]}}}
    config = types.GenerateContentConfig(
        response_mime_type="application/json",
        response_schema=schema,
        http_options=types.HttpOptions(timeout=2000, retry_options=types.HttpRetryOptions(attempts=1)),
    )
    before = config.model_dump()
    llm_server.script(OK, OK)
    for _ in range(2):
        await gemini_request.generate_content(
            gemini_model._transport, gemini_model.async_client.models, model="gemini-fake", contents="hi", config=config
        )
    assert config.model_dump() == before
    assert len(gemini_model._transport._configs) == 1
    assert llm_server.calls[0].body == llm_server.calls[1].body


@pytest.mark.parametrize(
    "odd", [b"bytes", datetime(2026, 1, 1, tzinfo=UTC), Decimal("0.5"), {1, 2}], ids=["bytes", "date", "decimal", "set"]
)
def test_a_config_holding_what_json_does_not_is_converted_each_time(odd: object) -> None:
    """Its key would be a JSON value's (a date as its string, a decimal as a number): no key, nothing kept."""
    transport = GeminiTransport()
    config = types.GenerateContentConfig(response_json_schema={"type": "object", "default": {"x": odd}})
    transport.converted_config(_developer_api_client(), config)
    assert not transport._configs


class _SlowToAnswerLoop(asyncio.SelectorEventLoop):
    """A loop that lets other threads run while it says whether it has ended.

    `GeminiTransport.session` asks every loop it holds while sweeping the ended ones: here each answer hands the
    GIL over, so other threads open sessions in the middle of the sweep, which without the lock changes the dict
    being walked (a `RuntimeError`) or pops a loop another thread already popped (a `KeyError`).
    """

    def is_closed(self) -> bool:
        time.sleep(0)
        return super().is_closed()


def test_threads_sharing_a_model_each_on_their_own_loops_lose_nothing() -> None:
    """Sessions opened and let go of, and configs kept, from several threads at once: no error, one session each."""
    transport = GeminiTransport()
    errors: list[BaseException] = []
    configs = [types.GenerateContentConfig(temperature=i / 100) for i in range(CONFIGS_KEPT + 10)]

    async def open_session() -> None:
        transport.session()

    def work(offset: int) -> None:
        try:
            for i in range(80):
                with asyncio.Runner(loop_factory=_SlowToAnswerLoop) as runner:
                    runner.run(open_session())
                transport.converted_config(_developer_api_client(), configs[(offset + i) % len(configs)])
        except BaseException as error:
            errors.append(error)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads switch as often as they can
    try:
        threads = [threading.Thread(target=work, args=(n * 20,)) for n in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert errors == []
    assert len(transport._sessions) <= 6
    assert len(transport._configs) <= CONFIGS_KEPT


def test_sessions_of_ended_event_loops_are_let_go_of() -> None:
    """A model used on one loop after another (a caller running each call on a fresh loop) keeps one session, as
    google-genai keeps one of its own: the others are detached, so they count as closed and report nothing."""
    transport = GeminiTransport()

    async def open_session() -> aiohttp.ClientSession:
        return transport.session()

    sessions = [asyncio.run(open_session()) for _ in range(5)]
    assert len({id(session) for session in sessions}) == 5
    assert list(transport._sessions.values()) == sessions[-1:]
    assert all(session.closed for session in sessions[:-1])
    asyncio.run(transport.aclose())  # on yet another loop: the last one's loop has ended too
    assert not transport._sessions
    assert sessions[-1].closed


async def test_a_timeout_and_a_refused_connection_fail_as_through_the_sdk(llm_server: FakeLLMServer) -> None:
    model = _service_model(fake_gemini_config(llm_server, timeout_s=0.2))
    try:
        (library, _), (lean, _) = await _both_ways(llm_server, model, [Reply(delay_s=1.0)], [(QUESTION, {})], reach=1)
        assert lean == library
        assert isinstance(lean[0], tuple)
        assert lean[0][2]  # a timeout the retry loop retries
    finally:
        await aclose_chat_model(model)
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    refused = _service_model(fake_gemini_config(llm_server, base_url=f"http://127.0.0.1:{port}"))
    try:
        (library, _), (lean, _) = await _both_ways(llm_server, refused, [], [(QUESTION, {})], sends=1)
        assert lean == library
        assert isinstance(lean[0], tuple)
        assert lean[0][2]
    finally:
        await aclose_chat_model(refused)


async def test_a_proxy_in_the_environment_sends_every_call_through_the_sdk(
    llm_server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """aiohttp's `trust_env` adds the proxy and its login to each request: the SDK's own session does that."""
    with FakeLLMServer() as proxy:  # a second fake, which answers as Gemini
        monkeypatch.setenv("HTTP_PROXY", f"http://reader:s3cret@127.0.0.1:{proxy.port}")
        model = _service_model(fake_gemini_config(llm_server, base_url="http://gemini.invalid"))
        try:
            (library, library_seen), (lean, lean_seen) = await _both_ways(
                proxy, model, [OK, OK], [(QUESTION, {}), (QUESTION, {})], sends=0
            )
        finally:
            await aclose_chat_model(model)
    assert lean == library
    assert lean_seen == library_seen
    assert all(headers["host"] == "gemini.invalid" for _, _, _, headers, _ in lean_seen)
    assert all(headers["proxy-authorization"].startswith("Basic ") for _, _, _, headers, _ in lean_seen)


async def test_a_netrc_file_sends_every_call_through_the_sdk(
    llm_server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login reader password s3cret\n")
    monkeypatch.setenv("NETRC", str(netrc))
    model = _service_model(fake_gemini_config(llm_server))
    try:
        (library, library_seen), (lean, lean_seen) = await _both_ways(
            llm_server, model, [OK], [(QUESTION, {})], sends=0
        )
    finally:
        await aclose_chat_model(model)
    assert lean == library
    assert lean_seen == library_seen
    assert lean_seen[0][3]["authorization"].startswith("Basic ")


def test_a_netrc_file_that_does_not_decode_sends_every_call_through_the_sdk(
    llm_server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The model is still built (the service starts); the SDK meets the file on each call, as it would."""
    netrc = tmp_path / "netrc"
    netrc.write_bytes(b"machine \xff\xfe login x password y\n")
    monkeypatch.setenv("NETRC", str(netrc))
    assert not _service_model(fake_gemini_config(llm_server))._transport.usable


def test_no_proxy_alone_adds_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    assert environment_adds_nothing()
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    assert not environment_adds_nothing()


def _model_with(server: FakeLLMServer, **fields: Any) -> ChatGoogleGenerativeAI:
    config: LLMConfig = fake_gemini_config(server)
    return LeanChatGoogleGenerativeAI(
        model=config.model or "", google_api_key=config.api_key, base_url=config.base_url, **fields
    )


SENT_BY_THE_SDK: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "SDK retries": ({"max_retries": 3}, {}),
    "no retry options": ({}, {}),
    "tools": ({"max_retries": 1}, {"tools": [{"function_declarations": [{"name": "look_up", "description": "d"}]}]}),
}


@pytest.mark.parametrize(("fields", "kwargs"), list(SENT_BY_THE_SDK.values()), ids=list(SENT_BY_THE_SDK))
async def test_calls_it_does_not_take_go_through_the_sdk(
    llm_server: FakeLLMServer, fields: dict[str, Any], kwargs: dict[str, Any]
) -> None:
    model = _model_with(llm_server, **fields)
    llm_server.script(OK)
    try:
        with mock.patch.object(gemini_request, "_generate_once", side_effect=AssertionError("sent by the lean path")):
            result = await model._agenerate(QUESTION, **kwargs)
    finally:
        await model.aclose()
    assert result.generations[0].message.content == '{"sufficient": true}'


async def test_model_parameters_reach_the_wire_as_through_the_library(llm_server: FakeLLMServer) -> None:
    model = _model_with(
        llm_server,
        max_retries=1,
        temperature=0.3,
        top_p=0.9,
        top_k=20,
        max_output_tokens=512,
        thinking_budget=128,
        include_thoughts=True,
        presence_penalty=0.1,
        seed=3,
    )
    try:
        (library, library_seen), (lean, lean_seen) = await _both_ways(
            llm_server, model, [OK, OK], [(QUESTION, STRUCTURED), (TURNS, {})]
        )
    finally:
        await model.aclose()
    assert lean == library
    assert lean_seen == library_seen


async def test_a_closed_model_answers_as_the_librarys_does(
    llm_server: FakeLLMServer, gemini_model: LeanChatGoogleGenerativeAI
) -> None:
    llm_server.script(OK, OK, OK)
    await gemini_model._agenerate(QUESTION)
    await gemini_model.aclose()
    outcomes = [
        await _outcome(partial(ChatGoogleGenerativeAI._agenerate, gemini_model, QUESTION)),
        await _outcome(partial(gemini_model._agenerate, QUESTION)),
    ]
    await gemini_model.async_client.aclose()  # the SDK opened its session again: the library's own behaviour
    assert outcomes[0] == outcomes[1]


async def test_closing_the_model_closes_its_session(llm_server: FakeLLMServer) -> None:
    model = _service_model(fake_gemini_config(llm_server))
    llm_server.script(OK)
    await model._agenerate(QUESTION)
    (session,) = model._transport._sessions.values()
    await aclose_chat_model(model)
    assert session.closed


def test_the_services_gemini_calls_are_taken(llm_server: FakeLLMServer) -> None:
    """The request the service builds for its structured calls is one the lean path sends."""
    model = _service_model(fake_gemini_config(llm_server))
    request = model._prepare_request(QUESTION, **STRUCTURED)
    api_client = model.async_client.models._api_client
    assert takes(model._transport, api_client, request["contents"], request["config"])
    assert not takes(model._transport, api_client, None, request["config"])  # what the SDK alone makes of these
    assert not takes(model._transport, api_client, request["contents"], request["config"].model_dump())


# --- the body, against the SDK's conversion ------------------------------------------------------------------------

_TEXT = st.text(max_size=20)
_PARTS = st.one_of(
    st.builds(types.Part, text=_TEXT),
    st.builds(types.Part, text=_TEXT, thought=st.booleans()),
    st.builds(
        types.Part, inline_data=st.builds(types.Blob, mime_type=st.just("image/png"), data=st.binary(max_size=8))
    ),
    st.builds(
        types.Part,
        function_call=st.builds(
            types.FunctionCall, name=st.from_regex(r"[a-z]{1,8}", fullmatch=True), args=st.just({"q": 1})
        ),
    ),
    st.builds(types.Part, text=_TEXT, thought_signature=st.binary(min_size=1, max_size=8)),
)
_CONTENTS = st.lists(
    st.builds(types.Content, role=st.sampled_from(["user", "model"]), parts=st.lists(_PARTS, min_size=1, max_size=3)),
    min_size=1,
    max_size=3,
)
_SCHEMAS = st.sampled_from([None, SCHEMA, {"type": "string"}])
_CONFIGS = st.builds(
    types.GenerateContentConfig,
    system_instruction=st.one_of(
        st.none(),
        _TEXT,
        st.builds(types.Content, parts=st.lists(st.builds(types.Part, text=_TEXT), min_size=1, max_size=2)),
    ),
    temperature=st.one_of(st.none(), st.floats(0, 2)),
    top_p=st.one_of(st.none(), st.floats(0, 1)),
    top_k=st.one_of(st.none(), st.integers(1, 64)),
    candidate_count=st.one_of(st.none(), st.integers(1, 2)),
    max_output_tokens=st.one_of(st.none(), st.integers(1, 8192)),
    stop_sequences=st.one_of(st.none(), st.lists(_TEXT, max_size=2)),
    seed=st.one_of(st.none(), st.integers(0, 2**31 - 1)),
    response_mime_type=st.sampled_from([None, "application/json", "text/plain"]),
    response_json_schema=_SCHEMAS,
    thinking_config=st.one_of(
        st.none(), st.builds(types.ThinkingConfig, include_thoughts=st.booleans(), thinking_budget=st.integers(0, 1024))
    ),
    safety_settings=st.one_of(
        st.none(),
        st.lists(
            st.builds(
                types.SafetySetting,
                category=st.sampled_from(
                    [types.HarmCategory.HARM_CATEGORY_HARASSMENT, types.HarmCategory.HARM_CATEGORY_HATE_SPEECH]
                ),
                threshold=st.sampled_from(
                    [types.HarmBlockThreshold.BLOCK_NONE, types.HarmBlockThreshold.BLOCK_ONLY_HIGH]
                ),
            ),
            max_size=2,
        ),
    ),
    cached_content=st.one_of(st.none(), st.just("cachedContents/c-1")),
    media_resolution=st.one_of(st.none(), st.sampled_from(list(types.MediaResolution))),
    http_options=st.just(types.HttpOptions(timeout=30_000, retry_options=types.HttpRetryOptions(attempts=1))),
)


def _sdk_body(api_client: Any, contents: list[types.Content], config: types.GenerateContentConfig) -> str:
    """What `AsyncModels._generate_content` hands `_build_request`, serialised."""
    parameters = types._GenerateContentParameters(model="gemini-fake", contents=contents, config=config)
    body = _GenerateContentParameters_to_mldev(api_client, parameters, None, parameters)
    body.pop("_url", None)
    body.pop("config", None)
    return json.dumps(_common.encode_unserializable_types(_common.convert_to_dict(body)))


@cache
def _developer_api_client() -> BaseApiClient:
    """A Gemini Developer API client that never sends anything: the converters only read its settings."""
    return genai.Client(api_key="k", http_options=types.HttpOptions(base_url="http://127.0.0.1:9"))._api_client


_KEPT = GeminiTransport()
"""One transport for every example, so the converted configs it keeps (and drops) are reused across them."""


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(contents=_CONTENTS, config=_CONFIGS)
def test_the_body_is_the_sdks_conversion(contents: list[types.Content], config: types.GenerateContentConfig) -> None:
    api_client = _developer_api_client()
    try:
        expected: object = _sdk_body(api_client, contents, config)
    except ValueError as error:  # a field the Developer API refuses: the same refusal
        expected = ("refused", str(error))
    try:
        ours: object = json.dumps(request_body(_KEPT, api_client, contents, config))
    except ValueError as error:
        ours = ("refused", str(error))
    assert ours == expected
